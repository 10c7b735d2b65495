#!/usr/bin/env python3
"""The MySQL 8 side of the benchmark: a synthetic binlog of JSON documents and partial JSON updates.

No MySQL 8 server runs here. :func:`binlog_codec.corpus.write_corpus` writes the file a MySQL
8.0.40 server would with ``binlog_format=ROW``, ``binlog_row_image=FULL``,
``binlog_row_metadata=FULL`` and ``binlog_row_value_options=PARTIAL_JSON``: inserts of rows with
binary JSON documents and ordinary columns (BIGINT, INT UNSIGNED, VARCHAR, DECIMAL, DATETIME,
ENUM, TEXT), PARTIAL_UPDATE_ROWS events whose JSON columns carry WL#2955 diff vectors (the FULL
before-image holds the document each diff applies to), and deletes. The file is written event
by event until it reaches ``--target-mb`` (default 1024), with a bounded set of live rows, so the
generator's memory stays flat; it runs as a process of its own and its peak memory is recorded.

The file is cached in ``.bench/json/`` with a stamp (``stamp.json``, written last) and made again
only when :data:`GENERATOR_VERSION` or the target size changes.

Three readers are timed on the file, each as a process of its own on one core, best of
``repeat`` runs, with rows/s, MB/s and peak memory:

* ``binlog-codec rows FILE``, JSON lines to /dev/null (every diff vector applied onto its
  before-image);
* python-mysql-replication: its event parser (``BinLogPacketWrapper``) fed the file's events as a
  binlog dump would deliver them, without a server (:func:`pymysqlreplication_rows`); it decodes
  the diff vectors and leaves them unapplied;
* ``mariadb-binlog -v --base64-output=decode-rows FILE``: its exit status, and its rows/s when
  it reads the file (MariaDB's tool knows neither MySQL 8's collation ids nor its JSON type).

Each reader's row changes are counted (binlog-codec and mariadb-binlog in one more, untimed run)
and checked against the generator's count. On a sample of the first :data:`SAMPLE_ROWS` row
changes, in process: ``read_rows`` rows/s, diff vectors applied per second (``json_diff``), and
binary JSON parse MB/s (``json_binary.parse``).

    python benchmarks/json_corpus.py make [--target-mb 1024] [--force]
    python benchmarks/json_corpus.py measure [--target-mb 1024] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import shutil
import struct
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from binlog_codec import build_description, json_binary, json_diff  # noqa: E402
from binlog_codec.corpus import write_corpus  # noqa: E402
from binlog_codec.rows import read_rows  # noqa: E402
from make_binlog import BENCH_DIR, REPO_ROOT  # noqa: E402
from measuring import (CODEC, ROW_KINDS, CommandFailed, count_row_lines, load_average,  # noqa: E402
                       mariadb_binlog_row_counts, run_command)

log = logging.getLogger(__name__)

# Bump when what write_corpus writes changes, so that cached corpora are made again.
GENERATOR_VERSION = 1
DEFAULT_TARGET_MB = 1024
FOLDER = BENCH_DIR / "json"
FILE_NAME = "mysql-bin.000001"
SEED = 2955
IMAGE = "full"
SAMPLE_ROWS = 20_000
TIMEOUT = 3600  # seconds per run of a reader, or of the generator

CODEC_ROWS = "binlog-codec rows"
PYMYSQLREPLICATION = "python-mysql-replication"
MARIADB_V = "mariadb-binlog -v decode-rows"
GENERATOR = "generator"


# -- making the corpus ----------------------------------------------------------------------


def read_stamp(folder: Path = FOLDER) -> dict | None:
    """The stamp of the cached corpus in ``folder``, or None when there is none, it is from
    another generator version, or the file is gone or not the size the stamp says."""
    try:
        stamp = json.loads((folder / "stamp.json").read_text())
    except (OSError, ValueError):
        return None
    path = folder / stamp.get("file", "")
    if stamp.get("generator_version") != GENERATOR_VERSION or not path.is_file() or path.stat().st_size != stamp.get("size"):
        return None
    return stamp


def ensure_corpus(target_mb: int = DEFAULT_TARGET_MB, folder: Path = FOLDER, force: bool = False) -> tuple[Path, dict]:
    """The corpus file of ``target_mb`` MB (10^6 bytes) in ``folder`` and its stamp: the cached
    one when its stamp matches this generator version and target, else made anew by a generator
    process of its own (:func:`write_file`), timed, its peak memory taken."""
    stamp = None if force else read_stamp(folder)
    if stamp is not None and stamp["target_mb"] == target_mb:
        log.info("reusing %s (%.1f MB)", folder / stamp["file"], stamp["size"] / 1e6)
        return folder / stamp["file"], stamp
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    path = folder / FILE_NAME
    log.info("writing a %d MB synthetic MySQL 8 corpus to %s", target_mb, path)
    argv = [sys.executable, str(Path(__file__).resolve()), "write", str(path), "--target-mb", str(target_mb)]
    with tempfile.TemporaryFile() as summary:
        seconds, peak_mb = run_command(argv, TIMEOUT, stdout=summary)
        summary.seek(0)
        written = json.loads(summary.read())
    stamp = {
        "generator_version": GENERATOR_VERSION,
        "file": path.name,
        "size": path.stat().st_size,
        "target_mb": target_mb,
        "seed": SEED,
        "image": IMAGE,
        **written,
        "generation_seconds": round(seconds, 1),
        "generation_peak_rss_mb": round(peak_mb, 1),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    tmp = folder / "stamp.tmp"
    tmp.write_text(json.dumps(stamp, indent=2) + "\n")
    tmp.replace(folder / "stamp.json")
    log.info("wrote %s: %.1f MB, %s row changes in %.1f s, peak memory %.1f MB",
             path, stamp["size"] / 1e6, f"{stamp['rows']['rows']:,}", seconds, peak_mb)
    return path, stamp


def write_file(path: Path, target_mb: int) -> dict:
    """Write the corpus (in this process): transactions until the file holds ``target_mb`` MB.
    Returns the transactions, the row changes by kind and the other counts of the generator."""
    summary = write_corpus(path, seed=SEED, image=IMAGE, target_bytes=target_mb * 1_000_000)
    rows = {kind: summary.counts[kind] for kind in ROW_KINDS}
    return {
        "transactions": summary.transactions,
        "rows": {"rows": sum(rows.values()), **rows},
        "counts": dict(sorted(summary.counts.items())),
    }


# -- the readers ----------------------------------------------------------------------------


def pymysqlreplication_rows(path: Path) -> dict:
    """python-mysql-replication's event parser over ``path``, without a server: each event is
    handed to ``BinLogPacketWrapper`` as the packet a binlog dump sends (an OK byte, then the
    event), the table maps kept as ``BinLogStreamReader`` keeps them, and every row of every rows
    event decoded (``event.rows``). Returns the row changes by kind."""
    from pymysql.protocol import MysqlPacket
    from pymysqlreplication.constants.BINLOG import FORMAT_DESCRIPTION_EVENT, TABLE_MAP_EVENT
    from pymysqlreplication.event import FormatDescriptionEvent
    from pymysqlreplication.packet import BinLogPacketWrapper
    from pymysqlreplication.row_event import (DeleteRowsEvent, PartialUpdateRowsEvent, TableMapEvent,
                                              UpdateRowsEvent, WriteRowsEvent)

    kinds = {WriteRowsEvent: "insert", UpdateRowsEvent: "update", PartialUpdateRowsEvent: "update",
             DeleteRowsEvent: "delete"}
    wanted = frozenset([FormatDescriptionEvent, TableMapEvent, *kinds])
    counts = dict.fromkeys(ROW_KINDS, 0)
    table_map: dict = {}
    version, post_header_lengths = (8, 0, 40), None
    for event in _events(path):
        packet = BinLogPacketWrapper(
            MysqlPacket(b"\x00" + event, "utf8"), table_map, _NoServer(), version,
            use_checksum=True, allowed_events=wanted,
            only_tables=None, ignored_tables=None, only_schemas=None, ignored_schemas=None,
            freeze_schema=False, ignore_decode_errors=False, verify_checksum=False,
            optional_meta_data=True,  # the column names come from the table maps (binlog_row_metadata=FULL)
            enable_logging=False, use_column_name_cache=False, post_header_lengths=post_header_lengths,
        )
        if packet.event is None:
            continue
        if packet.event_type == FORMAT_DESCRIPTION_EVENT:
            version, post_header_lengths = packet.event.mysql_version, packet.event.post_header_len
        elif packet.event_type == TABLE_MAP_EVENT:
            table_map[packet.event.table_id] = packet.event.get_table()
        else:
            counts[kinds[type(packet.event)]] += sum(1 for _row in packet.event.rows)
    return {"rows": sum(counts.values()), **counts}


class _NoServer:
    """What python-mysql-replication asks of its control connection while it parses events:
    the connection's character set and the server's kind. Nothing goes over a network."""

    charset = "utf8mb4"

    def _get_dbms(self) -> str:
        return "mysql"


def _events(path: Path):
    """The events of a binlog file, one ``bytes`` each (header, body, checksum), read as they come."""
    with open(path, "rb") as stream:
        stream.read(4)  # the magic number
        while len(header := stream.read(19)) == 19:
            size = struct.unpack_from("<I", header, 9)[0]
            yield header + stream.read(size - 19)


# The start of every line ``binlog-codec rows`` prints: the file, the position, then the kind.
CODEC_LINE = re.compile(rb'^\{"file": .*?, "pos": \d+, "row_index": \d+, "type": "(insert|update|delete)"')


def codec_row_kind(line: bytes) -> str | None:
    """The kind of the row change a line of ``binlog-codec rows`` output is."""
    match = CODEC_LINE.match(line)
    return match[1].decode() if match else None


def readers(path: Path, mariadb_binlog: str | None) -> list[dict]:
    """The readers timed on ``path``: name, what, the command, and how to count its rows."""
    found = [
        {"name": CODEC_ROWS, "argv": [*CODEC, "rows", str(path)],
         "count": lambda: count_row_lines([*CODEC, "rows", str(path)], codec_row_kind),
         "what": "one JSON line per row change to /dev/null, diff vectors applied onto the FULL before-images"},
        {"name": PYMYSQLREPLICATION, "argv": [sys.executable, str(Path(__file__).resolve()), "pymysqlreplication", str(path)],
         "what": "python-mysql-replication's BinLogPacketWrapper fed the file's events without a server; "
                 "for row in event.rows (diff vectors decoded, not applied)"},
    ]
    if mariadb_binlog:
        found.append({"name": MARIADB_V, "argv": [mariadb_binlog, "-v", "--base64-output=decode-rows", str(path)],
                      "count": lambda: mariadb_binlog_row_counts(path, mariadb_binlog),
                      "what": "mariadb-binlog with rows decoded to pseudo-SQL, to /dev/null"})
    return found


def time_reader(reader: dict, repeat: int, timeout: float) -> dict:
    """Best of ``repeat`` runs of one reader, its peak memory, and its row changes by kind (from
    its own output for python-mysql-replication, else from one more run, not timed). A reader
    that fails is recorded with its exit status and what it said."""
    result = {"name": reader["name"], "what": reader["what"],
              "command": " ".join("binlog-codec" if arg == CODEC[-1] else arg
                                  for arg in reader["argv"] if arg not in (CODEC[0], "-c"))}
    seconds, peaks = [], []
    load_before = load_average()
    try:
        for _ in range(repeat):
            with tempfile.TemporaryFile() as output:
                took, peak = run_command(reader["argv"], timeout, stdout=None if "count" in reader else output)
                output.seek(0)
                printed = output.read()
            seconds.append(took)
            peaks.append(peak)
        result["row_counts"] = reader["count"]() if "count" in reader else json.loads(printed)
    except CommandFailed as exc:
        result.update(exit_status=exc.returncode, error=exc.stderr or f"exit {exc.returncode}")
    except Exception as exc:  # noqa: BLE001 - every failure is recorded
        result["error"] = f"{type(exc).__name__}: {exc}"
    result["load_average"] = [load_before, load_average()]
    if seconds and "error" not in result:
        result.update(exit_status=0, seconds=round(min(seconds), 3), all_seconds=[round(s, 3) for s in seconds],
                      peak_rss_mb=round(max(peaks), 1))
    return result


# -- in process, on a sample ------------------------------------------------------------------


def sample_rates(path: Path, rows: int = SAMPLE_ROWS) -> dict:
    """On the first ``rows`` row changes of ``path``: ``read_rows`` rows/s; every diff vector
    decoded and applied onto the document of its before-image (as materializing does), vectors/s;
    every whole document the sample logs, serialized to binary JSON and parsed again, MB/s."""
    started = time.perf_counter()
    records = list(islice(read_rows(path), rows))
    decode_seconds = time.perf_counter() - started

    partial = [(record.change.before[name], value, name)
               for record in records for name, value in (record.change.after or {}).items() if name in record.change.partial]
    started = time.perf_counter()
    for document, vector, name in partial:
        json_diff.apply(document, json_diff.decode_diffs(vector, column=name), column=name)
    apply_seconds = time.perf_counter() - started

    blobs = [json_binary.serialize(value)
             for record in records for name, value in (record.change.after or {}).items()
             if isinstance(value, (dict, list)) and name not in record.change.partial]
    started = time.perf_counter()
    for blob in blobs:
        json_binary.parse(blob)
    parse_seconds = time.perf_counter() - started
    blob_bytes = sum(map(len, blobs))
    return {
        "rows": len(records),
        "decode": {"seconds": round(decode_seconds, 3), "rows_per_s": round(len(records) / decode_seconds)},
        "apply": {"seconds": round(apply_seconds, 3), "diff_vectors": len(partial),
                  "diff_vectors_per_s": round(len(partial) / apply_seconds) if partial else None},
        "parse": {"seconds": round(parse_seconds, 4), "documents": len(blobs), "bytes": blob_bytes,
                  "mb_per_s": round(blob_bytes / 1e6 / parse_seconds, 2) if blobs else None},
    }


# -- the measurement ---------------------------------------------------------------------------


def measure(target_mb: int = DEFAULT_TARGET_MB, repeat: int = 3, folder: Path = FOLDER,
            timeout: float = TIMEOUT, mariadb_binlog: str | None = None) -> dict:
    """The corpus made (or reused), every reader timed on it, row counts checked against the
    generator's, and the in-process sample rates: the ``json`` section of the results."""
    path, stamp = ensure_corpus(target_mb, folder)
    size = path.stat().st_size
    expected = stamp["rows"]
    results = []
    for reader in readers(path, mariadb_binlog or shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog")):
        log.info("timing %s on the JSON corpus ...", reader["name"])
        result = time_reader(reader, repeat, timeout)
        if "seconds" in result:
            result["rows_per_s"] = round(expected["rows"] / result["seconds"])
            result["mb_per_s"] = round(size / 1e6 / result["seconds"], 2)
        if "row_counts" in result:
            result["rows_match_generator"] = result["row_counts"] == expected
        results.append(result)
    by_name = {r["name"]: r for r in results}
    return {
        "what": "synthetic MySQL 8.0.40 binlog (binlog_codec.corpus): FULL row images, binary JSON columns, "
                "PARTIAL_UPDATE_ROWS with JSON diff vectors",
        "file": str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path),
        "file_bytes": size,
        "file_mb": round(size / 1e6, 1),
        "generator": stamp,
        "rows": expected["rows"],
        "rows_by_kind": {kind: expected[kind] for kind in ROW_KINDS},
        "repeat": repeat,
        "codec_build": build_description(),
        "results": results,
        "ratios": _ratios(by_name),
        "sample": sample_rates(path),
    }


def _ratios(by_name: dict) -> dict:
    """Rows/s of binlog-codec over each other reader's (above 1: binlog-codec is faster)."""
    ours = by_name[CODEC_ROWS].get("seconds")
    return {
        f"{CODEC_ROWS} / {name}": round(result["seconds"] / ours, 2)
        for name, result in by_name.items() if name != CODEC_ROWS and ours and result.get("seconds")
    }


def summary_lines(section: dict) -> list[str]:
    """The ``json`` section in a few lines for a person."""
    lines = [f"JSON corpus ({section['file_mb']} MB, {section['rows']:,} row changes; generated in "
             f"{section['generator']['generation_seconds']} s, peak memory {section['generator']['generation_peak_rss_mb']} MB; "
             f"binlog-codec {section['codec_build']}):"]
    for r in section["results"]:
        if "seconds" in r:
            lines.append(f"  {r['name']:<30} {r['seconds']:9.2f} s {r['mb_per_s']:7.2f} MB/s {r['rows_per_s']:>9,} rows/s "
                         f"{r['peak_rss_mb']:7.1f} MB peak; rows match the generator: {r.get('rows_match_generator')}")
        else:
            lines.append(f"  {r['name']:<30} exit {r.get('exit_status', '?')}: {r['error'].splitlines()[-1]}")
    sample = section["sample"]
    lines.append(f"  sample of {sample['rows']:,} rows: read_rows {sample['decode']['rows_per_s']:,} rows/s, "
                 f"{sample['apply']['diff_vectors_per_s']:,} diff vectors applied/s, "
                 f"binary JSON parse {sample['parse']['mb_per_s']} MB/s")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = ap.add_subparsers(dest="command", required=True)
    make = commands.add_parser("make", help="make (or reuse) the corpus in .bench/json")
    make.add_argument("--target-mb", type=int, default=DEFAULT_TARGET_MB, help="size of the corpus in MB (10^6 bytes)")
    make.add_argument("--force", action="store_true", help="make it again even if cached")
    run = commands.add_parser("measure", help="make or reuse the corpus, time the readers, print the results")
    run.add_argument("--target-mb", type=int, default=DEFAULT_TARGET_MB, help="size of the corpus in MB (10^6 bytes)")
    run.add_argument("--repeat", type=int, default=3, help="runs per reader (the best is kept)")
    write = commands.add_parser("write", help="write the corpus to FILE in this process (what make runs)")
    write.add_argument("file", type=Path)
    write.add_argument("--target-mb", type=int, default=DEFAULT_TARGET_MB)
    pymysql = commands.add_parser("pymysqlreplication", help="read FILE with python-mysql-replication, print its row counts")
    pymysql.add_argument("file", type=Path)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)

    if args.command == "make":
        path, _ = ensure_corpus(args.target_mb, force=args.force)
        print(path)
    elif args.command == "measure":
        section = measure(args.target_mb, args.repeat)
        print(json.dumps(section, indent=2))
        print("\n".join(summary_lines(section)), file=sys.stderr)
    elif args.command == "write":
        print(json.dumps(write_file(args.file, args.target_mb)))
    else:
        print(json.dumps(pymysqlreplication_rows(args.file)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The JSON side of the benchmark, on a synthetic MySQL 8 corpus (no MySQL 8 server runs here).

``binlog_codec.corpus`` writes a binlog of JSON-heavy transactions under
binlog_row_image=MINIMAL: inserts with whole documents, then PARTIAL_UPDATE_ROWS
whose JSON columns carry WL#2955 diff vectors. Three numbers come from it:

* **decode**: ``read_rows`` over the file, rows/s and MB/s (binary JSON documents
  parsed, diff vectors kept as bytes);
* **apply**: every diff vector decoded and applied (``json_diff``) onto the
  document the row held before, in log order, as materializing does: vectors/s;
* **parse**: binary JSON parse (``json_binary.parse``) of every whole document
  the corpus logs (inserts, and updates logged in full), serialized: MB/s.
"""

from __future__ import annotations

import time
from pathlib import Path

from binlog_codec import json_binary, json_diff
from binlog_codec.corpus import write_corpus
from binlog_codec.rows import read_rows

TRANSACTIONS = 20_000
SEED = 2955


def ensure_corpus(folder: Path, transactions: int = TRANSACTIONS) -> tuple[Path, dict]:
    """The corpus file (made once per size and seed) and its counts."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"json-{transactions}-{SEED}.000001"
    summary = write_corpus(path, transactions=transactions, seed=SEED, image="minimal")
    return path, summary


def _best(repeat: int, work) -> tuple[float, object]:
    best, result = None, None
    for _ in range(repeat):
        started = time.perf_counter()
        result = work()
        elapsed = time.perf_counter() - started
        best = elapsed if best is None else min(best, elapsed)
    return best, result


def _decode(path: Path) -> list:
    return [record for record in read_rows(path)]


def _apply(records: list) -> int:
    """Replays the corpus: documents of each row, diffs applied in order; returns vectors applied."""
    documents: dict[tuple, object] = {}
    applied = 0
    for record in records:
        change = record.change
        key = (record.table, (change.before or change.after or {}).get("id"))  # the PKE is in every before-image
        for name, value in (change.after or {}).items():
            if name in change.partial:
                documents[key + (name,)] = json_diff.apply(
                    documents[key + (name,)], json_diff.decode_diffs(value, column=name), column=name
                )
                applied += 1
            elif isinstance(value, (dict, list)):
                documents[key + (name,)] = value
    return applied


def measure(folder: Path, repeat: int) -> dict:
    """The three measurements (see the module docstring), best of ``repeat`` each."""
    path, summary = ensure_corpus(folder)
    size = path.stat().st_size
    decode_seconds, records = _best(repeat, lambda: _decode(path))
    apply_seconds, vectors = _best(repeat, lambda: _apply(records))
    blobs = [
        json_binary.serialize(value)
        for record in records for name, value in (record.change.after or {}).items()
        if isinstance(value, (dict, list)) and name not in record.change.partial
    ]
    parse_seconds, _ = _best(repeat, lambda: [json_binary.parse(blob) for blob in blobs])
    blob_bytes = sum(map(len, blobs))
    return {
        "what": "synthetic MySQL 8.0 binlog (binlog_codec.corpus, MINIMAL images, partial JSON updates)",
        "file": str(path),
        "file_bytes": size,
        "transactions": summary.transactions,
        "rows": len(records),
        "counts": dict(sorted(summary.counts.items())),
        "decode": {"seconds": round(decode_seconds, 3), "rows_per_s": round(len(records) / decode_seconds),
                   "mb_per_s": round(size / 1e6 / decode_seconds, 2)},
        "apply": {"seconds": round(apply_seconds, 3), "diff_vectors": vectors,
                  "diff_vectors_per_s": round(vectors / apply_seconds)},
        "parse": {"seconds": round(parse_seconds, 4), "documents": len(blobs), "bytes": blob_bytes,
                  "mb_per_s": round(blob_bytes / 1e6 / parse_seconds, 2)},
    }

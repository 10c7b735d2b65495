"""A class-data-sharing archive of the Spark driver's classes: sessions start in 3 s, not 5.

Every run of a job starts a JVM, which reads, parses and verifies some ten
thousand classes from Spark's jars before the first task runs. Java 13 and later
can write the classes a run loaded into an archive when it exits
(``-XX:ArchiveClassesAtExit``) and map that archive at the next start
(``-XX:SharedArchiveFile``), skipping the work. On the development machine a
``local[2]`` session took 4.9 s to start without the archive and 3.0 s with it.

The archive belongs to one JVM build and one set of Spark jars, so it is built
on the machine that uses it, in the virtual environment: ``make`` runs
``python -m spark_jobs.class_archive`` once after installing the stack (about
half a minute; the archive takes about 180 MB). :func:`build_session
<spark_jobs.session.build_session>` uses it whenever it exists. A JVM that finds
it stale (another Java, other jars) or not an archive at all says so and starts
as without it; one cut short, though, crashes it, so the archive's size and
CRC-32 are recorded beside it (``<archive>.json``) and checked before every
start (0.06 s), and an archive that fails the check is left out with a warning.
``BINLAKE_CLASS_ARCHIVE`` names another file, or, set to an empty string,
turns it off.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Sequence

log = logging.getLogger(__name__)

ENVIRONMENT = "BINLAKE_CLASS_ARCHIVE"
DEFAULT_ARCHIVE = Path(sys.prefix) / "share" / "binlake" / "spark-driver.jsa"
JAVA_OPTIONS = "spark.driver.extraJavaOptions"
ARCHIVE_OPTIONS = ("SharedArchiveFile", "ArchiveClassesAtExit")
EXIT_SECONDS = 300  # the JVM writes the archive as it exits: how long to wait for it


def archive_path() -> Path | None:
    """The archive sessions use: ``$BINLAKE_CLASS_ARCHIVE`` (empty: none), else the virtual
    environment's."""
    named = os.environ.get(ENVIRONMENT)
    if named is not None:
        return Path(named) if named else None
    return DEFAULT_ARCHIVE


def _fingerprint(path: Path) -> dict[str, int]:
    """The size and CRC-32 of a file (0.06 s for the archive)."""
    crc = 0
    with path.open("rb") as handle:
        while block := handle.read(1 << 22):
            crc = zlib.crc32(block, crc)
    return {"bytes": path.stat().st_size, "crc32": crc}


def _fingerprint_file(archive: Path) -> Path:
    return archive.with_name(f"{archive.name}.json")


def is_intact(archive: Path) -> bool:
    """Whether ``archive`` is whole: its size and CRC-32 are the ones recorded when it was built.
    (A JVM refuses an archive of another Java or other jars by itself, but one cut short
    crashes it.)"""
    try:
        recorded = json.loads(_fingerprint_file(archive).read_text())
        return archive.stat().st_size == recorded["bytes"] and _fingerprint(archive) == recorded
    except (OSError, ValueError, KeyError, TypeError):
        return False


def with_archive(options: str | None) -> str | None:
    """The driver's Java options with the archive mapped, when it exists, is intact, and the
    options do not already name a class archive (``options`` as they are otherwise)."""
    path = archive_path()
    if path is None or not path.is_file() or any(name in (options or "") for name in ARCHIVE_OPTIONS):
        return options
    if not is_intact(path):
        log.warning("class archive %s is damaged (build it again: python -m spark_jobs.class_archive); "
                    "Spark starts without it", path)
        return options
    return " ".join(filter(None, [options, java_option("SharedArchiveFile", path)]))


def java_option(name: str, path: Path) -> str:
    """``-XX:<name>=<path>`` as one word of Spark's Java options, which it splits at spaces:
    in double quotes, a backslash before any quote or backslash of the path."""
    text = str(path).replace("\\", "\\\\").replace('"', '\\"')
    return f'"-XX:{name}={text}"'


def _exercise(spark, scratch: Path) -> None:
    """What a run does, so that the classes it needs are the ones archived: Python tasks of
    an RDD job, and a DataFrame written to and read back from Parquet through Arrow."""
    spark.sparkContext.parallelize(range(4), 2).map(lambda value: value * 2).collect()
    frame = spark.range(100).selectExpr("id", "cast(id as string) as text", "current_timestamp() as at")
    frame.write.mode("overwrite").parquet(str(scratch / "exercise.parquet"))
    spark.read.parquet(str(scratch / "exercise.parquet")).groupBy("text").count().toArrow()


def build(target: Path) -> Path:
    """Start a session whose JVM archives its classes as it exits, run :func:`_exercise`, stop
    it, and put the archive at ``target`` (written beside it first, then renamed), its size and
    CRC-32 recorded beside it. Run it in a process that has no Spark session yet (the command
    line does): an existing session's JVM would be reused, and archive nothing."""
    from pyspark import SparkContext

    from .session import build_session

    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    partial.unlink(missing_ok=True)
    spark = build_session("local[2]", app_name="binlake class archive",
                          conf={JAVA_OPTIONS: f"{java_option('ArchiveClassesAtExit', partial)} -Xlog:cds*=error"})
    jvm = SparkContext._gateway.proc  # the JVM: it exits when its standard input closes
    exercised = False
    try:
        with tempfile.TemporaryDirectory() as scratch:
            _exercise(spark, Path(scratch))
        exercised = True
    finally:
        spark.stop()
        jvm.stdin.close()
        jvm.wait(timeout=EXIT_SECONDS)
        if not exercised:
            partial.unlink(missing_ok=True)  # a failed build leaves no 180 MB behind
    if not partial.is_file():
        raise RuntimeError(f"the JVM exited without writing {partial} (Java 13 or later is needed)")
    record = _fingerprint_file(target)
    record.unlink(missing_ok=True)
    os.replace(partial, target)
    written = record.with_name(f"{record.name}.tmp")
    written.write_text(json.dumps(_fingerprint(target)))
    os.replace(written, record)
    return target


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m spark_jobs.class_archive [--target FILE]``: build the archive."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=Path, help="where to write it (default: the sessions' archive)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    target = args.target or archive_path()
    if target is None:
        parser.error(f"{ENVIRONMENT} is empty: no archive to build")
    started = time.monotonic()
    build(target)
    log.info("class archive %s: %.0f MB in %.1f s", target, target.stat().st_size / 1e6, time.monotonic() - started)
    return 0


if __name__ == "__main__":
    sys.exit(main())

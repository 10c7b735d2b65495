"""The Spark driver's class archive (spark_jobs.class_archive): built, mapped, and harmless when bad."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from spark_jobs import class_archive

REPO = Path(__file__).resolve().parents[2]

# A fresh JVM (not the tests' shared session): its Java options, then one Python task.
SESSION = """
import sys
from spark_jobs.session import build_session
spark = build_session("local[1]", conf={"spark.driver.extraJavaOptions": sys.argv[1]} if sys.argv[1] else None)
print("options:", spark.sparkContext.getConf().get("spark.driver.extraJavaOptions", ""))
print("sum:", sum(spark.sparkContext.parallelize(range(10), 2).map(lambda v: v + 1).collect()))
"""


def _session(archive: str, java_options: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, class_archive.ENVIRONMENT: archive}
    return subprocess.run([sys.executable, "-c", SESSION, java_options], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


def _record(archive: Path) -> None:
    """The archive's fingerprint, as the build writes it."""
    class_archive._fingerprint_file(archive).write_text(json.dumps(class_archive._fingerprint(archive)))


def test_the_option_is_added_only_for_an_intact_archive(tmp_path, monkeypatch):
    archive = tmp_path / "driver.jsa"
    monkeypatch.setenv(class_archive.ENVIRONMENT, str(archive))
    assert class_archive.with_archive(None) is None  # not built yet
    assert class_archive.with_archive("-Xmx1g") == "-Xmx1g"
    archive.write_bytes(b"x" * 1000)
    assert class_archive.with_archive("-Xmx1g") == "-Xmx1g"  # no fingerprint: not known whole
    _record(archive)
    assert class_archive.with_archive(None) == f'"-XX:SharedArchiveFile={archive}"'
    assert class_archive.with_archive("-Xmx1g") == f'-Xmx1g "-XX:SharedArchiveFile={archive}"'
    assert class_archive.with_archive("-XX:SharedArchiveFile=/other.jsa") == "-XX:SharedArchiveFile=/other.jsa"
    assert class_archive.with_archive("-XX:ArchiveClassesAtExit=/new.jsa") == "-XX:ArchiveClassesAtExit=/new.jsa"
    archive.write_bytes(b"x" * 999)  # cut short
    assert class_archive.with_archive("-Xmx1g") == "-Xmx1g"
    archive.write_bytes(b"y" * 1000)  # same size, other bytes
    assert class_archive.with_archive("-Xmx1g") == "-Xmx1g"
    monkeypatch.setenv(class_archive.ENVIRONMENT, "")  # turned off
    assert class_archive.archive_path() is None and class_archive.with_archive("-Xmx1g") == "-Xmx1g"
    monkeypatch.delenv(class_archive.ENVIRONMENT)
    assert class_archive.archive_path() == Path(sys.prefix) / "share" / "binlake" / "spark-driver.jsa"


def test_the_option_is_one_word_of_sparks_java_options():
    """Spark splits its Java options at spaces, in quotes as a shell does (a backslash escapes)."""
    assert class_archive.java_option("SharedArchiveFile", Path("/a b/c.jsa")) == '"-XX:SharedArchiveFile=/a b/c.jsa"'
    assert class_archive.java_option("X", Path('/q"\\/c')) == '"-XX:X=/q\\"\\\\/c"'


def test_a_built_archive_is_mapped_by_the_next_session_and_refused_when_cut(tmp_path):
    archive = tmp_path / 'share "dir"' / "driver.jsa"  # a space and quotes: one word of the Java options
    built = subprocess.run([sys.executable, "-m", "spark_jobs.class_archive", "--target", str(archive)], cwd=REPO,
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-3000:]
    assert archive.stat().st_size > 10_000_000 and class_archive.is_intact(archive)
    assert sorted(path.name for path in archive.parent.iterdir()) == ["driver.jsa", "driver.jsa.json"]
    # -Xshare:on: a JVM that cannot map the archive refuses to start, so a run proves it valid
    mapped = _session(str(archive), "-Xshare:on")
    assert mapped.returncode == 0, mapped.stderr[-3000:]
    assert class_archive.java_option("SharedArchiveFile", archive) in mapped.stdout and "sum: 55" in mapped.stdout
    archive.write_bytes(archive.read_bytes()[: 1 << 20])  # cut short: it would crash the JVM
    cut = _session(str(archive))
    assert cut.returncode == 0, cut.stderr[-3000:]
    assert "SharedArchiveFile" not in cut.stdout and "sum: 55" in cut.stdout
    assert "is damaged" in cut.stderr


def test_a_file_that_is_no_archive_is_ignored_by_the_jvm(tmp_path):
    archive = tmp_path / "driver.jsa"
    archive.write_bytes(b"not an archive" * 1000)
    _record(archive)
    run = _session(str(archive))
    assert run.returncode == 0, run.stderr[-3000:]
    assert class_archive.java_option("SharedArchiveFile", archive) in run.stdout and "sum: 55" in run.stdout

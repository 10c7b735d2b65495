"""The synthetic MySQL 8 JSON benchmark: the corpus is cached and streamed, and every reader's
row count is checked against the generator's (on a corpus of a megabyte or two)."""

from __future__ import annotations

import shutil
import sys
import tracemalloc
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import json_corpus  # noqa: E402
from ci import in_ci  # noqa: E402
from binlog_codec.corpus import write_corpus  # noqa: E402

MARIADB_BINLOG = shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog")


@pytest.fixture(scope="module")
def section(tmp_path_factory):
    """The ``json`` section of the results for a 1 MB corpus, each reader run once."""
    return json_corpus.measure(1, repeat=1, folder=tmp_path_factory.mktemp("json"))


def _result(section: dict, name: str) -> dict:
    return next(r for r in section["results"] if r["name"] == name)


def test_the_corpus_holds_json_documents_and_partial_updates(section):
    generator = section["generator"]
    assert section["file_bytes"] >= 1_000_000 and generator["image"] == "full"
    assert generator["counts"]["partial_json"] > 100 and generator["counts"]["full_json_fallback"] > 10
    assert all(generator["rows"][kind] > 100 for kind in ("insert", "update", "delete"))
    assert section["rows"] == generator["rows"]["rows"]


def test_binlog_codec_rows_is_timed_and_its_rows_match_the_generator(section):
    codec = _result(section, json_corpus.CODEC_ROWS)
    assert codec["exit_status"] == 0 and codec["seconds"] > 0 and codec["peak_rss_mb"] > 0
    assert codec["row_counts"] == section["generator"]["rows"]
    assert codec["rows_match_generator"] is True
    assert codec["rows_per_s"] == round(section["rows"] / codec["seconds"])


def test_python_mysql_replication_reads_the_file_without_a_server(section):
    theirs = _result(section, json_corpus.PYMYSQLREPLICATION)
    assert theirs["exit_status"] == 0, theirs.get("error")
    assert theirs["rows_match_generator"] is True
    assert f"{json_corpus.CODEC_ROWS} / {json_corpus.PYMYSQLREPLICATION}" in section["ratios"]


def test_mariadb_binlog_gives_its_rows_or_its_reason(section):
    if MARIADB_BINLOG is None:
        if in_ci():
            pytest.fail("mariadb-binlog is not installed (infra/mariadb.sh install)")
        pytest.skip("mariadb-binlog is not installed (infra/mariadb.sh install)")
    theirs = _result(section, json_corpus.MARIADB_V)
    if theirs["exit_status"] == 0:
        assert theirs["rows_match_generator"] is True
    else:
        assert theirs["error"] and "seconds" not in theirs


def test_the_sample_rates_are_measured(section):
    sample = section["sample"]
    assert sample["rows"] == min(section["rows"], json_corpus.SAMPLE_ROWS)
    assert sample["apply"]["diff_vectors"] > 100 and sample["apply"]["diff_vectors_per_s"] > 0
    assert sample["parse"]["documents"] > 100 and sample["parse"]["mb_per_s"] > 0


def test_the_summary_has_a_line_per_reader(section):
    lines = json_corpus.summary_lines(section)
    assert f"{section['rows']:,} row changes" in lines[0]
    assert [line.split()[0] for line in lines[1:-1]] == [r["name"].split()[0] for r in section["results"]]
    assert lines[-1].startswith(f"  sample of {section['sample']['rows']:,} rows")


def test_the_corpus_is_reused_until_the_target_or_the_generator_changes(tmp_path, monkeypatch):
    path, stamp = json_corpus.ensure_corpus(1, tmp_path)
    again, same = json_corpus.ensure_corpus(1, tmp_path)
    assert again == path and same == stamp

    _, bigger = json_corpus.ensure_corpus(2, tmp_path)
    assert bigger["created"] >= stamp["created"] and bigger["size"] >= 2_000_000 > stamp["size"]

    monkeypatch.setattr(json_corpus, "GENERATOR_VERSION", json_corpus.GENERATOR_VERSION + 1)
    assert json_corpus.read_stamp(tmp_path) is None


def test_a_truncated_corpus_is_not_reused(tmp_path):
    path, stamp = json_corpus.ensure_corpus(1, tmp_path)
    with open(path, "r+b") as stream:
        stream.truncate(stamp["size"] - 100)
    assert json_corpus.read_stamp(tmp_path) is None
    path, again = json_corpus.ensure_corpus(1, tmp_path)
    assert path.stat().st_size == again["size"] == stamp["size"]


def _peak_traced(path: Path, target_bytes: int) -> int:
    tracemalloc.start()
    try:
        write_corpus(path, seed=json_corpus.SEED, image=json_corpus.IMAGE, target_bytes=target_bytes)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_writing_the_corpus_takes_no_more_memory_for_a_larger_file(tmp_path):
    small = _peak_traced(tmp_path / "small.000001", 500_000)
    large = _peak_traced(tmp_path / "large.000001", 4_000_000)
    assert large - small < 500_000  # the 3.5 MB more are written, not held

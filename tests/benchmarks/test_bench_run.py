"""The benchmark's bound on the ingest: writing an ingest's outputs again, and the least time an ingest
on two slots can take from that, next to its target."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import run  # noqa: E402

from spark_jobs import materialize  # noqa: E402


def _warehouse(root: Path) -> dict[Path, pa.Table]:
    """A warehouse of one table: two changes files (two commit dates) and one current file."""
    files = {
        root / "changes/db/t/commit_date=2026-01-01/r-00000.parquet": 3,
        root / "changes/db/t/commit_date=2026-01-02/r-00000.parquet": 2,
        root / "current/db/t/r-00000.parquet": 4,
        root / "metadata/runs/r.parquet": 7,  # not an output of the fold: left out
    }
    written = {}
    for path, rows in files.items():
        table = pa.table({
            "id": pa.array(range(rows), pa.int64()),
            "note": pa.array([f"n{n}" if n % 2 else None for n in range(rows)], pa.string()),
            materialize.PRESENT: pa.array([["id", "note"][: 1 + n % 2] for n in range(rows)], pa.list_(pa.string())),
        })
        path.parent.mkdir(parents=True, exist_ok=True)
        materialize.write_parquet(table, str(path))
        written[path] = table
    return written


def test_write_outputs_alone_writes_every_changes_and_current_file_and_leaves_the_warehouse_as_it_was(tmp_path):
    written = _warehouse(tmp_path)
    before = {path: path.read_bytes() for path in written}
    threads = pa.cpu_count()

    result = run.write_outputs_alone(tmp_path)

    assert result["files"] == 3 and result["rows"] == 3 + 2 + 4
    assert result["seconds"] >= 0
    assert {path: path.read_bytes() for path in written} == before
    assert sorted(p for p in tmp_path.rglob("*") if p.is_file()) == sorted(written)
    assert pa.cpu_count() == threads
    for path, table in written.items():
        assert pq.read_table(path).to_pylist() == table.to_pylist()


def _measured(**seconds) -> dict:
    by_name = {
        run.INGEST_2: {"seconds": seconds.get("ingest", 28.0), "returned": {
            "warehouse": "w", "phases": {"startup": 3.5, "shutdown": 1.0, "decode": 6.0}}},
        run.ARROW: {"seconds": seconds.get("arrow", 4.0)},
        run.CODEC_ROWS: {"seconds": seconds.get("codec", 6.0)},
    }
    return by_name


def test_ingest_floor_is_decoding_and_writing_shared_by_two_cores_plus_the_jvm_start_and_stop(monkeypatch):
    monkeypatch.setattr(run, "write_outputs_alone", lambda warehouse: {"files": 2, "rows": 10, "seconds": 10.0})

    floor = run.ingest_floor(_measured(arrow=4.0, codec=6.0, ingest=28.0), two_process=1.75)

    assert floor["floor_s"] == pytest.approx((4.0 + 10.0) / 1.75 + 3.5 + 1.0, abs=0.01)
    assert floor["target_s"] == pytest.approx(2 * 6.0)
    assert floor["ingest_s"] == 28.0 and floor["startup_and_shutdown_s"] == 4.5
    assert floor["write_outputs"]["rows"] == 10


@pytest.mark.parametrize("missing", [run.INGEST_2, run.ARROW, run.CODEC_ROWS])
def test_ingest_floor_needs_the_ingest_the_arrow_decode_and_the_codec(monkeypatch, missing):
    monkeypatch.setattr(run, "write_outputs_alone", lambda warehouse: pytest.fail("nothing to bound"))
    by_name = _measured()
    by_name[missing] = {"error": "RuntimeError: exit 1"}

    assert run.ingest_floor(by_name, two_process=1.75) is None

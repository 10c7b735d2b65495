"""Publishing a run: atomic, idempotent, recoverable after a crash at any step.

The runs here are made of text files: the catalog's sync (tested with real runs in
``test_catalog.py``) is replaced by a recorder of what it was asked and when.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from warehouse import catalog, publish


@pytest.fixture(autouse=True)
def syncs(monkeypatch) -> list[tuple]:
    """Each catalog sync a commit asks for: (warehouse, run id, checkpoint given, checkpoint in place,
    table commits)."""
    asked = []

    def record(warehouse: Path, run_id: str, checkpoint: dict, commits: list, fence=None) -> dict:
        asked.append((Path(warehouse), run_id, checkpoint, publish.read_checkpoint(warehouse), commits))
        return {}

    monkeypatch.setattr(catalog, "sync", record)
    return asked


def tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` (journal excluded) and its text."""
    return {
        str(p.relative_to(root)): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() and publish.JOURNAL not in p.parts
    }


def at(position: int) -> dict:
    """The checkpoint of a run that read up to ``position``."""
    return {"source": {"file": "mariadb-bin.000001", "pos": position}}


def make_run(root: Path, run: str, current_rows: str) -> Path:
    folder = root / "runs" / run
    files = {
        f"changes/shop/orders/commit_date=2026-11-21/part-1-{run}.parquet": f"changes of {run}",
        f"current/shop/orders/{run}-0.parquet": current_rows,
        f"metadata/transactions/part-1-{run}.parquet": f"transactions of {run}",
        f"metadata/runs/{run}.parquet": json.dumps({"run": run}),
    }
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


@pytest.fixture
def warehouse(tmp_path) -> Path:
    """A warehouse with a first run committed."""
    root = tmp_path / "warehouse"
    publish.commit(root, make_run(tmp_path, "r1", "state after r1"), "r1", checkpoint=at(1000))
    return root


def test_commit_moves_the_files_beside_the_earlier_runs_and_advances_the_checkpoint(tmp_path, warehouse):
    publish.commit(warehouse, make_run(tmp_path, "r2", "state after r2"), "r2", checkpoint=at(2000))
    files = tree(warehouse)
    assert files["current/shop/orders/r2-0.parquet"] == "state after r2"
    assert files["current/shop/orders/r1-0.parquet"] == "state after r1"  # for the older snapshot, until maintenance
    assert {name for name in files if name.startswith("changes/")} == {
        "changes/shop/orders/commit_date=2026-11-21/part-1-r1.parquet",
        "changes/shop/orders/commit_date=2026-11-21/part-1-r2.parquet",
    }
    assert publish.read_checkpoint(warehouse) == {"source": {"file": "mariadb-bin.000001", "pos": 2000}}
    assert not (warehouse / publish.JOURNAL).exists()  # no commit pending, no folder left behind


def test_the_catalog_syncs_the_run_before_its_checkpoint_moves(tmp_path, warehouse, syncs):
    publish.commit(warehouse, make_run(tmp_path, "r2", "state after r2"), "r2", checkpoint=at(2000))
    assert [(run, given, in_place) for _, run, given, in_place, _ in syncs[-1:]] == [
        ("r2", {"source": {"file": "mariadb-bin.000001", "pos": 2000}},
         {"source": {"file": "mariadb-bin.000001", "pos": 1000}})]


def test_the_run_replaces_current_and_appends_to_changes_and_metadata(tmp_path, warehouse, syncs):
    publish.commit(warehouse, make_run(tmp_path, "r2", "state after r2"), "r2", checkpoint=at(2000))
    assert [each.to_json() for each in syncs[-1][-1]] == [
        {"table": ["_binlake", "runs"], "files": ["metadata/runs/r2.parquet"], "replaced": [], "whole": False},
        {"table": ["_binlake", "transactions"], "files": ["metadata/transactions/part-1-r2.parquet"], "replaced": [],
         "whole": False},
        {"table": ["shop", "orders"], "files": ["current/shop/orders/r2-0.parquet"], "replaced": ["current/shop/orders"],
         "whole": True},
        {"table": ["shop", "orders__changes"], "files": ["changes/shop/orders/commit_date=2026-11-21/part-1-r2.parquet"],
         "replaced": [], "whole": False},
    ]


def test_a_backfill_replaces_its_days_of_changes(tmp_path, warehouse, syncs):
    publish.commit(warehouse, make_run(tmp_path, "b1", "not published"), "b1", replaced=(publish.DAY_PARTITIONS,))
    [changes] = [each for each in syncs[-1][-1] if each.table == ("shop", "orders__changes")]
    assert changes.replaced == ["changes/shop/orders/commit_date=2026-11-21"] and not changes.whole


def test_the_journal_holds_the_checkpoint_and_every_move_of_the_run(tmp_path):
    planned = publish.plan(tmp_path / "warehouse", str(make_run(tmp_path, "r2", "rows")), checkpoint=at(2000))
    assert publish.Plan.from_json(json.loads(json.dumps(planned.to_json()))) == planned
    assert planned.checkpoint == at(2000) and len(planned.moves) == 4
    assert all(Path(move.source).is_file() and move.source.endswith(move.target) for move in planned.moves)


def test_the_same_run_twice_adds_no_duplicates(tmp_path, warehouse):
    before = tree(warehouse)
    publish.commit(warehouse, make_run(tmp_path / "again", "r1", "state after r1"), "r1", checkpoint=at(1000))
    assert tree(warehouse) == before


def test_a_run_that_dies_before_its_commit_leaves_nothing_visible(tmp_path, warehouse):
    before = tree(warehouse)
    make_run(tmp_path, "r2", "state after r2")  # written, never committed
    assert publish.recover(warehouse) == []
    assert tree(warehouse) == before


@pytest.mark.parametrize("survived", range(0, 4))
def test_a_commit_that_dies_half_way_is_finished_by_recover(tmp_path, warehouse, monkeypatch, survived):
    expected_root = tmp_path / "expected"
    publish.commit(expected_root, make_run(tmp_path / "e", "r1", "state after r1"), "r1", checkpoint=at(1000))
    publish.commit(expected_root, make_run(tmp_path / "e", "r2", "state after r2"), "r2", checkpoint=at(2000))

    calls = {"n": 0}
    real_apply = publish.Move.apply

    def dying_apply(self, root):
        if calls["n"] == survived:
            raise KeyboardInterrupt("killed")
        calls["n"] += 1
        real_apply(self, root)

    monkeypatch.setattr(publish.Move, "apply", dying_apply)
    with pytest.raises(KeyboardInterrupt):
        publish.commit(warehouse, make_run(tmp_path, "r2", "state after r2"), "r2", checkpoint=at(2000))
    assert publish.read_checkpoint(warehouse)["source"]["pos"] == 1000  # the checkpoint moves last
    monkeypatch.setattr(publish.Move, "apply", real_apply)
    assert publish.recover(warehouse) == ["r2"]
    assert tree(warehouse) == tree(expected_root)


def test_a_journal_of_the_earlier_version_is_refused_and_left_as_it_is(tmp_path, warehouse):
    journal = warehouse / publish.JOURNAL / "old.json"
    journal.parent.mkdir(exist_ok=True)
    journal.write_text(json.dumps([{"source": "x", "target": "current/shop/orders", "replace_folder": True}]))
    before = tree(warehouse)
    with pytest.raises(RuntimeError, match="earlier version of binlake left half done: nothing was published"):
        publish.recover(warehouse)
    assert tree(warehouse) == before and journal.exists()

"""``spark_jobs.ingest`` on the bundled samples: discovery, checkpoints, and a run that dies."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mariadb import REPO_ROOT
from spark_jobs import ingest as pipeline
from spark_jobs import publish

SAMPLES = sorted((REPO_ROOT / "samples").glob("mariadb-bin.0*"))


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def source(tmp_path) -> Path:
    folder = tmp_path / "source"
    folder.mkdir()
    for sample in SAMPLES:
        shutil.copyfile(sample, folder / sample.name)
    (folder / "mariadb-bin.index").write_text("not a binlog\n")
    (folder / "notes.000001").write_text("named like one, but no binlog magic\n")
    return folder


def test_discovery_takes_binlogs_in_order_after_the_checkpoint(source):
    names = [Path(i.path).name for i in pipeline.discover(source, None)]
    assert names == [s.name for s in SAMPLES]
    size = SAMPLES[0].stat().st_size
    rest = pipeline.discover(source, {"file": SAMPLES[0].name, "position": size})
    assert [(Path(i.path).name, i.start) for i in rest] == [(s.name, 0) for s in SAMPLES[1:]]
    middle = pipeline.discover(source, {"file": SAMPLES[0].name, "position": 1000})
    assert (Path(middle[0].path).name, middle[0].start) == (SAMPLES[0].name, 1000)
    with pytest.raises(ValueError, match="not in"):
        pipeline.discover(source, {"file": "mariadb-bin.000099", "position": 4})


def test_a_run_that_dies_before_its_commit_leaves_the_warehouse_as_it_was(spark, source, tmp_path, monkeypatch):
    warehouse = tmp_path / "warehouse"
    first = source.parent / "first"
    first.mkdir()
    shutil.copyfile(SAMPLES[0], first / SAMPLES[0].name)
    pipeline.ingest(str(first), str(warehouse), spark=spark)
    shutil.copyfile(SAMPLES[1], first / SAMPLES[1].name)
    before = files(warehouse)

    def killed(*args, **kwargs):
        raise KeyboardInterrupt("killed before the commit")

    monkeypatch.setattr(publish, "commit", killed)
    with pytest.raises(KeyboardInterrupt):
        pipeline.ingest(str(first), str(warehouse), spark=spark)
    visible = {name: data for name, data in files(warehouse).items() if not name.startswith(pipeline.RUNS_FOLDER)}
    assert visible == before  # its work folder is scratch; nothing of it is visible
    monkeypatch.undo()
    result = pipeline.ingest(str(first), str(warehouse), spark=spark)
    assert result.run_id and publish.read_checkpoint(warehouse)[str(first.resolve())]["file"] == SAMPLES[1].name
    assert not (warehouse / pipeline.RUNS_FOLDER).exists()

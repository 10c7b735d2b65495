"""``spark_jobs.ingest`` on the bundled samples: discovery, checkpoints, and a run that dies."""

from __future__ import annotations

import re

import json
import shutil
from pathlib import Path

import pytest

from mariadb import REPO_ROOT
from spark_jobs import ingest as pipeline
from warehouse import publish

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


def test_scans_ahead_are_of_the_files_a_run_would_read(source, tmp_path):
    """``pending_scans`` starts the scans of the files after the warehouse's checkpoint, and none
    when the source cannot be read (the run reports that itself)."""
    warehouse = tmp_path / "warehouse"
    scans = pipeline.pending_scans(str(source), str(warehouse))
    assert sorted(Path(name).name for name in scans) == [s.name for s in SAMPLES]
    assert all(len(scan.result()[1]) > 0 for scan in scans.values())  # (stamp, transactions)
    (warehouse / publish.CHECKPOINT).parent.mkdir(parents=True)
    (warehouse / publish.CHECKPOINT).write_text(json.dumps(
        {str(source.resolve()): {"file": SAMPLES[-1].name, "position": SAMPLES[-1].stat().st_size}}
    ))
    assert pipeline.pending_scans(str(source), str(warehouse)) == {}
    assert pipeline.pending_scans(str(tmp_path / "missing"), str(warehouse)) == {}


def test_a_run_that_dies_before_its_commit_leaves_the_warehouse_as_it_was(spark, source, tmp_path, monkeypatch):
    warehouse = tmp_path / "warehouse"
    first = source.parent / "first"
    first.mkdir()
    shutil.copyfile(SAMPLES[0], first / SAMPLES[0].name)
    pipeline.ingest(str(first), str(warehouse), spark=spark, validation=False)
    shutil.copyfile(SAMPLES[1], first / SAMPLES[1].name)
    before = files(warehouse)

    def killed(*args, **kwargs):
        raise KeyboardInterrupt("killed before the commit")

    monkeypatch.setattr(publish, "commit", killed)
    with pytest.raises(KeyboardInterrupt):
        pipeline.ingest(str(first), str(warehouse), spark=spark, validation=False)
    visible = {name: data for name, data in files(warehouse).items() if not name.startswith(pipeline.RUNS_FOLDER)}
    assert visible == before  # its work folder is scratch; nothing of it is visible
    monkeypatch.undo()
    result = pipeline.ingest(str(first), str(warehouse), spark=spark, validation=False)
    assert result.run_id and publish.read_checkpoint(warehouse)[str(first.resolve())]["file"] == SAMPLES[1].name
    assert not (warehouse / pipeline.RUNS_FOLDER).exists()


def test_prepare_publishes_nothing_and_publish_run_commits_once(spark, source, tmp_path):
    warehouse = tmp_path / "warehouse"
    prepared = pipeline.prepare(str(source), str(warehouse), spark=spark)
    visible = [name for name in files(warehouse) if not name.startswith(pipeline.RUNS_FOLDER)]
    assert prepared.run_id and visible == []
    assert prepared.ends == {s.name: s.stat().st_size for s in SAMPLES}
    published = pipeline.publish_run(str(warehouse), prepared.run_id)
    assert published.rows == prepared.rows and sum(published.rows.values()) > 0
    assert publish.read_checkpoint(warehouse) == prepared.checkpoint
    after = files(warehouse)
    assert pipeline.publish_run(str(warehouse), prepared.run_id).rows == {}  # a retried publish does nothing
    assert files(warehouse) == after


def test_a_run_that_failed_validation_publishes_nothing(spark, source, tmp_path):
    warehouse = tmp_path / "warehouse"
    prepared = pipeline.prepare(str(source), str(warehouse), spark=spark)
    run_file = pipeline.work_folder(warehouse, prepared.run_id) / pipeline.RUN_FILE
    failed = {"run_id": prepared.run_id, "success": False, "data_docs": None, "tables": [
        {"database": "db", "table": "t", "rows": 1, "success": False, "expectations": 1,
         "failures": ["column u: 1 value below 0, e.g. -1"]},
    ]}
    run_file.write_text(json.dumps({**json.loads(run_file.read_text()), "quality": failed}))
    with pytest.raises(pipeline.QualityFailed, match=r"db\.t: column u: 1 value below 0"):
        pipeline.publish_run(str(warehouse), prepared.run_id)
    assert [name for name in files(warehouse) if not name.startswith(pipeline.RUNS_FOLDER)] == []
    assert publish.read_checkpoint(warehouse) == {}


def test_table_versions_merge_across_runs_into_one_row_each():
    def version(schema_id, first, last, rows):
        return {"schema_id": schema_id, "rows": rows,
                **{f"first_{k}": v for k, v in zip(("file", "seq", "pos", "inner_offset"), first)},
                **{f"last_{k}": v for k, v in zip(("file", "seq", "pos", "inner_offset"), last)}}

    earlier = [version("a", ("b.000001", 1, 100, None), ("b.000001", 1, 900, None), 5)]
    new = [version("b", ("b.000002", 2, 50, None), ("b.000002", 2, 60, None), 1),
           version("a", ("b.000002", 2, 10, None), ("b.000002", 2, 40, 7), 3)]
    merged = pipeline.merge_table_schemas(earlier, new)
    assert merged == [
        version("a", ("b.000001", 1, 100, None), ("b.000002", 2, 40, 7), 8),
        version("b", ("b.000002", 2, 50, None), ("b.000002", 2, 60, None), 1),
    ]
    assert pipeline.merge_table_schemas([], earlier) == earlier and earlier[0]["rows"] == 5


def test_a_run_planned_before_another_commit_is_refused_not_published_twice(spark, tmp_path):
    warehouse, growing = tmp_path / "warehouse", tmp_path / "growing"
    growing.mkdir()
    shutil.copyfile(SAMPLES[0], growing / SAMPLES[0].name)
    stale = pipeline.prepare(str(growing), str(warehouse), spark=spark)
    shutil.copyfile(SAMPLES[1], growing / SAMPLES[1].name)
    pipeline.ingest(str(growing), str(warehouse), spark=spark, validation=False)  # commits both files first
    def visible() -> dict[str, bytes]:
        return {name: data for name, data in files(warehouse).items() if not name.startswith(pipeline.RUNS_FOLDER)}

    after = visible()
    with pytest.raises(pipeline.StaleRun, match="planned from .* at the start .nothing read yet., but its checkpoint is now"):
        pipeline.publish_run(str(warehouse), stale.run_id)
    assert visible() == after  # its rows are not added a second time
    assert not pipeline.work_folder(warehouse, stale.run_id).exists()  # and it is not tried again


def test_the_command_logs_what_a_user_can_act_on(source, tmp_path):
    """``python -m spark_jobs.ingest`` as users run it (validation on) without SPARK_LOCAL_IP set:
    its own progress lines and the summary, and not one line at WARNING or above, none from the
    java launcher, Spark's start-up, py4j or Great Expectations."""
    import os
    import subprocess
    import sys

    env = {key: value for key, value in os.environ.items() if key != "SPARK_LOCAL_IP"}
    run = subprocess.run(
        [sys.executable, "-m", "spark_jobs.ingest", "--source", str(source), "--warehouse", str(tmp_path / "w"),
         "--master", "local[2]"],
        capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    ours = re.compile(r"^\S+ \S+ INFO (spark_jobs|binlog_codec|warehouse)\.")
    # the one warning: the source's look-alike, which the user can rename or remove
    actionable = re.compile(r"^\S+ \S+ WARNING spark_jobs\.source_files: .*notes\.000001: named like a binlog file")
    lines = run.stderr.splitlines()
    assert [line for line in lines if not ours.match(line)] == [line for line in lines if actionable.match(line)]
    assert len(lines) > 5 and sum(bool(actionable.match(line)) for line in lines) == 1
    assert "resolves to a loopback address" not in run.stderr and "py4j" not in run.stderr
    assert "quality: passed (18 expectations)" in run.stdout
    assert re.match(r"run \w+ of stream .+: .* row changes in [\d.]+ s \(validation [\d.]+ s\)$", run.stdout.splitlines()[0])
    assert "spark_jobs.ingest: run " in run.stderr and run.stdout.startswith("run ")
    assert "mariadb-bin.index" not in run.stderr  # an index file is no binlog look-alike


def test_a_file_that_grows_while_a_run_reads_it_is_read_as_planned_then_on(spark, tmp_path, monkeypatch):
    """The server writes on between planning and decoding: the run decodes what it planned and
    checkpoints there; the next run reads the rest. Every row change once."""
    from binlog_codec.rows import read_rows
    from binlog_codec.transactions import scan_transactions

    whole = SAMPLES[0].read_bytes()
    cut = list(scan_transactions(SAMPLES[0]))[3].end
    source, warehouse = tmp_path / "source", tmp_path / "warehouse"
    source.mkdir()
    binlog = source / SAMPLES[0].name
    binlog.write_bytes(whole[:cut])
    real_decode = pipeline.decode

    def written_on_meanwhile(*args, **kwargs):
        binlog.write_bytes(whole)
        return real_decode(*args, **kwargs)

    monkeypatch.setattr(pipeline, "decode", written_on_meanwhile)
    first = pipeline.ingest(str(source), str(warehouse), spark=spark, validation=False)
    monkeypatch.undo()
    assert first.ends == {binlog.name: cut}
    assert publish.read_checkpoint(warehouse)[str(source.resolve())]["position"] == cut
    second = pipeline.ingest(str(source), str(warehouse), spark=spark, validation=False)
    assert [(i.name, i.start) for i in second.inputs] == [(binlog.name, cut)]
    logged = len(list(read_rows(str(SAMPLES[0]))))
    assert sum(first.rows.values()) + sum(second.rows.values()) == logged

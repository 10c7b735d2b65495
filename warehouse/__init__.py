"""The warehouse: where a run's output becomes tables, and everything that keeps them.

* :mod:`warehouse.storage` — where the tables' files are (a folder or ``s3://``) and the
  warehouse's state folder;
* :mod:`warehouse.layout` — a table's folders, names as path components;
* :mod:`warehouse.catalog` — the Iceberg catalog: tables, one snapshot per commit, readers;
* :mod:`warehouse.publish` — the journaled commit of a run and its recovery, the checkpoint;
* :mod:`warehouse.run_records` — the run record each commit adds (``_binlake.runs``);
* :mod:`warehouse.refusals` — the records of runs that did not publish;
* :mod:`warehouse.lock` — one writer at a time;
* :mod:`warehouse.maintenance` — snapshots expired, orphan files removed, staged files pruned.

The pipeline that produces a run's output (stage, decode, materialize, validate) is
:mod:`spark_jobs`; docs/ARCHITECTURE.md describes the warehouse contract.
"""

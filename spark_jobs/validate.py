"""Validate step: Great Expectations over a run folder says whether the run may be published.

A run folder is laid out like the warehouse (``changes/<db>/<table>/...``,
``metadata/table_schemas``, ``metadata/transactions``, optionally
``metadata/charset_checks``). :func:`validate` profiles each table's changes
(:mod:`spark_jobs.change_profile`: one read of the table's files, a Spark task
per table, in memory that does not grow with the run), generates the table's
expectations (:mod:`spark_jobs.expectations`) from the run's metadata
(:mod:`spark_jobs.run_facts`), has Great Expectations evaluate them on the
profile (a pandas batch of a few rows per file) and returns a
:class:`QualityOutcome`: the run may be published only when ``success`` is
true. Nothing is published or refused here; the caller does that. Spark never
reads the run's files back: the tasks read them with pyarrow.

Everything Great Expectations keeps lives in the warehouse, under ``quality/``:

* ``quality/gx/``: the file data context (its configuration, the datasource,
  the latest expectation suite and validation definition of every table;
  analytics and progress bars off);
* ``quality/runs/<run_id>/validation_results/``: the run's validation results
  (one JSON document per table, and one for the charset checks);
* ``quality/runs/<run_id>/data_docs/index.html``: the run's Data Docs, built
  for this run only, so that the report of every run stays readable, that of a
  failed run included: its validation results and the expectation suites they
  were checked against, self-contained (:mod:`spark_jobs.data_docs`: the pages
  load nothing from other hosts and open offline);
* ``quality/static/<id>/``: the styles, scripts, fonts and images the Data Docs
  pages load, one folder per content (``<id>`` is its hash) shared by every
  run's pages, which refer to it by relative path: a run adds only its pages.
  It is written directly in the warehouse, complete, before any page refers to
  it, and never changed afterwards.

A run validated again under the same id (the same input after a failure)
adds its results next to the earlier ones and rebuilds the run's Data Docs
from its own. Two validations must not write to one warehouse at the same
time: the data context's configuration is one file.

Great Expectations is imported by :func:`validate`, not with this module: the
import takes seconds (:func:`import_in_background` starts it early). Its data
context is loaded once per warehouse and process, and reused.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from spark_jobs import imports, tasks
from spark_jobs.change_profile import PROFILE_COLUMNS, COUNTS, measurement, profile_table
from spark_jobs.data_docs import make_self_contained
from spark_jobs.expectations import REPORTED, failure_line, table_expectations, verdict
from spark_jobs.run_facts import TableFacts, table_facts
from warehouse import storage
from warehouse.layout import name_of, path_part, table_folder

log = logging.getLogger(__name__)
# Great Expectations logs at INFO what only its own developers can act on (each of its functions it
# skips registering, each field default it looks up, "Loading 'datasources' -> []"): hundreds of lines
# a run. Its warnings and errors still show.
logging.getLogger("great_expectations").setLevel(logging.WARNING)

QUALITY = "quality"
CONTEXT = "gx"
RUNS = "runs"
DATA_DOCS = "data_docs"
SHARED_STATIC = "static"  # quality/static/<id>/: the Data Docs' static files, shared by the runs
DATASOURCE = "binlake_profiles"
RESULTS_STORE = "run_validation_results"
# Where the validation results store keeps a result: (suite, run name, run time, batch) under quality/runs/.
RESULTS_PATH = "{1}/validation_results/{0}/{2}/{3}.json"


@dataclass
class TableOutcome:
    """The validation of one table of a run; ``failures`` has one line per failed expectation."""

    database: str
    table: str
    rows: int
    success: bool
    expectations: int
    failures: list[str] = field(default_factory=list)


@dataclass
class QualityOutcome:
    """The validation of a run: it may be published when ``success`` is true.

    ``data_docs`` is the run's Data Docs index.html, relative to the warehouse root.
    """

    run_id: str
    success: bool
    tables: list[TableOutcome]
    data_docs: str | None
    seconds: float = 0.0  # how long the validation took

    def to_json(self) -> dict:
        """JSON-serialisable (Airflow XCom, ``metadata/runs``); :meth:`from_json` reads it back."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "QualityOutcome":
        return cls(**{**data, "tables": [TableOutcome(**table) for table in data["tables"]]})


def validate(spark, run_folder: str | os.PathLike[str], warehouse: Path, run_id: str, *,
             facts: str | os.PathLike[str] | None = None) -> QualityOutcome:
    """Validate the run folder at the location ``run_folder`` (a path, or in the warehouse's object
    store) of run ``run_id`` (see the module docstring); ``facts``: the folder whose
    ``metadata/`` the output is checked against, when not the run folder's own (a backfill
    publishes no metadata). Row changes that no expectation checked
    fail the run: a gate that checked nothing does not pass. ``spark`` runs the profiles, a
    task per table; without it (None) they run here, one after the other."""
    run_folder, warehouse, clock = str(run_folder).rstrip("/"), Path(warehouse), time.monotonic()
    facts = str(facts).rstrip("/") if facts is not None else run_folder
    tables = table_facts(_rows(f"{facts}/metadata/table_schemas"), _logged_rows(facts))
    log.info("run %s: validating %d tables of %s", run_id, len(tables), run_folder)
    profiles = _profiles(spark, run_folder, tables)
    charsets = _charset_measurements(f"{run_folder}/metadata/charset_checks")
    profiled = time.monotonic()
    context = _context(warehouse / QUALITY)
    from great_expectations.core.run_identifier import RunIdentifier

    run = RunIdentifier(run_name=run_id, run_time=datetime.now(timezone.utc))
    outcomes = [_validate_table(context, table, profile, charsets.get((table.database, table.table), []), run)
                for table, profile in zip(tables, profiles)]
    outcomes += _unchecked(run_folder, {(t.database, t.table) for t in outcomes if t.expectations or t.failures})
    data_docs = _build_data_docs(context, warehouse, run)
    outcome = QualityOutcome(run_id, all(t.success for t in outcomes), outcomes, data_docs,
                             round(time.monotonic() - clock, 3))
    for table in outcomes:
        for line in table.failures:
            log.warning("run %s: %s.%s: %s", run_id, table.database, table.table, line)
    log.info("run %s: quality %s, %d expectations over %d tables in %.1f s (profiles %.1f s); Data Docs: %s",
             run_id, verdict(outcome.success, sum(t.expectations for t in outcomes)),
             sum(t.expectations for t in outcomes), len(outcomes), outcome.seconds, profiled - clock, data_docs)
    return outcome


def import_in_background() -> threading.Thread:
    """Start importing Great Expectations in a thread (:func:`spark_jobs.imports.in_background`;
    it takes seconds of CPU: not while the JVM starts, which needs the CPU too), so that a run's
    validation does not wait for it."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    return imports.in_background("great_expectations")


def _import_gx() -> None:
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    import great_expectations  # noqa: F401


# -- the profiles ----------------------------------------------------------------------


def _profiles(spark, run_folder: str, tables: list[TableFacts]) -> list[list[dict] | str | None]:
    """Per table: its profile, the error that kept its files from being read, or None when it
    has no changes files."""
    jobs = [(table, _change_files(run_folder, table)) for table in tables]
    work = [job for job in jobs if job[1]]
    profile = functools.partial(_profile, f"{run_folder}/changes")
    done = iter(tasks.run(spark, profile, work) if spark is not None else [profile(job) for job in work])
    return [next(done) if files else None for _, files in jobs]


def _change_files(run_folder: str, table: TableFacts) -> list[str]:
    return _parquet_files(table_folder(run_folder, "changes", table.database, table.table))


def _parquet_files(folder: str) -> list[str]:
    """The Parquet files under the folder at the location ``folder``, in path order."""
    return [location for location in storage.files_under(folder) if location.endswith(".parquet")]


def _profile(root: str, job: tuple[TableFacts, list[str]]) -> list[dict] | str:
    """A Spark task: the table's profile, or the first line of the error that kept it from
    being made (files Spark's tasks cannot read fail the table, not the step)."""
    table, files = job
    try:
        return profile_table(table, [(file, file[len(root) + 1:]) for file in files])
    except Exception as exc:  # noqa: BLE001 -- reported as the table's failure
        return f"{type(exc).__name__}: {_first_line(exc)}"


def _charset_measurements(folder: str) -> dict[tuple[str, str], list[dict]]:
    """The charset round trips of ``metadata/charset_checks`` as measurements, by table."""
    measured: dict[tuple[str, str], list[dict]] = {}
    for row in _rows(folder):
        measured.setdefault((row["database"], row["table"]), []).append(measurement(
            "charset", column=row["column"], expected=row["charset"], charset_mismatches=row["mismatches"],
            example=row["example"], at=f"{row['mismatches']} of {row['checked']} strings"))
    return measured


# -- the run's metadata ------------------------------------------------------------


def _unchecked(run_folder: str, checked: set[tuple[str, str]]) -> list[TableOutcome]:
    """A failed outcome for each table of the run's ``changes`` that no expectation checked."""
    unchecked, root = [], f"{run_folder}/changes"
    tables: dict[tuple[str, str], list[str]] = {}
    for location in _parquet_files(root):
        parts = location[len(root) + 1:].split("/")
        if len(parts) > 2:
            tables.setdefault((name_of(parts[0]), name_of(parts[1])), []).append(location)
    for (database, table), files in sorted(tables.items()):
        rows = sum(storage.parquet_file(file).metadata.num_rows for file in files)
        if rows and (database, table) not in checked:
            unchecked.append(TableOutcome(database, table, rows, False, 0, [
                f"{rows} row changes that no expectation checked: the run holds no table version or transaction "
                "of the table to check them against"]))
    return unchecked


def _rows(folder: str) -> list[dict]:
    """The rows of every Parquet file of a metadata folder; none when it is absent."""
    return [row for file in _parquet_files(folder) for row in storage.read_parquet(file).to_pylist()]


def _logged_rows(run_folder: str) -> dict[tuple[str, str], int]:
    """Per (database, table), the row changes the run's transaction index gives it."""
    logged: dict[tuple[str, str], int] = {}
    for transaction in _rows(f"{run_folder}/metadata/transactions"):
        for entry in transaction["rows_per_table"]:
            key = (entry["database"], entry["table"])
            logged[key] = logged.get(key, 0) + entry["rows"]
    return logged


# -- Great Expectations ------------------------------------------------------------

_CONTEXTS: dict[Path, object] = {}  # the data context of each warehouse, loaded once per process


def _context(quality: Path):
    """The warehouse's file data context, set up on first use: validation results under
    ``quality/runs/``, no analytics, no progress bars, no data docs site of its own."""
    quality = quality.resolve()
    if quality in _CONTEXTS and (quality / CONTEXT / "great_expectations.yml").exists():
        return _CONTEXTS[quality]
    _import_gx()
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    quality.mkdir(parents=True, exist_ok=True)
    context = gx.get_context(mode="file", project_root_dir=str(quality))
    if context.variables.validation_results_store_name != RESULTS_STORE:
        log.info("setting up the Great Expectations context in %s", quality / CONTEXT)
        context.add_store(RESULTS_STORE, {
            "class_name": "ValidationResultsStore",
            "store_backend": {
                "class_name": "TupleFilesystemStoreBackend", "base_directory": f"../{RUNS}",
                "filepath_template": RESULTS_PATH, "filepath_suffix": None,
            },
        })
        default_store = context.variables.validation_results_store_name
        context.variables.validation_results_store_name = RESULTS_STORE
        context.variables.progress_bars = ProgressBarsConfig(globally=False)
        context.variables.analytics_enabled = False
        context.variables.data_docs_sites = {}
        context.variables.save()
        context.delete_store(default_store)
    context.data_sources.add_or_update_pandas(name=DATASOURCE)
    _CONTEXTS[quality] = context
    return context


def _run_suite(context, name: str, frame, expectations: list, run):
    """Evaluate ``expectations`` as the suite ``name`` on the pandas DataFrame ``frame``; the
    results are stored."""
    import great_expectations as gx

    datasource = context.data_sources.get(DATASOURCE)
    try:
        asset = datasource.get_asset(name)
    except LookupError:
        asset = datasource.add_dataframe_asset(name=name)
    try:
        batch = asset.get_batch_definition(name)
    except KeyError:
        batch = asset.add_batch_definition_whole_dataframe(name)
    suite = context.suites.add_or_update(gx.ExpectationSuite(name=name, expectations=expectations))
    definition = context.validation_definitions.add_or_update(
        gx.ValidationDefinition(name=name, data=batch, suite=suite)
    )
    return definition.run(batch_parameters={"dataframe": frame}, run_id=run, result_format={
        "result_format": "COMPLETE", "unexpected_index_column_names": REPORTED})


def _suite_name(table: TableFacts) -> str:
    """``<db>:<table>``, each part as its folder name (where ``:`` and ``.`` are escaped)."""
    return f"{path_part(table.database)}:{path_part(table.table)}"


def _frame(profile: list[dict]):
    """The profile as the pandas batch Great Expectations checks: counts as nullable integers."""
    import pandas as pd

    frame = pd.DataFrame(profile, columns=list(PROFILE_COLUMNS))
    for column in COUNTS.values():
        frame[column] = frame[column].astype("Int64")
    return frame


def _validate_table(context, table: TableFacts, profile: list[dict] | str | None, charsets: list[dict],
                    run) -> TableOutcome:
    """Evaluate the table's expectations on its profile."""
    if isinstance(profile, str):
        log.warning("%s: the changes cannot be read: %s", table.name, profile)
        return TableOutcome(table.database, table.table, 0, False, 0, [f"changes cannot be read: {profile}"])
    if profile is None:
        failures = [] if table.logged_rows == 0 else [
            f"no changes files, but the transaction index logged {table.logged_rows} rows"
        ]
        return TableOutcome(table.database, table.table, 0, not failures, 0, failures)
    if not table.columns:
        log.warning("%s: no version in metadata/table_schemas, its columns are not checked", table.name)
    expectations = table_expectations(table, charsets=bool(charsets))
    result = _run_suite(context, _suite_name(table), _frame(profile + charsets), expectations, run)
    rows = sum(row["rows"] for row in profile if row["check"] == "row_count")
    failures = [failure_line(r) for r in result.results if not r.success]
    if not table.columns:
        failures.insert(0, "no table version in metadata/table_schemas")
    log.info("%s: %d rows, %d expectations, %d failed", table.name, rows, len(result.results), len(failures))
    return TableOutcome(table.database, table.table, rows, not failures, len(result.results), failures)


def _build_data_docs(context, warehouse: Path, run) -> str | None:
    """The run's Data Docs under ``quality/runs/<run_id>/data_docs``, of this run's results and
    the suites they were checked against only, self-contained, their static files in the shared
    ``quality/static/<id>``; the index.html relative to the warehouse, None when nothing was
    validated."""
    from great_expectations.data_context.types.resource_identifiers import ExpectationSuiteIdentifier

    results = [key for key in context.validation_results_store.list_keys() if key.run_id == run]
    if not results:
        return None
    suites = [ExpectationSuiteIdentifier(name)
              for name in sorted({key.expectation_suite_identifier.name for key in results})]
    folder = Path(RUNS) / run.run_name / DATA_DOCS
    shutil.rmtree(warehouse / QUALITY / folder, ignore_errors=True)
    site = f"run_{run.run_name}"
    context.variables.data_docs_sites = {site: {
        "class_name": "SiteBuilder", "show_how_to_buttons": False,
        "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": f"../{folder}"},
        "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
    }}
    try:
        context.build_data_docs(site_names=[site], resource_identifiers=[*results, *suites])
    finally:
        context.variables.data_docs_sites = {}
    index = warehouse / QUALITY / folder / "index.html"
    if not index.exists():
        return None
    make_self_contained(index.parent, assets=warehouse / QUALITY / SHARED_STATIC)
    return str(index.relative_to(warehouse))


def _first_line(error: Exception) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__

"""The binlake view in the Airflow 3 UI: streams, refusals, lag, last runs and their quality.

Airflow's API server mounts the FastAPI app below under ``/binlake``, and the
``external_views`` entry puts a "binlake" link in the navigation that shows
the page inside the Airflow UI. Two routes:

- ``/binlake/`` — one server-rendered HTML page (no JavaScript): the refused
  runs waiting for a decision of the user, when there are any (stream, when,
  the problem, the way forward); the runs that failed since their stream's
  last success, when there are any (run, stream, source, when, the step, the
  first error, link to the Airflow run); a table of streams (source,
  checkpoint position, GTID set, newest binlog object, lag in files and bytes,
  lag in time) and a table of the last runs (source, rows per table, what the
  user accepted and what the run noticed, quality outcome, links to the run's
  Data Docs and to its Airflow run);
- ``/binlake/quality/<path>`` — the warehouse's ``quality/`` folder, so the
  Data Docs (Great Expectations' HTML report) of each run open from the page.

A link to an Airflow run goes to the Airflow UI's page of that run,
``<Airflow base>/dags/<dag_id>/runs/<run_id>`` (each part URL-escaped), the
base being where the API server mounted this app (its root path without
``/binlake``), and opens in the whole window, not inside the UI's frame.

The warehouse is found through :func:`airflow_tasks.settings.warehouse_path` on
every request, so changing the Airflow Variable takes effect without a
restart. The data comes from :func:`airflow_tasks.warehouse_status.status`.

Access. Airflow does not put a plugin's app behind its login, so the app does
it itself, with Airflow's own checks, as app-wide dependencies that every
route (present and future) goes through:

- **Who**: the caller must be logged in to Airflow. The token is the one the
  Airflow UI keeps in its ``_token`` cookie (a logged-in browser sends it with
  the page, also inside the UI's frame) or an ``Authorization: Bearer`` header
  (API clients, ``POST /auth/token``). Airflow's
  :func:`~airflow.api_fastapi.core_api.security.get_user` reads it and answers
  as for its own API: no token 401 ``Not authenticated``, an expired one 401
  ``Token Expired``, a forged, damaged or revoked (logged out) one 403
  ``Invalid JWT token``.
- **What**: the caller must be allowed to read the runs of the
  ``binlog_ingest`` DAG (:func:`~airflow.api_fastapi.core_api.security.requires_access_dag`
  with ``GET`` on ``DagAccessEntity.RUN``), else 403 ``Forbidden``. The page
  shows what that DAG's runs produced (streams, checkpoints, row counts per
  table, quality failures) and the Data Docs quote rows of the data, so
  whoever may not read those runs in the Airflow UI may not read them here
  either. Mere access to the Airflow website (``AccessView.WEBSITE``) would
  let every user of a deployment that restricts DAGs per role or team see
  them. The auth manager of the deployment (simple, FAB, Keycloak...)
  decides, as it does for the DAG's own pages.
- **Read-only**: the routes are ``GET`` only, and any other method is refused
  with 405 before the access check, so a route added later cannot write
  under a read permission.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timezone
from html import escape
from http import HTTPStatus
from pathlib import Path
from typing import Callable
from urllib.parse import quote

from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
from airflow.api_fastapi.core_api.security import requires_access_dag
from airflow.plugins_manager import AirflowPlugin
from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse

from airflow_tasks.settings import warehouse_path
from airflow_tasks.warehouse_status import (
    FailedRun, RunStatus, StoreFor, StreamStatus, TimeLag, WarehouseStatus, airflow_dag_run, status,
)

log = logging.getLogger(__name__)

URL_PREFIX = "/binlake"
QUALITY = "quality"
INGEST_DAG_ID = "binlog_ingest"
"""The DAG whose runs the view shows: reading them in Airflow is what opens the view."""
READ_METHODS = frozenset({"GET", "HEAD"})

may_read_ingest_runs = requires_access_dag("GET", DagAccessEntity.RUN, param_dag_id=INGEST_DAG_ID)
"""Airflow's check that the caller is logged in and may read the runs of :data:`INGEST_DAG_ID`."""


def read_only(request: Request) -> None:
    """Refuse (405) any request that is not a read: the view never changes anything."""
    if request.method not in READ_METHODS:
        log.warning("binlake view: refused %s %s (the view is read-only)", request.method, request.url.path)
        raise HTTPException(status_code=HTTPStatus.METHOD_NOT_ALLOWED, detail="the binlake view is read-only",
                            headers={"Allow": "GET"})


def create_app(warehouse: Path | None = None, store_for: StoreFor | None = None) -> FastAPI:
    """The view's app. ``warehouse`` fixes the warehouse (default: :func:`warehouse_path` per
    request); ``store_for`` opens sources for listing (default: the Airflow S3 connection).
    Every route is read-only and needs an Airflow login that may read the ingest DAG's runs."""
    app = FastAPI(title="binlake", docs_url=None, redoc_url=None, openapi_url=None,
                  dependencies=[Depends(read_only), Depends(may_read_ingest_runs)])

    def current_warehouse() -> Path:
        return warehouse if warehouse is not None else warehouse_path()

    @app.get("/", response_class=HTMLResponse)
    def overview(request: Request) -> HTMLResponse:
        try:
            root = current_warehouse()
        except ValueError as exc:  # a warehouse setting binlake cannot use: say which and why
            log.error("binlake view: %s", exc)
            return HTMLResponse(render_settings_error(str(exc)), status_code=500)
        report = status(root, store_for)
        links = Links(docs=lambda relative: _docs_href(request, report.warehouse, relative),
                      airflow_base=_airflow_base(request))
        return HTMLResponse(render_page(report, links))

    @app.get("/quality/{path:path}", name=QUALITY)
    def quality_file(path: str) -> FileResponse:
        return FileResponse(_quality_file(current_warehouse(), path))

    return app


def _quality_file(warehouse: Path, path: str) -> Path:
    """The file ``path`` names inside ``warehouse/quality`` (a folder gives its ``index.html``);
    404 for anything else, including paths that climb out of the folder."""
    root = (warehouse / QUALITY).resolve()
    target = (root / path).resolve()
    if target.is_dir():
        target = target / "index.html"
    if not target.is_relative_to(root) or not target.is_file():
        raise HTTPException(status_code=404, detail=f"no such report: {path}")
    return target


def _airflow_base(request: Request) -> str:
    """The Airflow UI's root path: where the API server mounted this app, without ``/binlake``
    (empty when Airflow is served at the root of its host)."""
    return str(request.scope.get("root_path") or "").rstrip("/").removesuffix(URL_PREFIX)


def _docs_href(request: Request, warehouse: Path, relative: str | None) -> str | None:
    """The URL of a Data Docs page given relative to the warehouse root, None when it is not there."""
    if not relative or not relative.startswith(f"{QUALITY}/") or not (warehouse / relative).is_file():
        return None
    return request.url_for(QUALITY, path=relative.removeprefix(f"{QUALITY}/")).path


# ---------------------------------------------------------------- HTML

STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5rem; color: #1f2933; }
h1 { font-size: 1.4rem; margin-bottom: 0.2rem; } h2 { font-size: 1.1rem; margin-top: 1.8rem; }
.where { color: #52606d; font-size: 0.9rem; }
table { border-collapse: collapse; margin-top: 0.5rem; }
th, td { border-bottom: 1px solid #d9e2ec; padding: 0.35rem 0.8rem; text-align: left; vertical-align: top; }
th { background: #f0f4f8; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
code { font-size: 0.9em; } .empty { color: #52606d; font-style: italic; }
.ok { color: #107c41; font-weight: 600; } .bad { color: #c62828; font-weight: 600; }
.unknown { color: #8d6e00; } .per-table { margin: 0; padding-left: 1rem; }
.refused { border: 2px solid #c62828; background: #fdecea; padding: 0.2rem 1rem 0.8rem; margin-top: 1.2rem; }
.refused h2 { color: #c62828; margin-top: 0.8rem; } .refused th { background: #f9d6d2; }
.notes { margin: 0; padding-left: 1rem; font-size: 0.85em; color: #52606d; } .notes .accepted { color: #8d6e00; }
.failed { border: 2px solid #c62828; padding: 0.2rem 1rem 0.8rem; margin-top: 1.2rem; }
.failed h2 { color: #c62828; margin-top: 0.8rem; } .since { display: block; font-size: 0.85em; color: #52606d; }
"""


@dataclass(frozen=True)
class Links:
    """How the page links out: ``docs`` turns a run's Data Docs path into a link (or None);
    ``airflow_base`` is the Airflow UI's root path (``""`` at the root of its host)."""

    docs: Callable[[str | None], str | None] = lambda relative: None
    airflow_base: str = ""

    def airflow_run(self, airflow_run: str | None) -> str | None:
        """The Airflow UI page of a recorded Airflow run (``dag_id/run_id``), None without one."""
        parts = airflow_dag_run(airflow_run)
        if parts is None:
            return None
        dag_id, run_id = (quote(part, safe="") for part in parts)
        return f"{self.airflow_base}/dags/{dag_id}/runs/{run_id}"


def render_page(report: WarehouseStatus, links: Links) -> str:
    """The whole HTML page."""
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return _document(
        f"<p class='where'>Warehouse <code>{escape(str(report.warehouse))}</code> &middot; as of {generated}</p>"
        f"{refusals_section(report.refusals)}"
        f"{failures_section(report.failures, links)}"
        f"<h2>Streams</h2>{streams_table(report.streams)}"
        f"<h2>Last runs</h2>{runs_table(report.runs, links)}"
    )


def render_settings_error(message: str) -> str:
    """The page shown when the warehouse setting cannot be used."""
    return _document(
        f"<p class='bad'>The warehouse setting cannot be used: {escape(message)}</p>"
        "<p>Set the Airflow Variable <code>binlake_warehouse_uri</code> (or the environment variable "
        "<code>BINLAKE_WAREHOUSE_URI</code>) to a local folder or a <code>file://</code> URI.</p>"
    )


def _document(body: str) -> str:
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>binlake warehouse</title>"
        f"<style>{STYLE}</style></head><body><h1>binlake warehouse</h1>{body}</body></html>"
    )


def refusals_section(refusals: list[dict]) -> str:
    """The refused runs waiting for a decision of the user, one row per stream; nothing when none.
    Every text is escaped: problems name files of the source, which anyone writing there chooses."""
    if not refusals:
        return ""
    rows = "".join(
        "<tr>"
        f"<td><code>{escape(str(refusal.get('stream') or ''))}</code></td>"
        f"<td><code>{escape(str(refusal.get('source') or ''))}</code></td>"
        f"<td>{escape(_when(refusal.get('at')))}</td>"
        f"<td>{escape(str(refusal.get('problem') or ''))}</td>"
        f"<td>{escape(str(refusal.get('way_forward') or ''))}</td>"
        "</tr>"
        for refusal in refusals
    )
    return (
        "<section class='refused'><h2>Refused runs waiting for a decision</h2>"
        "<p>These streams publish nothing until their source is mended or a run is started with the decision "
        "the way forward names.</p>"
        "<table id='refusals'><tr><th>stream</th><th>source</th><th>refused at</th><th>problem</th>"
        f"<th>way forward</th></tr>{rows}</table></section>"
    )


def _when(at: object) -> str:
    """A refusal's time (ISO 8601) as the runs show theirs; the text as it is when it is no time."""
    try:
        moment = datetime.fromisoformat(str(at))
    except ValueError:
        return str(at or "")
    return _moment(moment)


def _moment(moment: datetime | None) -> str:
    """A time as the page shows every time: ``2026-03-02 09:30:00 UTC`` (naive ones are UTC)."""
    if moment is None:
        return ""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def failures_section(failures: list[FailedRun], links: Links) -> str:
    """The runs that failed since their stream's last success, newest first; nothing when none.
    They leave the page once a later run of their stream succeeds."""
    if not failures:
        return ""
    rows = "".join(
        "<tr>"
        f"<td>{_run_id(failure.run_id)}</td>"
        f"<td><code>{escape(failure.stream)}</code></td>"
        f"<td><code>{escape(failure.source or '')}</code></td>"
        f"<td>{_moment(failure.at)}</td>"
        f"<td>{escape(failure.step)}</td>"
        f"<td>{escape(failure.error)}</td>"
        f"<td>{_airflow_link(failure.airflow_run, links)}</td>"
        "</tr>"
        for failure in failures
    )
    return (
        "<section class='failed'><h2>Failed runs</h2>"
        "<p>These runs published nothing and left their stream's checkpoint where it was; each stays here until "
        "a later run of its stream succeeds. Refused runs are listed under their own heading.</p>"
        "<table id='failures'><tr><th>run</th><th>stream</th><th>source</th><th>failed at</th><th>step</th>"
        f"<th>first error</th><th>Airflow run</th></tr>{rows}</table></section>"
    )


def _run_id(run_id: str | None) -> str:
    return "<span class='empty'>not planned</span>" if run_id is None else f"<code>{escape(run_id)}</code>"


def _airflow_link(airflow_run: str | None, links: Links) -> str:
    """A link to the Airflow run's page, in the whole window (the page may be in the UI's frame)."""
    href = links.airflow_run(airflow_run)
    if href is None:
        return ""
    _, run_id = airflow_dag_run(airflow_run)
    return f"<a href='{escape(href)}' target='_top'>{escape(run_id)}</a>"


def streams_table(streams: list[StreamStatus]) -> str:
    """One row per stream: its source, checkpoint position, GTID set, newest binlog object, lag."""
    if not streams:
        return "<p class='empty'>No checkpoint yet: no run has been committed to this warehouse.</p>"
    rows = "".join(
        "<tr>"
        f"<td><code>{escape(s.stream)}</code></td>"
        f"<td><code>{escape(s.source)}</code></td>"
        f"<td><code>{escape(s.checkpoint_file)}</code> at {s.checkpoint_position:,}</td>"
        f"<td>{_gtids(s)}</td>"
        f"<td>{_newest(s)}</td>"
        f"<td>{_lag(s)}</td>"
        f"<td>{_time_lag(s.time_lag)}</td>"
        "</tr>"
        for s in streams
    )
    return ("<table id='streams'><tr><th>stream</th><th>source</th><th>position</th><th>GTID set</th>"
            f"<th>newest binlog</th><th>lag</th><th>lag in time</th></tr>{rows}</table>")


def _gtids(stream: StreamStatus) -> str:
    if not stream.uses_gtids:
        return "<span class='empty'>no GTIDs: file and position</span>"
    return f"<code>{escape(stream.gtids)}</code>" if stream.gtids else "<span class='empty'>(empty)</span>"


def _newest(stream: StreamStatus) -> str:
    if stream.newest_object is None:
        return "<span class='unknown'>unknown</span>"
    return f"<code>{escape(stream.newest_object)}</code> ({_size(stream.newest_size)})"


def _lag(stream: StreamStatus) -> str:
    if stream.lag_files is None:
        return f"<span class='unknown'>unknown: {escape(stream.unknown_reason or '')}</span>"
    if stream.up_to_date:
        return "<span class='ok'>up to date</span>"
    files = "1 file" if stream.lag_files == 1 else f"{stream.lag_files} files"
    return f"<span class='bad'>{files}, {_size(stream.lag_bytes)} behind</span>"


def _time_lag(lag: TimeLag) -> str:
    """The lag in time in words: ``up to date``, ``3 min 20 s behind``, ``at least 2 h behind``
    (the source has grown since a run saw it), or why it is unknown."""
    if lag.seconds is None:
        return f"<span class='unknown'>unknown: {escape(lag.unknown_reason or '')}</span>"
    if lag.up_to_date:
        return "<span class='ok'>up to date</span>"
    behind = "less than 1 s" if lag.seconds < 1 else duration(lag.seconds)
    if not lag.at_least:
        return f"<span class='bad'>{behind} behind</span>"
    return (f"<span class='bad'>at least {behind} behind</span><span class='since'>newer events are not timed: a "
            f"run last read the source at {_moment(lag.seen_at)}</span>")


def duration(seconds: float) -> str:
    """A span of time for people, its two largest units: ``45 s``, ``3 min 20 s``, ``2 h 5 min``,
    ``3 d 4 h``."""
    left, parts = int(seconds), []
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60), ("s", 1)):
        count, left = divmod(left, size)
        if count or parts:  # from the largest unit there is
            parts.append((count, unit))
    return " ".join(f"{count} {unit}" for count, unit in parts[:2] if count) or "0 s"


def runs_table(runs: list[RunStatus], links: Links) -> str:
    """One row per run, newest first: its source, counts, rows per table, quality and its Data Docs,
    and its Airflow run."""
    if not runs:
        return "<p class='empty'>No runs yet.</p>"
    rows = "".join(
        "<tr>"
        f"<td><code>{escape(run.run_id)}</code></td>"
        f"<td><code>{escape(run.stream or '')}</code></td>"
        f"<td><code>{escape(run.source or '')}</code></td>"
        f"<td>{_finished(run)}</td>"
        f"<td class='num'>{'' if run.seconds is None else f'{run.seconds:.1f} s'}</td>"
        f"<td class='num'>{run.inputs}</td>"
        f"<td class='num'>{_size(run.bytes)}</td>"
        f"<td class='num'>{run.rows:,}</td>"
        f"<td>{_per_table(run.rows_per_table)}</td>"
        f"<td>{_notes(run)}</td>"
        f"<td>{_quality(run)}</td>"
        f"<td>{_docs_link(links.docs(run.quality.data_docs))}</td>"
        f"<td>{_airflow_link(run.airflow_run, links)}</td>"
        "</tr>"
        for run in runs
    )
    return ("<table id='runs'><tr><th>run</th><th>stream</th><th>source</th><th>finished</th><th>took</th>"
            "<th>files</th><th>bytes</th><th>rows</th><th>rows per table</th><th>accepted / notices</th>"
            f"<th>quality</th><th>Data Docs</th><th>Airflow run</th></tr>{rows}</table>")


def _finished(run: RunStatus) -> str:
    return _moment(run.finished)


def _per_table(rows_per_table: dict[str, int]) -> str:
    if not rows_per_table:
        return "<span class='empty'>no row changes</span>"
    items = "".join(f"<li><code>{escape(table)}</code>: {rows:,}</li>" for table, rows in sorted(rows_per_table.items()))
    return f"<ul class='per-table'>{items}</ul>"


def _notes(run: RunStatus) -> str:
    """What the user accepted for the run, what it noticed, the transactions it skipped as read."""
    items = [f"<li><span class='accepted'>accepted:</span> {escape(text)}</li>" for text in run.accepted]
    items += [f"<li>notice: {escape(text)}</li>" for text in run.notices]
    if run.skipped_transactions:
        count = run.skipped_transactions
        items.append(f"<li>skipped {count:,} transaction{'' if count == 1 else 's'} already read</li>")
    return f"<ul class='notes'>{''.join(items)}</ul>" if items else ""


def _quality(run: RunStatus) -> str:
    quality = run.quality
    if not quality.validated:
        return "<span class='empty'>not validated</span>"
    if quality.success:
        return "<span class='ok'>&#10003; passed</span>"
    return f"<span class='bad'>&#10007; {quality.failing} failing</span>"


def _docs_link(href: str | None) -> str:
    return "" if href is None else f"<a href='{escape(href)}' target='_blank' rel='noopener'>Data Docs</a>"


def _size(count: int | None) -> str:
    """Bytes for people: ``812 B``, ``5.1 KiB``, ``3.2 MiB``."""
    if count is None:
        return ""
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            break
        size /= 1024
    return f"{count:,} B" if unit == "B" else f"{size:.1f} {unit}"


# ---------------------------------------------------------------- Airflow


class BinlakeViewPlugin(AirflowPlugin):
    """Mounts the view under ``/binlake`` and adds it to the Airflow UI navigation."""

    name = "binlake_view"
    fastapi_apps = [{"app": create_app(), "url_prefix": URL_PREFIX, "name": "binlake"}]
    external_views = [{
        "name": "binlake",
        "href": f"{URL_PREFIX}/",
        "destination": "nav",
        "category": "browse",
        "url_route": "binlake",
    }]

"""plugins.binlake_view: the page and the Data Docs files, through FastAPI's TestClient.

The warehouse is built by hand (checkpoint, run records, a Data Docs page) so
that every state the page shows is present at once: a named stream with GTIDs
behind its source and a stream of an older checkpoint whose source cannot be
listed; runs that passed (with a gap the user accepted), failed and were not
validated. A refusal waiting for a decision is added by the tests about it.
The passed run belongs to an Airflow run and saw the named stream's source as
it is now, 200 seconds past the stream's last commit: the stream's lag in time.
The failed runs come from a real ingest of a binlog cut inside an event, then
made whole.

Every request goes through Airflow's own access checks, as in the API server:
the module gives this process a fresh, migrated Airflow metadata database
(SQLite; the checks read revoked tokens and DAG teams from it) and Airflow's
SimpleAuthManager, whose tokens the requests carry the way a logged-in
browser does (the ``_token`` cookie) or an API client does (``Authorization:
Bearer``).
"""

from __future__ import annotations

import base64
import json
import shutil
from datetime import datetime, timedelta, timezone
from html.parser import HTMLParser
from pathlib import Path

import jwt
import pytest
from airflow import settings
from airflow.api_fastapi.app import create_auth_manager, purge_cached_app
from airflow.api_fastapi.auth.managers.base_auth_manager import BaseAuthManager
from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
from airflow.utils.db import initdb
from fastapi import FastAPI
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from binlog_codec.errors import TruncatedError
from binlog_codec.reader import BinlogReader
from plugins.binlake_view import BinlakeViewPlugin, create_app, duration
from stage.object_store import open_store
from warehouse import refusals
from warehouse_records import commit_run_record
from spark_jobs.positions import MissingFiles
from warehouse.publish import CHECKPOINT

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((REPO_ROOT / "samples").glob("mariadb-bin.0*"))
FINISHED = datetime(2026, 3, 2, 9, 30, tzinfo=timezone.utc)
DOCS = "quality/runs/run-passed/data_docs/index.html"
LAST_COMMIT = datetime(2026, 3, 2, 9, 30, tzinfo=timezone.utc)  # of the named stream's last transaction
AIRFLOW_RUN = ("binlog_ingest", "manual__2026-03-02T09:29:00+00:00")
AIRFLOW_HREF = "/dags/binlog_ingest/runs/manual__2026-03-02T09%3A29%3A00%2B00%3A00"
SIMPLE_AUTH_MANAGER = "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
READER = SimpleAuthManagerUser(username="reader", role="viewer")


class Tables(HTMLParser):
    """The text of every cell of every ``<table id=...>``, and every link, of a page (``html``)."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.html = html
        self.tables: dict[str, list[list[str]]] = {}
        self.links: dict[str, str] = {}
        self._table = self._href = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self._table = self.tables.setdefault(attrs.get("id"), [])
        elif tag == "tr" and self._table is not None:
            self._table.append([])
        elif tag in ("td", "th") and self._table is not None:
            self._table[-1].append("")
        elif tag == "a":
            self._href = attrs["href"]

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._table is not None and self._table and self._table[-1]:
            self._table[-1][-1] += data
        if self._href is not None:
            self.links[data] = self._href
            self._href = None

    def rows(self, table: str) -> list[dict[str, str]]:
        """The rows of ``table`` as header → cell text."""
        header, *body = self.tables[table]
        return [dict(zip(header, (" ".join(cell.split()) for cell in row))) for row in body]


@pytest.fixture(scope="module")
def auth_manager(tmp_path_factory) -> BaseAuthManager:
    """Airflow's SimpleAuthManager over a fresh metadata database, as the API server has them;
    this process's Airflow goes back to its own database after the module."""
    home = tmp_path_factory.mktemp("airflow")
    with pytest.MonkeyPatch.context() as airflow_env:
        airflow_env.setenv("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", f"sqlite:///{home}/airflow.db")
        airflow_env.setenv("AIRFLOW__CORE__AUTH_MANAGER", SIMPLE_AUTH_MANAGER)
        airflow_env.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS", "False")
        airflow_env.setenv("AIRFLOW__API_AUTH__JWT_SECRET", base64.urlsafe_b64encode(b"binlake view tests" * 4).decode())
        use_airflow_database()
        initdb()
        yield create_auth_manager()
    purge_cached_app()
    use_airflow_database()


def use_airflow_database() -> None:
    """Point this process's Airflow at the database its configuration names now."""
    settings.dispose_orm()
    settings.configure_vars()
    settings.configure_orm()


@pytest.fixture
def token(auth_manager) -> str:
    """The token of a logged-in user with Airflow's viewer role (who may read every DAG's runs)."""
    return auth_manager.generate_jwt(READER)


def browser(app: FastAPI, token: str | None, **options) -> TestClient:
    """A client calling ``app`` the way a browser does: with the Airflow UI's ``_token`` cookie
    when logged in (``token``), with nothing otherwise."""
    return TestClient(app, cookies={} if token is None else {"_token": token}, **options)


@pytest.fixture
def warehouse(tmp_path) -> Path:
    """Two streams (one named, with GTIDs, its source a folder two files ahead of its checkpoint;
    one of an older checkpoint, its source gone) and three runs."""
    source = tmp_path / "binlogs"
    source.mkdir()
    for sample in SAMPLES:
        shutil.copyfile(sample, source / sample.name)
    (source / "mariadb-bin.000003").write_bytes(b"\xfebin" + b"\0" * 996)
    root = tmp_path / "warehouse"
    write_json(root / CHECKPOINT, {
        "shop-primary": {
            "file": "mariadb-bin.000002", "position": 2000, "source": source.as_uri(), "flavour": "mariadb",
            "gtids": "0-1-120", "last": {"gtid": "0-1-120", "timestamp": int(LAST_COMMIT.timestamp()), "server_id": 1},
            "files": {"mariadb-bin.000002": {"identity": {}, "position": 2000, "stamp": [2272, 1], "rotate_to": None}},
            "continuity": "gtid",
        },
        str(tmp_path / "gone"): {"file": "mysql-bin.000007", "position": 4567},  # written before streams
    })
    write_run(root, "run-passed", FINISHED, {"success": True, "data_docs": DOCS, "tables": [
        {"database": "shop", "table": "orders", "failures": []}]},
        stream="shop-primary", continuity="gtid", gtid_set="0-1-120", skipped_transactions=2,
        accepted=["missing files mariadb-bin.000004 <script>alert('accepted')</script>"],
        notices=["mariadb-bin.000001 holds other bytes; the stream found its place by its GTID set"],
        airflow_run="/".join(AIRFLOW_RUN), source_newest_file="mariadb-bin.000003", source_newest_size=1000,
        source_newest_event=LAST_COMMIT + timedelta(seconds=200))
    write_run(root, "run-failed", FINISHED - timedelta(hours=1), {"success": False, "tables": [
        {"database": "shop", "table": "orders", "failures": ["amount out of range", "_binlog_pos not unique"]}]})
    write_run(root, "run-unchecked", FINISHED - timedelta(hours=2), None)
    docs = root / DOCS
    docs.parent.mkdir(parents=True)
    docs.write_text("<html><body>Great Expectations report of run-passed</body></html>")
    return root


@pytest.fixture
def page(warehouse, token) -> Tables:
    reply = browser(create_app(warehouse, open_store), token).get("/")
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/html")
    return Tables(reply.text)


def test_streams_show_source_position_gtid_set_newest_binlog_and_lag(page, warehouse):
    rows = {row["stream"]: row for row in page.rows("streams")}
    assert list(rows) == [str(warehouse.parent / "gone"), "shop-primary"]  # by name
    behind = rows["shop-primary"]
    assert behind["source"] == (warehouse.parent / "binlogs").as_uri()
    assert (behind["position"], behind["GTID set"]) == ("mariadb-bin.000002 at 2,000", "0-1-120")
    assert behind["newest binlog"] == "mariadb-bin.000003 (1,000 B)"
    assert SAMPLES[1].stat().st_size - 2000 + 1000 == 1272  # the rest of .000002, all of .000003
    assert behind["lag"] == "2 files, 1.2 KiB behind"
    assert behind["lag in time"] == "3 min 20 s behind"  # the source as run-passed saw it: .000003, 1,000 B
    gone = rows[str(warehouse.parent / "gone")]  # an entry of an older checkpoint: named after its source
    assert gone["source"] == str(warehouse.parent / "gone")
    assert (gone["position"], gone["GTID set"]) == ("mysql-bin.000007 at 4,567", "no GTIDs: file and position")
    assert gone["newest binlog"] == "unknown" and gone["lag"].startswith("unknown: cannot list the source")
    assert gone["lag in time"] == "unknown: the checkpoint records no commit time of a last transaction"
    assert "refusals" not in page.tables and "Refused runs" not in page.html


def test_runs_show_counts_per_table_and_quality_newest_first(page):
    runs = page.rows("runs")
    assert [run["run"] for run in runs] == ["run-passed", "run-failed", "run-unchecked"]
    passed, failed, unchecked = runs
    assert passed["finished"] == "2026-03-02 09:30:00 UTC" and passed["took"] == "12.5 s"
    assert (passed["files"], passed["bytes"], passed["rows"]) == ("2", "5.1 KiB", "17")
    assert passed["rows per table"] == "shop.customers: 6shop.orders: 11"
    assert passed["quality"] == "✓ passed" and passed["Data Docs"] == "Data Docs"
    assert failed["quality"] == "✗ 2 failing" and failed["Data Docs"] == ""
    assert unchecked["quality"] == "not validated"


def test_a_source_grown_since_a_run_saw_it_shows_the_lag_in_time_as_a_lower_bound(warehouse, token):
    (warehouse.parent / "binlogs" / "mariadb-bin.000004").write_bytes(b"\xfebin" + b"\0" * 96)
    page = Tables(browser(create_app(warehouse, open_store), token).get("/").text)
    behind = {row["stream"]: row for row in page.rows("streams")}["shop-primary"]
    assert behind["lag in time"] == ("at least 3 min 20 s behind"
                                     "newer events are not timed: a run last read the source at 2026-03-02 09:30:00 UTC")


def test_runs_show_their_source(page):
    assert [run["source"] for run in page.rows("runs")] == ["file:///binlogs"] * 3


def test_a_run_links_to_its_airflow_run(page):
    passed, failed, unchecked = page.rows("runs")
    assert passed["Airflow run"] == AIRFLOW_RUN[1] and page.links[AIRFLOW_RUN[1]] == AIRFLOW_HREF
    assert failed["Airflow run"] == unchecked["Airflow run"] == ""  # recorded outside Airflow, or before
    assert f"<a href='{AIRFLOW_HREF}' target='_top'>" in page.html  # the whole window, not the UI's frame


def test_the_airflow_run_link_is_under_airflows_own_root_path(warehouse, token):
    client = browser(create_app(warehouse, open_store), token, root_path="/airflow/binlake")
    assert Tables(client.get("/").text).links[AIRFLOW_RUN[1]] == f"/airflow{AIRFLOW_HREF}"


def test_runs_show_their_stream_and_what_the_user_accepted(page):
    passed, failed, unchecked = page.rows("runs")
    assert passed["stream"] == "shop-primary"
    assert passed["accepted / notices"] == (
        "accepted: missing files mariadb-bin.000004 <script>alert('accepted')</script>"
        "notice: mariadb-bin.000001 holds other bytes; the stream found its place by its GTID set"
        "skipped 2 transactions already read")
    assert "<script>alert('accepted')" not in page.html
    # records written before streams: their stream is their source, they accepted nothing
    assert (failed["stream"], failed["accepted / notices"]) == ("file:///binlogs", "")
    assert (unchecked["stream"], unchecked["accepted / notices"]) == ("file:///binlogs", "")


GAP = MissingFiles(
    "file:///binlogs lacks mariadb-bin.000004<script>alert('problem')</script> between mariadb-bin.000003 and "
    "mariadb-bin.000005: reading on would lose their transactions",
    "Bring the missing files into the source (a compressed copy, .gz or .zst, is read as the file), or go on "
    "over the gap with --accept-gap (DAG param accept_gap) & the run record keeps it",
    ["mariadb-bin.000004<script>alert('problem')</script>"],
)


def test_a_refused_run_is_shown_with_its_problem_and_way_forward_until_cleared(warehouse, token):
    stream = "shop-primary <script>alert('stream')</script>"
    refusals.record(warehouse, stream, "file:///binlogs", GAP)
    (at,) = [refusal["at"] for refusal in refusals.waiting(warehouse)]
    client = browser(create_app(warehouse, open_store), token)
    page = Tables(client.get("/").text)
    assert page.rows("refusals") == [{
        "stream": "shop-primary <script>alert('stream')</script>",
        "source": "file:///binlogs",
        "refused at": datetime.fromisoformat(at).astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "problem": "file:///binlogs lacks mariadb-bin.000004<script>alert('problem')</script> between "
                   "mariadb-bin.000003 and mariadb-bin.000005: reading on would lose their transactions",
        "way forward": "Bring the missing files into the source (a compressed copy, .gz or .zst, is read as the "
                       "file), or go on over the gap with --accept-gap (DAG param accept_gap) & the run record "
                       "keeps it",
    }]
    assert "<h2>Refused runs waiting for a decision</h2>" in page.html
    assert page.html.index("Refused runs waiting for a decision") < page.html.index("<h2>Streams</h2>")  # on top
    assert "<script>" not in page.html  # every text escaped, the style and the rows alike
    assert "&lt;script&gt;alert(&#x27;stream&#x27;)&lt;/script&gt;" in page.html and "&amp; the run record" in page.html
    refusals.clear(warehouse, stream)
    cleared = Tables(client.get("/").text)
    assert "refusals" not in cleared.tables and "Refused runs" not in cleared.html


# ---------------------------------------------------------------- failed runs


def test_a_failed_run_is_shown_with_its_first_error_until_its_stream_succeeds(spark, tmp_path, token):
    from spark_jobs.ingest import ingest

    source, warehouse = tmp_path / "source", tmp_path / "warehouse"
    source.mkdir()
    sample = SAMPLES[0]
    last = list(BinlogReader(sample))[-1]
    (source / sample.name).write_bytes(sample.read_bytes()[: last.pos + last.size // 2])  # cut inside an event
    with pytest.raises(TruncatedError):
        ingest(str(source), str(warehouse), spark=spark, validation=False, airflow_run="/".join(AIRFLOW_RUN))
    client = browser(create_app(warehouse, open_store), token)
    page = Tables(client.get("/").text)
    (at,) = [failure["at"] for failure in refusals.failing(warehouse)]
    stream = str(source.resolve())
    assert page.rows("failures") == [{
        "run": "not planned", "stream": stream, "source": stream,
        "failed at": datetime.fromisoformat(at).astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "step": "plan",
        "first error": f"TruncatedError: {source.resolve() / sample.name}: at {last.pos} ({last.type_name}): "
                       f"event_size {last.size} runs past the end of the file: {last.size // 2} bytes left from "
                       "this position",
        "Airflow run": AIRFLOW_RUN[1],
    }]
    assert page.links[AIRFLOW_RUN[1]] == AIRFLOW_HREF
    assert page.html.index("<h2>Failed runs</h2>") < page.html.index("<h2>Streams</h2>")  # on top
    assert "No runs yet." in page.html and "refusals" not in page.tables  # nothing published, nothing refused
    shutil.copyfile(sample, source / sample.name)  # made whole
    ingest(str(source), str(warehouse), spark=spark, validation=False)
    after = Tables(client.get("/").text)
    assert "failures" not in after.tables and "Failed runs" not in after.html
    assert [run["stream"] for run in after.rows("runs")] == [stream]


def test_failed_runs_are_listed_newest_first_and_an_unreadable_record_is_listed_too(warehouse, token):
    folder = warehouse / refusals.FOLDER / refusals.FAILED
    for name, at, step in [("a-older", "2026-03-02T08:00:00+00:00", "validate"),
                           ("b-newer", "2026-03-02T09:00:00+00:00", "materialize")]:
        write_json(folder / f"{name}.json", {"stream": "shop-primary", "source": "file:///binlogs", "at": at,
                                            "run_id": name, "airflow_run": None, "step": step,
                                            "error": f"{step} <b>failed</b>", "seen": None})
    (folder / "c-broken.json").write_text("{not json")
    page = Tables(browser(create_app(warehouse, open_store), token).get("/").text)
    rows = page.rows("failures")
    assert [(row["run"], row["step"], row["first error"]) for row in rows[:2]] == [
        ("b-newer", "materialize", "materialize <b>failed</b>"), ("a-older", "validate", "validate <b>failed</b>")]
    assert rows[2]["stream"] == "(unknown: c-broken.json)" and "cannot be read" in rows[2]["first error"]
    assert "<b>failed</b>" not in page.html  # escaped


@pytest.mark.parametrize(("seconds", "words"), [
    (0, "0 s"), (45, "45 s"), (200, "3 min 20 s"), (3600, "1 h"), (3605, "1 h"), (7500, "2 h 5 min"),
    (3 * 86400 + 4 * 3600 + 5, "3 d 4 h"),
])
def test_durations_are_told_in_their_two_largest_units(seconds, words):
    assert duration(seconds) == words


def test_the_data_docs_link_opens_the_report(page, warehouse, token):
    link = page.links["Data Docs"]
    assert link == f"/{DOCS}"  # the app's own root; under Airflow it is mounted at /binlake
    reply = browser(create_app(warehouse, open_store), token).get(link)
    assert reply.status_code == 200 and "Great Expectations report of run-passed" in reply.text


def test_the_data_docs_link_carries_the_mount_prefix(warehouse, token):
    client = browser(create_app(warehouse, open_store), token, root_path="/binlake")
    assert Tables(client.get("/").text).links["Data Docs"] == f"/binlake/{DOCS}"


@pytest.mark.parametrize("path", ["runs/run-failed/index.html", "../metadata/checkpoint.json", "%2e%2e/metadata/checkpoint.json"])
def test_only_reports_inside_the_quality_folder_are_served(warehouse, token, path):
    assert browser(create_app(warehouse, open_store), token).get(f"/quality/{path}").status_code == 404


def test_an_empty_warehouse_says_so(tmp_path, token):
    text = browser(create_app(tmp_path), token).get("/").text
    assert "No checkpoint yet" in text and "No runs yet." in text


def test_without_a_fixed_warehouse_the_page_reads_the_settings(warehouse, token, monkeypatch):
    monkeypatch.delenv("AIRFLOW_VAR_BINLAKE_WAREHOUSE_URI", raising=False)
    monkeypatch.setenv("BINLAKE_WAREHOUSE_URI", warehouse.as_uri())
    client = browser(create_app(store_for=open_store), token)
    assert "run-passed" in client.get("/").text
    monkeypatch.setenv("AIRFLOW_VAR_BINLAKE_WAREHOUSE_URI", str(warehouse.parent / "elsewhere"))  # the Variable wins
    assert "No runs yet." in client.get("/").text
    monkeypatch.setenv("AIRFLOW_VAR_BINLAKE_WAREHOUSE_URI", "hdfs://namenode/warehouse")
    unusable = client.get("/")
    assert unusable.status_code == 500
    assert "hdfs:// is not supported" in unusable.text and "binlake_warehouse_uri" in unusable.text


def test_the_plugin_mounts_the_app_under_binlake_and_adds_a_navigation_entry():
    (app,) = BinlakeViewPlugin.fastapi_apps
    (view,) = BinlakeViewPlugin.external_views
    assert app["url_prefix"] == "/binlake" and view["href"] == "/binlake/" and view["destination"] == "nav"


# ---------------------------------------------------------------- access


PAGES = ["/", f"/{DOCS}"]


@pytest.mark.parametrize("path", PAGES)
def test_an_anonymous_request_is_refused_like_airflows_own_api(warehouse, path):
    reply = browser(create_app(warehouse, open_store), None).get(path)
    assert (reply.status_code, reply.json()) == (401, {"detail": "Not authenticated"})
    assert reply.headers["content-type"] == "application/json"  # Airflow's error, not the page


def test_an_anonymous_request_does_not_learn_which_reports_exist(warehouse):
    missing = browser(create_app(warehouse, open_store), None).get("/quality/runs/no-such-run/index.html")
    assert (missing.status_code, missing.json()) == (401, {"detail": "Not authenticated"})


@pytest.mark.parametrize("path", PAGES)
def test_a_logged_in_browser_gets_the_page_with_the_ui_cookie(warehouse, token, path):
    reply = browser(create_app(warehouse, open_store), token).get(path)
    assert reply.status_code == 200 and "run-passed" in reply.text


@pytest.mark.parametrize("path", PAGES)
def test_an_api_client_gets_the_page_with_a_bearer_token(warehouse, token, path):
    reply = TestClient(create_app(warehouse, open_store)).get(path, headers={"Authorization": f"Bearer {token}"})
    assert reply.status_code == 200 and "run-passed" in reply.text


def expired(auth_manager: BaseAuthManager) -> str:
    return auth_manager.generate_jwt(READER, expiration_time_in_seconds=-3600)


def promoted_to_admin(auth_manager: BaseAuthManager) -> str:
    """A viewer's token whose claims say admin, with the viewer's signature."""
    header, claims, signature = auth_manager.generate_jwt(READER).split(".")
    forged = json.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4))) | {"role": "admin"}
    return ".".join([header, base64.urlsafe_b64encode(json.dumps(forged).encode()).decode().rstrip("="), signature])


def signed_with_another_secret(auth_manager: BaseAuthManager) -> str:
    """A viewer's token, claims and all, signed again with a secret that is not the server's."""
    token = auth_manager.generate_jwt(READER)
    claims = jwt.decode(token, options={"verify_signature": False})
    return jwt.encode(claims, b"not the server's secret" * 4, algorithm=jwt.get_unverified_header(token)["alg"])


def logged_out(auth_manager: BaseAuthManager) -> str:
    token = auth_manager.generate_jwt(READER)
    auth_manager.revoke_token(token)  # what Airflow's logout does
    return token


@pytest.mark.parametrize(("make_token", "status", "detail"), [
    (expired, 401, "Token Expired"),
    (promoted_to_admin, 403, "Invalid JWT token"),
    (signed_with_another_secret, 403, "Invalid JWT token"),
    (logged_out, 403, "Invalid JWT token"),
    (lambda auth_manager: "not-a-token", 403, "Invalid JWT token"),
], ids=["expired", "claims-altered", "another-secret", "logged-out", "garbage"])
def test_a_bad_token_is_refused(warehouse, auth_manager, make_token, status, detail):
    bad = make_token(auth_manager)
    app = create_app(warehouse, open_store)
    for reply in (browser(app, bad).get("/"), TestClient(app).get("/", headers={"Authorization": f"Bearer {bad}"})):
        assert (reply.status_code, reply.json()) == (status, {"detail": detail})


def test_a_user_who_may_not_read_the_ingest_runs_is_forbidden(warehouse, auth_manager):
    no_role = auth_manager.generate_jwt(SimpleAuthManagerUser(username="newcomer", role=None))
    reply = browser(create_app(warehouse, open_store), no_role).get("/")
    assert (reply.status_code, reply.json()) == (403, {"detail": "Forbidden"})


def test_a_route_added_later_is_behind_the_login_too(warehouse, token):
    app = create_app(warehouse, open_store)

    @app.get("/later")
    def later() -> str:
        return "later page"

    assert browser(app, None).get("/later").status_code == 401
    assert browser(app, token).get("/later").json() == "later page"


# ---------------------------------------------------------------- read-only


def test_every_route_only_reads():
    routes = [route for route in create_app().routes if isinstance(route, APIRoute)]
    assert routes and all(route.methods <= {"GET", "HEAD"} for route in routes)


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
@pytest.mark.parametrize("path", PAGES)
def test_writing_is_refused_even_when_logged_in(warehouse, token, method, path):
    reply = browser(create_app(warehouse, open_store), token).request(method, path)
    assert (reply.status_code, reply.headers["allow"]) == (405, "GET")
    assert (warehouse / DOCS).read_text() == "<html><body>Great Expectations report of run-passed</body></html>"


def test_a_writing_route_added_later_is_refused(warehouse, token):
    app = create_app(warehouse, open_store)
    called = []

    @app.post("/later")
    def later() -> None:
        called.append("POST")

    reply = browser(app, token).post("/later")
    assert (reply.status_code, reply.json()) == (405, {"detail": "the binlake view is read-only"})
    assert called == []


def write_json(path: Path, content: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content))


def write_run(warehouse: Path, run_id: str, finished: datetime, quality: dict | None, **columns) -> None:
    """One ``metadata/runs`` record of a run over the two samples (5,262 bytes, 17 row changes);
    ``columns`` adds those of later versions (``stream``, ``accepted``...), else it is as older runs wrote."""
    record = {
        "run_id": run_id, "source": "file:///binlogs", "started": finished - timedelta(seconds=12.5),
        "finished": finished, "seconds": 12.5,
        "inputs": json.dumps([{"file": "mariadb-bin.000001", "start": 0}, {"file": "mariadb-bin.000002", "start": 0}]),
        "bytes": 5262, "rows": 17, "rows_per_table": json.dumps({"shop.customers": 6, "shop.orders": 11}),
        "checkpoint": "{}", "quality": None if quality is None else json.dumps({"run_id": run_id, **quality}),
        **columns,
    }
    commit_run_record(warehouse, record)

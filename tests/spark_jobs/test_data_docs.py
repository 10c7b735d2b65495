"""``spark_jobs.data_docs``: a run's Data Docs are self-contained.

The Data Docs of a real run (the bundled samples, ingested and validated with
:func:`spark_jobs.validate.validate`) name no address of another host in any of
their HTML, CSS or JavaScript files, those of the static folder the runs share
included (XML namespace names, the licence banners of the shipped libraries and
one of their error messages aside), nor the data context id, and every relative
link, image, script and style sheet of their pages leads to a file of the site
or of the shared static folder: the Expectation Suite links included. A second
run adds only its pages and loads the same shared folder, which the binlake
view serves like the pages.

Headless Chromium, with every host name unresolvable and a proxy to nowhere,
then opens the index and a validation result page from the files: the page
asks the network for nothing, runs without a script error, the index's table
is drawn and the screenshot shows Bootstrap's colours and Font Awesome's icons.

The browser tests need Debian's ``chromium`` (``make chromium``); without it
they are skipped, or fail when ``CI`` is set.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import threading
import zlib
from collections import Counter
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest

from spark_jobs.data_docs import NotSelfContained, check_self_contained, content_id, make_self_contained, share
from spark_jobs.ingest import ingest
from spark_jobs.validate import validate

REPO_ROOT = Path(__file__).resolve().parents[2]
WINDOW = (1400, 900)
URL = re.compile(r"https?://[^\s\"'<>()\\]+", re.I)
XML_NAMESPACES = {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink", "http://www.w3.org/1999/xhtml"}
BANNER = re.compile(r"/\*!.*?\*/", re.S)
POPPER_MESSAGE = "require Popper.js (https://popper.js.org/)"  # Bootstrap's error text, never fetched
# Colours of Bootstrap 4 and the pages: .alert-secondary's background (the page headers), the
# green of .text-success (Font Awesome's check icons), .btn-primary's blue.
ALERT_SECONDARY = (226, 227, 229)
SUCCESS_GREEN = (40, 167, 69)
PRIMARY_BLUE = (0, 123, 255)


@pytest.fixture(scope="module")
def site(spark, tmp_path_factory) -> Path:
    """The Data Docs folder of a validated run of the bundled samples."""
    source, warehouse = tmp_path_factory.mktemp("samples"), tmp_path_factory.mktemp("warehouse")
    for sample in sorted((REPO_ROOT / "samples").glob("mariadb-bin.0*")):
        shutil.copyfile(sample, source / sample.name)
    ingest(str(source), str(warehouse), spark=spark, validation=False)
    outcome = validate(spark, run_folder=warehouse, warehouse=warehouse, run_id="offline")
    assert outcome.success and outcome.data_docs == "quality/runs/offline/data_docs/index.html"
    return (warehouse / outcome.data_docs).parent


@pytest.fixture(scope="module")
def shared(site) -> Path:
    """The static folder the runs of the site's warehouse share: ``quality/static/<id>``."""
    [folder] = (site.parents[2] / "static").iterdir()
    return folder


# -- the files ---------------------------------------------------------------------


def test_the_site_holds_its_pages_and_loads_the_shared_static_folder(site, shared):
    assert not (site / "static").exists()
    assert {file.suffix for file in site.rglob("*") if file.is_file()} == {".html"}
    assert shared.name == content_id(shared)
    assert (shared / "vendor" / "jquery" / "jquery.min.js").is_file()
    assert (shared / "images" / "logo-long.png").is_file()
    assert f'href="../../../static/{shared.name}/vendor/bootstrap/bootstrap.min.css"' in (
        site / "index.html").read_text()
    assert [entry.name for entry in shared.parent.iterdir()] == [shared.name]  # no temporary folder left


def test_a_second_run_adds_only_its_pages(spark, site, shared):
    """The second run of a warehouse finds the shared static folder there and loads it: its
    Data Docs folder holds its pages only, and the shared folder is the first run's, untouched."""
    warehouse = site.parents[3]
    before = {file: (file.stat().st_ino, file.stat().st_mtime_ns) for file in shared.rglob("*")}
    outcome = validate(spark, run_folder=warehouse, warehouse=warehouse, run_id="second")
    second = (warehouse / outcome.data_docs).parent
    assert outcome.success and second == warehouse / "quality" / "runs" / "second" / "data_docs"
    assert [entry.name for entry in shared.parent.iterdir()] == [shared.name]
    assert {file: (file.stat().st_ino, file.stat().st_mtime_ns) for file in shared.rglob("*")} == before
    assert not (second / "static").exists()
    files = [file for file in second.rglob("*") if file.is_file()]
    assert {file.suffix for file in files} == {".html"}
    assert sum(file.stat().st_size for file in files) < 200_000  # the static files are 5.5 MB
    for page in files:
        for reference in references(page.read_text(encoding="utf-8")):
            target = local_target(page, reference)
            assert target is None or target.is_file(), f"{page}: {reference}"
    assert f"static/{shared.name}/vendor/jquery/jquery.min.js" in (second / "index.html").read_text()


def test_no_file_of_the_data_docs_names_another_host(site, shared):
    files = [file for folder in (site, shared) for file in folder.rglob("*") if file.suffix in {".html", ".css", ".js"}]
    assert {file.suffix for file in files} == {".html", ".css", ".js"}
    named = {}
    for file in files:
        text = file.read_text(encoding="utf-8")
        if file.suffix != ".html":  # the shipped libraries' own words: licence banners, one message
            text = BANNER.sub("", text).replace(POPPER_MESSAGE, "")
        urls = set(URL.findall(text)) - XML_NAMESPACES
        if urls:
            named[str(file)] = sorted(urls)
    assert named == {}


def test_the_data_context_id_is_in_no_page(site, shared):
    config = (site.parents[2] / "gx" / "great_expectations.yml").read_text()
    context_id = re.search(r"^data_context_id: (\S+)$", config, re.MULTILINE)[1]
    holding = [file for folder in (site, shared) for file in folder.rglob("*")
               if file.is_file() and context_id.encode() in file.read_bytes()]
    assert holding == []


def test_every_link_of_the_pages_leads_to_a_file_of_the_site(site, shared):
    pages = sorted(site.rglob("*.html"))
    assert {page.parent.name for page in pages} >= {"data_docs", "expectations"}
    missing, followed = [], []
    for page in pages:
        for reference in references(page.read_text(encoding="utf-8")):
            target = local_target(page, reference)
            if target is not None:
                followed.append(target)
                if not target.is_file():
                    missing.append(f"{page.relative_to(site)}: {reference}")
    sheets = {target.resolve() for target in followed if target.suffix == ".css"}
    assert sheets and all(sheet.is_relative_to(shared.resolve()) for sheet in sheets)
    for sheet in sorted({*sheets, *shared.rglob("*.css")}):
        for reference in re.findall(r"url\(\s*['\"]?([^'\")]+)", sheet.read_text(encoding="utf-8")):
            target = local_target(sheet, reference)
            if target is not None:
                followed.append(target)
                if not target.is_file():
                    missing.append(f"{sheet}: {reference}")
    assert missing == []
    suites = {target.resolve() for target in followed if target.parent.name == "expectations"}
    assert {suite.name for suite in suites} == {"shop:customers.html", "shop:orders.html"}
    assets = {target.resolve() for target in followed if "vendor" in target.parts}
    assert assets and all(asset.is_relative_to(shared.resolve()) for asset in assets)
    assert any(asset.parent.name == "webfonts" for asset in assets)  # followed from Font Awesome's style sheet


def test_a_reference_to_another_host_fails_the_check(site, tmp_path):
    copy = tmp_path / "data_docs"
    shutil.copytree(site, copy)
    page = copy / "index.html"
    shown = page.read_text().replace("</body>", "<p>a checked value: https://shop.example/orders</p></body>")
    page.write_text(shown)
    check_self_contained(copy)  # a page's text is shown, not fetched

    page.write_text(shown.replace("</body>", '<img src="https://tracker.example/pixel.gif?id=1"></body>'))
    with pytest.raises(NotSelfContained, match=r"index.html: https://tracker.example/pixel.gif\?id=1"):
        check_self_contained(copy)
    page.write_text(shown.replace("</body>", '<img src="http://localhost:8080/here.png"></body>'))
    check_self_contained(copy)


def test_a_library_the_module_does_not_know_fails_the_build(tmp_path):
    site = tmp_path / "data_docs"
    (site / "static").mkdir(parents=True)
    (site / "index.html").write_text(
        '<html><head><script src="https://cdn.jsdelivr.net/npm/vega@5"></script>'
        '<script src="https://unpkg.com/new-library@1/dist/new.min.js"></script></head><body></body></html>')
    with pytest.raises(NotSelfContained, match="new-library"):
        make_self_contained(site)
    assert "vega@5" not in (site / "index.html").read_text()


def test_a_link_to_the_suite_page_of_a_percent_encoded_name_leads_to_it(tmp_path):
    """A table named ``a.b`` has the suite ``shop:a%2Eb`` and the page ``expectations/shop:a%2Eb.html``;
    Great Expectations links it as the file is named, which a browser decodes to ``shop:a.b.html``."""
    site = tmp_path / "data_docs"
    (site / "static").mkdir(parents=True)
    (site / "expectations").mkdir()
    (site / "expectations" / "shop:a%2Eb.html").write_text("<html><body>the suite</body></html>")
    (site / "index.html").write_text('<html><body><a href="expectations/shop:a%2Eb.html">shop:a%2Eb</a>'
                                     '<a href="expectations/shop:a%2Eb.html#section-1">its first section</a>'
                                     "</body></html>")
    make_self_contained(site)
    links = references((site / "index.html").read_text())
    assert links == ["expectations/shop:a%252Eb.html", "expectations/shop:a%252Eb.html#section-1"]
    assert local_target(site / "index.html", links[0]).is_file()


def test_without_a_shared_folder_the_site_keeps_its_static_files(tmp_path):
    site = tmp_path / "data_docs"
    (site / "static").mkdir(parents=True)
    (site / "index.html").write_text('<html><head><script src="https://code.jquery.com/jquery-3.7.1.min.js">'
                                     "</script></head><body></body></html>")
    assert make_self_contained(site) == site / "static"
    assert '<script src="static/vendor/jquery/jquery.min.js"></script>' in (site / "index.html").read_text()
    assert (site / "static" / "vendor" / "jquery" / "jquery.min.js").is_file()


# -- the shared static folder --------------------------------------------------------


def static_folder(at: Path) -> Path:
    """A small static folder, the same content wherever it is made."""
    (at / "images").mkdir(parents=True)
    (at / "images" / "logo.png").write_bytes(b"\x89PNG" + bytes(range(256)) * 40)
    (at / "styles.css").write_text("body { background: url('images/logo.png'); }")
    return at


def test_two_runs_racing_to_add_the_shared_folder_both_load_one_complete_folder(tmp_path, monkeypatch):
    """Both runs find no shared folder and move their copy in under a temporary name; the first
    rename wins, the other run drops its copy and loads the winner's."""
    import spark_jobs.data_docs as data_docs

    assets = tmp_path / "quality" / "static"
    both_past_the_check = threading.Barrier(2, timeout=30)
    monkeypatch.setattr(data_docs, "_remove_stale_temporaries", lambda folder: both_past_the_check.wait())
    sites = [static_folder(tmp_path / f"run-{number}" / "static") for number in (1, 2)]
    shared_by, errors = {}, []

    def add(static: Path) -> None:
        try:
            shared_by[static] = share(static, assets)
        except Exception as error:  # noqa: BLE001 -- reported by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=add, args=(static,)) for static in sites]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    [folder] = set(shared_by.values())
    assert [entry.name for entry in assets.iterdir()] == [folder.name]  # no temporary folder left
    assert folder.name == content_id(folder) == content_id(static_folder(tmp_path / "again"))
    assert not any(static.exists() for static in sites)


def test_a_shared_folder_is_never_written_again(tmp_path, caplog):
    """A run whose static files are already shared drops its copy; one that finds the shared
    folder damaged (a file removed by hand) leaves it alone, keeps its copy and says so."""
    assets = tmp_path / "static"
    folder = share(static_folder(tmp_path / "first"), assets)
    logo = folder / "images" / "logo.png"
    written = logo.stat().st_mtime_ns
    assert share(static_folder(tmp_path / "second"), assets) == folder
    assert not (tmp_path / "second").joinpath("images").exists() and logo.stat().st_mtime_ns == written

    logo.unlink()
    third = static_folder(tmp_path / "third")
    assert share(third, assets) == third and (third / "images" / "logo.png").is_file()
    assert not logo.exists() and [entry.name for entry in assets.iterdir()] == [folder.name]
    assert f"the shared Data Docs assets {folder} lack or changed 1 file(s) (images/logo.png)" in caplog.text


def test_a_temporary_folder_a_dead_run_left_is_removed(tmp_path):
    assets = tmp_path / "static"
    stale, recent = assets / ".0123456789abcdef.dead.tmp", assets / ".0123456789abcdef.busy.tmp"
    for temporary in (stale, recent):
        static_folder(temporary)
    os.utime(stale, (0, 0))
    folder = share(static_folder(tmp_path / "run"), assets)
    assert sorted(entry.name for entry in assets.iterdir()) == sorted([folder.name, recent.name])


# -- through the binlake view ------------------------------------------------------------


def test_the_binlake_view_serves_the_pages_and_the_shared_static_files(site, shared):
    """Every file a page of the run loads, fetched from the view at the URL the browser makes of
    the page's relative reference: the shared folder is inside the view's ``quality/``."""
    from fastapi.testclient import TestClient

    from plugins.binlake_view import create_app, may_read_ingest_runs

    warehouse = site.parents[3]
    app = create_app(warehouse)
    app.dependency_overrides[may_read_ingest_runs] = lambda: None  # Airflow's login: tests/plugins
    client = TestClient(app)
    pages = [site / "index.html", next(site.glob("validations/shop:orders/*/*/*.html"))]
    loaded = []
    for page in pages:
        url = "http://testserver/" + page.relative_to(warehouse).as_posix()
        assert client.get(url).status_code == 200
        for reference in references(page.read_text(encoding="utf-8")):
            if f"static/{shared.name}/" in reference:
                response = client.get(urljoin(url, reference))
                assert response.status_code == 200, f"{page.name}: {reference}"
                loaded.append(urlsplit(urljoin(url, reference)).path)
    jquery = f"/quality/static/{shared.name}/vendor/jquery/jquery.min.js"
    assert jquery in loaded
    assert client.get(jquery).content == (shared / "vendor" / "jquery" / "jquery.min.js").read_bytes()


# -- in a browser without a network ---------------------------------------------------------


def test_the_index_is_styled_and_its_table_drawn_offline(site, chromium, tmp_path):
    seen = browse(chromium, tmp_path, site / "index.html")
    assert seen.fetched == [] and seen.script_errors == []
    rows = [unquote(row) for row in re.findall(r'<tr class="clickable-row" data-href="([^"]+)"', seen.dom)]
    assert sorted(row.split("/")[1] for row in rows if row.startswith("validations/")) == [
        "shop:customers", "shop:orders"]
    assert sorted(row for row in rows if row.startswith("expectations/")) == [
        "expectations/shop:customers.html", "expectations/shop:orders.html"]
    assert all((site / row).is_file() for row in rows)
    colours = pixel_counts(seen.screenshot)
    assert colours[ALERT_SECONDARY] > 10_000, "no Bootstrap header: the page is not styled"
    assert colours[SUCCESS_GREEN] > 20, "no green check icons: Font Awesome did not load"


def test_a_validation_result_page_is_styled_offline(site, chromium, tmp_path):
    page = next(site.glob("validations/shop:orders/*/*/*.html"))
    seen = browse(chromium, tmp_path, page)
    assert seen.fetched == [] and seen.script_errors == []
    assert "Expectation Validation Result" in seen.dom and "Succeeded" in seen.dom
    colours = pixel_counts(seen.screenshot)
    assert colours[ALERT_SECONDARY] > 10_000, "no Bootstrap header: the page is not styled"
    assert colours[PRIMARY_BLUE] > 1_000, "no Bootstrap buttons in the sidebar"
    assert colours[SUCCESS_GREEN] > 20, "no green check icons: Font Awesome did not load"
    assert len(colours) > 16


def test_a_chart_place_says_why_it_is_empty(chromium, tmp_path):
    """No expectation of binlake draws a chart; one that did gets a note instead, without a
    script error."""
    site = tmp_path / "data_docs"
    (site / "static").mkdir(parents=True)
    (site / "index.html").write_text(
        '<html><head><script src="https://code.jquery.com/jquery-3.7.1.min.js"></script>'
        '<script src="https://cdn.jsdelivr.net/npm/vega@5"></script>'
        '<script src="https://cdn.jsdelivr.net/npm/vega-lite@5"></script>'
        '<script src="https://cdn.jsdelivr.net/npm/vega-embed@6"></script></head>'
        '<body><div id="chart"></div><script>vegaEmbed("#chart", {"mark": "bar"}, {actions: false})'
        '.then(result=>console.log(result)).catch(console.warn);</script></body></html>')
    make_self_contained(site)
    seen = browse(chromium, tmp_path, site / "index.html")
    assert seen.fetched == [] and seen.script_errors == []
    assert "Chart not shown" in seen.dom


# -- helpers -------------------------------------------------------------------------


class _Links(HTMLParser):
    """The ``href`` and ``src`` values of a page's elements, and the content of its scripts."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.found += [value for name, value in attrs if name in {"href", "src"} and value]
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts.append(data)


def references(html: str) -> list[str]:
    """Every link and source of a page: its elements' and those its scripts write (the index
    page's table cells and row links)."""
    parser = _Links()
    parser.feed(html)
    scripts = "\n".join(parser.scripts)
    written = re.findall(r'(?:href|src)=\\?"([^"\\]+)', scripts)
    rows = re.findall(r"'_table_row_link_path': '([^']+)'", scripts)
    return parser.found + written + rows


def local_target(document: Path, reference: str) -> Path | None:
    """The file a relative reference of ``document`` names; None for an anchor, a data URI or a
    script URL. An address of another host fails the test."""
    parts = urlsplit(reference)
    if parts.scheme in {"http", "https"} or reference.startswith("//"):
        pytest.fail(f"{document.name} refers to {reference}")
    if parts.scheme in {"data", "javascript", "mailto"} or not parts.path:
        return None
    return document.parent / unquote(parts.path)


@dataclass
class Seen:
    """What Chromium made of a page: its DOM after the scripts ran, a screenshot, the http(s)
    URLs the page asked the network for and the script errors it logged."""

    dom: str
    screenshot: Path
    fetched: list[str]
    script_errors: list[str]


def browse(chromium: str, tmp_path: Path, page: Path) -> Seen:
    """Open ``page`` from its file in headless Chromium with no network: every host name fails
    to resolve and every request goes to a proxy that is not there."""
    profile = Path(tempfile.mkdtemp(prefix="chromium-profile-", dir=tmp_path))
    screenshot, net_log = tmp_path / f"{page.stem}.png", tmp_path / f"{page.stem}-net.json"
    done = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", f"--user-data-dir={profile}", "--host-resolver-rules=MAP * ~NOTFOUND",
         "--proxy-server=http://127.0.0.1:9", f"--log-net-log={net_log}", "--enable-logging=stderr", "--v=0",
         f"--window-size={WINDOW[0]},{WINDOW[1]}", "--virtual-time-budget=10000",
         f"--screenshot={screenshot}", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    print(f"screenshot of {page.name}: {screenshot}")
    errors = [line for line in done.stderr.splitlines() if ":CONSOLE" in line and "Uncaught" in line]
    return Seen(done.stdout, screenshot, page_requests(net_log), errors)


def page_requests(net_log: Path) -> list[str]:
    """The http(s) URLs that pages opened from files asked for, from Chromium's net log (the
    browser's own requests, its update checks, are left out)."""
    log = json.loads(net_log.read_text())
    requested = set()
    for event in log["events"]:
        params = event.get("params", {})
        if str(params.get("network_isolation_key", "")).startswith("file://") and "url" in params:
            requested.add(params["url"])
    return sorted(url for url in requested if url.startswith(("http://", "https://")))


def pixel_counts(png: Path) -> Counter:
    """How many pixels of each (red, green, blue) colour an 8-bit RGB or RGBA PNG has."""
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{png} is not a PNG"
    header, compressed, at = None, [], 8
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", data[at + 8:at + 8 + length])
        elif kind == b"IDAT":
            compressed.append(data[at + 8:at + 8 + length])
        at += 12 + length
    width, height, depth, colour_type, _, _, interlaced = header
    assert (width, height) == WINDOW and depth == 8 and colour_type in (2, 6) and not interlaced
    channels = 3 if colour_type == 2 else 4
    raw, stride = zlib.decompress(b"".join(compressed)), width * channels
    counts, previous = Counter(), bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        line = unfiltered(raw[start], bytearray(raw[start + 1:start + 1 + stride]), previous, channels)
        counts.update(zip(line[0::channels], line[1::channels], line[2::channels]))
        previous = line
    return counts


def unfiltered(kind: int, line: bytearray, previous: bytearray, step: int) -> bytearray:
    """A PNG scanline with its filter (none, sub, up, average or Paeth) undone."""
    if kind == 2:
        return bytearray((a + b) & 255 for a, b in zip(line, previous))
    for i in range(len(line) if kind else 0):
        left, up = (line[i - step] if i >= step else 0), previous[i]
        if kind == 1:
            line[i] = (line[i] + left) & 255
        elif kind == 3:
            line[i] = (line[i] + (left + up) // 2) & 255
        else:
            corner = previous[i - step] if i >= step else 0
            guess = left + up - corner
            near = min((abs(guess - left), 0, left), (abs(guess - up), 1, up), (abs(guess - corner), 2, corner))
            line[i] = (line[i] + near[2]) & 255
    return line

"""Self-contained Data Docs: a run's Data Docs open offline and tell no third party about them.

Great Expectations writes pages that load Bootstrap, jQuery, bootstrap-table, Font Awesome and
Vega from CDNs, and its logo from its own server with the data context id in the query string.
:func:`make_self_contained` rewrites a built site so that every page loads only files of the
site's own ``static/`` folder:

* Bootstrap 4 (what the pages are written for; its bundle brings Popper), jQuery and Font
  Awesome are copied from their pinned XStatic packages into ``static/vendor/``;
* bootstrap-table is on no package index: ``static/binlake/tables.js`` draws the index page's
  tables with the same columns, rows and row links, without search, filters or paging;
* Vega is not shipped either: ``static/binlake/charts.js`` puts a note where a chart would be
  (no expectation of binlake draws one);
* the logo is the ``static/images/logo-long.png`` Great Expectations ships, with no query string;
* the dark theme, the date picker and bootstrap-table's styles are left out (the pages are
  light), and links to Great Expectations' website lose their address but keep their text,
  the newsletter footer goes;
* a page's references to ``static/`` are made relative to the page (Great Expectations' favicon
  link of a validation page points one folder too high), and its links to suite pages whose
  names hold a percent sign are encoded so that they lead to them.

The static files are the same for every run (about 5.5 MB: Great Expectations' fonts and images,
the vendored libraries). Given an ``assets`` folder (the warehouse's ``quality/static``), a site
keeps only its pages: its static folder is moved to ``<assets>/<id>/``, ``<id>`` being a hash of
its content, and the pages refer to it by relative path. The first site of a content writes the
folder, complete, under a temporary name renamed into place; every later one (and one racing it)
finds it there and leaves its own copy out. A shared folder is never written again once in place,
and it is in place before any page refers to it.

:func:`check_self_contained` then raises :class:`NotSelfContained` when a page or a file of the
site (or of its shared static folder) still refers to an http(s) URL of a host other than this one.
"""

from __future__ import annotations

import errno
import hashlib
import importlib
import logging
import os
import re
import shutil
import time
import uuid
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

log = logging.getLogger(__name__)

STATIC = "static"
ID_LENGTH = 16  # hex digits of the content hash naming a shared static folder
STALE_TEMPORARY = 24 * 3600  # seconds after which a temporary folder a dead process left is removed
# What the site's static/vendor/ folder gets from the XStatic packages: (package, file
# pattern under the package's data folder, folder under static/vendor/).
VENDORED = (
    ("bootstrap", "css/bootstrap.min.css", "bootstrap"),
    ("bootstrap", "js/bootstrap.bundle.min.js", "bootstrap"),
    ("jquery", "jquery.min.js", "jquery"),
    ("font_awesome", "LICENSE.txt", "font-awesome"),
    ("font_awesome", "css/all.min.css", "font-awesome/css"),
    ("font_awesome", "webfonts/*", "font-awesome/webfonts"),
)
# Every script and style sheet Great Expectations' pages load from elsewhere: the file under
# static/ that replaces it, or None when the pages do without it.
REPLACED = {
    "https://maxcdn.bootstrapcdn.com/bootstrap/4.3.1/css/bootstrap.min.css": "vendor/bootstrap/bootstrap.min.css",
    "https://stackpath.bootstrapcdn.com/bootstrap/4.3.1/js/bootstrap.min.js":
        "vendor/bootstrap/bootstrap.bundle.min.js",
    "https://cdnjs.cloudflare.com/ajax/libs/popper.js/1.12.9/umd/popper.min.js": None,
    "https://code.jquery.com/jquery-3.7.1.min.js": "vendor/jquery/jquery.min.js",
    "https://cdnjs.cloudflare.com/ajax/libs/font-awesome/6.6.0/css/all.min.css":
        "vendor/font-awesome/css/all.min.css",
    "https://unpkg.com/bootstrap-table@1.19.1/dist/bootstrap-table.min.js": "binlake/tables.js",
    "https://unpkg.com/bootstrap-table@1.19.1/dist/bootstrap-table.min.css": None,
    "https://unpkg.com/bootstrap-table@1.19.1/dist/extensions/filter-control/bootstrap-table-filter-control.min.js":
        None,
    "https://unpkg.com/bootstrap-table@1.19.0/dist/extensions/filter-control/bootstrap-table-filter-control.css":
        None,
    "https://unpkg.com/bootstrap-table@1.19.0/dist/extensions/filter-control/bootstrap-table-filter-control.min.css":
        None,
    "https://cdnjs.cloudflare.com/ajax/libs/bootstrap-datepicker/1.9.0/js/bootstrap-datepicker.min.js": None,
    "https://cdnjs.cloudflare.com/ajax/libs/bootstrap-datepicker/1.9.0/css/bootstrap-datepicker.min.css": None,
    "https://cdn.jsdelivr.net/npm/@forevolve/bootstrap-dark@1.1.0/dist/css/bootstrap-prefers-dark.css": None,
    "https://cdn.jsdelivr.net/npm/vega@5": None,
    "https://cdn.jsdelivr.net/npm/vega-lite@5": None,
    "https://cdn.jsdelivr.net/npm/vega-embed@6": "binlake/charts.js",
}
LOGO = "images/logo-long.png"

# bootstrap-table's jQuery plugin as far as the index page uses it: a table of ``columns`` and
# ``data`` (cells are HTML), sorted by ``sortName``, rows with ``rowStyle`` and ``rowAttributes``
# that announce a click as "click-row.bs.table"; its methods (clearing filters) have nothing to do.
TABLES_JS = """\
/* binlake: the tables of Great Expectations' Data Docs index, drawn without bootstrap-table. */
(function ($) {
  "use strict";
  function named(name) { return typeof name === "function" ? name : window[name]; }
  function sortKey(options) {
    var column = $.grep(options.columns, function (c) { return c.field === options.sortName; })[0];
    return column ? column.sortName || column.field : null;
  }
  function sorted(options) {
    var key = sortKey(options), sign = options.sortOrder === "desc" ? -1 : 1;
    return key === null ? options.data : options.data.slice().sort(function (a, b) {
      return a[key] < b[key] ? -sign : a[key] > b[key] ? sign : 0;
    });
  }
  function row($table, options, item, index) {
    var style = named(options.rowStyle), attributes = named(options.rowAttributes);
    var $row = $("<tr>").attr(attributes ? attributes(item, index) : {}).css(style ? style(item, index).css : {});
    $.each(options.columns, function (_, column) {
      $row.append($("<td>").css("text-align", column.align || "").html(item[column.field] || ""));
    });
    return $row.on("click", function () { $table.trigger("click-row.bs.table", [item, $row]); });
  }
  $.fn.bootstrapTable = function (options) {
    if (typeof options !== "object") { return this; }
    $(options.toolbar).hide();
    return this.each(function () {
      var $table = $(this).addClass("table table-hover"), $head = $("<tr>"), $body = $("<tbody>");
      $.each(options.columns, function (_, column) { $head.append($("<th>").text(column.title)); });
      $.each(sorted(options), function (index, item) { $body.append(row($table, options, item, index)); });
      $table.empty().append($("<thead>").append($head), $body);
    });
  };
})(jQuery);
"""
# vega-embed's entry point: a note where the chart would be, and a promise like vega-embed's.
CHARTS_JS = """\
/* binlake: Vega is not shipped with the Data Docs; a chart's place says so. */
window.vegaEmbed = function (selector) {
  "use strict";
  var place = document.querySelector(selector);
  if (place) {
    place.className += " text-muted small";
    place.textContent = "Chart not shown: these Data Docs load no charting library.";
  }
  return Promise.resolve(null);
};
"""
OWN = {"binlake/tables.js": TABLES_JS, "binlake/charts.js": CHARTS_JS}

_EXTERNAL_SCRIPT = re.compile(r'<script\b[^>]*?\bsrc="(https?://[^"]*)"[^>]*>\s*</script>', re.I)
_EXTERNAL_STYLE = re.compile(r'<link\b[^>]*?\bhref="(https?://[^"]*)"[^>]*>', re.I)
_GX_LOGO = re.compile(
    r"https://great-expectations-web-assets\.s3\.us-east-2\.amazonaws\.com/(?:logo-long|full_logo_dark)\.png"
    r"(?:\?[^\"'()\s]*)?")
_PAGE_LINK = re.compile(r'(href=")((?![a-z][a-z0-9+.-]*://)[^"#?]+\.html)(#[^"]*)?"', re.I)
_STATIC_REFERENCE = re.compile(r'((?:src|href)=")(?:\./|(?:\.\./)+)static/')
_NEWSLETTER = re.compile(r"<footer>\s*<p>\s*Stay current on everything GX.*?</footer>", re.S)
_EXTERNAL_LINK = re.compile(r'<a\s[^>]*?\bhref="https?://[^"]*"[^>]*>(.*?)</a>', re.S | re.I)
_URL = re.compile(r"https?://[^\s\"'<>()\\]+", re.I)
_BANNER = re.compile(r"/\*!.*?\*/", re.S)  # a library's licence banner
XML_NAMESPACES = frozenset({
    "http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink", "http://www.w3.org/1999/xhtml",
    "http://www.w3.org/XML/1998/namespace", "http://www.w3.org/2000/xmlns/",
})
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
# Addresses a shipped library names in its messages, never fetched.
MENTIONS = ("Popper.js (https://popper.js.org/)",)


class NotSelfContained(RuntimeError):
    """Data Docs that still refer to files or pages of another host."""


def make_self_contained(site: Path, assets: Path | None = None) -> Path:
    """Rewrite the Data Docs site ``site`` (the folder of its index.html) to load nothing from
    elsewhere, add the files it then loads to its static folder, and check the result; returns
    the static folder its pages load from.

    With ``assets``, the static folder is shared: ``<assets>/<content hash>/``, written by the
    first site of that content and reused by the others; ``site`` then holds only its pages.
    Without, it is ``site/static``."""
    site = Path(site)
    static = site / STATIC
    for sheet in static.rglob("*.css"):
        sheet.write_text(rewrite(sheet.read_text(encoding="utf-8"), _relative(static, sheet)), encoding="utf-8")
    _add_static_files(static)
    if assets is not None:
        check_self_contained(static)  # nothing that is not self-contained gets shared
        static = share(static, Path(assets))
    for page in site.rglob("*.html"):
        text = rewrite(page.read_text(encoding="utf-8"), _relative(static, page))
        page.write_text(_encode_page_links(text, page.parent), encoding="utf-8")
    check_self_contained(site, static)
    return static


def share(static: Path, assets: Path) -> Path:
    """``<assets>/<id>``, the shared folder holding what the folder ``static`` holds (``<id>``
    a hash of its content); ``static`` is gone. The first of a content moves ``static`` under
    a temporary name in ``assets``, then renames it into place: a reader never sees the folder
    half written, and of two sites racing to add it one wins, the other finds it there. A shared
    folder found incomplete (files removed by hand) is left as it is and ``static`` is kept:
    the site loads its own copy, and a warning says so."""
    files = _files(static)
    target = Path(assets) / content_id(static, files)
    if not target.is_dir():
        _add_shared(static, target)
    missing = [name for name, size in files.items() if _size(target / name) != size]
    if missing and not static.is_dir():
        raise FileNotFoundError(f"the shared Data Docs assets {target} lack {', '.join(missing[:5])}")
    if missing:
        log.warning("the shared Data Docs assets %s lack or changed %d file(s) (%s): these Data Docs keep their "
                    "own copy; remove that folder and the next run writes it again", target, len(missing),
                    ", ".join(missing[:5]))
        return static
    shutil.rmtree(static, ignore_errors=True)  # gone already when this site added the folder
    return target


def content_id(static: Path, files: dict[str, int] | None = None) -> str:
    """The hash naming the shared folder of the files under ``static``: their paths and bytes."""
    digest = hashlib.sha256()
    for name in sorted(files if files is not None else _files(static)):
        digest.update(name.encode("utf-8") + b"\0")
        digest.update(hashlib.sha256((static / name).read_bytes()).digest())
    return digest.hexdigest()[:ID_LENGTH]


def _files(folder: Path) -> dict[str, int]:
    """The files under ``folder`` by their path relative to it, with their size."""
    return {file.relative_to(folder).as_posix(): file.stat().st_size
            for file in sorted(folder.rglob("*")) if file.is_file()}


def _size(file: Path) -> int | None:
    try:
        return file.stat().st_size if file.is_file() else None
    except OSError:
        return None


def _add_shared(static: Path, target: Path) -> None:
    """Move (or, from another file system, copy) ``static`` to ``target`` through a temporary
    folder beside ``target`` renamed into place, the files on disk first; when another site adds
    ``target`` meanwhile, the temporary folder is removed."""
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(target.parent)
    temporary = target.parent / f".{target.name}.{uuid.uuid4().hex}.tmp"
    try:
        os.rename(static, temporary)
    except OSError as error:
        if error.errno != errno.EXDEV:
            raise
        shutil.copytree(static, temporary)
    for file in temporary.rglob("*"):
        if file.is_file():
            with open(file, "rb") as handle:
                os.fsync(handle.fileno())
    try:
        os.rename(temporary, target)  # refused when another site added it meanwhile
    except OSError:
        if not target.is_dir():
            raise
        shutil.rmtree(temporary, ignore_errors=True)
        log.info("shared Data Docs assets %s: added by another run meanwhile", target)
        return
    folder = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
    log.info("shared Data Docs assets %s: added", target)


def _remove_stale_temporaries(assets: Path) -> None:
    """Remove the temporary folders that processes which died while adding a shared folder left."""
    for temporary in assets.glob(".*.tmp"):
        try:
            if time.time() - temporary.stat().st_mtime > STALE_TEMPORARY:
                shutil.rmtree(temporary, ignore_errors=True)
        except OSError:
            pass


def rewrite(text: str, static: str) -> str:
    """A page or style sheet of Great Expectations with its references to other hosts replaced;
    ``static`` is the site's static folder relative to the document."""
    text = _STATIC_REFERENCE.sub(lambda m: f"{m[1]}{static}/", text)
    text = _EXTERNAL_SCRIPT.sub(lambda m: _local(m, '<script src="{}"></script>', static), text)
    text = _EXTERNAL_STYLE.sub(lambda m: _local(m, '<link rel="stylesheet" href="{}">', static), text)
    text = _GX_LOGO.sub(f"{static}/{LOGO}", text)
    text = _NEWSLETTER.sub("", text)
    return _EXTERNAL_LINK.sub(lambda m: m[1], text)


def _local(tag: re.Match, local_tag: str, static: str) -> str:
    """``local_tag`` loading the replacement of the URL ``tag`` loads, nothing when the pages do
    without it, ``tag`` itself when this module does not know the URL (for the check to report)."""
    if tag[1] not in REPLACED:
        return tag[0]
    target = REPLACED[tag[1]]
    return "" if target is None else local_tag.format(f"{static}/{target}")


def _encode_page_links(text: str, folder: Path) -> str:
    """``text`` with each link to a page of ``folder``'s site whose file name holds a percent
    sign (a percent-encoded database or table name in a suite's name) encoded as a browser
    decodes it: Great Expectations writes the links to suite pages as the file names are."""

    def encoded(link: re.Match) -> str:
        target = link[2]
        if (folder / unquote(target)).is_file() or not (folder / target).is_file():
            return link[0]
        return f'{link[1]}{quote(target, safe="/:")}{link[3] or ""}"'

    return _PAGE_LINK.sub(encoded, text)


def _relative(static: Path, document: Path) -> str:
    """The static folder ``static`` as a relative URL from ``document``'s folder."""
    return Path(os.path.relpath(static, document.parent)).as_posix()


def _add_static_files(static: Path) -> None:
    """Copy the vendored libraries into ``static/vendor`` and write binlake's own scripts."""
    for package, pattern, folder in VENDORED:
        data = Path(importlib.import_module(f"xstatic.pkg.{package}").BASE_DIR)
        files = sorted(data.glob(pattern))
        if not files:
            raise FileNotFoundError(f"XStatic-{package} has no {pattern} under {data}")
        (static / "vendor" / folder).mkdir(parents=True, exist_ok=True)
        for file in files:
            shutil.copyfile(file, static / "vendor" / folder / file.name)
    for name, text in OWN.items():
        (static / name).parent.mkdir(parents=True, exist_ok=True)
        (static / name).write_text(text, encoding="utf-8")


# -- the check -----------------------------------------------------------------------


def check_self_contained(site: Path, *more: Path) -> None:
    """Raise :class:`NotSelfContained` when an HTML page, style sheet or script of the site (or of
    the folders ``more``: its shared static folder) refers to an http(s) URL of a host other than
    this one: in a page, in an attribute, a script or a style (the text a page shows, such as a
    checked value, is not fetched); in a style sheet or script, anywhere but in XML namespace
    names, licence banners and messages naming a website."""
    found = [f"{file.relative_to(folder)}: {url}"
             for folder in dict.fromkeys(Path(each) for each in (site, *more))
             for file in sorted(folder.rglob("*")) if file.suffix in {".html", ".css", ".js"}
             for url in third_party_urls(file)]
    if found:
        raise NotSelfContained(f"the Data Docs in {site} still refer to {len(found)} address(es) of other "
                               "hosts: " + "; ".join(found[:20]))


def third_party_urls(file: Path) -> list[str]:
    """The http(s) URLs of hosts other than this one that ``file`` refers to (see
    :func:`check_self_contained`)."""
    text = file.read_text(encoding="utf-8", errors="replace")
    if file.suffix == ".html":
        parts = _References()
        parts.feed(text)
        parts.close()
        text = "\n".join(parts.found)
    else:
        text = _BANNER.sub("", text)
        for mention in MENTIONS:
            text = text.replace(mention, "")
    return [url for url in _URL.findall(text) if url not in XML_NAMESPACES and _host(url) not in LOCAL_HOSTS]


def _host(url: str) -> str | None:
    try:
        return urlsplit(url).hostname
    except ValueError:  # not a URL a browser could load either; reported all the same
        return None


class _References(HTMLParser):
    """Collects what a browser may fetch or follow in a page: attribute values and the content
    of ``script`` and ``style`` elements."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._raw = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.extend(value for _, value in attrs if value)
        self._raw = tag in {"script", "style"}

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.extend(value for _, value in attrs if value)

    def handle_endtag(self, tag: str) -> None:
        self._raw = False

    def handle_data(self, data: str) -> None:
        if self._raw:
            self.found.append(data)

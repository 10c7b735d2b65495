"""A bar chart (SVG, no plotting library needed) of the throughput of each measurement of a run.

The chart has one section per corpus of the run: the MariaDB binlog (the
report's ``results``) and, when it was measured, the MySQL 8 JSON corpus (the
report's ``json.results``), one under the other, each with its own title (file
size and row changes). Within a section there is one bar per measurement with
rows/s, labelled with rows/s and MB/s; a measurement that failed gets its name
and "failed" instead of a bar. Both sections share one logarithmic scale (the
measurements span three orders of magnitude), so their bars can be compared.
Peers (mariadb-binlog, python-mysql-replication) are grey, binlake's own blue.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from html import escape
from pathlib import Path

logger = logging.getLogger(__name__)

PEERS = ("mariadb-binlog", "python-mysql-replication")
PEER_COLOUR, BINLAKE_COLOUR = "#999", "#3a6fb0"
ROW_HEIGHT, LABEL_WIDTH, BAR_WIDTH, MARGIN = 26, 260, 520, 12
TITLE_HEIGHT, AXIS_HEIGHT = 24, 22  # above and below the bars of a section
WIDTH = LABEL_WIDTH + BAR_WIDTH + 220  # room right of the longest bar for its label


@dataclass(frozen=True)
class Section:
    """One corpus of the run: ``key`` names it in the SVG (``data-corpus``), ``results`` its measurements."""

    key: str
    title: str
    results: list[dict]

    @property
    def height(self) -> int:
        return TITLE_HEIGHT + ROW_HEIGHT * len(self.results) + AXIS_HEIGHT + MARGIN


@dataclass(frozen=True)
class Scale:
    """The shared logarithmic x axis: powers of ten from ``low`` to ``high``."""

    low: int
    high: int

    def x(self, rows_per_s: float) -> float:
        """Length of the bar for ``rows_per_s``, at least one pixel."""
        return max(1.0, BAR_WIDTH * (math.log10(rows_per_s) - self.low) / (self.high - self.low))


def sections(report: dict) -> list[Section]:
    """The corpora of ``report`` (the JSON result of ``run.py``) that have measurements, in chart order."""
    found = []
    if report.get("results"):
        title = f"MariaDB binlog: {report.get('file_mb', '?')} MB, {_count(report.get('row_count'))} row changes"
        found.append(Section("mariadb", title, report["results"]))
    corpus = report.get("json") or {}
    if corpus.get("results"):
        title = f"MySQL 8 JSON corpus: {corpus.get('file_mb', '?')} MB, {_count(corpus.get('rows'))} row changes"
        found.append(Section("json", title, corpus["results"]))
    return found


def _count(value) -> str:
    return f"{value:,}" if isinstance(value, int) else "?"


def _scale(rates: list[float]) -> Scale:
    """The powers of ten around ``rates``; the slowest bar keeps some length."""
    low = math.floor(math.log10(min(rates)) - 0.3)
    high = math.ceil(math.log10(max(rates)))
    return Scale(low, high if high > low else low + 1)


def svg(report: dict) -> str:
    """The chart of ``report`` (the JSON result of ``run.py``) as SVG text."""
    corpora = sections(report)
    rates = [r["rows_per_s"] for s in corpora for r in s.results if r.get("rows_per_s")]
    if not rates:
        return ('<svg xmlns="http://www.w3.org/2000/svg" width="400" height="40">'
                '<text x="10" y="25">no results</text></svg>\n')
    scale = _scale(rates)
    height = MARGIN + sum(s.height for s in corpora)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
             f'font-family="sans-serif" font-size="12">']
    top = MARGIN
    for section in corpora:
        parts += _section(section, scale, top)
        top += section.height
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _section(section: Section, scale: Scale, top: int) -> list[str]:
    """SVG elements of one corpus, its title's top edge at ``top``: title, grid, bars, axis labels."""
    bars_top = top + TITLE_HEIGHT
    axis_y = bars_top + ROW_HEIGHT * len(section.results) + AXIS_HEIGHT - 6
    parts = [
        f'<g class="corpus" data-corpus="{section.key}">',
        f'<text class="title" x="{MARGIN}" y="{top + 12}" font-weight="bold">'
        f'{escape(section.title)}: rows/s (log scale)</text>',
    ]
    for power in range(scale.low, scale.high + 1):
        x = LABEL_WIDTH + BAR_WIDTH * (power - scale.low) / (scale.high - scale.low)
        parts.append(f'<line x1="{x:.1f}" y1="{bars_top}" x2="{x:.1f}" y2="{axis_y - 14}" stroke="#ddd"/>')
        parts.append(f'<text x="{x:.1f}" y="{axis_y}" text-anchor="middle" fill="#666">1e{power}</text>')
    for n, result in enumerate(section.results):
        parts += _row(result, scale, bars_top + n * ROW_HEIGHT)
    parts.append("</g>")
    return parts


def _row(result: dict, scale: Scale, y: int) -> list[str]:
    """A measurement's name, bar and label; without rows/s, its name and why there is no bar."""
    name = f'<text class="name" x="{LABEL_WIDTH - 8}" y="{y + 16}" text-anchor="end">{escape(result["name"])}</text>'
    if not result.get("rows_per_s"):
        why = "failed" if "error" in result else "no rows/s"
        return [name, f'<text class="missing" x="{LABEL_WIDTH + 6}" y="{y + 16}" fill="#a33">{why}</text>']
    colour = PEER_COLOUR if result["name"].startswith(PEERS) else BINLAKE_COLOUR
    length = scale.x(result["rows_per_s"])
    label = f"{result['rows_per_s']:,} rows/s, {result.get('mb_per_s', '?')} MB/s"
    return [
        name,
        f'<rect x="{LABEL_WIDTH}" y="{y + 4}" width="{length:.1f}" height="{ROW_HEIGHT - 8}" fill="{colour}"/>',
        f'<text class="label" x="{LABEL_WIDTH + length + 6:.1f}" y="{y + 16}">{escape(label)}</text>',
    ]


def write(report: dict, path: Path) -> Path:
    """Write the chart of ``report`` to ``path`` and return ``path``."""
    path.write_text(svg(report))
    logger.info("chart of %s written to %s", ", ".join(s.key for s in sections(report)) or "no results", path)
    return path

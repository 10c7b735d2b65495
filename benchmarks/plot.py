"""A bar chart (SVG, no plotting library needed) of the throughput of each measurement of a run.

One bar per measurement with rows/s, on a logarithmic scale (the measurements
span three orders of magnitude), labelled with rows/s and MB/s; peers
(mariadb-binlog, python-mysql-replication) in grey, binlake's own in blue.
"""

from __future__ import annotations

import math
from html import escape
from pathlib import Path

PEERS = ("mariadb-binlog", "python-mysql-replication")
ROW_HEIGHT, LABEL_WIDTH, BAR_WIDTH, MARGIN = 26, 260, 520, 12


def _x(value: float, low: float, high: float) -> float:
    return BAR_WIDTH * (math.log10(value) - low) / (high - low)


def svg(report: dict) -> str:
    """The chart of ``report`` (the JSON result of ``run.py``) as SVG text."""
    bars = [r for r in report.get("results", []) if r.get("rows_per_s")]
    if not bars:
        return '<svg xmlns="http://www.w3.org/2000/svg" width="400" height="40"><text x="10" y="25">no results</text></svg>'
    low = math.floor(math.log10(min(r["rows_per_s"] for r in bars)) - 0.3)  # the slowest bar keeps some length
    high = math.ceil(math.log10(max(r["rows_per_s"] for r in bars)))
    high = high if high > low else low + 1
    width, height = LABEL_WIDTH + BAR_WIDTH + 220, MARGIN * 4 + ROW_HEIGHT * (len(bars) + 1)
    title = f"{report.get('file_mb', '?')} MB binlog, {report.get('row_count') or '?'} row changes: rows/s (log scale)"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
        f'<text x="{MARGIN}" y="{MARGIN + 12}" font-weight="bold">{escape(title)}</text>',
    ]
    top = MARGIN * 2 + 12
    for power in range(low, high + 1):
        x = LABEL_WIDTH + _x(10**power, low, high)
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{height - MARGIN - 14}" stroke="#ddd"/>')
        parts.append(f'<text x="{x:.1f}" y="{height - MARGIN}" text-anchor="middle" fill="#666">1e{power}</text>')
    for n, result in enumerate(bars):
        y = top + n * ROW_HEIGHT
        colour = "#999" if result["name"].startswith(PEERS) else "#3a6fb0"
        length = max(1.0, _x(result["rows_per_s"], low, high))
        label = f"{result['rows_per_s']:,} rows/s, {result.get('mb_per_s', '?')} MB/s"
        parts += [
            f'<text x="{LABEL_WIDTH - 8}" y="{y + 16}" text-anchor="end">{escape(result["name"])}</text>',
            f'<rect x="{LABEL_WIDTH}" y="{y + 4}" width="{length:.1f}" height="{ROW_HEIGHT - 8}" fill="{colour}"/>',
            f'<text x="{LABEL_WIDTH + length + 6:.1f}" y="{y + 16}">{escape(label)}</text>',
        ]
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def write(report: dict, path: Path) -> Path:
    path.write_text(svg(report))
    return path

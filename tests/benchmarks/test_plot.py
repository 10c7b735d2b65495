"""The benchmark chart: one section per corpus (the MariaDB binlog, the MySQL 8 JSON corpus), a bar
and a label for every measurement with rows/s, peers grey and binlake blue, and valid SVG."""

from __future__ import annotations

import math
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import plot  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"

MARIADB_RESULTS = [
    {"name": "mariadb-binlog", "rows_per_s": 2887417, "mb_per_s": 331.9},
    {"name": "mariadb-binlog -v decode-rows", "rows_per_s": 1027290, "mb_per_s": 118.1},
    {"name": "binlog-codec rows", "rows_per_s": 1400705, "mb_per_s": 161.0},
    {"name": "python-mysql-replication", "rows_per_s": 33982, "mb_per_s": 3.9},
    {"name": "spark ingest local[2]", "rows_per_s": 54094, "mb_per_s": 6.2},
]
JSON_RESULTS = [
    {"name": "binlog-codec rows", "rows_per_s": 7101, "mb_per_s": 3.98},
    {"name": "python-mysql-replication", "rows_per_s": 5554, "mb_per_s": 3.11},
    {"name": "mariadb-binlog -v decode-rows", "exit_status": 1,
     "error": "Character set '#255' is not a compiled character set"},
]


def _report(mariadb: bool = True, json: bool = True) -> dict:
    report: dict = {"file_mb": 1032.4, "row_count": 8981600} if mariadb else {}
    report["results"] = MARIADB_RESULTS if mariadb else []
    if json:
        report["json"] = {"file_mb": 1024.0, "rows": 1826467, "results": JSON_RESULTS}
    return report


def _corpora(report: dict) -> dict[str, ET.Element]:
    """The chart's sections by their ``data-corpus``, from the SVG parsed as XML."""
    root = ET.fromstring(plot.svg(report))
    assert root.tag == f"{SVG}svg"
    return {g.get("data-corpus"): g for g in root.iter(f"{SVG}g") if g.get("class") == "corpus"}


def _texts(section: ET.Element, kind: str) -> list[str]:
    return [t.text for t in section.iter(f"{SVG}text") if t.get("class") == kind]


def _bars(section: ET.Element) -> list[ET.Element]:
    return list(section.iter(f"{SVG}rect"))


def test_both_corpora_have_a_titled_section_with_a_bar_and_label_per_measurement():
    corpora = _corpora(_report())
    assert list(corpora) == ["mariadb", "json"]

    mariadb, json = corpora["mariadb"], corpora["json"]
    assert _texts(mariadb, "title") == ["MariaDB binlog: 1032.4 MB, 8,981,600 row changes: rows/s (log scale)"]
    assert _texts(json, "title") == ["MySQL 8 JSON corpus: 1024.0 MB, 1,826,467 row changes: rows/s (log scale)"]

    assert _texts(mariadb, "name") == [r["name"] for r in MARIADB_RESULTS]
    assert len(_bars(mariadb)) == len(MARIADB_RESULTS)
    assert _texts(mariadb, "label") == [f"{r['rows_per_s']:,} rows/s, {r['mb_per_s']} MB/s" for r in MARIADB_RESULTS]

    assert _texts(json, "label") == ["7,101 rows/s, 3.98 MB/s", "5,554 rows/s, 3.11 MB/s"]
    assert len(_bars(json)) == 2


def test_a_failed_measurement_is_named_and_marked_failed_without_a_bar():
    json = _corpora(_report())["json"]
    assert _texts(json, "name") == [r["name"] for r in JSON_RESULTS]
    assert _texts(json, "missing") == ["failed"]


def test_peers_are_grey_and_binlake_blue_in_both_sections():
    for section, results in zip(_corpora(_report()).values(), (MARIADB_RESULTS, JSON_RESULTS)):
        colours = [bar.get("fill") for bar in _bars(section)]
        expected = [plot.PEER_COLOUR if r["name"].startswith(plot.PEERS) else plot.BINLAKE_COLOUR
                    for r in results if "rows_per_s" in r]
        assert colours == expected
        assert plot.PEER_COLOUR in colours and plot.BINLAKE_COLOUR in colours


def test_both_sections_share_one_scale_and_the_second_lies_below_the_first():
    mariadb, json = _corpora(_report()).values()
    widths = {(section, bar_label): float(bar.get("width"))
              for section, g in (("mariadb", mariadb), ("json", json))
              for bar, bar_label in zip(_bars(g), _texts(g, "label"))}
    codec_mariadb = widths[("mariadb", "1,400,705 rows/s, 161.0 MB/s")]
    codec_json = widths[("json", "7,101 rows/s, 3.98 MB/s")]
    assert codec_json < codec_mariadb  # 7,101 rows/s is shorter than 1.4 M rows/s on the same axis

    # on one log scale, the difference in length is proportional to the ratio's logarithm
    per_decade = (codec_mariadb - codec_json) / math.log10(1400705 / 7101)
    pymysql_gap = widths[("mariadb", "33,982 rows/s, 3.9 MB/s")] - widths[("json", "5,554 rows/s, 3.11 MB/s")]
    assert abs(pymysql_gap - per_decade * math.log10(33982 / 5554)) < 1.0

    lowest_mariadb = max(float(bar.get("y")) for bar in _bars(mariadb))
    highest_json = min(float(bar.get("y")) for bar in _bars(json))
    assert highest_json > lowest_mariadb


def test_a_report_of_one_corpus_has_one_section():
    only_mariadb = _corpora(_report(json=False))
    assert list(only_mariadb) == ["mariadb"]
    assert len(_bars(only_mariadb["mariadb"])) == len(MARIADB_RESULTS)

    only_json = _corpora(_report(mariadb=False))
    assert list(only_json) == ["json"]
    assert _texts(only_json["json"], "label") == ["7,101 rows/s, 3.98 MB/s", "5,554 rows/s, 3.11 MB/s"]


def test_the_svg_is_as_tall_as_its_sections():
    for report in (_report(), _report(json=False)):
        root = ET.fromstring(plot.svg(report))
        bottom = max(float(t.get("y")) for t in root.iter(f"{SVG}text"))
        assert bottom < float(root.get("height")) <= bottom + 2 * plot.MARGIN + plot.ROW_HEIGHT


def test_names_are_escaped():
    report = {"file_mb": 1, "row_count": 10, "results": [{"name": "a <b> & c", "rows_per_s": 10, "mb_per_s": 1}]}
    assert _texts(_corpora(report)["mariadb"], "name") == ["a <b> & c"]


def test_a_run_without_rows_per_second_says_so():
    root = ET.fromstring(plot.svg({"results": [{"name": "mariadb-binlog", "error": "not found"}]}))
    assert [t.text for t in root.iter(f"{SVG}text")] == ["no results"]


def test_write_puts_the_chart_in_the_file(tmp_path):
    path = plot.write(_report(), tmp_path / "results.svg")
    assert path.read_text() == plot.svg(_report())

"""End to end with partial JSON: a synthetic MySQL 8 stream (inserts with whole documents, then
PARTIAL_UPDATE_ROWS under binlog_row_image=MINIMAL, in plain and compressed transactions)
ingested by the Spark job gives in ``current/`` the documents the corpus says the rows hold."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from binlog_codec.corpus import write_corpus
from binlog_codec.json_binary import to_text
from binlog_codec.json_text import from_text
from spark_jobs.ingest import ingest
from warehouse.layout import table_folder

DATABASE = "shop"


def current_rows(warehouse: Path, table: str) -> dict[int, dict]:
    folder = Path(table_folder(warehouse, "current", DATABASE, table))
    rows = pa.concat_tables(pq.read_table(p) for p in sorted(folder.glob("*.parquet"))).to_pylist()
    return {row["id"]: row for row in rows}


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "compressed"])
def test_current_documents_equal_the_updates_applied_directly(spark, tmp_path, compress):
    source = tmp_path / "source"
    source.mkdir()
    corpus = write_corpus(source / "binlog.000001", transactions=300, seed=7, image="minimal", compress=compress)
    assert corpus.counts["partial_json"] > 50 and corpus.counts["REMOVE"] and corpus.counts["INSERT"]
    warehouse = tmp_path / "warehouse"
    result = ingest(str(source), str(warehouse), spark=spark, target_bytes=64 << 10, validation=False)
    assert sum(result.rows.values()) == corpus.counts["insert"] + corpus.counts["update"] + corpus.counts["delete"]
    documents = 0
    for table, wanted in corpus.final_rows.items():
        ours = current_rows(warehouse, table)
        assert sorted(ours) == sorted(wanted), table
        for key, row in wanted.items():
            for column, value in row.items():
                if isinstance(value, (dict, list)):
                    assert ours[key][column] == to_text(value), (table, key, column)
                    assert from_text(ours[key][column]) == value
                    documents += 1
            assert ours[key]["_incomplete_columns"] == [], (table, key)
    assert documents > 100

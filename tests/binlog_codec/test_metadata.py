"""Column SQL types and ``binlog-codec metadata`` (WL#4618 I3, "Prints the extra metadata
through mysqlbinlog").

The text is the one ``mariadb-binlog --print-table-metadata`` prints. The
integration tests run every MariaDB column type through a private server under
binlog_row_metadata FULL, MINIMAL and NO_LOG and compare the ``# Columns(`` and
``# Primary Key(`` blocks byte for byte; the places where mariadb-binlog is
wrong and we are not have tests of their own.
"""

from __future__ import annotations

import json

import pytest

from binlog_codec.events import TableMapEvent, read
from binlog_codec.table_map import (
    Column,
    ColumnType,
    column_definition,
    column_values,
    metadata_comment,
    sql_type,
    table_map,
)
from cli_run import run
from fixture_facts import path
from mariadb import binlog_of, our_metadata_blocks, reference_metadata_blocks

MARIADB_FIXTURE = "blackbeam__rust_mysql_common/mariadb-bin.000001"


def tables_of(name: str) -> list:
    return [table_map(event) for event in read(path(name)) if isinstance(event, TableMapEvent)]


def first_table_map_event(name: str) -> TableMapEvent:
    return next(event for event in read(path(name)) if isinstance(event, TableMapEvent))


# -- shared fixtures -----------------------------------------------------------


def test_sql_types_of_a_mysql_8_table_with_enum_and_set():
    """CHAR(128) utf8mb4 is 512 bytes; mariadb-binlog, which does not know MySQL's
    utf8mb4_0900_ai_ci (255), prints it BINARY(512) and the TEXT column as BLOB."""
    columns = tables_of("blackbeam__rust_mysql_common/mysql-enum-string-set.000001")[0].columns
    utf8mb4 = " CHARSET utf8mb4 COLLATE utf8mb4_0900_ai_ci"
    assert columns[0].length == 512
    assert [sql_type(c, "mysql") for c in columns] == [
        "CHAR(128)" + utf8mb4,
        "VARCHAR(300)" + utf8mb4,
        "ENUM('var1','variant2','foo')" + utf8mb4,
        "SET('one','two','three','four')" + utf8mb4,
        "TEXT" + utf8mb4,
    ]


def test_mysql_types_mariadb_binlog_cannot_name():
    """JSON and VECTOR: mariadb-binlog prints INVALID_TYPE(245)/INVALID_TYPE(242), leaves out
    the separator after it and reads the next column's metadata from the wrong offset
    (``INVALID_TYPE(245)VARBINARY(36868)`` for JSON followed by VARCHAR(100))."""
    (table, *_) = tables_of("blackbeam__rust_mysql_common/json.binlog.000001")
    assert metadata_comment(table, "mysql") == (
        "# Columns(INT NOT NULL,\n"
        "#         JSON,\n"
        "#         VARCHAR(100) CHARSET utf8mb4 COLLATE utf8mb4_0900_ai_ci,\n"
        "#         INT)\n"
    )
    bar = next(t for t in tables_of("blackbeam__rust_mysql_common/vector.binlog") if t.table == "bar")
    assert metadata_comment(bar, "mysql") == (
        "# Columns(`id` BIGINT UNSIGNED NOT NULL,\n"
        "#         `vector_column` VECTOR(2) NOT NULL,\n"
        "#         `foo` TEXT CHARSET utf8mb4 COLLATE utf8mb4_0900_ai_ci,\n"  # CREATE TABLE bar(..., foo TEXT, ...)
        "#         `vector_column2` VECTOR(4) NOT NULL)\n"
        "# Primary Key(id)\n"
    )


def test_table_map_without_optional_metadata():
    """No names (WL#4618 I3: "if column names are not binloged, colum names will not be
    printed"), no signedness, no charsets: string columns in their byte form with lengths
    in bytes, as mariadb-binlog prints them, and no Primary Key line. The MySQL 5.5
    TIMESTAMP (type 7) is named; mariadb-binlog prints ``INVALID_TYPE(7)``."""
    actor = next(t for t in tables_of("osheroff__mysql-binlog-connector-java/mysql-bin.sakila") if t.table == "actor")
    assert metadata_comment(actor, "mysql") == (
        "# Columns(SMALLINT NOT NULL,\n"
        "#         VARBINARY(135) NOT NULL,\n"
        "#         VARBINARY(135) NOT NULL,\n"
        "#         TIMESTAMP NOT NULL)\n"
    )


def test_mariadb_fixture():
    """Byte for byte what mariadb-binlog --print-table-metadata prints for this file."""
    (table, *_) = tables_of(MARIADB_FIXTURE)
    assert metadata_comment(table, "mariadb") == (
        "# Columns(`id` INT NOT NULL,\n"
        "#         `topic` VARCHAR(255) NOT NULL CHARSET utf8mb4 COLLATE utf8mb4_general_ci,\n"
        "#         `event_type` ENUM('BLOB','JSON','PROTOBUF') CHARSET utf8mb4 COLLATE utf8mb4_general_ci,\n"
        "#         `event` BLOB NOT NULL,\n"
        "#         `created` TIMESTAMP NOT NULL)\n"
        "# Primary Key(id)\n"
    )


def test_default_charset_overrides_are_column_index_then_collation():
    event = first_table_map_event(MARIADB_FIXTURE)
    event.optional_metadata = b"\x02\x03\x2d\x01\x3f"  # DEFAULT_CHARSET: 45, character column 1 -> 63
    columns = table_map(event).columns
    assert [(c.real_type, c.collation_id) for c in columns if c.collation_id is not None] == [
        (ColumnType.VARCHAR, 45),
        (ColumnType.BLOB, 63),
    ]


# -- the SQL type rules on single columns -----------------------------------------


def column(type_code: int, **fields) -> Column:
    fields.setdefault("real_type", type_code)
    return Column(index=0, type_code=type_code, nullable=fields.pop("nullable", True), **fields)


@pytest.mark.parametrize(
    "col, text",
    [
        (column(ColumnType.YEAR, unsigned=True), "YEAR"),
        (column(ColumnType.LONGLONG, unsigned=True), "BIGINT UNSIGNED"),
        (column(ColumnType.NEWDECIMAL, precision=65, scale=30, unsigned=False), "DECIMAL(65,30)"),
        (column(ColumnType.BIT, length=64), "BIT(64)"),
        (column(ColumnType.TIME2, fsp=0), "TIME"),
        (column(ColumnType.DATETIME2, fsp=6), "DATETIME(6)"),
        (column(ColumnType.TIMESTAMP2, fsp=3), "TIMESTAMP(3)"),
        (column(ColumnType.STRING, length=20, collation_id=35), "CHAR(10) CHARSET ucs2 COLLATE ucs2_general_ci"),
        (column(ColumnType.STRING, length=20, collation_id=63), "BINARY(20)"),
        (column(ColumnType.VARCHAR, length=30, collation_id=33), "VARCHAR(10) CHARSET utf8mb3 COLLATE utf8mb3_general_ci"),
        (column(ColumnType.BLOB, pack_length=1, collation_id=63), "TINYBLOB"),
        (column(ColumnType.BLOB, pack_length=3, collation_id=8), "MEDIUMTEXT CHARSET latin1 COLLATE latin1_swedish_ci"),
        (column(ColumnType.BLOB, pack_length=4), "LONGBLOB"),
        (column(ColumnType.GEOMETRY, pack_length=4, collation_id=63, geometry_type=6), "MULTIPOLYGON"),
        (column(ColumnType.STRING, real_type=ColumnType.SET, collation_id=63, set_values=["a"]), "SET('a') CHARSET binary COLLATE binary"),
        (column(ColumnType.STRING, real_type=ColumnType.ENUM), "ENUM"),
    ],
)
def test_sql_type(col, text):
    assert sql_type(col, "mariadb") == text


def test_names_and_values_are_quoted():
    """Values and names get mariadb-binlog's C-style escapes; a backtick in a name is
    doubled, as SQL quoting requires (mariadb-binlog leaves it single)."""
    col = column(
        ColumnType.STRING, real_type=ColumnType.ENUM, name="we`ird\n", nullable=False, collation_id=45,
        enum_values=["it's", "back\\slash", "tab\t", ""],
    )
    assert column_definition(col, "mariadb") == (
        "`we``ird\\n` ENUM NOT NULL('it\\'s','back\\\\slash','tab\\t','') CHARSET utf8mb4 COLLATE utf8mb4_general_ci"
    )


def test_enum_values_are_read_in_their_character_set():
    """The table map stores ENUM/SET values in the column's charset; mariadb-binlog prints
    their raw bytes (``'\\xff'`` for a cp1251 'я'), we decode them. Bytes of a binary
    ENUM that are not UTF-8 are written ``\\xNN``."""
    cp1251 = column(ColumnType.STRING, real_type=ColumnType.ENUM, collation_id=51, enum_values=["\udcff", "x"])
    assert column_values(cp1251, "mariadb") == ["я", "x"]
    binary = column(ColumnType.STRING, real_type=ColumnType.SET, collation_id=63, set_values=["a\udcff"])
    assert sql_type(binary, "mariadb") == "SET('a\\xff') CHARSET binary COLLATE binary"


@pytest.mark.parametrize(
    "col, message",
    [
        (column(ColumnType.BLOB, pack_length=5), "pack length 5"),
        (column(ColumnType.GEOMETRY, pack_length=4, geometry_type=9), "geometry type 9"),
        (column(ColumnType.VARCHAR, length=3, collation_id=0), "unknown collation id 0"),
        (column(ColumnType.STRING, real_type=ColumnType.ENUM, collation_id=35, enum_values=["odd"]), "invalid ucs2"),
    ],
)
def test_metadata_no_server_writes_is_an_error(col, message):
    with pytest.raises(ValueError, match=message):
        sql_type(col, "mariadb")


# -- the command line -----------------------------------------------------------


def test_cli_text(capsys):
    status, out, _ = run(capsys, "metadata", path(MARIADB_FIXTURE))
    assert status == 0
    first = out.split("# at ")[1]
    assert first.startswith("476: Table_map `toddy_test`.`outbox` mapped to number 38\n# Columns(`id` INT NOT NULL,\n")
    assert out.count("# Primary Key(id)\n") == out.count("# Columns(") == 2


def test_cli_json(capsys):
    status, out, _ = run(capsys, "metadata", "--json", path(MARIADB_FIXTURE))
    assert status == 0
    record = json.loads(out.splitlines()[0])
    assert {k: record[k] for k in ("pos", "table_id", "database", "table", "metadata_level")} == {
        "pos": 476, "table_id": 38, "database": "toddy_test", "table": "outbox", "metadata_level": "FULL",
    }
    event_type = record["columns"][2]
    assert event_type["sql_type"] == "ENUM('BLOB','JSON','PROTOBUF') CHARSET utf8mb4 COLLATE utf8mb4_general_ci"
    assert (event_type["type_code"], event_type["real_type"], event_type["nullable"]) == (254, 247, True)
    assert (event_type["collation_id"], event_type["collation"], event_type["charset"]) == (45, "utf8mb4_general_ci", "utf8mb4")
    assert event_type["enum_values"] == ["BLOB", "JSON", "PROTOBUF"] and event_type["set_values"] is None
    assert record["columns"][0]["unsigned"] is False
    assert record["primary_key"] == [{"index": 0, "name": "id", "prefix": 0}]


def patched_copy(tmp_path, name: str, find: bytes, replace: bytes):
    data = path(name).read_bytes()
    start = data.index(find)
    copy = tmp_path / path(name).name
    copy.write_bytes(data[:start] + replace + data[start + len(find):])
    return copy


@pytest.mark.parametrize(
    "find, replace, message",
    [
        # SIGNEDNESS (1) claims 0 bytes for a table with one numeric column.
        (b"\x01\x01\x00\x03", b"\x01\x00\x00\x03", "corrupt table map metadata"),
        # COLUMN_CHARSET (3): collation 45 becomes 0, which no server defines.
        (b"\x03\x02\x2d\x3f", b"\x03\x02\x00\x3f", "table map metadata: unknown collation id 0"),
    ],
)
def test_cli_bad_table_map_is_a_located_error(capsys, tmp_path, find, replace, message):
    copy = patched_copy(tmp_path, MARIADB_FIXTURE, find, replace)
    status, _, err = run(capsys, "metadata", "--no-verify-checksums", copy)
    assert status == 1
    assert err.count("\n") == 1
    assert err.startswith(f"binlog-codec: {copy}: at 476 (TABLE_MAP): ") and message in err


# -- against mariadb-binlog on a private server -------------------------------------

TABLES = r"""
CREATE DATABASE wl4618;
USE wl4618;
CREATE TABLE numbers (
  ti TINYINT NOT NULL, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED NOT NULL DEFAULT 0,
  mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT NOT NULL, iu INT UNSIGNED,
  bi BIGINT, biu BIGINT UNSIGNED NOT NULL DEFAULT 0,
  de DECIMAL(10,2), deu DECIMAL(65,30) UNSIGNED, de0 DECIMAL(5,0) NOT NULL DEFAULT 0,
  fl FLOAT, flu FLOAT UNSIGNED, do DOUBLE NOT NULL DEFAULT 0, dou DOUBLE UNSIGNED,
  b1 BIT(1), b64 BIT(64) NOT NULL DEFAULT 0, bo BOOLEAN,
  y YEAR, y2 YEAR NOT NULL DEFAULT 2000,
  PRIMARY KEY (i, ti)
);
CREATE TABLE temporal (
  id INT PRIMARY KEY, d DATE,
  t0 TIME, t1 TIME(1), t2 TIME(2), t3 TIME(3), t4 TIME(4), t5 TIME(5), t6 TIME(6) NOT NULL DEFAULT '00:00:00',
  dt0 DATETIME, dt1 DATETIME(1), dt2 DATETIME(2), dt3 DATETIME(3), dt4 DATETIME(4), dt5 DATETIME(5), dt6 DATETIME(6),
  ts0 TIMESTAMP NULL, ts1 TIMESTAMP(1) NULL, ts2 TIMESTAMP(2) NULL, ts3 TIMESTAMP(3) NULL,
  ts4 TIMESTAMP(4) NULL, ts5 TIMESTAMP(5) NULL, ts6 TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
);
CREATE TABLE strings (
  id INT NOT NULL,
  c_latin1 CHAR(10) CHARSET latin1, v_latin1 VARCHAR(300) CHARSET latin1 NOT NULL DEFAULT '',
  t_latin1 TEXT CHARSET latin1,
  c_cp1251 CHAR(5) CHARSET cp1251, v_cp1251 VARCHAR(20) CHARSET cp1251, t_cp1251 MEDIUMTEXT CHARSET cp1251,
  c_utf8mb3 CHAR(10) CHARSET utf8mb3, v_utf8mb3 VARCHAR(100) CHARSET utf8mb3 COLLATE utf8mb3_bin,
  t_utf8mb3 TINYTEXT CHARSET utf8mb3,
  c_utf8mb4 CHAR(255) CHARSET utf8mb4 NOT NULL DEFAULT '',
  v_utf8mb4 VARCHAR(1000) CHARSET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL,
  t_utf8mb4 LONGTEXT CHARSET utf8mb4 COLLATE utf8mb4_uca1400_ai_ci,
  c_gbk CHAR(3) CHARSET gbk, v_gbk VARCHAR(7) CHARSET gbk COLLATE gbk_bin, t_gbk TEXT CHARSET gbk,
  c_ucs2 CHAR(4) CHARSET ucs2, v_ucs2 VARCHAR(9) CHARSET ucs2 COLLATE ucs2_unicode_ci, t_ucs2 TEXT CHARSET ucs2,
  v_nopad VARCHAR(8) CHARSET utf8mb4 COLLATE utf8mb4_nopad_bin,
  PRIMARY KEY (id, v_utf8mb4(12))
);
CREATE TABLE mostly_utf8mb4 (
  a VARCHAR(10), b CHAR(2), c TEXT, d VARCHAR(3) CHARSET latin1, e VARCHAR(4), f TINYTEXT,
  PRIMARY KEY (c(20))
) DEFAULT CHARSET utf8mb4;
CREATE TABLE bytes (
  id INT UNSIGNED NOT NULL PRIMARY KEY,
  bn BINARY(8), bn255 BINARY(255) NOT NULL DEFAULT '', vb VARBINARY(40), vb_long VARBINARY(5000),
  tb TINYBLOB, bl BLOB NOT NULL DEFAULT '', mb MEDIUMBLOB, lb LONGBLOB,
  tt TINYTEXT, te TEXT, mt MEDIUMTEXT, lt LONGTEXT NOT NULL DEFAULT '',
  cb CHAR(6) CHARSET binary, tbin TEXT CHARSET binary
) DEFAULT CHARSET latin1;
CREATE TABLE choices (
  id INT NOT NULL PRIMARY KEY,
  e ENUM('a', 'it''s', 'back\\slash', 'tab\there', 'new\nline', 'dq"', '') NOT NULL DEFAULT 'a',
  e4 ENUM('x', 'y', 'émoji 😀') CHARSET utf8mb4 COLLATE utf8mb4_bin,
  el ENUM('one', 'two') CHARSET latin1,
  s SET('r', 'w', 'x''y', 'semi;colon'),
  s4 SET('αβ', 'γ') CHARSET utf8mb4 NOT NULL DEFAULT '',
  sl SET('p', 'q') CHARSET latin1 COLLATE latin1_bin,
  eb ENUM('z', 'zz') CHARSET binary,
  v VARCHAR(5)
) DEFAULT CHARSET utf8mb4;
CREATE TABLE shapes (
  id INT NOT NULL PRIMARY KEY,
  g GEOMETRY, p POINT NOT NULL DEFAULT (POINT(0, 0)), l LINESTRING, pg POLYGON,
  mp MULTIPOINT, ml MULTILINESTRING, mpg MULTIPOLYGON, gc GEOMETRYCOLLECTION
);
CREATE TABLE others (
  j JSON, j2 JSON NOT NULL DEFAULT '{}', ip INET6, u UUID,
  `Mixed Case ü` INT, `quo'te` INT, `back\slash` INT
);
"""
INSERTS = """
USE wl4618;
INSERT INTO numbers (ti, i) VALUES (1, {n});
INSERT INTO temporal (id) VALUES ({n});
INSERT INTO strings (id, v_utf8mb4, c_cp1251, c_ucs2) VALUES ({n}, 'ключ', 'я', 'я');
INSERT INTO mostly_utf8mb4 (c) VALUES ('c{n}');
INSERT INTO bytes (id) VALUES ({n});
INSERT INTO choices (id, e, s) VALUES ({n}, 'it''s', 'r,w');
INSERT INTO shapes (id) VALUES ({n});
INSERT INTO others (j) VALUES ('[1]');
"""  # {n}: the round, for fresh primary keys
TABLE_COUNT = 8


@pytest.fixture(scope="module")
def binlogs_by_level(mariadb):
    """One binlog per binlog_row_metadata level, each with one table map per table."""
    files = {}
    try:
        for n, level in enumerate(("FULL", "MINIMAL", "NO_LOG")):
            mariadb.sql(f"SET GLOBAL binlog_row_metadata = {level}")  # new sessions pick it up
            files[level] = binlog_of(mariadb, (TABLES if level == "FULL" else "") + INSERTS.format(n=n))
    finally:
        mariadb.sql("SET GLOBAL binlog_row_metadata = FULL")
    return files


@pytest.mark.integration
@pytest.mark.parametrize("level", ["FULL", "MINIMAL", "NO_LOG"])
def test_metadata_matches_mariadb_binlog(binlogs_by_level, level):
    """Every MariaDB column type (INET6 and UUID are logged as BINARY(16), JSON as
    LONGTEXT utf8mb4_bin), both charset encodings (COLUMN_CHARSET and DEFAULT_CHARSET
    with overrides), composite and prefix primary keys, a table without one; YEAR
    after every numeric column, where mariadb-binlog's signedness is still right."""
    binlog = binlogs_by_level[level]
    reference = reference_metadata_blocks(binlog)
    assert len(reference) == TABLE_COUNT
    assert our_metadata_blocks(binlog) == reference


@pytest.mark.integration
def test_year_signedness_mariadb_binlog_gets_wrong(mariadb):
    """The server gives YEAR a SIGNEDNESS bit; mariadb-binlog hands the bits out skipping
    YEAR, so every numeric column after it takes its left neighbour's flag."""
    binlog = binlog_of(
        mariadb,
        """
        CREATE DATABASE wl4618_year;
        USE wl4618_year;
        CREATE TABLE t (y YEAR, u INT UNSIGNED, s INT, t TINYINT UNSIGNED, d DECIMAL(4,1));
        INSERT INTO t (y) VALUES (2024);
        """,
    )
    ours = our_metadata_blocks(binlog)
    assert ours == [
        b"# Columns(`y` YEAR,\n"
        b"#         `u` INT UNSIGNED,\n"
        b"#         `s` INT,\n"
        b"#         `t` TINYINT UNSIGNED,\n"
        b"#         `d` DECIMAL(4,1))\n"
    ]
    declared = mariadb.rows(
        "SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS "
        "WHERE TABLE_SCHEMA = 'wl4618_year' AND TABLE_NAME = 't' ORDER BY ORDINAL_POSITION"
    )
    lines = ours[0].decode().splitlines()
    assert [("unsigned" in column_type) for _, column_type in declared] == [" UNSIGNED" in line for line in lines]
    assert reference_metadata_blocks(binlog) == [
        b"# Columns(`y` YEAR,\n"
        b"#         `u` INT UNSIGNED,\n"
        b"#         `s` INT UNSIGNED,\n"
        b"#         `t` TINYINT,\n"
        b"#         `d` DECIMAL(4,1) UNSIGNED)\n"
    ]


@pytest.mark.integration
def test_names_and_values_mariadb_binlog_gets_wrong(mariadb):
    """A backtick in a column name (doubled by us, single in mariadb-binlog) and ENUM/SET
    values outside ASCII in charsets other than utf8 (decoded by us, raw bytes in
    mariadb-binlog)."""
    binlog = binlog_of(
        mariadb,
        """
        CREATE DATABASE wl4618_text;
        USE wl4618_text;
        CREATE TABLE t (`we``ird` INT, e1 ENUM('я', 'б') CHARSET cp1251, e2 ENUM('я', 'x') CHARSET ucs2,
                        s SET('é') CHARSET latin1);
        INSERT INTO t (e1) VALUES ('я');
        """,
    )
    assert our_metadata_blocks(binlog) == [
        "# Columns(`we``ird` INT,\n"
        "#         `e1` ENUM('я','б') CHARSET cp1251 COLLATE cp1251_general_ci,\n"
        "#         `e2` ENUM('я','x') CHARSET ucs2 COLLATE ucs2_general_ci,\n"
        "#         `s` SET('é') CHARSET latin1 COLLATE latin1_swedish_ci)\n".encode()
    ]
    assert reference_metadata_blocks(binlog) == [
        b"# Columns(`we`ird` INT,\n"
        b"#         `e1` ENUM('\xff','\xe1') CHARSET cp1251 COLLATE cp1251_general_ci,\n"
        b"#         `e2` ENUM('\x04O','\\0x') CHARSET ucs2 COLLATE ucs2_general_ci,\n"
        b"#         `s` SET('\xe9') CHARSET latin1 COLLATE latin1_swedish_ci)\n"
    ]

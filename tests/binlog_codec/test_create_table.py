"""``create_table.table_map_of``: the table map of a CREATE TABLE statement.

The oracle is the server: for every table of :mod:`mariadb_workload` (every
column type, seven charsets) and for tables of tricky syntax, the table map
derived from ``SHOW CREATE TABLE`` must equal the one the server logs with
``binlog_row_metadata=FULL``. Unit tests cover the syntax of MySQL 8 and
MariaDB statements and the errors for what is not supported.
"""

from __future__ import annotations

import dataclasses

import pymysql
import pytest

from binlog_codec import charsets
from binlog_codec.create_table import default_collation, sql_text, table_map_of, tokens
from binlog_codec.rows import read_rows
from binlog_codec.table_map import ColumnType, sql_type
from mariadb import binlog_of
from mariadb_workload import TABLES, statements

# -- against the server ------------------------------------------------------------

TRICKY = (
    """CREATE TABLE `odd``name` (
      `a b` INT(5) UNSIGNED ZEROFILL NOT NULL DEFAULT 7 COMMENT 'it''s, (a) \\\\ comment',
      `v` VARCHAR(20) CHARACTER SET latin1 DEFAULT 'x,y''z',
      `g` INT AS (`a b` * 2) VIRTUAL, `p` INT AS (`a b` + 1) PERSISTENT,
      `ts` TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
      `d` DOUBLE DEFAULT -1.5e-10, `e` DECIMAL(6,2) DEFAULT (1 + 2), `bt` BIT(3) DEFAULT b'101',
      `inv` INT INVISIBLE, `t` TEXT(300) CHARSET utf8mb4, `c` CHAR(20) COLLATE latin1_bin, `f` FLOAT(30),
      `u` INT UNIQUE,
      PRIMARY KEY (`v`(5), `a b`), KEY `k` (`c`), CONSTRAINT `chk` CHECK (`e` > 0)
    ) DEFAULT CHARSET=latin1""",
    """CREATE TABLE `promoted` (`x` INT, `y` INT NOT NULL, `z` VARCHAR(10) NOT NULL,
      UNIQUE KEY `ux` (`x`), UNIQUE KEY `uz` (`z`(3)), UNIQUE KEY `uyz` (`y`, `z`)) CHARSET utf8mb3""",
    "CREATE TABLE `long_unique` (`x` INT, `b` BLOB, `t` TEXT, UNIQUE (`b`), UNIQUE (`t`), UNIQUE (`x`))",
    "CREATE TABLE `no_key` (`x` INT, `s` SET('a','b') CHARSET ucs2, `m` MEDIUMBLOB NOT NULL)",
    """CREATE TABLE synonyms (a NATIONAL VARCHAR(10), b CHARACTER VARYING(3), c NCHAR(2), d NCHAR VARCHAR(4),
      e LONG VARBINARY, f LONG VARCHAR, g DOUBLE PRECISION, h CHARACTER(5), i NVARCHAR(7), j VARCHAR(3) BINARY,
      k CHAR(2) CHARACTER SET utf8mb4 BINARY) CHARSET latin1""",
)


def show_create(mariadb, database: str, table: str) -> str:
    """``SHOW CREATE TABLE`` through PyMySQL (the batch client would print its newlines raw)."""
    connection = pymysql.connect(unix_socket=str(mariadb.socket), user="root", charset="utf8mb4")
    try:
        with connection.cursor() as cursor:
            cursor.execute(f"SHOW CREATE TABLE `{database}`.`{table.replace('`', '``')}`")
            return cursor.fetchone()[1]
    finally:
        connection.close()


def logged_table_maps(binlog, database: str) -> dict:
    """The first table map the server logged for each table of ``database``."""
    found = {}
    for record in read_rows(binlog, database=database):
        found.setdefault(record.table, record.table_map)
    return found


@pytest.fixture(scope="module")
def workload(mariadb):
    """(database, its table maps as logged) after the workload of every column type."""
    database = "create_table_workload"
    return database, logged_table_maps(binlog_of(mariadb, statements(database, "FULL")), database)


@pytest.fixture(scope="module")
def tricky(mariadb):
    database = "create_table_tricky"
    script = [f"CREATE DATABASE `{database}`;", f"USE `{database}`;", *(f"{ddl};" for ddl in TRICKY)]
    script += [
        "INSERT INTO `odd``name` (`a b`, v) VALUES (1, 'q');",
        "INSERT INTO promoted VALUES (1, 2, 'a');",
        "INSERT INTO long_unique VALUES (1, 'x', 'y');",
        "INSERT INTO no_key VALUES (1, 'a,b', '');",
        "INSERT INTO synonyms (a) VALUES ('x');",
    ]
    return database, logged_table_maps(binlog_of(mariadb, "\n".join(script)), database)


def derived(mariadb, database: str, logged) -> object:
    return table_map_of(show_create(mariadb, database, logged.table), database=database, table_id=logged.table_id)


# MariaDB's SHOW CREATE TABLE result is utf8mb3: the emoji of this ENUM value comes out as '?'.
EMOJI_LABEL = ("choices", "e4", ["x", "émoji ?"], ["x", "émoji 😀"])


@pytest.mark.integration
@pytest.mark.parametrize("name", [table.name for table in TABLES])
def test_workload_table_maps_equal_the_logged_ones(mariadb, workload, name):
    database, logged = workload
    ours = derived(mariadb, database, logged[name])
    wanted = logged[name]
    if name == EMOJI_LABEL[0]:
        column = next(c for c in ours.columns if c.name == EMOJI_LABEL[1])
        assert column.enum_values == EMOJI_LABEL[2]
        column.enum_values = EMOJI_LABEL[3]
    assert dataclasses.asdict(ours) == dataclasses.asdict(wanted)
    assert [sql_type(c, "mariadb") for c in ours.columns] == [sql_type(c, "mariadb") for c in wanted.columns]


@pytest.mark.integration
def test_tricky_table_maps_equal_the_logged_ones(mariadb, tricky):
    database, logged = tricky
    assert len(logged) == len(TRICKY)
    for table in logged.values():
        assert dataclasses.asdict(derived(mariadb, database, table)) == dataclasses.asdict(table), table.table


@pytest.mark.integration
def test_tricky_tables_cover_keys_prefixes_and_hidden_columns(tricky):
    """The logged facts the tricky tables are there for, so that the comparison above means something."""
    _, logged = tricky
    assert logged["odd`name"].primary_key == [(1, 5), (0, 0)]
    assert logged["promoted"].primary_key == [(1, 0), (2, 0)]
    assert [c.name for c in logged["long_unique"].columns][-2:] == ["DB_ROW_HASH_1", "DB_ROW_HASH_2"]
    assert logged["no_key"].primary_key == []


@pytest.mark.integration
def test_default_collations_are_the_servers(mariadb):
    rows = mariadb.rows("SELECT CHARACTER_SET_NAME, DEFAULT_COLLATE_NAME FROM information_schema.CHARACTER_SETS")
    assert len(rows) > 30
    for charset, collation in rows:
        assert default_collation(charset, "mariadb").name == collation


# -- syntax ----------------------------------------------------------------------------


def one_column(definition: str, flavour: str = "mariadb", options: str = " DEFAULT CHARSET=latin1"):
    table = table_map_of(f"CREATE TABLE `t` (\n  {definition}\n){options}", database="db", flavour=flavour)
    assert len(table.columns) == 1
    return table.columns[0]


def test_show_create_table_of_mysql_8():
    statement = """CREATE TABLE `orders` (
  `id` bigint unsigned NOT NULL AUTO_INCREMENT,
  `code` char(4) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  `note` varchar(100) COLLATE utf8mb4_bin DEFAULT _utf8mb4'n/a',
  `doc` json DEFAULT NULL,
  `pos` point NOT NULL /*!80003 SRID 4326 */,
  `shapes` geomcollection DEFAULT NULL,
  `secret` int DEFAULT NULL /*!80023 INVISIBLE */,
  `total` decimal(12,3) GENERATED ALWAYS AS ((`id` * 2)) STORED,
  `created` datetime(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  `emb` vector(3) DEFAULT NULL,
  PRIMARY KEY (`id`),
  UNIQUE KEY `code` (`code`),
  KEY `fn` ((lower(`note`))),
  CONSTRAINT `orders_chk_1` CHECK ((`id` > 0))
) ENGINE=InnoDB AUTO_INCREMENT=5 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci COMMENT='a ''table'''
/*!50100 PARTITION BY HASH (`id`) PARTITIONS 2 */"""
    table = table_map_of(statement, database="shop", flavour="mysql", table_id=7)
    by_name = {c.name: c for c in table.columns}
    assert (table.table_id, table.database, table.table) == (7, "shop", "orders")
    assert [sql_type(c, "mysql") for c in table.columns] == [
        "BIGINT UNSIGNED",
        "CHAR(4) CHARSET ascii COLLATE ascii_bin",
        "VARCHAR(100) CHARSET utf8mb4 COLLATE utf8mb4_bin",
        "JSON",
        "POINT",
        "GEOMETRYCOLLECTION",
        "INT",
        "DECIMAL(12,3)",
        "DATETIME(6)",
        "VECTOR(3)",
    ]
    assert by_name["doc"].type_code == ColumnType.JSON and by_name["doc"].collation_id is None
    assert by_name["note"].length == 400
    assert by_name["secret"].visible is False and by_name["id"].visible is True
    assert by_name["emb"].type_code == ColumnType.VECTOR and by_name["emb"].vector_dimension == 3
    assert table.primary_key == [(0, 0)] and not by_name["id"].nullable
    assert by_name["pos"].nullable is False and by_name["note"].nullable is True


def test_mysql_defaults_to_its_utf8mb4_collation():
    column = one_column("`c` varchar(2) CHARACTER SET utf8mb4", "mysql")
    assert charsets.collation(column.collation_id, "mysql").name == "utf8mb4_0900_ai_ci"
    assert one_column("`c` varchar(2) CHARACTER SET utf8mb4").collation_id == 45  # MariaDB's utf8mb4_general_ci


def test_column_charset_collation_and_table_default():
    assert one_column("`c` char(3)").collation_id == 8  # the table's latin1_swedish_ci
    assert one_column("`c` char(3)", options=" DEFAULT CHARSET=cp1251 COLLATE=cp1251_bin").collation_id == 50
    assert one_column("`c` char(3) CHARACTER SET utf8 COLLATE utf8_bin").collation_id == 83
    assert one_column("`c` char(3) CHARSET gbk").length == 6
    assert one_column("`c` text CHARACTER SET binary").collation_id == 63


@pytest.mark.parametrize(
    "definition, type_code, metadata",
    [
        ("`a` tinyint(1) DEFAULT NULL", ColumnType.TINY, {"unsigned": False}),
        ("`a` int(10) unsigned zerofill DEFAULT 00042", ColumnType.LONG, {"unsigned": True}),
        ("`a` year(4) DEFAULT NULL", ColumnType.YEAR, {"unsigned": True}),
        ("`a` decimal(65,30) unsigned", ColumnType.NEWDECIMAL, {"precision": 65, "scale": 30}),
        ("`a` decimal", ColumnType.NEWDECIMAL, {"precision": 10, "scale": 0}),
        ("`a` float(7,4) DEFAULT 1e+10", ColumnType.FLOAT, {"pack_length": 4}),
        ("`a` double precision", ColumnType.DOUBLE, {"pack_length": 8}),
        ("`a` bit(9) DEFAULT b'0'", ColumnType.BIT, {"length": 9}),
        ("`a` time(4) DEFAULT '-01:00:00.5000'", ColumnType.TIME2, {"fsp": 4}),
        ("`a` datetime DEFAULT '0000-00-00 00:00:00'", ColumnType.DATETIME2, {"fsp": 0}),
        ("`a` timestamp(6) NULL DEFAULT NULL", ColumnType.TIMESTAMP2, {"fsp": 6, "nullable": True}),
        ("`a` date NOT NULL", ColumnType.DATE, {"nullable": False}),
        ("`a` binary(16) NOT NULL", ColumnType.STRING, {"length": 16, "collation_id": 63}),
        ("`a` varbinary(300)", ColumnType.VARCHAR, {"length": 300, "collation_id": 63}),
        ("`a` tinyblob", ColumnType.BLOB, {"pack_length": 1, "collation_id": 63}),
        ("`a` longtext", ColumnType.BLOB, {"pack_length": 4, "collation_id": 8}),
        ("`a` text(70000)", ColumnType.BLOB, {"pack_length": 3}),
        ("`a` inet6 DEFAULT '::1'", ColumnType.STRING, {"length": 16, "collation_id": 63}),
        ("`a` uuid", ColumnType.STRING, {"length": 16, "collation_id": 63}),
        ("`a` inet4", ColumnType.STRING, {"length": 4, "collation_id": 63}),
        ("`a` vector(4)", ColumnType.VARCHAR, {"length": 16, "collation_id": 63}),
        ("`a` json", ColumnType.BLOB, {"pack_length": 4, "collation_id": 46}),
        ("`a` multipolygon", ColumnType.GEOMETRY, {"geometry_type": 6, "pack_length": 4, "collation_id": 63}),
        ("`a` point REF_SYSTEM_ID=4326 DEFAULT NULL", ColumnType.GEOMETRY, {"geometry_type": 1}),
    ],
)
def test_types_and_their_metadata(definition, type_code, metadata):
    column = one_column(definition)
    assert column.type_code == type_code == column.real_type
    assert {key: getattr(column, key) for key in metadata} == metadata


def test_enum_and_set_values_with_quotes_escapes_and_charsets():
    column = one_column(r"`e` enum('a','it''s','back\\slash','tab\there','',')') NOT NULL DEFAULT 'a'")
    assert (column.type_code, column.real_type, column.length) == (ColumnType.STRING, ColumnType.ENUM, 1)
    assert column.enum_values == ["a", "it's", "back\\slash", "tab\there", "", ")"]
    cyrillic = one_column("`e` enum('да','нет') CHARACTER SET cp1251 COLLATE cp1251_general_ci")
    assert [v.encode("utf-8", "surrogateescape") for v in cyrillic.enum_values] == ["да".encode("cp1251"),
                                                                                     "нет".encode("cp1251")]
    many = one_column("`s` set(" + ",".join(f"'m{n}'" for n in range(33)) + ")")
    assert (many.real_type, many.length, many.set_values[-1]) == (ColumnType.SET, 8, "m32")
    assert one_column("`s` set(" + ",".join(f"'m{n}'" for n in range(17)) + ")").length == 3
    assert one_column("`e` enum(" + ",".join(f"'v{n}'" for n in range(256)) + ")").length == 2


def test_defaults_and_comments_are_skipped_whole():
    column = one_column(
        "`c` varchar(10) DEFAULT 'x, y) NOT NULL' COMMENT 'COLLATE latin1_bin, (' CHECK (`c` <> ',')"
    )
    assert (column.nullable, column.collation_id, column.length) == (True, 8, 10)
    assert one_column("`n` int DEFAULT -1 NOT NULL").nullable is False
    assert one_column("`n` int DEFAULT (`m` + 1) NOT NULL").nullable is False
    assert one_column("`n` varchar(3) DEFAULT _latin1'a''b' NOT NULL").nullable is False


def test_quoted_identifiers_and_version_comments():
    table = table_map_of(
        'CREATE TABLE "we""ird" ("a`b" int NOT NULL /*!80023 INVISIBLE */, `c``d` int, PRIMARY KEY ("a`b"))',
        database="db", flavour="mysql",
    )
    assert table.table == 'we"ird'
    assert [c.name for c in table.columns] == ["a`b", "c`d"]
    assert table.columns[0].visible is False and table.primary_key == [(0, 0)]
    assert [t.text for t in tokens("a /* x, y */ b")] == ["a", "b"]


def test_charset_fields_follow_the_servers_choice():
    """DEFAULT_CHARSET when it is no longer than one collation per column, else COLUMN_CHARSET."""
    same = table_map_of("CREATE TABLE t (a char(1), b char(1), e enum('x')) CHARSET latin1", database="d")
    assert (same.default_charset, same.enum_set_default_charset) == (8, 8)
    mixed = table_map_of(
        "CREATE TABLE t (a char(1) CHARSET gbk, b char(1) CHARSET ucs2, c char(1)) CHARSET latin1", database="d"
    )
    assert mixed.default_charset is None
    assert table_map_of("CREATE TABLE t (n int)", database="d").default_charset is None


@pytest.mark.parametrize(
    "statement, message",
    [
        ("CREATE TABLE t (\n  `a` money\n)", r"line 2 \('`a` money'\): column 'a': unsupported type MONEY"),
        ("CREATE TABLE t (\n  `a` int frobnicate\n)", r"line 2 .*expected a column attribute, found 'frobnicate'"),
        ("CREATE TABLE t (\n  `a` blob /*!100301 COMPRESSED*/\n)", r"line 2 .*compressed columns"),
        ("CREATE VIEW v AS SELECT 1", r"line 1 .*expected TABLE, found 'VIEW'"),
        ("CREATE TABLE t (\n  `a` varchar\n)", r"line 2 \('`a` varchar'\): column 'a': VARCHAR needs a length"),
        ("CREATE TABLE t (\n  `a` char(2) CHARSET klingon\n)", r"unknown character set 'klingon'"),
        ("CREATE TABLE t (\n  `a` char(2)\n)", r"line 2 .*: column 'a' names no character set"),
        ("CREATE TABLE t (`a` int, PRIMARY KEY (`b`))", r"key over unknown column 'b'"),
        ("CREATE TABLE t (\n  `a` int DEFAULT\n)", r"line 2 .*expected a value"),
        ("CREATE TABLE t (\n  `a` enum(1, 2)\n) CHARSET latin1", r"line 2 .*: column 'a': expected quoted ENUM values"),
    ],
)
def test_unsupported_input_is_a_clear_error(statement, message):
    with pytest.raises(ValueError, match=message):
        table_map_of(statement, database="db")


@pytest.mark.parametrize("definition", ["`a` inet6", "`a` uuid"])
def test_mariadb_types_are_unknown_to_mysql(definition):
    with pytest.raises(ValueError, match="unsupported type"):
        one_column(definition, "mysql")


# -- the grammar DDL shares ------------------------------------------------------------


def test_binary_attribute_picks_the_bin_collation():
    assert one_column("`c` varchar(3) BINARY").collation_id == 47  # latin1_bin
    assert one_column("`c` varchar(3) CHARACTER SET utf8mb4 BINARY", "mysql").collation_id == 46  # utf8mb4_bin
    assert one_column("`c` varchar(3) BINARY COLLATE latin1_german1_ci").collation_id == 5


def test_serial_default_value_is_not_null():
    assert one_column("`n` int SERIAL DEFAULT VALUE").nullable is False


def test_qualified_names_line_comments_and_spaced_introducers():
    for name in ("db.t", "`db`.t", "db.`t`", "`db`.`t`"):
        assert table_map_of(f"CREATE TABLE {name} (a int)", database="x").table == "t"
    statement = "CREATE TABLE t ( -- a comment, (\n a int, # another\n b varchar(2) DEFAULT _latin1 'x' NOT NULL) CHARSET latin1"
    table = table_map_of(statement, database="x")
    assert [c.name for c in table.columns] == ["a", "b"] and table.columns[1].nullable is False
    assert one_column("`café` int").name == "café"


def test_tokens_follow_sql_mode_and_write_back():
    assert [(t.kind, t.text) for t in tokens('"a""b"')] == [("ident", 'a"b')]
    assert [(t.kind, t.text) for t in tokens('"a""b"', ansi_quotes=False)] == [("string", 'a"b')]
    assert [t.text for t in tokens(r"'a\' b", backslash_escapes=False)] == ["a\\", "b"]
    text = r"`x``y` + 'it''s \\ \t', f(1,2) - -3"
    assert sql_text(tokens(text)) == "`x``y` + 'it''s \\\\ \t', f(1, 2) - -3"
    assert sql_text(tokens(sql_text(tokens(text)))) == sql_text(tokens(text))
    assert [t.offset for t in tokens("a /* c */ bc")] == [0, 10]

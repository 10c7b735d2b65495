"""A scripted workload over every MariaDB column type, and the oracle that checks it.

The tables together use every column type MariaDB 10.11 has, in the charsets
latin1, cp1251, utf8mb3, utf8mb4, gbk, ucs2 and binary, with each type's
minimum and maximum values, NULLs, zero and partly-zero dates, fractional
seconds, negative TIME and long BLOBs. Every table has the primary key ``id``.

:func:`operations` is the workload as data (inserts, single-row updates and
deletes), so a test knows which columns each statement set and can check the
image rules of WL#5092; :func:`statements` is its SQL. :func:`server_state`
reads the tables back through the server's own text (``HEX()`` for bytes,
``HEX(CONVERT(... USING utf8mb4))`` for text) and :func:`as_server_text`
renders a decoded value the same way, so the two compare as strings.
"""

from __future__ import annotations

import datetime
import decimal
import struct
from dataclasses import dataclass, field

# How a column's value is read back from the server and compared.
PLAIN = "plain"  # integers, DECIMAL, temporal: the server's text
NUMBER = "number"  # BIT, YEAR: col+0
FLOAT = "float"  # FLOAT: equal as 4-byte floats
DOUBLE = "double"
TEXT = "text"  # character data: the UTF-8 bytes, in hex
BYTES = "bytes"  # binary data and GEOMETRY: HEX(col)
LABEL = "label"  # ENUM, SET: text with their labels, col+0 without


@dataclass(frozen=True)
class Column:
    name: str
    ddl: str
    kind: str
    values: tuple[str, ...]  # SQL literals, each a distinct stored value
    blob: bool = False  # logged as a BLOB type (TEXT, BLOB, JSON): left out of NOBLOB images

    def select(self, labels: bool = True) -> str:
        """The server's text of this column: what :func:`as_server_text` renders a decoded value to."""
        quoted = f"`{self.name}`"
        if self.kind == NUMBER:
            return f"{quoted}+0"
        if self.kind == LABEL and not labels:
            return f"CAST({quoted} AS UNSIGNED)"  # a 64-member SET+0 would be signed
        if self.kind in (TEXT, LABEL):
            return f"HEX(CONVERT({quoted} USING utf8mb4))"
        if self.kind == BYTES:
            return f"HEX({quoted})"
        return quoted


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    options: str = ""

    def ddl(self) -> str:
        body = ",\n  ".join(["id INT NOT NULL PRIMARY KEY", *(f"`{c.name}` {c.ddl}" for c in self.columns)])
        return f"CREATE TABLE `{self.name}` (\n  {body}\n){self.options};"

    @property
    def names(self) -> list[str]:
        return ["id", *(c.name for c in self.columns)]


def _col(name, ddl, kind, *values, blob=False) -> Column:
    return Column(name, ddl, kind, tuple(values), blob)


def _ints(name: str, ddl: str, low: int, high: int) -> Column:
    return _col(name, ddl, PLAIN, str(low), str(high), "0", "-1" if low else "1", "42")


MEGABYTE_BLOB = "REPEAT(UNHEX('00FF7F80'), 262144)"  # 1 MiB: a 4-byte length in the row image
LONG_TEXT = "REPEAT('ж😀x', 40000)"  # 280,000 bytes of mixed UTF-8

TABLES = (
    Table(
        "numbers",
        (
            _ints("ti", "TINYINT", -128, 127),
            _ints("tiu", "TINYINT UNSIGNED", 0, 255),
            _ints("si", "SMALLINT", -32768, 32767),
            _ints("siu", "SMALLINT UNSIGNED", 0, 65535),
            _ints("mi", "MEDIUMINT", -8388608, 8388607),
            _ints("miu", "MEDIUMINT UNSIGNED", 0, 16777215),
            _ints("i", "INT", -2147483648, 2147483647),
            _ints("iu", "INT UNSIGNED", 0, 4294967295),
            _ints("bi", "BIGINT", -9223372036854775808, 9223372036854775807),
            _ints("biu", "BIGINT UNSIGNED", 0, 18446744073709551615),
            _col("bo", "BOOLEAN", PLAIN, "0", "1", "-128", "127"),
            _col("de", "DECIMAL(10,2)", PLAIN, "-99999999.99", "99999999.99", "0", "-0.01", "1.5"),
            _col(
                "deu", "DECIMAL(65,30) UNSIGNED", PLAIN,
                "99999999999999999999999999999999999.999999999999999999999999999999", "0",
                "0.000000000000000000000000000001", "123456789012345678.9",
            ),
            _col("de0", "DECIMAL(5,0)", PLAIN, "-99999", "99999", "0", "7"),
            _col("de9", "DECIMAL(18,9)", PLAIN, "-999999999.999999999", "123456789.000000001", "0.5"),
            _col("fl", "FLOAT", FLOAT, "-3.40282e38", "3.40282e38", "1.17549e-38", "0", "-1.5", "123.456"),
            _col("flu", "FLOAT UNSIGNED", FLOAT, "0", "3.40282e38", "0.25"),
            _col(
                "do", "DOUBLE", DOUBLE,
                "-1.7976931348623157e308", "1.7976931348623157e308", "2.2250738585072014e-308", "0", "0.1", "-2.5e-300",
            ),
            _col("b1", "BIT(1)", NUMBER, "b'0'", "b'1'"),
            _col("b9", "BIT(9)", NUMBER, "b'0'", "b'111111111'", "b'100000001'"),
            _col("b64", "BIT(64)", NUMBER, "0", "18446744073709551615", "9223372036854775808", "1"),
            _col("y", "YEAR", NUMBER, "0", "1901", "2155", "2000"),
        ),
    ),
    Table(
        "temporal",
        (
            _col("d", "DATE", PLAIN, "'0000-00-00'", "'1000-01-01'", "'9999-12-31'", "'2020-00-15'", "'2024-02-29'"),
            *(
                _col(
                    f"t{n}", f"TIME({n})", PLAIN,
                    "'-838:59:59.999999'", "'838:59:59.999999'", "'00:00:00'", "'-00:00:00.5'",
                    "'-12:34:56.789012'", "'-00:00:01'", "'100:00:00.000001'",
                )
                for n in range(7)
            ),
            *(
                _col(
                    f"dt{n}", f"DATETIME({n})", PLAIN,
                    "'0000-00-00 00:00:00'", "'1000-01-01 00:00:00'", "'9999-12-31 23:59:59.999999'",
                    "'2020-00-00 12:00:00.5'", "'2024-02-29 01:02:03.456789'",
                )
                for n in range(7)
            ),
            *(
                _col(
                    f"ts{n}", f"TIMESTAMP({n}) NULL", PLAIN,
                    "'0000-00-00 00:00:00'", "'1970-01-01 00:00:01'", "'2038-01-19 03:14:07.999999'",
                    "'2024-02-29 01:02:03.456789'",
                )
                for n in range(7)
            ),
        ),
    ),
    Table(
        "texts",
        (
            _col(
                "c_latin1", "CHAR(10) CHARSET latin1", TEXT,
                "'café'", "''", "CONVERT(UNHEX('80818D8F909D9FFF') USING latin1)", "'tab\\there'",
            ),
            _col("v_latin1", "VARCHAR(300) CHARSET latin1", TEXT, "REPEAT('ÿ', 300)", "'Ä'", "''"),
            _col("t_latin1", "TEXT CHARSET latin1", TEXT, "REPEAT('x€', 30000)", "'ñ'", blob=True),
            _col("c_cp1251", "CHAR(5) CHARSET cp1251", TEXT, "'Привт'", "'ёЁ№'", "''"),
            _col("v_cp1251", "VARCHAR(20) CHARSET cp1251", TEXT, "'Съешь же ещё'", "'—«»'"),
            _col("t_cp1251", "MEDIUMTEXT CHARSET cp1251", TEXT, "REPEAT('я', 70000)", "'Ґ'", blob=True),
            _col("c_utf8mb3", "CHAR(10) CHARSET utf8mb3", TEXT, "'ñ€ʼ'", "'abc'"),
            _col("v_utf8mb3", "VARCHAR(85) CHARSET utf8mb3 COLLATE utf8mb3_bin", TEXT, "REPEAT('€', 85)", "'x'"),
            _col("t_utf8mb3", "TINYTEXT CHARSET utf8mb3", TEXT, "REPEAT('й', 127)", "'q'", blob=True),
            _col("c_utf8mb4", "CHAR(255) CHARSET utf8mb4", TEXT, "REPEAT('😀', 255)", "'a'"),
            _col("v63", "VARCHAR(63) CHARSET utf8mb4", TEXT, "REPEAT('😀', 63)", "'b'"),
            _col("v64", "VARCHAR(64) CHARSET utf8mb4", TEXT, "REPEAT('😀', 64)", "'c'"),
            _col("t_utf8mb4", "LONGTEXT CHARSET utf8mb4 COLLATE utf8mb4_unicode_ci", TEXT, LONG_TEXT, "'d'", blob=True),
            _col("c_gbk", "CHAR(3) CHARSET gbk", TEXT, "'中文字'", "'x'"),
            _col("v_gbk", "VARCHAR(7) CHARSET gbk COLLATE gbk_bin", TEXT, "'汉字与'", "''"),
            _col("t_gbk", "TEXT CHARSET gbk", TEXT, "REPEAT('龍', 1000)", "'y'", blob=True),
            _col("c_ucs2", "CHAR(4) CHARSET ucs2", TEXT, "'я€ab'", "'z'"),
            _col("v_ucs2", "VARCHAR(9) CHARSET ucs2 COLLATE ucs2_unicode_ci", TEXT, "'ﬀ字'", "''"),
            _col("t_ucs2", "TEXT CHARSET ucs2", TEXT, "REPEAT('ю', 2000)", "'w'", blob=True),
        ),
    ),
    Table(
        "bytes",
        (
            _col("bn", "BINARY(8)", BYTES, "UNHEX('0001020300000000')", "UNHEX('FFFFFFFFFFFFFFFF')", "''", "'ab'"),
            _col("bn255", "BINARY(255)", BYTES, "REPEAT(UNHEX('AB'), 255)", "UNHEX('00')"),
            _col("vb", "VARBINARY(40)", BYTES, "UNHEX('00000000')", "''", "'abc\\0'"),
            _col("vb_long", "VARBINARY(5000)", BYTES, "REPEAT(UNHEX('C3'), 5000)", "UNHEX('01')"),
            _col("cb", "CHAR(6) CHARSET binary", BYTES, "UNHEX('1000')", "'xyz'"),
            _col("tb", "TINYBLOB", BYTES, "REPEAT(UNHEX('7F'), 255)", "''", blob=True),
            _col("bl", "BLOB", BYTES, "REPEAT(UNHEX('00'), 65535)", "UNHEX('FF')", blob=True),
            _col("mb", "MEDIUMBLOB", BYTES, "REPEAT(UNHEX('0102'), 40000)", "'m'", blob=True),
            _col("lb", "LONGBLOB", BYTES, MEGABYTE_BLOB, "UNHEX('00')", blob=True),
            _col("tbin", "TEXT CHARSET binary", BYTES, "UNHEX('FFFE')", "'t'", blob=True),
        ),
    ),
    Table(
        "choices",
        (
            _col("e", "ENUM('a', 'it''s', 'back\\\\slash', 'tab\\there', '') NOT NULL DEFAULT 'a'", LABEL,
                 "'a'", "'it''s'", "'back\\\\slash'", "'tab\\there'", "''"),
            _col("e4", "ENUM('x', 'émoji 😀') CHARSET utf8mb4", LABEL, "'émoji 😀'", "'x'"),
            _col("e1251", "ENUM('да', 'нет') CHARSET cp1251", LABEL, "'нет'", "'да'"),
            _col("ebig", "ENUM(" + ", ".join(f"'v{n}'" for n in range(300)) + ")", LABEL, "'v299'", "'v0'", "'v255'"),
            _col("s", "SET('r', 'w', 'x''y', 'semi;colon')", LABEL, "'r,w'", "''", "'r,w,x''y,semi;colon'"),
            _col("s4", "SET('αβ', 'γ') CHARSET utf8mb4", LABEL, "'αβ,γ'", "'γ'"),
            _col("s64", "SET(" + ", ".join(f"'m{n}'" for n in range(64)) + ")", LABEL, "'m63'", "'m0,m1,m63'", "''"),
        ),
        " DEFAULT CHARSET latin1",
    ),
    Table(
        "shapes",
        (
            _col("g", "GEOMETRY", BYTES, "ST_GeomFromText('POINT(1 2)', 4326)",
                 "ST_GeomFromText('LINESTRING(0 0, 1 1, 2 0)')"),
            _col("p", "POINT", BYTES, "POINT(-1.5, 1e300)", "POINT(0, 0)"),
            _col("l", "LINESTRING", BYTES, "ST_GeomFromText('LINESTRING(0 0, 3 4)')"),
            _col("pg", "POLYGON", BYTES, "ST_GeomFromText('POLYGON((0 0, 4 0, 4 4, 0 4, 0 0), (1 1, 2 1, 2 2, 1 1))')"),
            _col("mp", "MULTIPOINT", BYTES, "ST_GeomFromText('MULTIPOINT(1 1, 2 2)')"),
            _col("ml", "MULTILINESTRING", BYTES, "ST_GeomFromText('MULTILINESTRING((0 0, 1 1), (2 2, 3 3))')"),
            _col("mpg", "MULTIPOLYGON", BYTES, "ST_GeomFromText('MULTIPOLYGON(((0 0, 1 0, 1 1, 0 0)))')"),
            _col("gc", "GEOMETRYCOLLECTION", BYTES, "ST_GeomFromText('GEOMETRYCOLLECTION(POINT(1 1), LINESTRING(0 0, 1 1))')"),
        ),
    ),
    Table(
        "others",
        (
            _col("j", "JSON", TEXT, "'{\"a\": [1, 2.5, \"x\"], \"b\": null}'", "'[]'", "'\"ü\"'", blob=True),
            _col("i4", "INET4", BYTES, "'0.0.0.0'", "'255.255.255.255'", "'10.1.2.3'"),
            _col("i6", "INET6", BYTES, "'::'", "'2001:db8::1'", "'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'"),
            _col("u", "UUID", BYTES, "'123e4567-e89b-12d3-a456-426614174000'", "'00000000-0000-0000-0000-000000000000'"),
        ),
    ),
)


@dataclass
class Operation:
    """One statement that changes exactly one row of ``table``."""

    kind: str  # insert, update, delete
    table: Table
    id: int
    values: dict[str, str] = field(default_factory=dict)  # column -> SQL literal (insert, update)

    def sql(self) -> str:
        name = f"`{self.table.name}`"
        if self.kind == "insert":
            columns = ", ".join(["id", *(f"`{c}`" for c in self.values)])
            return f"INSERT INTO {name} ({columns}) VALUES ({', '.join([str(self.id), *self.values.values()])});"
        if self.kind == "update":
            assignments = ", ".join(f"`{c}` = {v}" for c, v in self.values.items())
            return f"UPDATE {name} SET {assignments} WHERE id = {self.id};"
        return f"DELETE FROM {name} WHERE id = {self.id};"


def operations() -> list[Operation]:
    """Per table: one row per value of the longest value list (row k takes each column's k-th
    value, cycling), a row of NULLs, a row with only some columns given; then updates of one
    column, of several, to NULL and of the primary key; then deletes."""
    ops: list[Operation] = []
    for table in TABLES:
        width = max(len(c.values) for c in table.columns)
        for k in range(width):
            ops.append(Operation("insert", table, k + 1, {c.name: c.values[k % len(c.values)] for c in table.columns}))
        nulls = {c.name: ("NULL" if "NOT NULL" not in c.ddl else c.values[-1]) for c in table.columns}
        ops.append(Operation("insert", table, 100, nulls))
        first, last = table.columns[0], table.columns[-1]
        ops.append(Operation("insert", table, 101, {first.name: first.values[-1]}))  # the others take defaults
        for k in range(width):
            column = table.columns[k % len(table.columns)]
            ops.append(Operation("update", table, k + 1, {column.name: _other_value(column, k)}))
        ops.append(Operation("update", table, 1, {c.name: _other_value(c, 0, 1) for c in table.columns[::2]}))
        ops.append(Operation("update", table, 100, {first.name: first.values[0]}))  # NULL to a value
        ops.append(Operation("update", table, 2, {last.name: "NULL" if "NOT NULL" not in last.ddl else last.values[0]}))
        ops.append(Operation("update", table, 101, {"id": "201"}))
        ops.append(Operation("delete", table, width))
        ops.append(Operation("delete", table, 201))
    _track_ids(ops)
    return ops


# A schema change: ``numbers`` gets a wider ``ti`` and a new cp1251 column, then changes use both.
EVOLUTION = "ALTER TABLE `numbers` MODIFY `ti` SMALLINT, ADD COLUMN `extra` VARCHAR(20) CHARSET cp1251 NULL;"
EVOLVED_TABLES = tuple(
    Table(
        "numbers",
        tuple(_ints("ti", "SMALLINT", -32768, 32767) if c.name == "ti" else c for c in table.columns)
        + (_col("extra", "VARCHAR(20) CHARSET cp1251 NULL", TEXT, "'ещё раз'", "'Ґ'"),),
    )
    if table.name == "numbers"
    else table
    for table in TABLES
)


def evolution_operations() -> list[Operation]:
    """After :data:`EVOLUTION`: the new column set, the wider column beyond its old range, a new row."""
    numbers = next(t for t in EVOLVED_TABLES if t.name == "numbers")
    return [
        Operation("update", numbers, 1, {"extra": "'ещё раз'"}),
        Operation("update", numbers, 3, {"ti": "-300"}),
        Operation("insert", numbers, 300, {c.name: c.values[1 % len(c.values)] for c in numbers.columns}),
    ]


def _other_value(column: Column, k: int, step: int = 0) -> str:
    """A literal other than the one row k got at insert (and, with ``step``, at its first update)."""
    return column.values[(k + 1 + step) % len(column.values)] if len(column.values) > 1 else "NULL"


def _track_ids(ops: list[Operation]) -> None:
    """An update that sets ``id`` moves the row: later statements use the new key."""
    moved: dict[tuple[str, int], int] = {}
    for op in ops:
        op.id = moved.get((op.table.name, op.id), op.id)
        if op.kind == "update" and "id" in op.values:
            moved[(op.table.name, op.id)] = int(op.values["id"])


def statements(database: str, row_image: str) -> str:
    """The whole workload as one session: zero dates allowed, TIMESTAMPs in UTC."""
    return switching_statements(database, (row_image,))


def switching_statements(database: str, row_images: tuple[str, ...], evolve: bool = False) -> str:
    """The workload with the row image switched mid-stream: the statements in as many equal
    parts as ``row_images``, each part under the next image and, after the first, in a
    binlog file of its own; with ``evolve``, then :data:`EVOLUTION` and
    :func:`evolution_operations` under the last image."""
    lines = [
        f"CREATE DATABASE `{database}`;",
        f"USE `{database}`;",
        "SET SESSION sql_mode = '';",
        "SET SESSION time_zone = '+00:00';",
        "SET SESSION max_statement_time = 0;",
    ]
    lines += [table.ddl() for table in TABLES]
    ops = operations()
    size = -(-len(ops) // len(row_images))
    for part, image in enumerate(row_images):
        if part:
            lines.append("FLUSH BINARY LOGS;")
        lines.append(f"SET SESSION binlog_row_image = {image};")
        lines += [op.sql() for op in ops[part * size : (part + 1) * size]]
    if evolve:
        lines += [EVOLUTION, *(op.sql() for op in evolution_operations())]
    return "\n".join(lines) + "\n"


def server_state(mariadb, database: str, table: Table, labels: bool = True) -> dict[str, list[str]]:
    """The table as the server returns it: primary key -> the rendered columns. Without
    ``labels`` (no ENUM/SET values in the table map), ENUM and SET are their numbers."""
    columns = ", ".join(["id", *(c.select(labels) for c in table.columns)])
    rows = mariadb.rows(f"SET time_zone = '+00:00'; SELECT {columns} FROM `{database}`.`{table.name}` ORDER BY id")
    return {row[0]: [server_text(c, text) for c, text in zip(table.columns, row[1:])] for row in rows}


def as_server_text(column: Column, value, labels: bool = True) -> str:
    """A value of ``binlog-codec rows`` output rendered as :func:`server_state` renders it."""
    if value is None:
        return "NULL"
    if column.kind == FLOAT:
        return "float32:" + struct.pack("<f", value).hex()
    if column.kind == DOUBLE:
        return "double:" + struct.pack("<d", value).hex()
    if column.kind == TEXT or (column.kind == LABEL and labels):
        return value.encode("utf-8").hex().upper()
    if column.kind == BYTES:
        return value["hex"].upper()
    return str(value)


def server_text(column: Column, text: str) -> str:
    """The server's text of a value, normalised where two spellings mean the same number."""
    if text == "NULL":
        return text
    if column.kind == FLOAT:
        return "float32:" + struct.pack("<f", float(text)).hex()
    if column.kind == DOUBLE:
        return "double:" + struct.pack("<d", float(text)).hex()
    return text


def _fsp(column: Column) -> int:
    """The fractional-second digits of a TIME/DATETIME/TIMESTAMP column of the workload."""
    start = column.ddl.find("(")
    return int(column.ddl[start + 1]) if start >= 0 and column.ddl[start + 1].isdigit() else 0


def arrow_as_server_text(column: Column, value, unrepresentable: dict[str, str], labels: bool = True) -> str:
    """A warehouse value (``.as_py()`` of its Arrow type, see ``binlog_codec.arrow``) rendered as
    :func:`server_state` renders the server's; a value the Parquet type cannot hold is taken
    from the row's ``_unrepresentable`` map."""
    if column.name in unrepresentable:
        return unrepresentable[column.name]
    if isinstance(value, datetime.datetime):
        fsp = _fsp(column)
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        return text + (f".{value.microsecond:06d}"[: fsp + 1] if fsp else "")
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if column.kind == BYTES and value is not None:
        return value.hex().upper()
    return as_server_text(column, value, labels)


def warehouse_rows(root, area: str, database: str, table: str) -> list[dict]:
    """A warehouse table's rows (``area``: ``changes`` or ``current``), read as users read them:
    through the Iceberg catalog (none when the catalog has no such table)."""
    from warehouse import catalog

    name = catalog.changes_table(database, table) if area == "changes" else catalog.current_table(database, table)
    rows = catalog.read(root, name)
    return [] if rows is None else rows.to_pylist()


def assert_current_equals_server(mariadb, root, database: str, tables, label_text=lambda text: text) -> None:
    """``current/`` of each table equals ``SELECT *`` on the server, value for value, every row
    complete. ``label_text`` turns the server's text of an ENUM/SET value into the one expected
    (for labels known only from a source that cannot hold them exactly)."""
    for table in tables:
        rows = {row["id"]: row for row in warehouse_rows(root, "current", database, table.name)}
        wanted = server_state(mariadb, database, table)
        assert sorted(map(str, rows)) == sorted(wanted), table.name
        for key, row in rows.items():
            unrepresentable = dict(row["_unrepresentable"] or [])
            assert not row["_incomplete_columns"], (table.name, key, row["_incomplete_columns"])
            for column, server in zip(table.columns, wanted[str(key)]):
                ours = arrow_as_server_text(column, row[column.name], unrepresentable)
                if column.kind == LABEL and ours != server:
                    server = label_text(server)
                assert ours == server, (table.name, key, column.name, ours[:200], server[:200])

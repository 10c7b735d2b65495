"""The data-quality expectations of one table of a run, generated from the run's metadata.

:func:`table_expectations` turns what ``metadata/table_schemas`` says about a
table (its versions in the run and their columns) and what the transaction
index says (how many row changes it logged) into Great Expectations
expectations over the table's ``changes`` rows; :func:`charset_expectation`
does the same for the decoder's charset round trips (``metadata/charset_checks``).
:func:`failure_line` says in one line why a failed expectation failed.

What is checked, per table:

* **columns**: the changes' columns are exactly the source columns (the union
  over the table's versions) plus the change columns (:data:`CHANGE_COLUMNS`);
  each source column with one Arrow type across the versions has the Spark type
  of that ``arrow_type`` (:func:`spark_type`; a column whose type changed
  between versions was widened by the materialize step and is not checked);
* **integer ranges**, exactly: every TINYINT ... BIGINT and BIT value within
  its SQL type's range, per table version (a row is checked against the range
  of its own ``_schema_id``). Unsigned BIGINT and BIT(64) are decimal(20,0),
  which can hold 2^64 and more, so the bounds must not go through floats;
* **text**: every string column holds valid UTF-8 without U+FFFD, the
  replacement character a decoder puts in place of bytes it could not read
  (a latin1 string decoded as UTF-8 shows up that way). A source value that
  really is U+FFFD fails this check too;
* **charsets** (:func:`charset_expectation`): no decoded string of a
  non-UTF-8 text column failed to encode back to its logged bytes. Generated
  only for a table that has rows in ``metadata/charset_checks``: a table
  without such rows (or a run without the folder) has no non-UTF-8 text column;
* **operations**: ``_op`` is one of ``c``, ``u``, ``d``, ``r``;
* **change key**: ``(_binlog_seq, _binlog_pos, _binlog_inner_offset,
  _row_index)`` identifies a row (null inner offsets, outside compressed
  transactions, count as -1) and the rows of each Parquet file are in that
  order;
* **row count**: the table has as many change rows as the transaction index
  gave it (``rows_per_table`` of ``metadata/transactions``).

There is one expectation per kind of check and table, covering every column
it applies to: each expectation costs Spark jobs, and a table has many columns.
Type, range, text, operation and key checks are ``UnexpectedRowsExpectation``
with a Spark SQL query over ``{batch}`` that selects the offending rows (per
column, with the column's name), so the comparison is Spark's own --
decimal(20,0) against the literal 18446744073709551615 is exact, where
``expect_column_values_to_be_between`` compares floats and misses 2^64 -- and a
failure comes with example rows. (Great Expectations 1.24 runs such a query
on its Spark datasource with ``spark.sql``, ``{batch}`` being a temporary view
of the batch's DataFrame that it always names ``tmp_view``: two validations
must not run at the same time in one Spark session.) Row-level checks need to know where a row
sits: the validated DataFrame carries each row's Parquet file and row number in
it (:data:`FILE`, :data:`ROW_IN_FILE`), which the columns check expects too.

Every expectation carries ``meta``: its ``check`` (``columns``, ``type``,
``range``, ``text``, ``charset``, ``operation``, ``unique_key``, ``log_order``,
``row_count``) and what it checks per column (``columns``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable


from binlog_codec.arrow import CHANGE_COLUMNS as IMAGE_CHANGE_COLUMNS
from binlog_codec.table_map import ColumnType
from spark_jobs.materialize import INCOMPLETE

# The change columns the materialize step writes after the source columns: those of the row
# images (binlog_codec.arrow, which has no public name for them) and _incomplete_columns.
CHANGE_COLUMNS = (*IMAGE_CHANGE_COLUMNS, INCOMPLETE)
# Where a row sits: its Parquet file and its row number there (from Spark's _metadata).
FILE, ROW_IN_FILE = "__file", "__row_in_file"
OPERATIONS = ("c", "u", "d", "r")
NO_INNER_OFFSET = -1

# Bits of the integer types; BIT(n) has n.
_INTEGER_BITS = {ColumnType.TINY: 8, ColumnType.SHORT: 16, ColumnType.INT24: 24, ColumnType.LONG: 32,
                 ColumnType.LONGLONG: 64}
_BIT_WIDTH = re.compile(r"BIT\((\d+)\)")

# Arrow type names (``str(pyarrow type)``, as table_schemas has them) → Spark SQL ``typeof``.
_SPARK_TYPES = {
    "bool": "boolean", "int8": "tinyint", "int16": "smallint", "int32": "int", "int64": "bigint",
    "float": "float", "double": "double", "string": "string", "binary": "binary", "date32[day]": "date",
    "timestamp[us]": "timestamp_ntz", "timestamp[us, tz=UTC]": "timestamp", "list<item: float>": "array<float>",
}
_ARROW_DECIMAL = re.compile(r"decimal128\((\d+), (\d+)\)")

# A row's position, shown with every example row.
_POSITION = ("_binlog_file", "_binlog_pos", "_binlog_inner_offset", "_row_index")
_KEY = ("_binlog_seq", "_binlog_pos", "_binlog_inner_offset", "_row_index")
EXAMPLE_TEXT_LENGTH = 60


@dataclass(frozen=True)
class IntegerRange:
    """The values an integer column may hold; ``name`` is its SQL type."""

    name: str
    low: int
    high: int


@dataclass
class SourceColumn:
    """A column of the source table across the run's table versions."""

    name: str
    arrow_types: set[str] = field(default_factory=set)
    ranges: dict[IntegerRange, list[str]] = field(default_factory=dict)  # range → schema ids


@dataclass
class TableFacts:
    """What the run's metadata says about one table."""

    database: str
    table: str
    columns: dict[str, SourceColumn] = field(default_factory=dict)  # in order of first appearance
    logged_rows: int = 0  # rows the transaction index gives the table

    @property
    def name(self) -> str:
        return f"{self.database}.{self.table}"


def verdict(success: bool, expectations: int) -> str:
    """The word for a validation: ``passed`` only when expectations ran and held; ``nothing to
    check`` when none had anything to check (a run without row changes); else ``FAILED``."""
    if not success:
        return "FAILED"
    return "passed" if expectations else "nothing to check"


def table_facts(versions: Iterable[dict], logged_rows: dict[tuple[str, str], int]) -> list[TableFacts]:
    """One :class:`TableFacts` per table of the ``metadata/table_schemas`` rows ``versions``,
    with its row count from ``logged_rows`` ((database, table) → rows); tables only the
    transaction index names come last, without columns."""
    tables: dict[tuple[str, str], TableFacts] = {}
    for version in versions:
        key = (version["database"], version["table"])
        facts = tables.setdefault(key, TableFacts(*key, logged_rows=logged_rows.get(key, 0)))
        for column in version["columns"]:
            source = facts.columns.setdefault(column["name"], SourceColumn(column["name"]))
            source.arrow_types.add(column["arrow_type"])
            bounds = integer_range(column)
            if bounds is not None:
                source.ranges.setdefault(bounds, []).append(version["schema_id"])
    for key, rows in logged_rows.items():
        tables.setdefault(key, TableFacts(*key, logged_rows=rows))
    return list(tables.values())


def integer_range(column: dict) -> IntegerRange | None:
    """The range of a ``table_schemas`` column of an integer or BIT type, else None.

    A column whose signedness the table map did not record (``unsigned`` null)
    may hold either: the decoder reads it signed, the unsigned type holds both.
    """
    sql_type = column["sql_type"]
    if column["type_code"] == ColumnType.BIT:
        width = _BIT_WIDTH.match(sql_type)
        return IntegerRange(sql_type, 0, 2 ** int(width.group(1)) - 1) if width else None
    bits = _INTEGER_BITS.get(column["type_code"])
    if bits is None:
        return None
    signed_low, signed_high, unsigned_high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1, 2**bits - 1
    if column["unsigned"] is None:
        return IntegerRange(sql_type, signed_low, unsigned_high)
    if column["unsigned"]:
        return IntegerRange(sql_type, 0, unsigned_high)
    return IntegerRange(sql_type, signed_low, signed_high)


def spark_type(arrow_type: str) -> str:
    """Spark SQL's ``typeof`` name of an Arrow type name; an unknown name is returned as it is
    (so that the type check fails and shows it)."""
    decimal = _ARROW_DECIMAL.fullmatch(arrow_type)
    if decimal:
        return f"decimal({decimal.group(1)},{decimal.group(2)})"
    return _SPARK_TYPES.get(arrow_type, arrow_type)


# -- SQL text --------------------------------------------------------------------


def identifier(name: str) -> str:
    """A column name as a Spark SQL identifier, braces doubled for the ``{batch}`` template."""
    return _template("`" + name.replace("`", "``") + "`")


def literal(text: str) -> str:
    """A Spark SQL string literal, braces doubled for the ``{batch}`` template."""
    return _template("'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'")


def _template(sql: str) -> str:
    return sql.replace("{", "{{").replace("}", "}}")


def _position_columns() -> str:
    return ", ".join(identifier(name) for name in _POSITION)


def _key_struct() -> str:
    seq, pos, inner, row = (identifier(name) for name in _KEY)
    return (f"named_struct('seq', coalesce({seq}, -1), 'pos', {pos}, "
            f"'inner_offset', coalesce({inner}, {NO_INNER_OFFSET}), 'row', {row})")


# -- expectations ----------------------------------------------------------------


def table_expectations(facts: TableFacts) -> list:
    """The expectations over the changes of one table (see the module docstring): one per
    kind of check, each covering every column it applies to, so that a table costs a few
    Spark jobs however many columns it has."""
    columns = facts.columns.values()
    typed = {column.name: spark_type(next(iter(column.arrow_types))) for column in columns
             if len(column.arrow_types) == 1}
    ranges = [(column.name, bounds, ids) for column in columns for bounds, ids in column.ranges.items()]
    texts = [column.name for column in columns if column.arrow_types == {"string"}]
    expectations = [_columns(facts)]
    if typed:
        expectations.append(_column_types(typed))
    if ranges:
        expectations.append(_integer_ranges(ranges))
    if texts:
        expectations.append(_texts(texts))
    return expectations + [_operations(), _unique_key(), _log_order(), _row_count(facts.logged_rows)]


def _unexpected_rows(query: str, description: str, check: str, **expected: Any):
    """An ``UnexpectedRowsExpectation``; ``expected`` goes into its meta, for :func:`failure_line`."""
    import great_expectations as gx

    return gx.expectations.UnexpectedRowsExpectation(
        unexpected_rows_query=query, description=description, meta={"check": check, **expected},
    )


def _per_column(rows: list[str], condition: str) -> str:
    """``SELECT`` the row position and one row per column (the ``named_struct`` of ``rows``)
    from the rows of ``{batch}`` where ``condition`` holds; keep the entries flagged ``bad``."""
    return (f"SELECT * FROM (SELECT {_position_columns()}, inline(array({', '.join(rows)})) "
            f"FROM {{batch}} WHERE {condition}) WHERE bad")


def _columns(facts: TableFacts):
    """The column set. Great Expectations lists a struct's fields as columns of their own, so
    the fields of ``_before`` (the source columns) are expected too."""
    import great_expectations as gx

    expected = [*facts.columns, *CHANGE_COLUMNS, FILE, ROW_IN_FILE, *(f"_before.{name}" for name in facts.columns)]
    return gx.expectations.ExpectTableColumnsToMatchSet(
        column_set=expected, exact_match=True, meta={"check": "columns"},
        description="The columns are the source columns of metadata/table_schemas and the change columns.",
    )


def _column_types(types: dict[str, str]):
    """Each column's Spark type is that of its ``arrow_type`` (``types``: column → Spark type)."""
    observed = ", ".join(f"typeof(first({identifier(name)})) AS t{i}" for i, name in enumerate(types))
    entries = ", ".join(
        f"named_struct('column', {literal(name)}, 'observed_type', t{i}, 'expected_type', {literal(wanted)})"
        for i, (name, wanted) in enumerate(types.items())
    )
    query = (f"SELECT * FROM (SELECT inline(array({entries})) FROM (SELECT {observed} FROM {{batch}})) "
             f"WHERE observed_type <> expected_type")
    return _unexpected_rows(query, "Every source column has the type of its arrow_type in metadata/table_schemas.",
                            "type", columns=types)


def _integer_ranges(ranges: list[tuple[str, IntegerRange, list[str]]]):
    """Every integer value within its SQL type's range, for the table version of its row."""
    conditions, entries, checked = [], [], []
    for name, bounds, schema_ids in ranges:
        column = identifier(name)
        versions = ", ".join(literal(schema_id) for schema_id in sorted(schema_ids))
        outside = f"(`_schema_id` IN ({versions}) AND ({column} < {bounds.low} OR {column} > {bounds.high}))"
        conditions.append(outside)
        entries.append(f"named_struct('column', {literal(name)}, 'value', CAST({column} AS STRING), "
                       f"'sql_type', {literal(bounds.name)}, 'low', '{bounds.low}', 'high', '{bounds.high}', "
                       f"'bad', {outside})")
        checked.append({"column": name, "sql_type": bounds.name, "low": str(bounds.low), "high": str(bounds.high)})
    description = "Integer values lie within their SQL type: " + "; ".join(
        f"`{each['column']}` {each['sql_type']} [{each['low']}, {each['high']}]" for each in checked)
    return _unexpected_rows(_per_column(entries, " OR ".join(conditions)), description, "range", columns=checked)


def _texts(columns: list[str]):
    """Text is valid UTF-8 without U+FFFD."""
    conditions, entries = [], []
    for name in columns:
        column = identifier(name)
        bad = f"(NOT is_valid_utf8({column}) OR instr({column}, '\\uFFFD') > 0)"
        conditions.append(bad)
        entries.append(f"named_struct('column', {literal(name)}, 'value', left({column}, {EXAMPLE_TEXT_LENGTH}), "
                       f"'bad', {bad})")
    description = ("Text is valid UTF-8 without U+FFFD (a value decoded from the wrong charset) in "
                   + ", ".join(f"`{name}`" for name in columns) + ".")
    return _unexpected_rows(_per_column(entries, " OR ".join(conditions)), description, "text", columns=columns)


def _operations():
    allowed = ", ".join(literal(op) for op in OPERATIONS)
    query = (f"SELECT `_op` AS value, {_position_columns()} FROM {{batch}} "
             f"WHERE `_op` IS NULL OR `_op` NOT IN ({allowed})")
    return _unexpected_rows(query, f"`_op` is one of {', '.join(OPERATIONS)}.", "operation")


def _unique_key():
    key = _key_struct()
    query = (f"SELECT {key} AS key, count(*) AS copies, first(`_binlog_file`) AS `_binlog_file` "
             f"FROM {{batch}} GROUP BY {key} HAVING count(*) > 1")
    description = ("The change key (_binlog_seq, _binlog_pos, _binlog_inner_offset, _row_index) is unique "
                   "(a null _binlog_inner_offset counts as -1).")
    return _unexpected_rows(query, description, "unique_key")


def _log_order():
    key = _key_struct()
    file, row = identifier(FILE), identifier(ROW_IN_FILE)
    query = (f"SELECT file, row, previous, key FROM ("
             f"SELECT {file} AS file, {row} AS row, {key} AS key, "
             f"lag({key}) OVER (PARTITION BY {file} ORDER BY {row}) AS previous FROM {{batch}}"
             f") WHERE previous > key")
    description = "The rows of each Parquet file are in log order (ordered by the change key)."
    return _unexpected_rows(query, description, "log_order")


def _row_count(logged_rows: int):
    import great_expectations as gx

    return gx.expectations.ExpectTableRowCountToEqual(
        value=logged_rows, meta={"check": "row_count"},
        description=f"As many change rows as the transaction index logged ({logged_rows}).",
    )


def charset_expectation(database: str, table: str):
    """The expectation over ``metadata/charset_checks`` that no text column of one table had
    a string that did not encode back to its logged bytes."""
    query = (f"SELECT `column`, charset, checked, mismatches, example FROM {{batch}} "
             f"WHERE `database` = {literal(database)} AND `table` = {literal(table)} AND mismatches <> 0")
    description = f"Every decoded string of {database}.{table} encodes back to the bytes the binlog holds."
    return _unexpected_rows(query, description, "charset", database=database, table=table)


# -- failures --------------------------------------------------------------------


def failure_line(result: Any) -> str:
    """One line a data engineer can act on, from a failed ``ExpectationValidationResult``:
    what failed, in which columns, and an example of the bad data."""
    config = result.expectation_config
    check = (config.meta or {}).get("check", config.type)
    error = _exception(result.exception_info or {})
    if error is not None:
        return f"{check} check could not run: {error}"
    observed = (result.result or {}).get("observed_value")
    rows = ((result.result or {}).get("details") or {}).get("unexpected_rows") or []
    return _EXPLAIN[check]((config.meta or {}) | config.kwargs, observed, rows)


def _exception(info: dict) -> str | None:
    """The first line of the error that stopped an expectation, if one did. Great Expectations
    gives one error, or one per metric it could not compute (keyed by the metric)."""
    errors = [info] if "raised_exception" in info else list(info.values())
    for error in errors:
        if isinstance(error, dict) and error.get("raised_exception"):
            lines = (error.get("exception_message") or "").strip().splitlines()
            return lines[0] if lines else "unknown error"
    return None


def _at(row: dict) -> str:
    inner = row.get("_binlog_inner_offset")
    return (f"{row.get('_binlog_file')} at {row.get('_binlog_pos')}"
            f"{'' if inner is None else f'+{inner}'} row {row.get('_row_index')}")


def _key_text(key: dict) -> str:
    return f"seq {key['seq']}, pos {key['pos']}, inner offset {key['inner_offset']}, row {key['row']}"


def _columns_of(rows: list[dict]) -> str:
    """The columns the example rows name, in order, once each."""
    return ", ".join(dict.fromkeys(row["column"] for row in rows))


def _explain_columns(expected: dict, observed: Any, rows: list[dict]) -> str:
    wanted, seen = set(expected["column_set"]), set(observed or [])
    return (f"columns differ from metadata/table_schemas: missing {sorted(wanted - seen)}, "
            f"not in the metadata {sorted(seen - wanted)}")


def _explain_type(expected: dict, observed: Any, rows: list[dict]) -> str:
    return "; ".join(f"column {row['column']}: type {row['observed_type']}, but metadata/table_schemas says "
                     f"{row['expected_type']}" for row in rows)


def _explain_range(expected: dict, observed: Any, rows: list[dict]) -> str:
    first = rows[0]
    return (f"column {_columns_of(rows)}: {observed} values outside their type's range, e.g. {first['column']} "
            f"({first['sql_type']}, [{first['low']}, {first['high']}]) = {first['value']} ({_at(first)})")


def _explain_text(expected: dict, observed: Any, rows: list[dict]) -> str:
    first = rows[0]
    return (f"column {_columns_of(rows)}: {observed} values not valid UTF-8 or holding U+FFFD "
            f"(decoded from the wrong charset?), e.g. {first['column']} = {first['value']!r} ({_at(first)})")


def _explain_operation(expected: dict, observed: Any, rows: list[dict]) -> str:
    return (f"column _op: {observed} values not in {'/'.join(OPERATIONS)}, "
            f"e.g. {rows[0]['value']!r} ({_at(rows[0])})")


def _explain_unique_key(expected: dict, observed: Any, rows: list[dict]) -> str:
    first = rows[0]
    return (f"columns _binlog_seq, _binlog_pos, _binlog_inner_offset, _row_index: {observed} change keys "
            f"appear more than once, e.g. ({_key_text(first['key'])}) {first['copies']} times "
            f"in {first['_binlog_file']}")


def _explain_log_order(expected: dict, observed: Any, rows: list[dict]) -> str:
    first = rows[0]
    file = first["file"].rsplit("/changes/", 1)[-1]
    return (f"columns _binlog_seq, _binlog_pos, _binlog_inner_offset, _row_index: {observed} rows out of "
            f"log order, e.g. row {first['row']} of changes/{file} ({_key_text(first['key'])}) comes after "
            f"({_key_text(first['previous'])})")


def _explain_row_count(expected: dict, observed: Any, rows: list[dict]) -> str:
    return f"{observed} change rows, but the transaction index (metadata/transactions) logged {expected['value']}"


def _explain_charset(expected: dict, observed: Any, rows: list[dict]) -> str:
    first = rows[0]
    return (f"column {_columns_of(rows)}: strings that did not encode back to the logged bytes, e.g. "
            f"{first['column']} ({first['charset']}): {first['mismatches']} of {first['checked']}, "
            f"logged bytes {first['example']}")


_EXPLAIN = {
    "columns": _explain_columns, "type": _explain_type, "range": _explain_range, "text": _explain_text,
    "operation": _explain_operation, "unique_key": _explain_unique_key, "log_order": _explain_log_order,
    "row_count": _explain_row_count, "charset": _explain_charset,
}

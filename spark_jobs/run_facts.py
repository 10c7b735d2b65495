"""What a run's metadata says its row changes must look like, per table.

:func:`table_facts` reads the run's ``metadata/table_schemas`` rows (the table
versions and their columns) and the transaction index's row counts into one
:class:`TableFacts` per table: the source columns with their Arrow types, the
range each integer column's SQL type allows in each table version, and how many
row changes the table must have. The quality gate profiles the changes against
these facts (:mod:`spark_jobs.change_profile`) and states its expectations over
them (:mod:`spark_jobs.expectations`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

from binlog_codec.arrow import CHANGE_COLUMNS as IMAGE_CHANGE_COLUMNS
from binlog_codec.table_map import ColumnType
from spark_jobs.materialize import INCOMPLETE

# The change columns the materialize step writes after the source columns: those of the row
# images (binlog_codec.arrow) and _incomplete_columns.
CHANGE_COLUMNS = (*IMAGE_CHANGE_COLUMNS, INCOMPLETE)
BEFORE = "_before"  # the struct of before-image values, one field per source column

# Bits of the integer types; BIT(n) has n.
_INTEGER_BITS = {ColumnType.TINY: 8, ColumnType.SHORT: 16, ColumnType.INT24: 24, ColumnType.LONG: 32,
                 ColumnType.LONGLONG: 64}
_BIT_WIDTH = re.compile(r"BIT\((\d+)\)")


@dataclass(frozen=True)
class IntegerRange:
    """The values an integer column may hold; ``name`` is its SQL type."""

    name: str
    low: int
    high: int

    def __str__(self) -> str:
        return f"{self.name} [{self.low}, {self.high}]"


@dataclass
class SourceColumn:
    """A column of the source table across the run's table versions."""

    name: str
    arrow_types: set[str] = field(default_factory=set)
    ranges: dict[IntegerRange, list[str]] = field(default_factory=dict)  # range → schema ids

    @property
    def arrow_type(self) -> str | None:
        """The column's Arrow type when every version has the same one; None when the
        materialize step widened it (its versions differ)."""
        return next(iter(self.arrow_types)) if len(self.arrow_types) == 1 else None


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

    def expected_fields(self) -> dict[str, str | None]:
        """Every field a changes file of the table must have, nested ``_before`` fields as
        ``_before.<column>``: its Arrow type, or None where no single type is expected (a
        widened column, a change column)."""
        source = {name: column.arrow_type for name, column in self.columns.items()}
        return {**source, **dict.fromkeys(CHANGE_COLUMNS),
                **{f"{BEFORE}.{name}": arrow_type for name, arrow_type in source.items()}}


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

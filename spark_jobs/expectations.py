"""The data-quality expectations of one table of a run, over the profile of its row changes.

:func:`table_expectations` turns what the run's metadata says about a table
(:class:`spark_jobs.run_facts.TableFacts`: its columns and their types, the range
of each integer column per table version, the row changes the transaction index
logged) into Great Expectations expectations over the table's profile
(:mod:`spark_jobs.change_profile`: one row per file and check, with the count of
offending values, the first of them and where it was logged). Great Expectations
evaluates them on the profile as a pandas batch; :func:`failure_line` says in one
line why a failed expectation failed.

What is checked, per table:

* **columns**: the changes' fields are exactly the source columns (the union
  over the table's versions), the change columns
  (:data:`spark_jobs.run_facts.CHANGE_COLUMNS`) and ``_before``'s fields, one per
  source column; each source column with one Arrow type across the versions has
  that ``arrow_type`` in every file (a column whose type changed between
  versions was widened by the materialize step and is not checked);
* **integer ranges**, exactly: every TINYINT ... BIGINT and BIT value within
  its SQL type's range, per table version (a row is checked against the range
  of its own ``_schema_id``; unsigned BIGINT and BIT(64) are decimal(20,0),
  which can hold 2^64 and more);
* **text**: every string column holds valid UTF-8 without U+FFFD, the
  replacement character a decoder puts in place of bytes it could not read
  (a latin1 string decoded as UTF-8 shows up that way). A source value that
  really is U+FFFD fails this check too;
* **charsets**: no decoded string of a non-UTF-8 text column failed to encode
  back to its logged bytes (``metadata/charset_checks``; a table without rows
  there has no non-UTF-8 text column);
* **operations**: ``_op`` is one of ``c``, ``u``, ``d``, ``r``;
* **change key**: ``(_binlog_seq, _binlog_pos, _binlog_inner_offset,
  _row_index)`` identifies a row (null parts count as -1) and the rows of each
  Parquet file are in that order;
* **row count**: the table has as many change rows as the transaction index
  gave it (``rows_per_table`` of ``metadata/transactions``).

Each count check is ``expect_column_values_to_be_in_set`` over its count column
of the profile, with the value set ``[0]``: a failure lists, in the Data Docs,
each offending measurement with its file, column, expected type or range
(``expected``), first offending value (``example``) and where it was logged
(``at``), :data:`REPORTED` being the index columns of the result.

Every expectation carries ``meta``: its ``check`` (``columns``, ``type``,
``range``, ``text``, ``charset``, ``operation``, ``unique_key``, ``log_order``,
``row_count``) and what it checks per column (``columns``).
"""

from __future__ import annotations

from typing import Any

from spark_jobs.change_profile import COUNTS, OPERATIONS
from spark_jobs.run_facts import TableFacts

# The profile's columns each failed measurement is shown with (Great Expectations' index columns).
REPORTED = ["column", "expected", "example", "at", "file", "field", "arrow_type", "expected_type"]
KEY_COLUMNS = "columns _binlog_seq, _binlog_pos, _binlog_inner_offset, _row_index"


def verdict(success: bool, expectations: int) -> str:
    """The word for a validation: ``passed`` only when expectations ran and held; ``nothing to
    check`` when none had anything to check (a run without row changes); else ``FAILED``."""
    if not success:
        return "FAILED"
    return "passed" if expectations else "nothing to check"


# -- expectations ----------------------------------------------------------------


def table_expectations(facts: TableFacts, *, charsets: bool = False) -> list:
    """The expectations over the profile of one table (see the module docstring);
    ``charsets``: the profile holds the table's charset round trips."""
    columns = facts.columns.values()
    typed = {column.name: column.arrow_type for column in columns if column.arrow_type is not None}
    ranges = [{"column": column.name, "sql_type": bounds.name, "low": str(bounds.low), "high": str(bounds.high)}
              for column in columns for bounds in column.ranges]
    texts = [column.name for column in columns if column.arrow_types == {"string"}]
    expectations = _columns(facts)
    if typed:
        expectations.append(_types(typed))
    if ranges:
        expectations.append(_none_offending(
            "range", "Integer values lie within their SQL type: " + "; ".join(
                f"`{each['column']}` {each['sql_type']} [{each['low']}, {each['high']}]" for each in ranges),
            columns=ranges))
    if texts:
        expectations.append(_none_offending(
            "text", "Text is valid UTF-8 without U+FFFD (a value decoded from the wrong charset) in "
            + ", ".join(f"`{name}`" for name in texts) + ".", columns=texts))
    if charsets:
        expectations.append(_none_offending(
            "charset", f"Every decoded string of {facts.name} encodes back to the bytes the binlog holds."))
    return expectations + [
        _none_offending("operation", f"`_op` is one of {', '.join(OPERATIONS)}."),
        _none_offending("unique_key", "The change key (_binlog_seq, _binlog_pos, _binlog_inner_offset, _row_index) "
                                      "is unique (a null part counts as -1)."),
        _none_offending("log_order", "The rows of each Parquet file are in log order (ordered by the change key)."),
        _row_count(facts.logged_rows),
    ]


def _columns(facts: TableFacts) -> list:
    """No field missing, none that the metadata does not know of."""
    import great_expectations as gx

    expected = sorted(facts.expected_fields())
    description = "The fields are the source columns of metadata/table_schemas, the change columns and _before's."
    return [
        _none_offending("columns", description + " None is missing.", columns=expected),
        gx.expectations.ExpectColumnValuesToBeInSet(
            column="field", value_set=expected, meta={"check": "columns", "columns": expected},
            description=description + " There is no other."),
    ]


def _types(types: dict[str, str]):
    """Each column's Arrow type is its ``arrow_type`` (``types``: column → Arrow type)."""
    import great_expectations as gx

    return gx.expectations.ExpectColumnPairValuesToBeEqual(
        column_A="arrow_type", column_B="expected_type", ignore_row_if="either_value_is_missing",
        meta={"check": "type", "columns": types},
        description="Every source column has the Arrow type of its arrow_type in metadata/table_schemas.")


def _none_offending(check: str, description: str, **expected: Any):
    """No offending value: the check's count column of the profile is 0 in every measurement."""
    import great_expectations as gx

    return gx.expectations.ExpectColumnValuesToBeInSet(
        column=COUNTS[check], value_set=[0], description=description, meta={"check": check, **expected})


def _row_count(logged_rows: int):
    import great_expectations as gx

    return gx.expectations.ExpectColumnSumToBeBetween(
        column=COUNTS["row_count"], min_value=logged_rows, max_value=logged_rows,
        meta={"check": "row_count", "value": logged_rows},
        description=f"As many change rows as the transaction index logged ({logged_rows}).")


# -- failures --------------------------------------------------------------------


def failure_line(result: Any) -> str:
    """One line a data engineer can act on, from a failed ``ExpectationValidationResult``:
    what failed, in which columns, and an example of the bad data."""
    config = result.expectation_config
    meta = config.meta or {}
    error = _exception(result.exception_info or {})
    if error is not None:
        return f"{meta.get('check', config.type)} check could not run: {error}"
    outcome = result.result or {}
    if meta.get("check") == "columns":
        return _explain_columns(outcome)
    if meta.get("check") == "row_count":
        return (f"{outcome.get('observed_value')} change rows, but the transaction index (metadata/transactions) "
                f"logged {meta['value']}")
    return _explain(meta["check"], outcome.get("unexpected_index_list") or [])


def _exception(info: dict) -> str | None:
    """The first line of the error that stopped an expectation, if one did. Great Expectations
    gives one error, or one per metric it could not compute (keyed by the metric)."""
    errors = [info] if "raised_exception" in info else list(info.values())
    for error in errors:
        if isinstance(error, dict) and error.get("raised_exception"):
            lines = (error.get("exception_message") or "").strip().splitlines()
            return lines[0] if lines else "unknown error"
    return None


def _explain_columns(outcome: dict) -> str:
    missing = [row["column"] for row in outcome.get("unexpected_index_list") or [] if row.get("column")]
    if missing:
        return f"columns differ from metadata/table_schemas: missing {sorted(missing)}"
    extra = sorted(set(outcome.get("unexpected_list") or []))
    return f"columns differ from metadata/table_schemas: not in the metadata {extra}"


def _explain_type(rows: list[dict]) -> str:
    return "; ".join(f"column {row['field']}: type {row['arrow_type']}, but metadata/table_schemas says "
                     f"{row['expected_type']} ({row['file']})" for row in rows)


# Per check, its failure line: ``{columns}`` are the columns the failed measurements name (once
# each, in order), ``{count}`` their offending values, the rest the first measurement's fields.
_FAILURE_LINES = {
    "range": "column {columns}: {count} values outside their type's range, e.g. {column} ({expected}) = {example} "
             "({at})",
    "text": "column {columns}: {count} values not valid UTF-8 or holding U+FFFD (decoded from the wrong charset?), "
            "e.g. {column} = {example!r} ({at})",
    "charset": "column {columns}: strings that did not encode back to the logged bytes, e.g. {column} ({expected}): "
               "{at}, logged bytes {example}",
    "operation": "column _op: {count} values not in " + "/".join(OPERATIONS) + ", e.g. {example} ({at})",
    "unique_key": KEY_COLUMNS + ": {count} change keys appear more than once, e.g. {example} in {at}",
    "log_order": KEY_COLUMNS + ": {count} rows out of log order, e.g. {at}: {example}",
}


def _explain(check: str, rows: list[dict]) -> str:
    """The failure line of a count check from its failed measurements (:data:`_FAILURE_LINES`)."""
    if check == "type":
        return _explain_type(rows)
    first = rows[0]
    return _FAILURE_LINES[check].format(
        columns=", ".join(dict.fromkeys(row["column"] for row in rows)),
        count=sum(int(row[COUNTS[check]]) for row in rows),
        column=first["column"], expected=first["expected"], example=first["example"], at=first["at"])

"""spark_jobs.table_names without a server: which statements remove every row of a table, the
chain of names a table had through RENAME TABLE (and ALTER TABLE ... RENAME TO), and which
logged row changes are still in the table at the end of the log.

The ``schema_changes`` rows are built the way binlake writes them: the statement parsed by
``binlog_codec.ddl`` and turned into rows by ``spark_jobs.schema_history.change_rows``, plus a
log position.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlog_codec import ddl
from spark_jobs.schema_history import change_rows
from spark_jobs.table_names import MAX_RENAMES, RUN, NameChain, Segment, clears, names_of, order, position

DB = "db"
FILE = "mysql-bin.000001"
PROPERTIES = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def rows(statement: str, pos: int, database: str | None = DB, *, sql_mode: int = 0,
         file: str = FILE, seq: int | None = 1) -> list[dict]:
    """The ``schema_changes`` rows of ``statement`` logged at ``pos``."""
    change = ddl.parse(statement, database, sql_mode=sql_mode)
    place = {"statement": statement, "sql_mode": sql_mode, "_binlog_file": file, "_binlog_seq": seq,
             "_binlog_pos": pos}
    return [{**row, **place} for row in change_rows(change, database, sql_mode)]


NOW = 7  # the ordinal of the run that reads the statements :func:`in_run` marks


def P(n: int, run: int | None = None) -> tuple:
    """Where the n-th statement of :func:`history` is logged (1-based), read by run ``run``."""
    return order(1, FILE, 100 * n, run)


def after(n: int) -> tuple:
    """A row change logged after the n-th statement and before the next (0: before the first)."""
    return order(1, FILE, 100 * n + 50)


def history(*statements: str) -> list[dict]:
    """The ``schema_changes`` rows of ``statements``, the n-th logged at ``P(n)``."""
    return [row for n, statement in enumerate(statements, 1) for row in rows(statement, 100 * n)]


def cleared(statement: str, table: str, database: str = DB, **kwargs) -> bool:
    return any(clears(row, database, table) for row in rows(statement, 100, **kwargs))


# -- clears ------------------------------------------------------------------------------


@pytest.mark.parametrize("statement, table, expected", [
    ("TRUNCATE TABLE t", "t", True),
    ("TRUNCATE t", "t", True),
    ("TRUNCATE TABLE u", "t", False),
    ("DROP TABLE t", "t", True),
    ("DROP TABLE IF EXISTS u, t", "t", True),
    ("DROP TABLE IF EXISTS u", "t", False),
    ("DROP DATABASE db", "t", True),
    ("DROP DATABASE other", "t", False),
    ("CREATE TABLE t (a INT)", "t", True),
    ("CREATE OR REPLACE TABLE t (a INT)", "t", True),
    ("CREATE TABLE IF NOT EXISTS t (a INT)", "t", False),
    ("CREATE TABLE t LIKE s", "t", True),
    ("CREATE TABLE t LIKE s", "s", False),
    ("CREATE TABLE IF NOT EXISTS t LIKE s", "t", False),
    ("RENAME TABLE t TO t2", "t", True),
    ("RENAME TABLE t TO t2", "t2", False),
    ("RENAME TABLE s TO t", "t", False),
    ("ALTER TABLE t RENAME TO t2", "t", True),
    ("ALTER TABLE t RENAME TO t2", "t2", False),
    ("ALTER TABLE t RENAME TO db.t", "t", False),  # the same name: nothing moves
    ("ALTER TABLE t RENAME TO other.t2", "t", True),
    ("ALTER TABLE t ADD COLUMN b INT", "t", False),
    ("ALTER TABLE t ADD COLUMN b INT, RENAME TO t2", "t", True),
    ("TRUNCATE TABLE other.t", "t", False),
    ("DROP TABLE other.t", "t", False),
    ("CREATE TABLE other.t (a INT)", "t", False),
    ("RENAME TABLE other.t TO other.t2", "t", False),
])
def test_clears(statement, table, expected):
    assert cleared(statement, table) is expected


def test_a_drop_database_row_has_no_table_and_clears_every_table_of_it():
    [row] = rows("DROP DATABASE db", 100)
    assert row["table"] is None
    assert clears(row, DB, "t") and clears(row, DB, "anything")
    assert not clears(row, "other", "t")


def test_clears_reads_create_with_the_row_sql_mode():
    assert not cleared('CREATE TABLE IF NOT EXISTS "t" (a INT)', "t", sql_mode=ddl.ANSI_QUOTES)
    assert cleared('CREATE TABLE "t" (a INT)', "t", sql_mode=ddl.ANSI_QUOTES)
    row = {**rows("CREATE TABLE IF NOT EXISTS t (a INT)", 100)[0], "sql_mode": None}  # no sql_mode logged
    assert not clears(row, DB, "t")


def test_alter_rename_to_the_same_name_in_another_database_clears():
    assert cleared("ALTER TABLE t RENAME TO other.t", "t")  # as RENAME TABLE t TO other.t does:
    assert cleared("RENAME TABLE t TO other.t", "t")
    chain = names_of(history("ALTER TABLE t RENAME TO other.t"), DB, "t")
    assert not chain.kept(["t"], [after(0)])[0]


# -- order / position ------------------------------------------------------------------------


def test_a_file_without_a_number_sorts_first():
    assert order(None, "relay.log", 10_000) < order(1, "mysql-bin.000001", 4)
    assert order(None, None, None) == (-1, 0, "", 0) < order(None, "a", 4)
    assert order(2, "b", 4) < order(2, "b", 5) < order(3, "a", 4)
    unnumbered = rows("TRUNCATE t", 500, file="relay.log", seq=None)[0]
    numbered = rows("TRUNCATE t", 4)[0]
    assert position(unnumbered) == (-1, 0, "relay.log", 500) < position(numbered) == (-1, 1, FILE, 4)


def test_the_run_s_own_changes_come_after_those_of_the_runs_before():
    earlier = {**rows("TRUNCATE t", 500, seq=7)[0], RUN: 2}
    own = {**rows("TRUNCATE t", 4)[0], RUN: 3}  # a failover brought lower file numbers
    assert position(earlier) < position(own) == order(1, FILE, 4, 3)
    assert position(rows("TRUNCATE t", 500, seq=7)[0]) < position(earlier)  # rows without a run first


def test_names_of_reads_changes_in_log_order_whatever_their_order():
    # A rename logged in a file without a number is before a TRUNCATE of a numbered file.
    changes = rows("TRUNCATE t2", 4) + rows("RENAME TABLE t TO t2", 900, file="relay.log", seq=None)
    chain = names_of(changes, DB, "t2")
    assert [segment.name for segment in chain.segments] == ["t", "t2"]
    assert chain.segments[1].cleared == order(1, FILE, 4)


# -- names_of ---------------------------------------------------------------------------------


def test_no_rename_is_one_segment():
    chain = names_of(history("ALTER TABLE t ADD COLUMN b INT", "RENAME TABLE x TO y"), DB, "t")
    assert chain.segments == (Segment("t", None, None, None),)
    assert chain.own == "t" and chain.names == {"t"}
    assert names_of([], DB, "t").segments == (Segment("t", None, None, None),)


@pytest.mark.parametrize("statement", ["RENAME TABLE t TO t2", "ALTER TABLE t RENAME TO t2",
                                       "RENAME TABLE db.t TO db.t2"])
def test_a_rename_is_two_segments(statement):
    chain = names_of(history(statement), DB, "t2")
    assert chain.segments == (Segment("t", None, P(1), None), Segment("t2", P(1), None, None))
    assert chain.own == "t2" and chain.names == {"t", "t2"}
    # The old name's own chain: the rename took its rows away.
    assert names_of(history(statement), DB, "t").segments == (Segment("t", None, None, P(1)),)


def test_a_chain_of_renames():
    chain = names_of(history("RENAME TABLE t TO t2", "ALTER TABLE t2 RENAME TO t3"), DB, "t3")
    assert chain.segments == (Segment("t", None, P(1), None), Segment("t2", P(1), P(2), None),
                              Segment("t3", P(2), None, None))


def test_a_rename_in_another_database_is_not_followed():
    chain = names_of(history("RENAME TABLE other.t TO other.t2", "RENAME TABLE t2 TO t3"), DB, "t3")
    assert [segment.name for segment in chain.segments] == ["t2", "t3"]


def test_another_table_renamed_into_a_dropped_name():
    chain = names_of(history("DROP TABLE t", "RENAME TABLE s TO t"), DB, "t")
    assert chain.segments == (Segment("s", None, P(2), None), Segment("t", P(2), None, None))
    # The dropped table's rows are in no segment; the renamed table's are.
    assert chain.kept(["t", "s", "s", "t", None], [after(0), after(0), after(1), after(2), after(2)]).tolist() == [
        False, True, True, True, True]


def test_a_name_renamed_away_and_back():
    chain = names_of(history("RENAME TABLE t TO u", "RENAME TABLE u TO t"), DB, "t")
    assert chain.segments == (Segment("t", None, P(1), None), Segment("u", P(1), P(2), None),
                              Segment("t", P(2), None, None))
    assert chain.kept(["t", "u", "t", None, "u"], [after(0), after(1), after(2), after(2), after(2)]).tolist() == [
        True, True, True, True, False]


def test_a_swap_in_one_statement_follows_its_renames_in_order():
    changes = history("RENAME TABLE a TO tmp, b TO a, tmp TO b")
    assert names_of(changes, DB, "a").segments == (Segment("b", None, P(1), None), Segment("a", P(1), None, None))
    assert names_of(changes, DB, "b").segments == (
        Segment("a", None, P(1), None), Segment("tmp", P(1), P(1), None), Segment("b", P(1), None, None))


@pytest.mark.parametrize("statement, table, old", [
    ("RENAME TABLE a TO tmp, b TO a, tmp TO b", "b", "a"),
    ("RENAME TABLE t TO t2, t2 TO t3", "t3", "t"),
])
def test_several_renames_in_one_statement_are_followed(statement, table, old):
    chain = names_of(history(statement), DB, table)
    assert chain.segments[0].name == old and chain.segments[-1].name == table
    assert chain.kept([old], [after(0)])[0]  # the rows the table had under its old name are its rows


def test_more_than_max_renames_are_cut():
    count = MAX_RENAMES + 6
    chain = names_of(history(*(f"RENAME TABLE t{i} TO t{i + 1}" for i in range(count))), DB, f"t{count}")
    assert len(chain.segments) == MAX_RENAMES + 1
    assert [segment.name for segment in chain.segments] == [f"t{i}" for i in range(count - MAX_RENAMES, count + 1)]
    first = chain.segments[0]
    assert first.start is None and first.end == P(count - MAX_RENAMES + 1)
    for earlier, later in itertools.pairwise(chain.segments):
        assert earlier.end == later.start
    # The rows of the names cut off are not followed.
    oldest_kept = count - MAX_RENAMES
    assert chain.kept([f"t{oldest_kept - 1}", f"t{oldest_kept}"], [after(0), after(0)]).tolist() == [False, True]


def test_renames_back_and_forth_do_not_loop():
    statements = [f"RENAME TABLE {a} TO {b}" for _ in range(100) for a, b in (("t", "u"), ("u", "t"))]
    chain = names_of(history(*statements), DB, "t")
    assert len(chain.segments) == MAX_RENAMES + 1
    assert [segment.name for segment in chain.segments[-3:]] == ["t", "u", "t"]


def test_cleared_of_each_segment():
    changes = history("TRUNCATE TABLE t",            # 1: in t's segment
                      "RENAME TABLE t TO t2",        # 2: the rename itself is in neither
                      "CREATE TABLE t (a INT)",      # 3: a new t: not this table's
                      "DROP TABLE t")                # 4: idem
    chain = names_of(changes, DB, "t2")
    assert chain.segments == (Segment("t", None, P(2), P(1)), Segment("t2", P(2), None, None))
    chain = names_of(changes + rows("TRUNCATE t2", 500) + rows("ALTER TABLE t2 ADD COLUMN b INT", 600), DB, "t2")
    assert chain.segments[-1].cleared == P(5)
    # The last clear of a segment is the one kept.
    chain = names_of(history("TRUNCATE t", "DROP TABLE IF EXISTS t", "CREATE TABLE t (a INT)",
                             "CREATE TABLE IF NOT EXISTS t (a INT)"), DB, "t")
    assert chain.segments == (Segment("t", None, None, P(3)),)


# -- NameChain.kept -----------------------------------------------------------------------------


def test_kept_rows_of_the_old_name():
    chain = names_of(history("RENAME TABLE t TO t2"), DB, "t2")
    names = ["t", "t", "t2", "t2", None, None]
    positions = [after(0), after(1), after(0), after(1), after(0), after(1)]
    # before the rename under t; after it under t (a new table t: no segment); t2 before it (not
    # this table's); t2 after it; the own name (None) before and after it.
    assert chain.kept(names, positions).tolist() == [True, False, False, True, False, True]
    assert chain.kept(names, positions).dtype == bool


def test_kept_not_before_a_truncate_in_an_earlier_segment():
    chain = names_of(history("TRUNCATE TABLE t", "RENAME TABLE t TO t2"), DB, "t2")
    assert chain.kept(["t", "t", "t2"], [after(0), after(1), after(2)]).tolist() == [False, True, True]


@pytest.mark.parametrize("clear", ["TRUNCATE TABLE t2", "DROP TABLE t2", "CREATE TABLE t2 (a INT)",
                                   "DROP DATABASE db"])
def test_kept_not_before_a_clear_in_a_later_segment(clear):
    chain = names_of(history("RENAME TABLE t TO t2", clear), DB, "t2")
    assert chain.kept(["t", "t2", None, "t2"], [after(0), after(1), after(1), after(2)]).tolist() == [
        False, False, False, True]


def test_kept_none_is_the_own_name():
    chain = names_of(history("TRUNCATE t"), DB, "t")
    assert chain.kept([None, "t", None, "t"], [after(0), after(0), after(1), after(1)]).tolist() == [
        False, False, True, True]


def test_kept_fast_path():
    chain = names_of(history("ALTER TABLE t ADD COLUMN b INT"), DB, "t")
    kept = chain.kept([None, "t", "t"], [after(0), after(1), order(None, None, None)])
    assert kept.dtype == bool and kept.tolist() == [True, True, True]
    assert chain.kept([], []).shape == (0,)
    assert NameChain([Segment("t", None, None, None)]).kept([None], [after(5)]).tolist() == [True]


# -- NameChain.cleared_in_run ---------------------------------------------------------------


def in_run(changes: list[dict], *numbers: int) -> list[dict]:
    """``changes`` with those of the statements ``numbers`` (1-based) read by the run :data:`NOW`."""
    return [{**row, RUN: NOW} if position(row)[3] // 100 in numbers else row for row in changes]


def chain_in_run(table: str, statements: tuple[str, ...], *numbers: int) -> NameChain:
    """The chain of ``table`` as the run :data:`NOW`, which read the statements ``numbers``, sees it."""
    return names_of(in_run(history(*statements), *numbers), DB, table, NOW)


def test_cleared_in_run():
    changes = ("RENAME TABLE t TO t2", "TRUNCATE t2")
    assert chain_in_run("t2", changes, 2).cleared_in_run
    assert not chain_in_run("t2", changes).cleared_in_run  # a clear of a run before: current follows it already
    # Only a clear of the rows under the table's own name counts, not the rename nor an older name's.
    assert not chain_in_run("t2", ("TRUNCATE t", "RENAME TABLE t TO t2"), 1, 2).cleared_in_run
    assert not chain_in_run("t", ("ALTER TABLE t ADD COLUMN b INT",), 1).cleared_in_run


# -- NameChain.inherited ----------------------------------------------------------------------


def test_inherited_renamed_in_the_run():
    chain = chain_in_run("t2", ("RENAME TABLE t TO t2",), 1)
    assert chain.inherited() == [(Segment("t", None, P(1, NOW), None), True)]


def test_inherited_after_a_truncate_in_the_same_run():
    statements = ("TRUNCATE t", "RENAME TABLE t TO t2")
    assert chain_in_run("t2", statements, 1, 2).inherited() == [(Segment("t", None, P(2, NOW), P(1, NOW)), False)]
    # The TRUNCATE of an earlier run: the old name's current already has it.
    assert chain_in_run("t2", statements, 2).inherited() == [(Segment("t", None, P(2, NOW), P(1)), True)]


def test_inherited_renamed_in_an_earlier_run():
    statements = ("RENAME TABLE t TO t2", "ALTER TABLE t2 ADD COLUMN b INT")
    assert chain_in_run("t2", statements, 2).inherited() == []
    assert chain_in_run("t2", statements).inherited() == []
    assert chain_in_run("t", ("TRUNCATE t",), 1).inherited() == []


@pytest.mark.parametrize("clear", ["DROP TABLE t2", "TRUNCATE t2", "DROP DATABASE db"])
def test_inherited_dropped_again_after_the_rename(clear):
    chain = chain_in_run("t2", ("RENAME TABLE t TO t2", clear), 1, 2)
    assert chain.inherited() == [(Segment("t", None, P(1, NOW), None), False)]


def test_inherited_through_a_chain():
    statements = ("RENAME TABLE t TO t2", "TRUNCATE t2", "RENAME TABLE t2 TO t3")
    chain = chain_in_run("t3", statements, 1, 2, 3)
    t, t2, _ = chain.segments
    assert chain.inherited() == [(t, False), (t2, False)]
    chain = chain_in_run("t3", statements, 3)
    assert chain.inherited() == [(chain.segments[1], True)]


# -- a property: kept is what a simulation of the tables holds ---------------------------------

STATEMENTS = ("insert", "truncate", "drop", "drop_if_exists", "create", "create_if_not_exists", "rename",
              "alter_rename", "drop_database")


def simulate(initial: set[str], steps: list[tuple[str, str, str]]):
    """Run ``steps`` (kind, name, other name) over tables named as in ``initial``, as the server
    would: a statement that would fail is not logged. The ``schema_changes`` rows, the row
    changes logged (name, position) and, per name, the row changes its table holds at the end."""
    ids = itertools.count()
    holder = {name: next(ids) for name in initial}  # name -> table
    contents: dict[int, set[int]] = {table: set() for table in holder.values()}  # table -> row changes
    changes, logged = [], []
    for at, (kind, name, other) in enumerate(steps, 1):
        statement = None
        if kind == "insert":
            if name in holder:
                contents[holder[name]].add(len(logged))
                logged.append((name, order(1, FILE, 10 * at)))
            continue
        if kind == "truncate" and name in holder:
            statement, contents[holder[name]] = f"TRUNCATE TABLE {name}", set()
        elif kind in ("drop", "drop_if_exists") and (name in holder or kind == "drop_if_exists"):
            statement = f"DROP TABLE {'IF EXISTS ' if kind == 'drop_if_exists' else ''}{name}"
            holder.pop(name, None)
        elif kind in ("create", "create_if_not_exists") and (name not in holder or kind == "create_if_not_exists"):
            statement = f"CREATE TABLE {'IF NOT EXISTS ' if kind == 'create_if_not_exists' else ''}{name} (a INT)"
            if name not in holder:
                holder[name] = next(ids)
                contents[holder[name]] = set()
        elif kind in ("rename", "alter_rename") and name in holder and other not in holder and other != name:
            statement = f"RENAME TABLE {name} TO {other}" if kind == "rename" else f"ALTER TABLE {name} RENAME TO {other}"
            holder[other] = holder.pop(name)
        elif kind == "drop_database":
            statement = f"DROP DATABASE {DB}"
            holder.clear()
        if statement is not None:
            changes += rows(statement, 10 * at)
    held = {name: contents[table] for name, table in holder.items()}
    return changes, logged, held


def steps_of(names: tuple[str, ...]):
    return st.lists(st.tuples(st.sampled_from(STATEMENTS), st.sampled_from(names), st.sampled_from(names)),
                    max_size=40)


def check_kept(names: tuple[str, ...], initial: set[str], steps: list, own_as_none: bool) -> None:
    changes, logged, held = simulate(initial, steps)
    for table in names:
        chain = names_of(changes, DB, table)  # terminates
        assert 1 <= len(chain.segments) <= MAX_RENAMES + 1 and chain.own == table
        assert chain.segments[0].start is None and chain.segments[-1].end is None
        for earlier, later in itertools.pairwise(chain.segments):
            assert earlier.end == later.start and (earlier.start is None or earlier.start < earlier.end)
        # The row changes of the table's versions (those logged under one of its names), and
        # every one the table holds, whatever name it was logged under.
        held_here = held.get(table, set())
        mine = [(i, name, at) for i, (name, at) in enumerate(logged) if name in chain.names or i in held_here]
        logged_names = [None if own_as_none and name == table else name for _, name, _ in mine]
        kept = chain.kept(logged_names, [at for _, _, at in mine])
        expected = [i in held_here for i, _, _ in mine]
        assert kept.dtype == bool and kept.tolist() == expected, (table, changes, logged)
        # Never a row logged before the last statement that removed the rows of its chain.
        last_clear = max((position(row) for row in changes for segment in chain.segments
                          if clears(row, DB, segment.name) and segment.holds(position(row))), default=None)
        if last_clear is not None:
            assert not any(k and at < last_clear for k, (_, _, at) in zip(kept, mine))


@PROPERTIES
@given(initial=st.sets(st.sampled_from(("t", "u"))), steps=steps_of(("t", "u")), own_as_none=st.booleans())
def test_kept_is_what_the_table_holds_two_names(initial, steps, own_as_none):
    check_kept(("t", "u"), initial, steps, own_as_none)


@PROPERTIES
@given(initial=st.sets(st.sampled_from(("t", "u", "v"))), steps=steps_of(("t", "u", "v")), own_as_none=st.booleans())
def test_kept_is_what_the_table_holds_three_names(initial, steps, own_as_none):
    check_kept(("t", "u", "v"), initial, steps, own_as_none)

"""``ddl.parse``, ``schema_apply.apply`` and ``column_lineage.lineage``: DDL statements as changes of a table's model.

Unit tests per statement form in MySQL and MariaDB spellings; property tests (parsing never
raises, a printed model reads back equal, generated ALTER sequences keep names unique and
columns where they were put); and every QUERY event of the shared fixture binlogs, with
the exact outcome of some real statements.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from fixture_facts import BAD_FILES, FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st
from mariadb import ServerError, binlog_of
from test_create_table import show_create

from binlog_codec.column_default import EXPRESSION, Literal, Unknowable
from binlog_codec.column_lineage import (
    AddedUnknowable,
    AddedWithDefault,
    CharsetChanged,
    Renamed,
    Same,
    TypeChanged,
    lineage,
    value_of_added,
)
from binlog_codec.create_table import Reader, column_spec, tokens
from binlog_codec.ddl import ANSI_QUOTES, parse, parse_event
from binlog_codec.errors import BinlogError
from binlog_codec.events import QueryEvent, read
from binlog_codec.schema_apply import ModelMismatch, apply
from binlog_codec.schema_change import (
    AddColumn,
    After,
    AlterDefault,
    ChangeColumn,
    ConvertCharset,
    DatabaseDropped,
    DropColumn,
    DropPrimaryKey,
    First,
    NoRowChange,
    NotSchemaChange,
    NotUnderstood,
    RenameColumn,
    RenameTable,
    SetPrimaryKey,
    TableAltered,
    TableCreated,
    TableCreatedLike,
    TableDefaults,
    TableName,
    TablesDropped,
    TablesRenamed,
    TableTruncated,
)
from binlog_codec.table_model import ColumnModel, TableModel, column_of, create_statement

T = TableName("db", "t")


def column(definition: str) -> ColumnModel:
    return column_of(column_spec(Reader(tokens(definition), [definition], "definition")))


def operations(statement: str) -> tuple:
    change = parse(statement, "db")
    assert isinstance(change, TableAltered), change
    return change.operations


def model(statement: str) -> TableModel:
    change = parse(statement, "db")
    assert isinstance(change, TableCreated), change
    return change.model


# -- CREATE TABLE --------------------------------------------------------------------------


def test_create_table_model_columns_defaults_and_key():
    created = model(
        "CREATE TABLE IF NOT EXISTS `shop`.`orders` (\n"
        "  id bigint unsigned NOT NULL AUTO_INCREMENT,\n"
        "  code char(4) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'AB''C',\n"
        "  price decimal(6,2) DEFAULT -1.50, qty int DEFAULT '3', n int DEFAULT NULL, f double DEFAULT 1e+10,\n"
        "  ts timestamp(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),\n"
        "  e int DEFAULT (`qty` + 1), b bit(3) DEFAULT b'101', x varbinary(2) DEFAULT x'0aFF',\n"
        "  u varchar(3) DEFAULT _utf8mb4'h' 'i', g int AS (qty * 2) VIRTUAL,\n"
        "  PRIMARY KEY (id), KEY k (code)\n"
        ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci /* xid=12 */"
    )
    assert (created.database, created.name, created.primary_key) == ("shop", "orders", ("id",))
    assert (created.charset, created.collation) == ("utf8mb4", "utf8mb4_0900_ai_ci")
    by_name = {c.name: c for c in created.columns}
    assert [c.name for c in created.columns] == list(by_name)
    assert by_name["id"] == ColumnModel("id", "BIGINT UNSIGNED", nullable=False, auto_increment=True)
    assert by_name["code"] == ColumnModel("code", "CHAR(4)", False, Literal("AB'C", "'AB''C'"), "ascii", "ascii_bin")
    assert by_name["price"].default == Literal(Decimal("-1.50"), "-1.50")
    assert by_name["qty"].default == Literal("3", "'3'")
    assert by_name["n"].default == Literal(None, "NULL")
    assert by_name["f"].default == Literal(1e10, "1e+10")
    assert by_name["ts"].default == Unknowable("CURRENT_TIMESTAMP(3)", EXPRESSION)
    assert by_name["e"].default == Unknowable("(`qty` + 1)", EXPRESSION)
    assert by_name["b"].default.value == 5 and by_name["x"].default.value == b"\x0a\xff"
    assert by_name["u"].default.value == "hi"
    assert by_name["g"].generated == "qty * 2" and by_name["g"].default is None


@pytest.mark.parametrize(
    "statement, expected",
    [
        ("CREATE TABLE t2 LIKE other.t1", TableCreatedLike(TableName("db", "t2"), TableName("other", "t1"))),
        ("CREATE TABLE IF NOT EXISTS t2 (LIKE t1)",
         TableCreatedLike(TableName("db", "t2"), TableName("db", "t1"), True)),
        ("CREATE OR REPLACE TABLE t2 LIKE t1",
         TableCreatedLike(TableName("db", "t2"), TableName("db", "t1"), False, True)),
        ("CREATE TEMPORARY TABLE tmp (a int)", NotSchemaChange("CREATE TEMPORARY TABLE")),
        ("CREATE DATABASE IF NOT EXISTS d default charset utf8", NotSchemaChange("CREATE DATABASE")),
        ("CREATE ALGORITHM=UNDEFINED DEFINER=`root`@`localhost` SQL SECURITY DEFINER VIEW `v1` AS SELECT 1",
         NotSchemaChange("CREATE VIEW")),
        ('CREATE DEFINER="root"@"localhost" TRIGGER t1 BEFORE INSERT ON t1 FOR EACH ROW SET @foo = 1',
         NotSchemaChange("CREATE TRIGGER")),
    ],
)
def test_create_forms(statement, expected):
    assert parse(statement, "db") == expected


@pytest.mark.parametrize(
    "statement",
    [
        "CREATE TABLE t2 SELECT * FROM t1",
        "CREATE TABLE t2 (a int) IGNORE AS SELECT a FROM t1",
        "CREATE TABLE t2 (a int) AS TABLE t1",
        "CREATE SEQUENCE s",
        "CREATE TABLE t (a int) WITH SYSTEM VERSIONING",
        "CREATE TABLE t (a int WITH SYSTEM VERSIONING, b int)",
    ],
)
def test_create_forms_not_understood(statement):
    change = parse(statement, "db")
    assert isinstance(change, NotUnderstood) and change.reason and change.statement == statement


def test_create_table_keeps_partitions_and_versioned_comments():
    created = model(
        "CREATE TABLE t (a int NOT NULL /*!80023 INVISIBLE */, b int, PRIMARY KEY (a, b)) "
        "/*!50100 PARTITION BY RANGE (a) (PARTITION p0 VALUES LESS THAN (10)) */"
    )
    assert created.primary_key == ("a", "b") and [c.nullable for c in created.columns] == [False, False]


def test_double_quotes_follow_ansi_quotes():
    ansi = parse('CREATE TABLE "t" ("a" int DEFAULT 1)', "db", sql_mode=ANSI_QUOTES)
    assert ansi.model.name == "t" and ansi.model.columns[0].name == "a"
    plain = parse('CREATE TABLE t (a varchar(3) DEFAULT "x")', "db")
    assert plain.model.columns[0].default == Literal("x", "'x'")


# -- ALTER TABLE -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "statement, expected",
    [
        ("ALTER TABLE t ADD COLUMN b TEXT", (AddColumn(column("b TEXT")),)),
        ("ALTER TABLE t ADD b int NOT NULL DEFAULT 0 FIRST", (AddColumn(column("b int NOT NULL DEFAULT 0"), First()),)),
        ("alter table t add column b int after `a`", (AddColumn(column("b int"), After("a")),)),
        ("ALTER TABLE t ADD COLUMN (b int, c char(2))", (AddColumn(column("b int")), AddColumn(column("c char(2)")))),
        ("ALTER TABLE t ADD COLUMN IF NOT EXISTS b int", (AddColumn(column("b int"), None, True),)),
        ("ALTER TABLE t DROP COLUMN b, DROP c", (DropColumn("b"), DropColumn("c"))),
        ("ALTER TABLE t DROP COLUMN IF EXISTS b", (DropColumn("b", True),)),
        ("ALTER TABLE `foobar` CHANGE `foo` `old_foo` varchar(100) CHARACTER SET\nutf8mb4 NOT NULL",
         (ChangeColumn("foo", column("old_foo varchar(100) CHARACTER SET utf8mb4 NOT NULL")),)),
        ("ALTER TABLE t CHANGE COLUMN IF EXISTS a b bigint AFTER c",
         (ChangeColumn("a", column("b bigint"), After("c"), True),)),
        ("ALTER TABLE t MODIFY a bigint unsigned FIRST", (ChangeColumn("a", column("a bigint unsigned"), First()),)),
        ("ALTER TABLE t MODIFY COLUMN IF EXISTS a int", (ChangeColumn("a", column("a int"), None, True),)),
        ("ALTER TABLE t RENAME COLUMN a TO b", (RenameColumn("a", "b"),)),
        ("ALTER TABLE t ALTER COLUMN a SET DEFAULT 'x', ALTER b DROP DEFAULT",
         (AlterDefault("a", Literal("x", "'x'")), AlterDefault("b", None))),
        ("ALTER TABLE t ALTER a SET DEFAULT (rand())", (AlterDefault("a", Unknowable("(rand())", EXPRESSION)),)),
        ("ALTER TABLE t RENAME TO other.u", (RenameTable(TableName("other", "u")),)),
        ("ALTER TABLE t RENAME AS u", (RenameTable(TableName("db", "u")),)),
        ("ALTER TABLE t RENAME u", (RenameTable(TableName("db", "u")),)),
        ("ALTER TABLE t ADD PRIMARY KEY (a, b)", (SetPrimaryKey(("a", "b")),)),
        ("ALTER TABLE t ADD CONSTRAINT pk PRIMARY KEY USING BTREE (`a`)", (SetPrimaryKey(("a",)),)),
        ("ALTER TABLE t ADD CONSTRAINT IF NOT EXISTS PRIMARY KEY (a)", (SetPrimaryKey(("a",)),)),
        ("ALTER TABLE t CHECK PARTITION p0, REORGANIZE PARTITION p1 INTO (PARTITION p2 VALUES LESS THAN (5))",
         (NoRowChange("CHECK PARTITION p0"),
          NoRowChange("REORGANIZE PARTITION p1 INTO (PARTITION p2 VALUES LESS THAN (5))"))),
        ("ALTER TABLE t DROP PRIMARY KEY", (DropPrimaryKey(),)),
        ("ALTER TABLE t DROP CONSTRAINT `PRIMARY`", (DropPrimaryKey(),)),
        ("ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
         (ConvertCharset("utf8mb4", "utf8mb4_bin"),)),
        ("ALTER TABLE t DEFAULT CHARSET=latin1", (TableDefaults("latin1", None),)),
        ("ALTER TABLE t CHARACTER SET = utf8mb4 COLLATE = utf8mb4_bin", (TableDefaults("utf8mb4", "utf8mb4_bin"),)),
        ("ALTER TABLE t ENGINE=InnoDB, ALGORITHM=INPLACE, LOCK=NONE",
         (NoRowChange("ENGINE=InnoDB"), NoRowChange("ALGORITHM=INPLACE"), NoRowChange("LOCK=NONE"))),
        ("ALTER TABLE t FORCE", (NoRowChange("FORCE"),)),
        ("ALTER TABLE t COMMENT='hello', ROW_FORMAT=DYNAMIC",
         (NoRowChange("COMMENT='hello'"), NoRowChange("ROW_FORMAT=DYNAMIC"))),
        ("ALTER TABLE t ADD INDEX i (a), ADD UNIQUE KEY u (b), DROP INDEX j, DROP FOREIGN KEY IF EXISTS fk",
         (NoRowChange("ADD INDEX i (a)"), NoRowChange("ADD UNIQUE KEY u (b)"), NoRowChange("DROP INDEX j"),
          NoRowChange("DROP FOREIGN KEY IF EXISTS fk"))),
        ("ALTER TABLE t ADD CONSTRAINT fk FOREIGN KEY (a) REFERENCES u (b) ON DELETE CASCADE",
         (NoRowChange("ADD CONSTRAINT fk FOREIGN KEY (a) REFERENCES u (b) ON DELETE CASCADE"),)),
        ("ALTER TABLE t RENAME INDEX a TO b, ALTER INDEX c INVISIBLE",
         (NoRowChange("RENAME INDEX a TO b"), NoRowChange("ALTER INDEX c INVISIBLE"))),
        ("ALTER TABLE t", ()),
    ],
)
def test_alter_table_operations(statement, expected):
    assert operations(statement) == expected


def test_alter_table_names_and_mariadb_if_exists():
    assert parse("ALTER ONLINE IGNORE TABLE IF EXISTS `d2`.t NOWAIT ADD b int", "db") == TableAltered(
        TableName("d2", "t"), (AddColumn(column("b int")),), True
    )
    assert parse("/* app */ ALTER TABLE t ADD b int -- trailing\n", None).table == TableName(None, "t")


@pytest.mark.parametrize(
    "statement, reason",
    [
        ("ALTER TABLE t DROP PARTITION p0", "DROP PARTITION"),
        ("ALTER TABLE t TRUNCATE PARTITION p0", "TRUNCATE PARTITION"),
        ("ALTER TABLE t EXCHANGE PARTITION p0 WITH TABLE u", "EXCHANGE PARTITION"),
        ("ALTER TABLE t IMPORT TABLESPACE", "IMPORT TABLESPACE"),
        ("ALTER TABLE t ADD SYSTEM VERSIONING", "system versioning"),
        ("ALTER TABLE t ADD COLUMN c int WITH SYSTEM VERSIONING", "WITH SYSTEM VERSIONING"),
        ("ALTER TABLE t DISCARD TABLESPACE", "DISCARD TABLESPACE"),
        ("ALTER TABLE t CONVERT TO CHARACTER SET binary", "not modelled"),
        ("ALTER TABLE t FROBNICATE", "expected an ALTER TABLE operation, found 'FROBNICATE'"),
        ("ALTER TABLE t ADD COLUMN b int frobnicate", "expected a column attribute, found 'frobnicate'"),
        ("ALTER TABLE t MODIFY b blob /*!100301 COMPRESSED*/", "compressed columns"),
    ],
)
def test_alter_table_not_understood(statement, reason):
    change = parse(statement, "db")
    assert isinstance(change, NotUnderstood) and reason in change.reason, change
    assert 0 <= change.position < len(statement)


# -- other statements ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "statement, expected",
    [
        ("RENAME TABLE a TO b, other.c TO d", TablesRenamed(((TableName("db", "a"), TableName("db", "b")),
                                                            (TableName("other", "c"), TableName("db", "d"))))),
        ("DROP TABLE IF EXISTS t1, `x`.`t2`", TablesDropped((TableName("db", "t1"), TableName("x", "t2")), True)),
        ("DROP TABLE `t1`,`t2` /* generated by server */",
         TablesDropped((TableName("db", "t1"), TableName("db", "t2")))),
        ("DROP TABLE t1 RESTRICT", TablesDropped((TableName("db", "t1"),))),
        ("DROP /*!40005 TEMPORARY */ TABLE IF EXISTS t1", NotSchemaChange("DROP TEMPORARY TABLE")),
        ("DROP DATABASE IF EXISTS sakila", DatabaseDropped("sakila")),
        ("DROP VIEW v1, v2", NotSchemaChange("DROP VIEW")),
        ("TRUNCATE TABLE t", TableTruncated(T)),
        ("truncate other.t", TableTruncated(TableName("other", "t"))),
        ("CREATE UNIQUE INDEX i ON t (a)", TableAltered(T, (NoRowChange("CREATE UNIQUE INDEX i ON t (a)"),))),
        ("DROP INDEX `PRIMARY` ON t", TableAltered(T, (DropPrimaryKey(),))),
        ("DROP INDEX IF EXISTS i ON t", TableAltered(T, (NoRowChange("DROP INDEX IF EXISTS i ON t"),))),
        ("BEGIN", NotSchemaChange("BEGIN")),
        ("COMMIT", NotSchemaChange("COMMIT")),
        ("", NotSchemaChange("empty")),
        ("INSERT INTO t VALUES (1)", NotSchemaChange("INSERT")),
        ("ALTER USER 'root'@'localhost' IDENTIFIED BY 'x'", NotSchemaChange("ALTER USER")),
        ("RENAME USER a TO b", NotSchemaChange("RENAME USER")),
    ],
)
def test_other_statements(statement, expected):
    assert parse(statement, "db") == expected


# -- apply ----------------------------------------------------------------------------------------

BASE = "CREATE TABLE t (a int NOT NULL, b varchar(10), c text, PRIMARY KEY (a)) DEFAULT CHARSET=latin1"


def applied(*statements: str) -> TableModel:
    result = model(BASE)
    for statement in statements:
        result = apply(result, parse(statement, "db"))
    return result


def names(table: TableModel) -> list[str]:
    return [c.name for c in table.columns]


def test_apply_orders_columns_by_first_and_after():
    table = applied("ALTER TABLE t ADD d int FIRST, ADD e int AFTER b, ADD f int, MODIFY c text AFTER d")
    assert names(table) == ["d", "c", "a", "b", "e", "f"]


def test_apply_change_rename_and_primary_key():
    table = applied("ALTER TABLE t CHANGE a id bigint, RENAME COLUMN b TO name", "ALTER TABLE t RENAME TO other.u")
    assert names(table) == ["id", "name", "c"] and table.primary_key == ("id",)
    assert (table.database, table.name) == ("other", "u")
    assert table.columns[0] == ColumnModel("id", "BIGINT", nullable=False)
    assert applied("ALTER TABLE t DROP a").primary_key == ()
    assert applied("ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (b)").columns[1].nullable is False


def test_apply_defaults_charsets_and_if_exists():
    table = applied(
        "ALTER TABLE t ALTER b SET DEFAULT 'x', ALTER c SET DEFAULT ('y'), DROP COLUMN IF EXISTS zz,"
        " ADD COLUMN IF NOT EXISTS b int, CONVERT TO CHARACTER SET utf8mb4"
    )
    assert table.columns[1].default == Literal("x", "'x'") and table.columns[1].type == "VARCHAR(10)"
    assert [(c.charset, c.collation) for c in table.columns] == [(None, None), ("utf8mb4", None), ("utf8mb4", None)]
    assert table.charset == "utf8mb4"
    dropped = applied("ALTER TABLE t ALTER b SET DEFAULT 'x'", "ALTER TABLE t ALTER b DROP DEFAULT")
    assert dropped.columns[1].default is None


def test_apply_other_changes():
    table = model(BASE)
    assert apply(table, parse("TRUNCATE t", "db")) == table
    assert apply(table, parse("DROP TABLE t", "db")) is None
    assert apply(table, parse("INSERT INTO t VALUES (1)", "db")) == table
    assert apply(table, parse("CREATE TABLE IF NOT EXISTS t (z int)", "db")) == table
    assert names(apply(table, parse("CREATE TABLE t (z int)", "db"))) == ["z"]
    copy = apply(table, parse("CREATE TABLE u LIKE t", "db"))
    assert copy.name == "u" and copy.columns == table.columns
    swapped = parse("RENAME TABLE t TO tmp, u TO t, tmp TO u", "db")
    assert apply(table, swapped).name == "u"


@pytest.mark.parametrize(
    "statement",
    ["ALTER TABLE t DROP zz", "ALTER TABLE t ADD a int", "ALTER TABLE t ADD z int AFTER zz",
     "ALTER TABLE t DROP PARTITION p"],
)
def test_apply_refuses_what_does_not_fit(statement):
    with pytest.raises(ModelMismatch):
        applied(statement)


# -- lineage ------------------------------------------------------------------------------------


def test_lineage_of_each_kind_of_column():
    old = model(BASE)
    new = apply(old, parse(
        "ALTER TABLE t CHANGE a id bigint NOT NULL, RENAME COLUMN b TO name, MODIFY c text CHARSET utf8mb4,"
        " ADD d int DEFAULT 7, ADD e int, ADD f timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP, ADD g int NOT NULL,"
        " ADH int AS (d + 1), ADD n int AUTO_INCREMENT UNIQUE".replace("ADH", "ADD h"),
        "db",
    ))
    assert lineage(old, new) == [
        TypeChanged("id", "a", "INT", "BIGINT"),
        Renamed("name", "b"),
        CharsetChanged("c", "c", (None, None), ("utf8mb4", None)),
        AddedWithDefault("d", 7),
        AddedWithDefault("e", None),
        AddedUnknowable("f", "CURRENT_TIMESTAMP", EXPRESSION),
        AddedUnknowable("g", "", "NOT NULL without DEFAULT: the type's implicit default, which depends on sql_mode"),
        AddedUnknowable("h", "d + 1", "a generated column, computed from other columns"),
        AddedUnknowable("n", "AUTO_INCREMENT", "numbered by the server"),
    ]
    assert lineage(new, apply(new, parse("ALTER TABLE t ENGINE=InnoDB", "db")))[0] == Same("id")


def test_integer_display_widths_and_synonyms_are_not_type_changes():
    old = model("CREATE TABLE t (a int(11), b integer(4) unsigned zerofill, c year(4), d bool, e decimal(5,2))")
    assert [c.type for c in old.columns] == ["INT", "INT UNSIGNED", "YEAR", "TINYINT", "DECIMAL(5,2)"]
    new = apply(old, parse("ALTER TABLE t MODIFY a INT, MODIFY b int unsigned, MODIFY e decimal(6,2)", "db"))
    assert lineage(old, new)[:2] == [Same("a"), Same("b")]
    assert lineage(old, new)[4] == TypeChanged("e", "e", "DECIMAL(5,2)", "DECIMAL(6,2)")


def test_lineage_of_a_column_dropped_and_added_again():
    old = model(BASE)
    new = apply(old, parse("ALTER TABLE t DROP b, ADD b varchar(10)", "db"))
    assert lineage(old, new)[2] == AddedWithDefault("b", None)


# -- properties -------------------------------------------------------------------------------

SQL_WORDS = st.sampled_from(
    "CREATE ALTER TABLE DROP ADD COLUMN CHANGE MODIFY RENAME TO AS FIRST AFTER DEFAULT NULL NOT PRIMARY KEY "
    "INDEX IF EXISTS LIKE SELECT int varchar(3) ( ) , . ` ' \" /*! */ /* -- # = t a b 1 -2.5e+3 x'0F' _utf8'q'".split()
)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(max_size=80), st.lists(SQL_WORDS, max_size=25).map(" ".join)))
def test_parse_never_raises(text):
    change = parse(text, "db")
    if isinstance(change, NotUnderstood):
        assert change.reason and 0 <= change.position <= len(text)


IDENTIFIERS = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=8).filter(
    lambda name: name.strip() == name
)
TYPES = st.sampled_from(["INT", "BIGINT UNSIGNED", "VARCHAR(20)", "DECIMAL(10,2)", "TEXT", "ENUM('a','b''c')",
                         "DATETIME(6)", "CHAR(3) BINARY", "JSON"])
DEFAULTS = st.sampled_from([None, "NULL", "'x y'", "-1.5", "42", "CURRENT_TIMESTAMP", "(`a` + 1)", "_utf8mb4'z'",
                            "b'101'", "'back\\\\slash'"])


@st.composite
def models(draw) -> TableModel:
    column_names = draw(st.lists(IDENTIFIERS, min_size=1, max_size=6, unique_by=str.casefold))
    columns = []
    for name in column_names:
        default = draw(DEFAULTS)
        definition = f"`{name.replace('`', '``')}` {draw(TYPES)}"
        definition += draw(st.sampled_from(["", " NOT NULL", " NULL"])) + (f" DEFAULT {default}" if default else "")
        definition += draw(st.sampled_from(["", " CHARACTER SET latin1", " COLLATE utf8mb4_bin", " AUTO_INCREMENT"]))
        columns.append(column(definition))
    key = tuple(draw(st.lists(st.sampled_from(column_names), unique=True, max_size=2)))
    table = TableModel(draw(st.sampled_from([None, "db"])), draw(IDENTIFIERS), tuple(columns), key,
                       draw(st.sampled_from([None, "latin1"])))
    return apply(table, TableAltered(T, (SetPrimaryKey(key),) if key else ()))  # key columns NOT NULL


@settings(max_examples=200, deadline=None)
@given(models())
def test_a_printed_model_reads_back_equal(table):
    again = parse(create_statement(table), table.database)
    assert isinstance(again, TableCreated), again
    assert again.model == table


@st.composite
def alter_sequences(draw):
    """A table and ALTER TABLE statements that fit it, with what each does to the order of names."""
    table = draw(models())
    statements = []
    current = [c.name for c in table.columns]
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["add", "drop", "rename", "modify"] if len(current) > 1 else ["add", "rename"]))
        target = draw(st.sampled_from(current))
        fresh = draw(IDENTIFIERS.filter(lambda n: n.casefold() not in {c.casefold() for c in current}))
        where = draw(st.sampled_from(["", " FIRST", f" AFTER {quote(target)}"]))
        if kind == "add":
            statements.append(f"ALTER TABLE t ADD COLUMN {quote(fresh)} int{where}")
            current = placed(current, fresh, where, target)
        elif kind == "drop":
            statements.append(f"ALTER TABLE t DROP COLUMN {quote(target)}")
            current.remove(target)
        elif kind == "rename":
            statements.append(f"ALTER TABLE t RENAME COLUMN {quote(target)} TO {quote(fresh)}")
            current[current.index(target)] = fresh
        else:
            other = draw(st.sampled_from([c for c in current if c != target]))
            where = draw(st.sampled_from(["", " FIRST", f" AFTER {quote(other)}"]))
            statements.append(f"ALTER TABLE t MODIFY {quote(target)} bigint{where}")
            position = current.index(target)
            current.remove(target)
            current = placed(current, target, where, other, position)
    return table, statements, current


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def placed(names: list[str], name: str, where: str, target: str, position: int | None = None) -> list[str]:
    """``names`` with ``name`` put as ``where`` says (after ``target``), else at ``position`` or last."""
    if where == " FIRST":
        index = 0
    elif where:
        index = names.index(target) + 1
    else:
        index = len(names) if position is None else position
    return names[:index] + [name] + names[index:]


@settings(max_examples=200, deadline=None)
@given(alter_sequences())
def test_alter_sequences_keep_names_unique_and_in_order(case):
    table, statements, expected = case
    for statement in statements:
        before = table
        table = apply(table, parse(statement, "db"))
        assert len(lineage(before, table)) == len(table.columns)
    assert names(table) == expected
    assert len({name.casefold() for name in names(table)}) == len(expected)


# -- the shared fixture binlogs ------------------------------------------------------------------------


def fixture_queries() -> list[tuple[str, QueryEvent]]:
    """Every QUERY event of every fixture binlog our reader reads (those FIXTURES.md marks as
    bad input on purpose stop where the reader refuses them)."""
    found = []
    for path in sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix not in (".md", ".json")):
        name = path.relative_to(FIXTURES).as_posix()
        try:
            for event in read(path):
                if isinstance(event, QueryEvent):
                    found.append((name, event))
        except BinlogError as exc:  # the reader's refusal is what BAD_FILES documents
            assert (type(exc).__name__, exc.position) == BAD_FILES[name][:2], (name, exc)
    return found


@pytest.fixture(scope="module")
def queries():
    return fixture_queries()


def test_every_fixture_query_parses_to_a_change(queries):
    assert len(queries) > 800
    outcomes = [parse_event(event) for _, event in queries]
    left = [(name, event.query) for (name, event), change in zip(queries, outcomes)
            if isinstance(change, NotUnderstood)]
    assert left == []
    kinds = {type(change).__name__ for change in outcomes}
    assert {"TableCreated", "TableAltered", "TablesDropped", "TableCreatedLike", "DatabaseDropped"} <= kinds


def outcome(queries, file: str, starts: str):
    matching = [event for name, event in queries if name.endswith(file) and event.query.startswith(starts)]
    assert matching, (file, starts)
    return parse_event(matching[0])


def test_known_fixture_statements(queries):
    assert outcome(queries, "bin-log.000001", "CREATE TABLE foo") == TableCreated(TableModel(
        "bltest", "foo",
        (ColumnModel("id", "BIGINT", False, auto_increment=True), ColumnModel("val_decimal", "DECIMAL(10,5)", False),
         ColumnModel("comment", "VARCHAR(255)", False)),
        ("id",),
    ))
    assert outcome(queries, "binlog_56_gtid_reserved_word.000001", "CREATE TABLE GENERATED") == TableCreatedLike(
        TableName("test", "GENERATED"), TableName("test", "t1")
    )
    assert outcome(queries, "bug33029-slave-relay-bin.000001", "DROP TABLE IF EXISTS t1, t2") == TablesDropped(
        (TableName("test", "t1"), TableName("test", "t2")), True
    )
    assert outcome(queries, "mysql-bin.sakila", "DROP SCHEMA") == DatabaseDropped("sakila")
    generated = outcome(queries, "json.binlog.000001", "CREATE TABLE t(").model
    assert [(c.name, c.type, c.generated) for c in generated.columns] == [
        ("id", "INT", None), ("json_col", "JSON", None),
        ("name", "VARCHAR(100)", "json_col->>'$.name'"), ("age", "INT", "json_col->'$.age'"),
    ]
    film = outcome(queries, "mysql-bin.sakila", "CREATE TABLE film (").model
    assert (film.database, film.primary_key, film.charset) == ("sakila", ("film_id",), "utf8")
    assert [(c.name, c.default) for c in film.columns if c.default is not None][-4:] == [
        ("replacement_cost", Literal(Decimal("19.99"), "19.99")),
        ("rating", Literal("G", "'G'")),
        ("special_features", Literal(None, "NULL")),
        ("last_update", Unknowable("CURRENT_TIMESTAMP", EXPRESSION)),
    ]
    staff = outcome(queries, "mysql-bin.sakila", "CREATE TABLE staff (").model
    assert staff.column("password").type == "VARCHAR(40) BINARY"
    assert staff.column("active") == ColumnModel("active", "TINYINT", False, Literal(1, "TRUE"))


@pytest.mark.parametrize(
    "file, create, alter, sources",
    [
        ("rpl_cross_version_default_utf8mb4_collation.000001", "CREATE TABLE `foobar`", "ALTER TABLE `foobar`",
         [Same("id"), Renamed("old_foo", "foo")]),
        ("rpl_unfiltered_hidden_gcol.000001", "CREATE TABLE t ", "ALTER TABLE t ADD",
         [Same("a"), AddedWithDefault("b", None)]),
    ],
)
def test_fixture_alters_applied_to_their_creates(queries, file, create, alter, sources):
    before = outcome(queries, file, create).model
    change = outcome(queries, file, alter)
    after = apply(before, change)
    assert lineage(before, after) == sources
    assert (after.database, after.name) == (before.database, before.name) == (change.table.database, change.table.name)


def test_period_and_vector_may_name_columns():
    created = model("CREATE TABLE t (period int, vector vector(3), PERIOD FOR p(period, period))")
    assert [c.name for c in created.columns] == ["period", "vector"]
    assert operations("ALTER TABLE t ADD vector int, DROP period") == (
        AddColumn(column("vector int")), DropColumn("period"))
    assert isinstance(parse("ALTER TABLE t DROP", "db"), NotUnderstood)
    assert operations("ALTER TABLE t ADD PERIOD FOR p(s, e)") == (NoRowChange("ADD PERIOD FOR p(s, e)"),)
    assert isinstance(parse("ALTER TABLE t ADD PERIOD FOR SYSTEM_TIME(s, e)", "db"), NotUnderstood)


def test_apply_names_the_columns_of_the_table_before_the_statement():
    """As the server's mysql_prepare_alter_table: renames swap, IF [NOT] EXISTS looks at the old table."""
    swapped = applied("ALTER TABLE t RENAME COLUMN b TO c, RENAME COLUMN c TO b")
    assert [(c.name, c.type, c.was) for c in swapped.columns] == [("a", "INT", "a"), ("c", "VARCHAR(10)", "b"),
                                                                 ("b", "TEXT", "c")]
    assert names(applied("ALTER TABLE t DROP b, ADD COLUMN IF NOT EXISTS b int")) == ["a", "c"]
    assert names(applied("ALTER TABLE t MODIFY a int FIRST, CHANGE b d text AFTER c, ADD e int AFTER a")) == [
        "a", "e", "c", "d"]
    assert applied("ALTER TABLE t ADD PRIMARY KEY (b), DROP PRIMARY KEY").primary_key == ("b",)
    assert applied("ALTER TABLE t CHANGE a id int, ADD COLUMN n int FIRST").primary_key == ("id",)
    with pytest.raises(ModelMismatch, match="no column 'x' added for 'b'"):
        applied("ALTER TABLE t MODIFY b int, CHANGE b x int")
    with pytest.raises(ModelMismatch, match="two operations"):
        applied("ALTER TABLE t DROP b, DROP b")
    with pytest.raises(ModelMismatch, match="two columns"):
        applied("ALTER TABLE t RENAME COLUMN b TO c")


# -- against the server: the statements as MariaDB logs them, applied, equal its own tables ------------

SERVER_HISTORIES = {
    "order": [
        "CREATE TABLE t (a int NOT NULL, b varchar(10), c text, PRIMARY KEY (a))",
        "ALTER TABLE t MODIFY a int FIRST, CHANGE b d text AFTER c, ADD e int AFTER a, ADD f int FIRST",
        "ALTER TABLE t ADD g int AFTER f, ADD h int AFTER g, MODIFY c text AFTER h",
    ],
    "positions_after_renames": [
        "CREATE TABLE t (a int, b int, c int)",
        "ALTER TABLE t RENAME COLUMN a TO a2, ADD n int AFTER a2, CHANGE c c2 int FIRST",
        "ALTER TABLE t CHANGE b b2 int AFTER c2, ADD m int AFTER b2, ALTER n SET DEFAULT 3",
        "ALTER TABLE t CHANGE a2 id int NOT NULL AUTO_INCREMENT FIRST, ADD PRIMARY KEY (id)",
    ],
    "renames": [
        "CREATE TABLE t (a int, b int, c int, PRIMARY KEY (b))",
        "ALTER TABLE t RENAME COLUMN a TO c, RENAME COLUMN c TO a",
        "ALTER TABLE t CHANGE b id bigint, RENAME TO u",
        "RENAME TABLE u TO tmp, tmp TO v",
        "ALTER TABLE v DROP id, ADD COLUMN IF NOT EXISTS a int, ADD COLUMN IF NOT EXISTS z int DEFAULT 7 FIRST",
    ],
    "keys": [
        "CREATE TABLE t (a int, b varchar(3) DEFAULT 'x', c int)",
        "ALTER TABLE t ADD PRIMARY KEY (c, a), ALTER b DROP DEFAULT, ALTER a SET DEFAULT 5",
        "ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (b), ADD d decimal(4,2) NOT NULL DEFAULT 1.50",
        "ALTER TABLE t DROP COLUMN IF EXISTS nope, MODIFY IF EXISTS nope int, ADD INDEX i (d), ENGINE=InnoDB",
        "CREATE INDEX j ON t (a)",
        "DROP INDEX j ON t",
        "CREATE TABLE w LIKE t",
        "ALTER TABLE w CONVERT TO CHARACTER SET utf8mb4, ADD COLUMN (x int, y varchar(2))",
        "TRUNCATE w",
    ],
}


SERVER_TABLES = {"order": ["t"], "positions_after_renames": ["t"], "renames": ["v"], "keys": ["t", "w"]}


def replay(binlog) -> dict:
    """The models of the tables after the QUERY events of ``binlog``, each change applied."""
    tables: dict = {}
    for event in read(binlog):
        if not isinstance(event, QueryEvent):
            continue
        change = parse_event(event)
        assert not isinstance(change, NotUnderstood), change
        if isinstance(change, (TableCreated, TableAltered)):
            source = tables.pop(change.table, None)
            result = apply(source, change)
            tables[TableName(result.database, result.name)] = result
        elif isinstance(change, TableCreatedLike):
            tables[change.table] = apply(tables[change.source], change)
        elif isinstance(change, TablesRenamed):
            tables = {TableName(m.database, m.name): m for m in (apply(t, change) for t in tables.values())}
        elif isinstance(change, TablesDropped):
            for table in change.tables:
                tables.pop(table, None)
    return tables


def comparable(table: TableModel) -> tuple:
    """What the model and ``SHOW CREATE TABLE`` must agree on (types are printed differently):
    the columns in order, each nullable or not with its value for rows already there, and the key."""

    def default(column: ColumnModel) -> str:
        value = value_of_added(column)
        return str(value.value) if isinstance(value, Literal) else type(value).__name__

    return [(c.name, c.nullable, default(c)) for c in table.columns], table.primary_key


@pytest.mark.integration
@pytest.mark.parametrize("name", sorted(SERVER_HISTORIES))
def test_applied_statements_equal_the_servers_tables(mariadb, name):
    database = f"ddl_{name}"
    script = [f"DROP DATABASE IF EXISTS {database};", f"CREATE DATABASE {database};", f"USE {database};"]
    binlog = binlog_of(mariadb, "\n".join(script + [f"{statement};" for statement in SERVER_HISTORIES[name]]))
    ours = replay(binlog)
    assert sorted(table.name for table in ours) == sorted(SERVER_TABLES[name])
    for table, model_ in ours.items():
        assert table.database == database
        server = parse(show_create(mariadb, database, table.name), database).model
        assert comparable(model_) == comparable(server), table


POOL = ["a", "b", "c", "d", "e", "f"]


@st.composite
def alter_statements(draw) -> tuple[str, str]:
    """A CREATE TABLE over some of :data:`POOL` and one ALTER TABLE of several operations on it,
    naming the old columns and new ones (the server refuses some: those are skipped)."""
    columns = draw(st.lists(st.sampled_from(POOL), min_size=2, max_size=4, unique=True))
    key = f", PRIMARY KEY ({columns[0]})" if draw(st.booleans()) else ""
    create = f"CREATE TABLE t ({', '.join(f'{c} int' for c in columns)}{key})"
    names = st.sampled_from(POOL)
    where = st.one_of(st.just(""), st.just(" FIRST"), names.map(lambda n: f" AFTER {n}"))
    operation = st.one_of(
        st.tuples(names, where).map(lambda x: f"ADD {x[0]} int DEFAULT 1{x[1]}"),
        names.map(lambda n: f"DROP {n}"),
        st.tuples(names, names, where).map(lambda x: f"CHANGE {x[0]} {x[1]} bigint{x[2]}"),
        st.tuples(names, where).map(lambda x: f"MODIFY {x[0]} int NOT NULL{x[1]}"),
        st.tuples(names, names).map(lambda x: f"RENAME COLUMN {x[0]} TO {x[1]}"),
        st.tuples(names, st.integers(0, 9)).map(lambda x: f"ALTER {x[0]} SET DEFAULT {x[1]}"),
        names.map(lambda n: f"ALTER COLUMN {n} DROP DEFAULT"),
        st.tuples(names, where).map(lambda x: f"ADD COLUMN IF NOT EXISTS {x[0]} int DEFAULT 2{x[1]}"),
        names.map(lambda n: f"DROP COLUMN IF EXISTS {n}"),
        st.tuples(names, names).map(lambda x: f"CHANGE IF EXISTS {x[0]} {x[1]} int"),
        st.lists(names, min_size=1, max_size=2, unique=True).map(lambda k: f"ADD PRIMARY KEY ({', '.join(k)})"),
        st.just("DROP PRIMARY KEY"),
    )
    return create, "ALTER TABLE t " + ", ".join(draw(st.lists(operation, min_size=1, max_size=4)))


@pytest.fixture(scope="module")
def generated_database(mariadb) -> str:
    mariadb.sql("CREATE DATABASE IF NOT EXISTS ddl_generated")
    return "ddl_generated"


@pytest.mark.integration
@settings(max_examples=150, deadline=None)
@given(alter_statements())
def test_generated_alters_agree_with_the_server(mariadb, generated_database, statements):
    create, alter = statements
    try:
        mariadb.sql(f"DROP TABLE IF EXISTS t; {create}; {alter};", database=generated_database)
    except ServerError:
        return  # the server refused the statement: it is never in a binlog
    before = model(create)
    ours = apply(before, parse(alter, "db"))
    server = parse(show_create(mariadb, generated_database, "t"), "db").model
    assert comparable(ours) == comparable(server)
    assert len(lineage(before, ours)) == len(ours.columns)



def test_apply_follows_the_servers_matching_of_alter_items():
    renamed = applied("ALTER TABLE t ALTER b SET DEFAULT 'y', RENAME COLUMN b TO e")
    assert renamed.columns[1] == ColumnModel("e", "VARCHAR(10)", default=Literal("y", "'y'"))
    mariadb_only = applied("ALTER TABLE t ADD x int DEFAULT 1, MODIFY x int NOT NULL, ADD y int, ALTER y SET DEFAULT 2")
    assert [(c.name, c.nullable, c.default) for c in mariadb_only.columns[3:]] == [
        ("x", False, None), ("y", True, Literal(2, "2"))]
    assert names(applied("ALTER TABLE t DROP c, ADD c int, CHANGE c c bigint FIRST")) == ["c", "a", "b"]
    with pytest.raises(ModelMismatch, match="no column"):
        applied("ALTER TABLE t ALTER zz SET DEFAULT 1")

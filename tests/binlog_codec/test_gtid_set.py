"""GTID-set arithmetic (``binlog_codec.gtid_set``) against Python sets, against the text
MySQL and MariaDB write, against the PREVIOUS_GTIDS facts of the shared fixtures, and
against the GTID_LIST a real MariaDB server writes and ``mariadb-binlog`` prints."""

from __future__ import annotations

import dataclasses
import time
from functools import reduce

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlog_codec.event_types import EventType
from binlog_codec.events import decode
from binlog_codec.events.gtid import GtidSetEntry, MariadbGtidEvent
from binlog_codec.gtid_set import (
    MYSQL_MAX_GNO,
    GtidSet,
    MariadbGtidSet,
    MysqlGtidSet,
    file_gtid_set,
)
from binlog_codec.reader import BinlogReader
from fixture_facts import BAD_FILES, expected, facts, files_with_measured, good_files, path
from mariadb import missing_tools, raw_gtid_list, run_mariadb_binlog

PROPERTIES = settings(max_examples=150, deadline=None)

UUIDS = [
    "3e11fa47-71ca-11e1-9e33-c80aa9429562",
    "4a2b9f30-0000-11e1-9e33-c80aa9429562",
    "ffffffff-ffff-ffff-ffff-ffffffffffff",
]
TAGS = [None, "mytag", "tag_2"]
DOMAINS = [0, 1, 7]
SERVER = {0: 1, 1: 3, 7: 2}  # the server of every GTID of a domain, in the property tests
NUMBERS = st.integers(min_value=1, max_value=40)

mysql_elements = st.sets(st.tuples(st.sampled_from(UUIDS), st.sampled_from(TAGS), NUMBERS), max_size=30)
mariadb_elements = st.sets(st.tuples(st.sampled_from(DOMAINS), NUMBERS), max_size=30)


# -- building sets from explicit Python sets --------------------------------------------


def mysql_gtid(element) -> str:
    uuid, tag, gno = element
    return f"{uuid}:{tag}:{gno}" if tag else f"{uuid}:{gno}"


def mariadb_gtid(element) -> str:
    domain, seq = element
    return f"{domain}-{SERVER[domain]}-{seq}"


FLAVOURS = {
    "mysql": (MysqlGtidSet, mysql_elements, mysql_gtid),
    "mariadb": (MariadbGtidSet, mariadb_elements, mariadb_gtid),
}


def by_gtids(flavour: str, elements) -> GtidSet:
    """The set built one ``with_gtid`` at a time."""
    cls, _, gtid = FLAVOURS[flavour]
    return reduce(lambda s, text: s.with_gtid(text), sorted(map(gtid, elements)), cls())


def by_text(flavour: str, elements) -> GtidSet:
    """The set parsed from a text of one single-GTID entry per element, in reverse order, with
    MySQL's whitespace after commas (a MariaDB entry of one GTID is ``D-S-n..n``)."""
    cls, _, gtid = FLAVOURS[flavour]
    if flavour == "mysql":
        entries = [gtid(element) for element in elements]
    else:
        entries = [f"{gtid(element)}..{element[1]}" for element in elements]
    return cls.parse(",\n ".join(sorted(entries, reverse=True)))


def elements_of(s: GtidSet) -> set:
    """The elements of a small set, from its intervals."""
    out = set()
    for key, intervals in s.intervals.items():
        for first, last in intervals:
            out.update((*key, n) if isinstance(key, tuple) else (key, n) for n in range(first, last + 1))
    return out


def assert_holds(s: GtidSet, flavour: str, elements: set, candidates: set) -> None:
    """``s`` holds exactly ``elements``: as a whole, by count, and element by element via ``in``."""
    gtid = FLAVOURS[flavour][2]
    assert elements_of(s) == elements
    assert s.count() == len(elements)
    assert bool(s) == bool(elements) == (not s.is_empty())
    for element in candidates:
        assert (gtid(element) in s) == (element in elements), element


pairs = st.sampled_from(sorted(FLAVOURS)).flatmap(
    lambda flavour: st.tuples(st.just(flavour), FLAVOURS[flavour][1], FLAVOURS[flavour][1])
)


# -- properties ----------------------------------------------------------------------


@PROPERTIES
@given(pairs)
def test_arithmetic_agrees_with_python_sets(case):
    flavour, a_elements, b_elements = case
    a, b = by_gtids(flavour, a_elements), by_gtids(flavour, b_elements)
    candidates = a_elements | b_elements
    assert_holds(a, flavour, a_elements, candidates)
    assert_holds(a | b, flavour, a_elements | b_elements, candidates)
    assert_holds(a - b, flavour, a_elements - b_elements, candidates)
    assert_holds(a & b, flavour, a_elements & b_elements, candidates)
    assert a.union(b) == a | b and a.difference(b) == a - b and a.intersection(b) == a & b
    assert (a <= b) == a.issubset(b) == (a_elements <= b_elements)


@PROPERTIES
@given(pairs)
def test_set_laws(case):
    flavour, a_elements, b_elements = case
    a, b = by_gtids(flavour, a_elements), by_text(flavour, b_elements)
    assert not ((a - b) & b)
    assert (a - b) | (a & b) == a
    assert a <= a | b and b <= a | b
    assert a & b <= a
    assert (a | b) - b == a - b


@PROPERTIES
@given(pairs)
def test_text_round_trips_and_is_canonical(case):
    flavour, elements, _ = case
    cls = FLAVOURS[flavour][0]
    one, other = by_gtids(flavour, elements), by_text(flavour, elements)
    assert one == other and hash(one) == hash(other)
    assert str(one) == str(other)
    assert cls.parse(str(one)) == one
    assert str(cls.parse(str(one))) == str(one)
    assert GtidSet.parse(str(one), flavour) == one
    assert eval(repr(one), {type(one).__name__: type(one)}) == one


@PROPERTIES
@given(st.sets(st.tuples(st.sampled_from(DOMAINS), st.integers(1, 3), NUMBERS), max_size=20))
def test_mariadb_text_keeps_any_servers(gtids):
    s = reduce(lambda acc, g: acc.with_gtid(f"{g[0]}-{g[1]}-{g[2]}"), gtids, MariadbGtidSet())
    assert elements_of(s) == {(domain, seq) for domain, _, seq in gtids}
    assert str(MariadbGtidSet.parse(str(s))) == str(s)
    rest = s - MariadbGtidSet.parse("0-1-5,7-1-3..9")
    assert str(MariadbGtidSet.parse(str(rest))) == str(rest)


@PROPERTIES
@given(st.data())
@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_adding_many_gtids_at_once_is_adding_them_one_by_one(flavour, data):
    cls, elements, gtid = FLAVOURS[flavour]
    start, added = data.draw(elements), data.draw(elements)
    texts = [gtid(element) for element in added] + ["ANONYMOUS"]
    one_by_one = reduce(lambda s, text: s.with_gtid(text), texts, by_gtids(flavour, start))
    at_once = by_gtids(flavour, start).with_gtids(texts)
    assert at_once == one_by_one and str(at_once) == str(one_by_one)


# -- text forms ----------------------------------------------------------------------

U1, U2, U3 = UUIDS


@pytest.mark.parametrize(
    "text, canonical",
    [
        ("", ""),
        (f"{U1}:1-5:7,\n{U2}:1-3", f"{U1}:1-5:7,{U2}:1-3"),  # @@gtid_executed
        (f"  {U2}:1-3 ,\n\t{U1.upper()} : 7 : 1 - 5 ,", f"{U1}:1-5:7,{U2}:1-3"),
        (f"{U1}:1-5:mytag:1-3", f"{U1}:1-5:mytag:1-3"),
        (f"{U1}:mytag:1-3,{U1}:1-5", f"{U1}:1-5:mytag:1-3"),  # the decoder's form
        (f"{U2}:1,{U1}:mytag:2,{U1}:tag_2:3", f"{U1}:mytag:2:tag_2:3,{U2}:1"),  # sorted by uuid, then tag
        (f"{U1}:TAG_2:9:MyTag:2:1", f"{U1}:mytag:1-2:tag_2:9"),
        (f"{U1}:7:1-5:3-6:9:8", f"{U1}:1-9"),
        (f"{U1},,{U2}:4", f"{U2}:4"),
        (f"{U1}:mytag", ""),
        (f"{U1}:1-99999999999999999", f"{U1}:1-99999999999999999"),
        (f"{U1}:{MYSQL_MAX_GNO}", f"{U1}:{MYSQL_MAX_GNO}"),
    ],
)
def test_mysql_text(text, canonical):
    s = MysqlGtidSet.parse(text)
    assert str(s) == canonical
    assert MysqlGtidSet.parse(canonical) == s


def test_mysql_intervals_are_never_expanded():
    start = time.perf_counter()
    s = MysqlGtidSet.parse(f"{U1}:1-{MYSQL_MAX_GNO}:tag_2:5-99999999999999999")
    rest = s - MysqlGtidSet.parse(f"{U1}:2-{MYSQL_MAX_GNO - 1}:tag_2:7")
    assert time.perf_counter() - start < 0.1
    assert s.intervals == {(U1, None): ((1, MYSQL_MAX_GNO),), (U1, "tag_2"): ((5, 99999999999999999),)}
    assert s.count() == MYSQL_MAX_GNO + 99999999999999995
    assert str(rest) == f"{U1}:1:{MYSQL_MAX_GNO}:tag_2:5-6:8-99999999999999999"
    assert f"{U1}:{MYSQL_MAX_GNO}" in rest and f"{U1}:2" not in rest


@pytest.mark.parametrize(
    "text, canonical",
    [
        ("", ""),
        ("0-1-5", "0-1-5"),  # @@gtid_binlog_pos
        ("0-1-5,0-2-9", "0-2-9"),  # @@gtid_binlog_state: the last seq_no of each server
        ("0-2-9,0-1-5", "0-2-9"),
        ("7-1-3, 0-1-5,\n 2-4-1", "0-1-5,2-4-1,7-1-3"),
        ("0-1-0", ""),  # a position before the first transaction
        ("0-1-0,1-1-2", "1-1-2"),
        ("0-1-95..120", "0-1-95..120"),
        ("0-1-1..120", "0-1-120"),
        ("0-1-5..5,0-3-7..7,0-1-6..6", "0-3-5..7"),
        ("0-1-1..3,0-1-7..7,0-2-8..9", "0-1-1..3,0-2-7..9"),
        ("0-1-10..20,0-1-5", "0-1-1..5,0-1-10..20"),
        ("4294967295-4294967295-18446744073709551615", "4294967295-4294967295-18446744073709551615"),
    ],
)
def test_mariadb_text(text, canonical):
    s = MariadbGtidSet.parse(text)
    assert str(s) == canonical
    assert MariadbGtidSet.parse(canonical) == s


def test_mariadb_gtid_list_and_servers():
    state = MariadbGtidSet.from_gtid_list(["0-1-10", "0-2-15", "3-1-0", "5-9-4"])
    assert state == MariadbGtidSet.parse("0-1-15,5-1-4")  # server ids are not compared
    assert str(state) == "0-2-15,5-9-4"
    assert state.intervals == {0: ((1, 15),), 5: ((1, 4),)}
    # each seq_no is shown with the server of the first known seq_no at or after it
    assert str(state - MariadbGtidSet.parse("0-2-11..15")) == "0-1-10,5-9-4"
    assert str(state - MariadbGtidSet.parse("0-2-3..12")) == "0-1-1..2,0-2-13..15,5-9-4"
    assert str(state.with_gtid("0-4-16")) == "0-4-16,5-9-4"
    assert "0-7-15" in state and "0-1-16" not in state and "9-1-1" not in state


def test_describe_missing():
    mariadb_gap = MariadbGtidSet.parse("0-1-120") - MariadbGtidSet.parse("0-1-94")
    assert mariadb_gap.describe_missing() == "0-1-95..0-1-120"
    assert MariadbGtidSet.parse("0-1-7..7,2-3-4").describe_missing() == "0-1-7, 2-3-1..2-3-4"
    mysql_gap = MysqlGtidSet.parse(f"{U1}:1-120:mytag:1-2") - MysqlGtidSet.parse(f"{U1}:1-94")
    assert mysql_gap.describe_missing() == f"{U1}:95-120, {U1}:mytag:1-2"
    assert MysqlGtidSet().describe_missing() == "(none)"
    many = MysqlGtidSet.parse(",".join(f"{U1}:{n}" for n in range(1, 40, 2)))
    assert many.describe_missing().endswith(" and 10 more ranges (20 GTIDs in all)")


def test_single_gtids():
    s = MysqlGtidSet().with_gtid(f"{U1.upper()}:MyTag:5").with_gtid(f" {U1}:6 ")
    assert str(s) == f"{U1}:6:mytag:5"
    assert f"{U1}:mytag:5" in s and f"{U1}:5" not in s
    assert s.with_gtid("ANONYMOUS") is s and "ANONYMOUS" not in s
    m = MariadbGtidSet().with_gtid("0-1-5")
    assert str(m) == "0-1-5..5" and m.count() == 1  # one GTID, not the position 0-1-5


# -- hostile input -------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, message",
    [
        ("3e11fa47:1", "expected a UUID like .* at character 0, found '3e11fa47:1'"),
        (f"{U1}:0", r"expected a transaction number or a tag in 1..9223372036854775806 at character 37"),
        (
            f"{U1}:1-9223372036854775807",
            r"expected the last transaction number of the interval in 1\.\.9223372036854775806 at character 39",
        ),
        (f"{U1}:1-{'9' * 5000}", r"in 1..9223372036854775806"),
        (f"{U1}:5-3", r"expected an interval first-last with last >= first \(not 5-3\) at character 37"),
        (f"{U1}:1:", "expected a transaction number or a tag at character 39, found 'the end'"),
        (f"{U1}:-5", "expected a transaction number or a tag at character 37, found '-5'"),
        (f"{U1}:1 2", "expected ':', ',' or the end at character 39"),
        (f"{U1}:1x", "expected ':', ',' or the end at character 38, found 'x'"),
        (f"{U1}:0x10", r"tag in 1\.\.9223372036854775806 at character 37"),
        (f"{U1}:{'t' * 33}:1", "expected a tag of at most 32 characters at character 37"),
        (f"{U1}:1-", "expected the last transaction number"),
        ("0-1-5", "expected a UUID"),
        (f"{U1}:1;DROP TABLE x", "expected ':', ',' or the end"),
        ("x" * 10_000, r"malformed MySQL GTID set 'x{200}\.\.\.': expected a UUID"),
    ],
)
def test_mysql_garbage(text, message):
    with pytest.raises(ValueError, match=message):
        MysqlGtidSet.parse(text)


@pytest.mark.parametrize(
    "text, message",
    [
        ("0-1", "expected '-' after the server id at character 3, found 'the end'"),
        ("0-1-x", "expected a seq_no at character 4, found 'x'"),
        ("0-1-5..3", r"expected a range first..last with 1 <= first <= last \(not 5..3\) at character 4"),
        ("0-1-0..5", r"\(not 0..5\)"),
        ("0-1-5..", "expected the last seq_no of the range"),
        ("4294967296-1-1", r"expected a GTID domain-server-seq \(domain id\) in 0..4294967295 at character 0"),
        ("0-4294967296-1", "expected a server id in 0..4294967295 at character 2"),
        ("0-1-18446744073709551616", "expected a seq_no in 0..18446744073709551615"),
        ("0-1-" + "9" * 5000, "expected a seq_no in 0..18446744073709551615"),
        ("0-1-1,,0-1-2", r"expected a GTID domain-server-seq \(domain id\) at character 6, found ',0-1-2'"),
        ("0-1-1,", "expected a GTID after ',' at character 6"),
        ("0-1-1 0-1-2", "expected ',' or the end at character 6"),
        (f"{U1}:1", "expected '-' after the domain id at character 1, found 'e11fa47"),
        (f"{UUIDS[2]}:1", r"expected a GTID domain-server-seq \(domain id\) at character 0, found 'ffff"),
        ("-1-1-1", r"expected a GTID domain-server-seq"),
    ],
)
def test_mariadb_garbage(text, message):
    with pytest.raises(ValueError, match=message):
        MariadbGtidSet.parse(text)


@pytest.mark.parametrize(
    "cls, gtid, message",
    [
        (MysqlGtidSet, f"{U1}:1-3", "expected uuid:number or uuid:tag:number"),
        (MysqlGtidSet, U1, "expected uuid:number"),
        (MysqlGtidSet, "3e11fa47-71ca:5", "expected uuid:number"),
        (MysqlGtidSet, f"{U1}:0", r"the number must be in 1..9223372036854775806"),
        (MysqlGtidSet, f"{U1}:{'t' * 33}:1", "a tag has at most 32 characters"),
        (MariadbGtidSet, "0-1-0", "seq_no 0 is a position, not a transaction"),
        (MariadbGtidSet, "0-1-1..3", "expected domain-server-seq"),
        (MariadbGtidSet, "0-1-5,0-1-6", "expected domain-server-seq"),
        (MariadbGtidSet, "0-1-18446744073709551616", r"seq_no must be in 0..18446744073709551615"),
    ],
)
def test_single_gtid_garbage(cls, gtid, message):
    with pytest.raises(ValueError, match=message):
        cls().with_gtid(gtid)
    with pytest.raises(ValueError, match=message):
        gtid in cls()  # noqa: B015 - the membership test is what raises


def test_flavours_do_not_mix():
    mysql, mariadb = MysqlGtidSet.parse(f"{U1}:1"), MariadbGtidSet.parse("0-1-1")
    for combine in (
        lambda: mysql | mariadb,
        lambda: mysql - mariadb,
        lambda: mariadb & mysql,
        lambda: mysql <= mariadb,
        lambda: mariadb.union(mysql),
    ):
        with pytest.raises(TypeError, match="cannot combine a (MySQL|MariaDB) GTID set with a (MariaDB|MySQL) one"):
            combine()
    assert mysql != mariadb and MysqlGtidSet() != MariadbGtidSet()
    with pytest.raises(TypeError, match="cannot be combined with set"):
        mysql.union(set())
    with pytest.raises(TypeError):
        mysql | {f"{U1}:1"}
    with pytest.raises(TypeError, match="reads mysql GTID sets, not 'mariadb'"):
        MysqlGtidSet.parse("0-1-1", "mariadb")
    with pytest.raises(ValueError, match="unknown GTID flavour 'oracle'"):
        GtidSet.parse("", "oracle")
    with pytest.raises(TypeError, match="is text, not bytes"):
        MariadbGtidSet.parse(b"0-1-1")
    assert type(GtidSet.parse("0-1-1", "mariadb")) is MariadbGtidSet


# -- the shared fixtures ---------------------------------------------------------------


def previous_gtids_facts() -> dict[str, list[dict]]:
    """File -> the PREVIOUS_GTIDS entries ``expected.json`` records: the upstream facts (with
    tags) where there are some, else the measured set (no tagged file is measured)."""
    out = {}
    for name in files_with_measured("previous_gtids"):
        (measured,) = expected()[name]["measured"]["previous_gtids"]
        out[name] = [{"sid": e["sid"], "tag": None, "intervals": e["intervals"]} for e in measured["sids"]]
    for name in expected():
        for fact in facts(name, "previous_gtids"):
            out[name] = fact["value"]
    return out


PREVIOUS_GTIDS = previous_gtids_facts()
GTID_EVENT_TYPES = {EventType.PREVIOUS_GTIDS, EventType.GTID, EventType.ANONYMOUS_GTID, EventType.GTID_TAGGED}


def mysqlbinlog_previous_gtids(entries: list[dict]) -> str:
    """What ``mysqlbinlog`` prints below a PREVIOUS_GTIDS header for ``entries`` (intervals
    ``[start, end)``): ``Gtid_set::commented_string_format``, "# " before the first uuid,
    ",\\n# " between uuids, "# [empty]" for no GTIDs; tags after a uuid's untagged intervals."""
    by_uuid: dict[str, list[str]] = {}
    for entry in sorted(entries, key=lambda e: (e["sid"], e["tag"] or "")):
        ranges = ":".join(str(a) if b - a == 1 else f"{a}-{b - 1}" for a, b in entry["intervals"])
        by_uuid.setdefault(entry["sid"], []).append((f":{entry['tag']}" if entry["tag"] else "") + f":{ranges}")
    if not by_uuid:
        return "# [empty]"
    return "# " + ",\n# ".join(uuid + "".join(parts) for uuid, parts in by_uuid.items())


def test_fixture_facts_cover_the_previous_gtids_files():
    assert len(PREVIOUS_GTIDS) >= 27
    assert "blackbeam__rust_mysql_common/binlog_transaction_with_GTID_TAG.000001" in PREVIOUS_GTIDS
    assert any(entries for entries in PREVIOUS_GTIDS.values())


@pytest.mark.parametrize("name", sorted(PREVIOUS_GTIDS))
def test_previous_gtids_of_fixtures(name):
    events = [decode(raw) for raw in BinlogReader(path(name)) if raw.type_code in GTID_EVENT_TYPES]
    (previous,) = [event for event in events if event.header.type_code == EventType.PREVIOUS_GTIDS]
    s = GtidSet.from_event(previous)
    entries = PREVIOUS_GTIDS[name]
    assert type(s) is MysqlGtidSet
    assert s.intervals == {
        (e["sid"], e["tag"]): tuple((a, b - 1) for a, b in e["intervals"]) for e in entries if e["intervals"]
    }
    printed = mysqlbinlog_previous_gtids(entries)
    one_line = "" if printed == "# [empty]" else printed.removeprefix("# ").replace(",\n# ", ",")
    assert str(s) == one_line
    assert MysqlGtidSet.parse(printed.replace("# ", "").replace("[empty]", "")) == s
    assert MysqlGtidSet.parse(previous.gtid_set) == s  # the decoder's own text
    assert file_gtid_set(path(name)) == s
    # the file's transactions are new: none of their GTIDs was logged before the file
    logged = [GtidSet.from_event(event) for event in events if event is not previous]
    assert all(not (one & s) for one in logged)
    assert (reduce(MysqlGtidSet.union, logged, s) - s).count() == sum(one.count() for one in logged)


def test_tagged_and_anonymous_gtid_events():
    tagged = "blackbeam__rust_mysql_common/binlog_transaction_with_GTID_TAG.000001"
    events = [decode(raw) for raw in BinlogReader(path(tagged)) if raw.type_code in GTID_EVENT_TYPES]
    sets = [GtidSet.from_event(event) for event in events]
    uuid = "55778904-0299-11f1-b1b8-4ef0c4956feb"
    assert [str(s) for s in sets] == [f"{uuid}:1-13:mytag:1-2", f"{uuid}:mytag:3"]
    assert str(sets[0] | sets[1]) == f"{uuid}:1-13:mytag:1-3"
    anonymous = "blackbeam__rust_mysql_common/binlog_transaction_with_anonymous_GTID.000001"
    for raw in BinlogReader(path(anonymous)):
        if raw.type_code == EventType.ANONYMOUS_GTID:
            event = decode(raw)
            assert GtidSet.from_event(event) == MysqlGtidSet() and event.gtid not in MysqlGtidSet()


def test_hostile_previous_gtids_events():
    name = "blackbeam__rust_mysql_common/binlog_transaction_previous_GTID_no_tag.000001"
    (event,) = [decode(raw) for raw in BinlogReader(path(name)) if raw.type_code == EventType.PREVIOUS_GTIDS]
    sid = event.sids[0].sid
    bad = [([[0, 3]], None), ([[5, 5]], None), ([[1, 2**63]], None), ([[1, 2]], "9tag"), ([[1, 2]], "a\\xff")]
    for intervals, tag in bad:
        with pytest.raises(ValueError):
            GtidSet.from_event(dataclasses.replace(event, sids=[GtidSetEntry(sid, tag, intervals)]))
    huge = dataclasses.replace(event, sids=[GtidSetEntry(sid, "Big", [[1, 2**63 - 1]])])
    assert GtidSet.from_event(huge).count() == MYSQL_MAX_GNO
    with pytest.raises(TypeError, match="PreviousGtidsEvent is a mysql event, not mariadb"):
        MariadbGtidSet.from_event(event)
    with pytest.raises(TypeError, match="str carries no GTID set"):
        GtidSet.from_event("0-1-1")


def test_files_without_a_gtid_set():
    names = [
        name
        for name in good_files()
        if not {"35", "163"} & set(expected()[name]["measured"].get("event_type_counts", {}))
    ]
    assert "osheroff__mysql-binlog-connector-java/mysql-bin.sakila" in names
    assert all(file_gtid_set(path(name)) is None for name in names)
    assert not set(names) & set(BAD_FILES)


MARIADB_FIXTURE = "blackbeam__rust_mysql_common/mariadb-bin.000001"


def gtid_list_and_gtids(binlog) -> tuple:
    """The GTID_LIST event of ``binlog`` and the MariaDB GTID events after it."""
    wanted = (EventType.GTID_LIST, EventType.MARIADB_GTID)
    events = [decode(raw) for raw in BinlogReader(binlog) if raw.type_code in wanted]
    return events[0], events[1:]


def printed_gtid_list(binlog) -> list[str]:
    """The GTIDs of the "Gtid list [...]" line ``mariadb-binlog`` prints for ``binlog``."""
    (printed,) = [event for event in run_mariadb_binlog(binlog) if event.family == "GTID_LIST"]
    return printed.info["gtids"]


def test_gtid_list_of_the_mariadb_fixture():
    gtid_list, gtids = gtid_list_and_gtids(path(MARIADB_FIXTURE))
    s = GtidSet.from_event(gtid_list)
    assert type(s) is MariadbGtidSet
    assert s == MariadbGtidSet.from_gtid_list(raw_gtid_list(path(MARIADB_FIXTURE), gtid_list.pos))
    assert file_gtid_set(path(MARIADB_FIXTURE)) == s
    after = reduce(lambda acc, event: acc | GtidSet.from_event(event), gtids, s)
    assert str(after - s) == "0-1-2" and all(isinstance(event, MariadbGtidEvent) for event in gtids)
    if not missing_tools():
        assert s == MariadbGtidSet.from_gtid_list(printed_gtid_list(path(MARIADB_FIXTURE)))


# -- a real MariaDB server -------------------------------------------------------------

DOMAIN = 41  # a domain of its own: the other tests of the session log in domain 0 (and 5)


@pytest.mark.integration
def test_gtid_list_of_a_new_file_is_the_binlog_state(mariadb):
    def state() -> tuple[str, str]:
        ((binlog_state, binlog_pos),) = mariadb.rows("SELECT @@gtid_binlog_state, @@gtid_binlog_pos")
        return binlog_state, binlog_pos

    mariadb.sql(
        "CREATE DATABASE IF NOT EXISTS gtid_set_test;"
        " CREATE TABLE IF NOT EXISTS gtid_set_test.t (id INT PRIMARY KEY AUTO_INCREMENT)"
    )
    mariadb.flush_logs()
    first = mariadb.current_binlog()
    before = MariadbGtidSet.parse(state()[0])
    insert = "INSERT INTO gtid_set_test.t VALUES ();"
    mariadb.sql(f"SET SESSION gtid_domain_id = {DOMAIN}; {insert * 2} SET SESSION server_id = 7; {insert * 2}")
    mariadb.flush_logs()
    second = mariadb.current_binlog()
    binlog_state, binlog_pos = state()

    for binlog, expected_state in ((first, before), (second, MariadbGtidSet.parse(binlog_state))):
        s = file_gtid_set(binlog)
        assert s == expected_state
        assert s == MariadbGtidSet.from_gtid_list(printed_gtid_list(binlog))
    s = file_gtid_set(second)
    assert str(s) == binlog_pos  # MariaDB's GTID position is the canonical text of a state
    assert sorted(printed_gtid_list(second)) == sorted(binlog_state.split(","))

    gtid_list, gtids = gtid_list_and_gtids(first)
    assert reduce(lambda acc, event: acc | GtidSet.from_event(event), gtids, GtidSet.from_event(gtid_list)) == s
    new = s - before
    seq = max((last for first_seq, last in before.intervals.get(DOMAIN, ())), default=0)
    assert new.intervals == {DOMAIN: ((seq + 1, seq + 4),)}
    assert new.describe_missing() == f"{DOMAIN}-7-{seq + 1}..{DOMAIN}-7-{seq + 4}"
    older = new - MariadbGtidSet.parse(f"{DOMAIN}-7-{seq + 3}..{seq + 4}")
    assert older.describe_missing() == f"{DOMAIN}-1-{seq + 1}..{DOMAIN}-1-{seq + 2}"

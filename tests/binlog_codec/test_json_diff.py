"""WL#2955 JSON diffs: the fixture's PARTIAL_UPDATE_ROWS_EVENT, the worklog's mysqlbinlog example,
random documents and diff vectors against a plain Python model, and bad input."""

from __future__ import annotations

import copy
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlog_codec import json_binary
from binlog_codec.errors import BinlogError, CorruptEventError
from binlog_codec.json_diff import (
    Cell,
    CorruptJsonDiffError,
    JsonDiff,
    JsonDiffError,
    JsonPathError,
    Member,
    apply,
    decode_diffs,
    encode_diffs,
    format_path,
    parse_path,
    render,
    sql_string,
    sql_value,
)
from binlog_codec.rows import read_rows
from fixture_facts import path

JSON_FIXTURE = "blackbeam__rust_mysql_common/json.binlog.000001"


# ---------------------------------------------------------------------------
# The fixture: a real server's partial update


def _fixture_rows():
    return list(read_rows(path(JSON_FIXTURE)))


def test_fixture_partial_update_decodes_and_applies_onto_the_previous_full_image():
    rows = _fixture_rows()
    partial = [r for r in rows if r.change.partial]
    assert [r.pos for r in partial] == [3750] * 6
    for record in partial:
        key = record.change.before["@1"]  # MINIMAL before-image: the primary key only
        diffs = decode_diffs(record.change.after["@2"], column="@2")
        assert [(d.operation, d.path) for d in diffs] == [("REPLACE", "$.age")]
        # The last full image of the same row: the after-image of the UPDATE_ROWS at 2612.
        previous = [r for r in rows if r.pos < record.pos and r.change.after and r.change.after.get("@1") == key][-1]
        assert previous.pos == 2612
        document = previous.change.after["@2"]
        updated = apply(document, diffs, column="@2")
        # The server computed the generated column @4 (json_col->'$.age') from the updated document.
        assert updated["age"] == record.change.after["@4"] == document["age"] + 1
        assert {k: v for k, v in updated.items() if k != "age"} == {k: v for k, v in document.items() if k != "age"}
        assert updated["name"] == record.change.after["@3"]


def test_fixture_diff_bytes_are_what_the_encoder_writes():
    raw = [r.change.after["@2"] for r in _fixture_rows() if r.change.partial]
    assert raw[0] == bytes.fromhex("0005242e61676503051a00")
    for data in raw:
        diffs = decode_diffs(data)
        assert encode_diffs(diffs) == data
        assert encode_diffs(diffs, pack_length=4) == len(data).to_bytes(4, "little") + data
        assert decode_diffs(len(data).to_bytes(4, "little") + data, pack_length=4) == diffs
    assert render("@2", decode_diffs(raw[0])) == "JSON_REPLACE(@2, '$.age', 26)"


# ---------------------------------------------------------------------------
# WL#2955 section 6: the mysqlbinlog -v example, copied from the worklog

WORKLOG_EXAMPLE = """\
      ### UPDATE `test`.`t`
      ### WHERE
      ###   @1=1
      ### SET
      ###   @2=JSON_INSERT(
      ###      JSON_ARRAY_INSERT(
      ###      JSON_INSERT(
      ###      JSON_REMOVE(
      ###      JSON_REPLACE(@2, '$.a', 7,
      ###      '$.b[1]', 'bb'),
      ###      '$.c'
      ###      '$.d[0]'),
      ###      '$.e', 'ee'),
      ###      '$.f[3]', 'ff'),
      ###      '$.g', 'gg'),"""

# The example has three typing slips that contradict its own text and MySQL's print_json_diff:
# - "'$.c'" lacks the comma that separates diffs (NEWLINE is ',\n###      ' in the grammar);
# - the diff vector inserts at '$.f[1]', and paths are printed as logged, not '$.f[3]';
# - the last line ends the outermost call, with nothing after its parenthesis.
WORKLOG_SLIPS = [
    ("###      '$.c'\n", "###      '$.c',\n"),
    ("'$.f[3]'", "'$.f[1]'"),
    ("'gg'),", "'gg')"),
]

WORKLOG_DOCUMENT = {
    "a": "replace this string value by 7",
    "b": [0, "replace this string by bb"],
    "c": "remove this key-value pair, including the key c",
    "d": ["remove this string"],
    "0": "insert the key-value pair e: ee in the top-level object",
    "f": ["insert ff after this string", "and before this string"],
    "1": "insert the key-value pair g: gg in the top-level object",
}

WORKLOG_DIFFS = [
    JsonDiff("REPLACE", "$.a", 7),
    JsonDiff("REPLACE", "$.b[1]", "bb"),
    JsonDiff("REMOVE", "$.c"),
    JsonDiff("REMOVE", "$.d[0]"),
    JsonDiff("INSERT", "$.e", "ee"),
    JsonDiff("INSERT", "$.f[1]", "ff"),
    JsonDiff("INSERT", "$.g", "gg"),
]


def test_worklog_example_is_rendered_exactly():
    expected = "\n".join(line.removeprefix("      ") for line in WORKLOG_EXAMPLE.splitlines())
    for slip, fix in WORKLOG_SLIPS:
        assert expected.count(slip) == 1
        expected = expected.replace(slip, fix)
    column_text = expected.split("###   @2=", 1)[1]
    diffs = decode_diffs(encode_diffs(WORKLOG_DIFFS))  # through the binary form
    assert render("@2", diffs) == column_text


def test_worklog_example_applies():
    assert apply(WORKLOG_DOCUMENT, WORKLOG_DIFFS) == {
        "a": 7,
        "b": [0, "bb"],
        "d": [],
        "0": "insert the key-value pair e: ee in the top-level object",
        "f": ["insert ff after this string", "ff", "and before this string"],
        "1": "insert the key-value pair g: gg in the top-level object",
        "e": "ee",
        "g": "gg",
    }


# ---------------------------------------------------------------------------
# Rendering values


@pytest.mark.parametrize(
    "value, text",
    [
        (None, "null"),
        (True, "true"),
        (False, "false"),
        (-12, "-12"),
        (18446744073709551615, "18446744073709551615"),
        (1.5, "1.5"),
        (2.0, "2.0"),
        ("it's\n", "'it\\'s\\n'"),
        ("[]", "'[]'"),  # a string that looks like JSON stays a string
        ([], "CAST('[]' AS JSON)"),
        ({"k": "v'", "a": [1, None]}, "CAST('{\"a\": [1, null], \"k\": \"v\\'\"}' AS JSON)"),
        (json_binary.Opaque(json_binary.MYSQL_TYPE_NEWDECIMAL, bytes.fromhex("03028101")), "1.01"),
        (json_binary.Opaque(json_binary.MYSQL_TYPE_DATE, bytes.fromhex("00000000001ea919")), "'2021-03-15'"),
        (json_binary.Opaque(json_binary.MYSQL_TYPE_VAR_STRING, b"ab'c"), "'ab\\'c'"),
        (json_binary.Opaque(252, b"\x00\x01"), "'base64:type252:AAE='"),
    ],
)
def test_sql_value(value, text):
    assert sql_value(value) == text


def test_sql_string_escapes_like_mysqlbinlog():
    assert sql_string("a\\b\t\x00\x1f\u00e9") == "'a\\\\b\\t\\x00\\x1f\u00e9'"
    assert sql_string(b"\x00\x80a'") == "'\\x00\\x80a\\''"


def test_render_runs_and_functions():
    diffs = [
        JsonDiff("INSERT", "$[0]", 1),
        JsonDiff("INSERT", "$[1]", 2),
        JsonDiff("REMOVE", "$[5]"),
        JsonDiff("INSERT", "$.k", [1]),
    ]
    assert render("@3", diffs) == (
        "JSON_INSERT(\n###      JSON_REMOVE(\n###      JSON_ARRAY_INSERT(@3, '$[0]', 1,\n"
        "###      '$[1]', 2),\n###      '$[5]'),\n###      '$.k', CAST('[1]' AS JSON))"
    )
    assert render("@3", []) == "@3"
    assert render("@1", [JsonDiff("REMOVE", "$.x")]) == "JSON_REMOVE(@1, '$.x')"


# ---------------------------------------------------------------------------
# Paths


@pytest.mark.parametrize(
    "text, legs",
    [
        ("$", []),
        ("$.a.b_1$", [Member("a"), Member("b_1$")]),
        ('$."a b"."say \\"hi\\""', [Member("a b"), Member('say "hi"')]),
        ("$.\\u0041", [Member("A")]),
        (" $ [ 2 ] [last] [last - 3]", [Cell(2), Cell(0, True), Cell(3, True)]),
        ('$."0"[0]', [Member("0"), Cell(0)]),
    ],
)
def test_parse_path(text, legs):
    assert parse_path(text) == legs
    assert parse_path(format_path(legs)) == legs


def test_format_path_quotes_what_is_not_an_identifier():
    assert format_path([Member("a"), Member("a b"), Member("1"), Cell(4), Cell(0, True), Cell(2, True)]) == (
        '$.a."a b"."1"[4][last][last-2]'
    )


@pytest.mark.parametrize(
    "text, reason",
    [
        ("", "expected '$'"),
        ("a.b", "expected '$'"),
        ("$.*", "matches many values"),
        ("$[*]", "matches many values"),
        ("$**.a", "matches many values"),
        ("$[1 to 3]", "matches many values"),
        ("$.1a", "must be double-quoted"),
        ("$[", "expected an array index"),
        ("$[-1]", "expected an array index"),
        ("$[4294967296]", "above 4294967295"),
        ("$[1", "expected ']'"),
        ('$."open', "not a JSON string"),
        ("$a", "expected '.' or '['"),
    ],
)
def test_invalid_paths(text, reason):
    with pytest.raises(JsonPathError, match=re.escape(reason)):
        parse_path(text)


# ---------------------------------------------------------------------------
# Applying


def test_apply_does_not_change_its_input():
    document = {"a": [1, {"b": 2}], "c": {"d": 3}}
    kept = copy.deepcopy(document)
    result = apply(document, [JsonDiff("REPLACE", "$.a[1].b", 9), JsonDiff("INSERT", "$.a[0]", 0), JsonDiff("REMOVE", "$.c.d")])
    assert document == kept
    assert result == {"a": [0, 1, {"b": 9}], "c": {}}
    assert result["a"] is not document["a"]


def test_apply_array_positions_as_mysql_counts_them():
    assert apply([1, 2, 3], [JsonDiff("INSERT", "$[10]", 4)]) == [1, 2, 3, 4]  # past the end: appended
    assert apply([1, 2, 3], [JsonDiff("INSERT", "$[last]", 9)]) == [1, 2, 9, 3]  # before the last element
    assert apply([1, 2, 3], [JsonDiff("INSERT", "$[last-7]", 9)]) == [9, 1, 2, 3]
    assert apply([1, 2, 3], [JsonDiff("REPLACE", "$[last-1]", 9)]) == [1, 9, 3]
    assert apply([1, 2, 3], [JsonDiff("REMOVE", "$[last]")]) == [1, 2]


def test_apply_inserts_members_in_mysql_key_order():
    result = apply({"bb": 1, "ccc": 2}, [JsonDiff("INSERT", "$.a", 0), JsonDiff("INSERT", "$.dddd", 3)])
    assert list(result) == ["a", "bb", "ccc", "dddd"]


@pytest.mark.parametrize(
    "document, diff, reason",
    [
        ({"a": 1}, JsonDiff("REPLACE", "$.b", 2), "no value at this path to replace"),
        ({"a": 1}, JsonDiff("REPLACE", "$.x.y", 2), "the path's parent does not exist"),
        ({"a": 1}, JsonDiff("INSERT", "$.x.y", 2), "the path's parent does not exist"),
        ({"a": [1]}, JsonDiff("REMOVE", "$.a[1]", None), "no value at this path to remove"),
        ({"a": 1}, JsonDiff("INSERT", "$.a", 2), "member 'a' exists already"),
        ({"a": 1}, JsonDiff("INSERT", "$[0]", 2), "cannot insert an array element into an object"),
        ({"a": 1}, JsonDiff("INSERT", "$.a.b", 2), "cannot insert a member into a scalar"),
        ({"a": 1}, JsonDiff("REPLACE", "$[0]", 2), "no value at this path to replace"),  # no auto-wrapping
        ({"a": 1}, JsonDiff("REPLACE", "$", 2), "cannot change the whole document"),
        ({"a": 1}, JsonDiff("REMOVE", "$.*"), "matches many values"),
    ],
)
def test_apply_refuses_what_does_not_fit(document, diff, reason):
    diffs = [JsonDiff("REPLACE", "$.a", 1), diff]
    with pytest.raises(JsonDiffError, match=re.escape(reason)) as caught:
        apply(document, diffs, column="doc")
    assert caught.value.column == "doc" and caught.value.diff_index == 1
    assert str(caught.value).startswith("<binlog>: column doc, JSON diff 1: ")
    assert isinstance(caught.value, BinlogError)


# ---------------------------------------------------------------------------
# Bad bytes

GOOD = encode_diffs([JsonDiff("REMOVE", "$.a"), JsonDiff("REPLACE", "$.b", "x")])  # 5 + 9 bytes


@pytest.mark.parametrize(
    "data, reason",
    [
        (GOOD[:5] + b"\x07\x03$.b", "unknown operation 7 (REPLACE=0"),
        (GOOD[:5] + b"\x00", "path length: needs 1 bytes"),
        (GOOD[:5] + b"\x00\x09$.b", "path: needs 9 bytes"),
        (GOOD[:5] + b"\x00\x03$.b", "value length: needs 1 bytes"),
        (GOOD[:5] + b"\x00\x03$.b\x20\x0c\x01x", "value: needs 32 bytes"),
        (GOOD[:5] + b"\x00\xfb", "invalid packed integer prefix 0xfb"),
        (GOOD[:5] + b"\x00\x03$.*\x01\x04", "matches many values"),
        (GOOD[:5] + b"\x00\x02$\xff\x01\x04", "codec can't decode"),
        (GOOD[:5] + b"\x00\x03$.b\x01\x20", "binary JSON at byte 0"),
        (GOOD[:-1], "value: needs 3 bytes"),
    ],
)
def test_bad_diff_bytes_name_the_column_and_the_diff(data, reason):
    assert len(decode_diffs(GOOD)) == 2
    with pytest.raises(CorruptJsonDiffError, match=re.escape(reason)) as caught:
        decode_diffs(data, column="@2")
    error = caught.value
    assert (error.column, error.diff_index) == ("@2", 1)
    assert isinstance(error, CorruptEventError)
    assert "column @2, JSON diff 1: diff at byte 5: " in str(error)


def test_declared_length_must_match():
    assert decode_diffs(len(GOOD).to_bytes(4, "little") + GOOD, pack_length=4, column="j") == decode_diffs(GOOD)
    with pytest.raises(CorruptJsonDiffError, match="declares 15 bytes after its 4-byte length, holds 14") as caught:
        decode_diffs((15).to_bytes(4, "little") + GOOD, pack_length=4, column="j")
    assert caught.value.column == "j" and caught.value.diff_index is None
    with pytest.raises(CorruptJsonDiffError, match="diff vector length: needs 4 bytes"):
        decode_diffs(b"\x01\x00", pack_length=4)
    with pytest.raises(ValueError, match="does not fit a 1-byte length"):
        encode_diffs([JsonDiff("REPLACE", "$.a", "x" * 300)], pack_length=1)


def test_located_error_reads_like_every_binlog_error():
    with pytest.raises(CorruptJsonDiffError) as caught:
        decode_diffs(b"\x09", column="@2")
    error = caught.value.located(file="binlog.000001", position=3750, event_type="PARTIAL_UPDATE_ROWS")
    assert str(error) == (
        "binlog.000001: at 3750 (PARTIAL_UPDATE_ROWS): column @2, JSON diff 0: "
        "diff at byte 0: unknown operation 9 (REPLACE=0, INSERT=1, REMOVE=2)"
    )


def test_encoder_refuses_what_mysql_cannot_read():
    with pytest.raises(JsonPathError):
        encode_diffs([JsonDiff("REMOVE", "$[*]")])
    with pytest.raises(ValueError, match="operation must be one of"):
        JsonDiff("SET", "$.a", 1)
    with pytest.raises(ValueError, match="REMOVE JSON diff has no value"):
        JsonDiff("REMOVE", "$.a", 1)


# ---------------------------------------------------------------------------
# Random documents and diff vectors against a plain Python model

KEYS = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=8),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=12,
)
DOCUMENTS = st.one_of(st.lists(VALUES, max_size=4), st.dictionaries(KEYS, VALUES, max_size=4))

_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")


def _path_text(steps: list) -> str:
    """Our own spelling of a path: ``steps`` are keys (str) and array legs as (index, from_end)."""
    text = "$"
    for step in steps:
        if isinstance(step, str):
            text += "." + (step if _IDENTIFIER.match(step) else json.dumps(step, ensure_ascii=False))
        else:
            index, from_end = step
            text += (f"[last-{index}]" if index else "[last]") if from_end else f"[{index}]"
    return text


def _resolve(container, step):
    """The key or list index a step names in the model."""
    if isinstance(step, str):
        return step
    index, from_end = step
    return len(container) - 1 - index if from_end else index


def _locations(value, steps=()):
    """Every (steps, value) of the model's values below the root."""
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        spelled = key if isinstance(value, dict) else (key, False)
        yield [*steps, spelled], child
        yield from _locations(child, [*steps, spelled])


def _containers(value):
    yield [], value
    for steps, child in _locations(value):
        if isinstance(child, (dict, list)):
            yield steps, child


def _model_parent(model, steps):
    node = model
    for step in steps:
        node = node[_resolve(node, step)]
    return node


@st.composite
def documents_and_diffs(draw):
    """A document, a valid diff vector for it, and the document the model computes."""
    document = draw(DOCUMENTS)
    model = copy.deepcopy(document)
    diffs = []
    for _ in range(draw(st.integers(0, 6))):
        locations = list(_locations(model))
        operation = draw(st.sampled_from(["REPLACE", "REMOVE", "INSERT"] if locations else ["INSERT"]))
        if operation == "INSERT":
            steps, container = draw(st.sampled_from(list(_containers(model))))
            value = draw(VALUES)
            if isinstance(container, dict):
                key = draw(KEYS.filter(lambda k: k not in container))
                container[key] = copy.deepcopy(value)
                diffs.append(JsonDiff("INSERT", _path_text([*steps, key]), value))
            elif draw(st.booleans()):
                index = draw(st.integers(0, len(container) + 2))
                container.insert(index, copy.deepcopy(value))  # list.insert appends past the end, as MySQL does
                diffs.append(JsonDiff("INSERT", _path_text([*steps, (index, False)]), value))
            else:
                from_end = draw(st.integers(0, len(container) + 1))
                position = len(container) - 1 - from_end if from_end < len(container) else 0
                container.insert(position, copy.deepcopy(value))
                diffs.append(JsonDiff("INSERT", _path_text([*steps, (from_end, True)]), value))
            continue
        steps, _ = draw(st.sampled_from(locations))
        parent = _model_parent(model, steps[:-1])
        last = steps[-1]
        if isinstance(last, tuple) and draw(st.booleans()):  # count from the end instead
            last = (len(parent) - 1 - last[0], True)
        if operation == "REPLACE":
            value = draw(VALUES)
            parent[_resolve(parent, last)] = copy.deepcopy(value)
            diffs.append(JsonDiff("REPLACE", _path_text([*steps[:-1], last]), value))
        else:
            del parent[_resolve(parent, last)]
            diffs.append(JsonDiff("REMOVE", _path_text([*steps[:-1], last])))
    return document, diffs, model


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents_and_diffs())
def test_apply_agrees_with_the_model(case):
    document, diffs, model = case
    kept = copy.deepcopy(document)
    assert apply(document, diffs) == model
    assert document == kept  # the input is never changed


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents_and_diffs())
def test_binary_form_round_trips(case):
    _, diffs, _ = case
    data = encode_diffs(diffs)
    assert decode_diffs(data) == diffs
    assert decode_diffs(encode_diffs(diffs, pack_length=4), pack_length=4) == diffs
    for diff in diffs:
        legs = parse_path(diff.path)
        assert parse_path(format_path(legs)) == legs


@settings(max_examples=100, deadline=None)
@given(documents_and_diffs())
def test_render_layout(case):
    """One line per function call but the innermost, then one line per diff (values never hold a newline)."""
    _, diffs, _ = case
    lines = render("@7", diffs).split("\n###      ")
    if not diffs:
        assert lines == ["@7"]
        return
    names = [_function_name(diff) for diff in diffs]
    calls = [name for i, name in enumerate(names) if i == 0 or names[i - 1] != name][::-1]
    assert lines[: len(calls) - 1] == [f"{name}(" for name in calls[:-1]]
    assert lines[len(calls) - 1].startswith(f"{calls[-1]}(@7, ")
    assert len(lines) == len(calls) + len(diffs) - 1
    for line, diff in zip(lines[len(calls):], diffs[1:]):
        assert line.startswith(sql_string(diff.path))


def _function_name(diff):
    if diff.operation == "INSERT":
        return "JSON_ARRAY_INSERT" if diff.path.endswith("]") else "JSON_INSERT"
    return "JSON_" + diff.operation

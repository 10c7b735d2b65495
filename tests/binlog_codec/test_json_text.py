"""MySQL JSON text read back: from_text is the inverse of json_binary.to_text."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlog_codec.json_binary import parse, serialize, to_text
from binlog_codec.json_text import decimal_value, from_text

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1), st.text(max_size=8),
    st.floats(allow_nan=False, allow_infinity=False),
    st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-10**9, max_value=10**9).map(decimal_value),
)
documents = st.recursive(
    scalars, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)),
    max_leaves=12,
)


@given(documents)
def test_text_read_back_prints_the_same_text(document):
    text = to_text(document)
    assert to_text(from_text(text)) == text


@given(documents)
def test_text_read_back_serializes_to_a_document_with_the_same_text(document):
    text = to_text(document)
    assert to_text(parse(serialize(from_text(text)))) == text


def test_decimals_keep_their_scale_and_doubles_their_form():
    assert to_text(from_text('{"price": 1.50, "ratio": 0.1, "big": 1e100, "n": 18446744073709551615}')) == (
        '{"n": 18446744073709551615, "big": 1e100, "price": 1.50, "ratio": 0.1}'
    )
    assert to_text(decimal_value(Decimal("-12.3450"))) == "-12.3450"


@pytest.mark.parametrize("text", ["{", "NaN", "[Infinity]", "'x'"])
def test_text_that_is_not_json_is_an_error(text):
    with pytest.raises(ValueError):
        from_text(text)

"""The DEFAULT of a column as a typed value, or why its value is not knowable from the text.

A column definition's ``DEFAULT`` is a literal or an expression ("Data Type Default
Values" in the MySQL manual, "DEFAULT" under CREATE TABLE in MariaDB's). A literal is
known from the statement alone: a string (with or without a character set introducer
such as ``_utf8mb4'x'``, or adjacent strings, which concatenate), a number, ``NULL``,
``TRUE``/``FALSE``, a bit-value ``b'101'`` / ``0b101`` (a number), a hexadecimal
``x'FF'`` / ``0xFF`` (bytes) or a temporal literal ``DATE '2024-01-01'`` (its string).
Anything else — ``CURRENT_TIMESTAMP``, a function call, an expression in parentheses —
is evaluated by the server when a row is written, so its value is :class:`Unknowable`
and only its text is kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Union

from .create_table import Token, sql_text

Value = Union[str, int, float, Decimal, bytes, None]

_INTEGER = re.compile(r"[0-9]+")
_DECIMAL = re.compile(r"[0-9]*\.[0-9]*")
_FLOAT = re.compile(r"([0-9]+\.?[0-9]*|\.[0-9]+)[eE][+-]?[0-9]+")
_DIGITS_PYTHON_READS = 4300  # int() refuses longer decimal texts (sys.get_int_max_str_digits)
_STRING_PREFIXES = ("N", "DATE", "TIME", "TIMESTAMP")


@dataclass(frozen=True)
class Literal:
    """A default known from the statement: ``value`` is a str, a number, bytes or None (NULL)."""

    value: Value
    text: str


@dataclass(frozen=True)
class Unknowable:
    """A default the server computes (``CURRENT_TIMESTAMP``, ``(expr)``, ``AUTO_INCREMENT``, a
    generated column's expression): only its ``text`` is known, and ``reason`` says why."""

    text: str
    reason: str


Default = Union[Literal, Unknowable]

EXPRESSION = "an expression the server evaluates when the row is written"


def _number(text: str) -> int | float | Decimal | None:
    if _INTEGER.fullmatch(text) and len(text) <= _DIGITS_PYTHON_READS:
        return int(text)
    if _DECIMAL.fullmatch(text) and text != ".":
        return Decimal(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    lowered = text.lower()
    if lowered.startswith("0b") and set(lowered[2:]) <= {"0", "1"} and len(lowered) > 2:
        return int(lowered[2:], 2)
    return None


def _signed(items: list[Token]) -> int | float | Decimal | None:
    """``-1``, ``+4.99``, ``1e+10``: signs, then a number whose exponent sign is a token of its own."""
    negative = False
    while items and items[0].kind == "op" and items[0].text in "+-":
        negative ^= items[0].text == "-"
        items = items[1:]
    if not items or any(token.kind not in ("word", "op") for token in items):
        return None
    number = _number("".join(token.text for token in items))
    return -number if negative and number is not None else number


def _hexadecimal(text: str) -> bytes | None:
    digits = text[2:] if text.lower().startswith("0x") else text
    try:
        return bytes.fromhex(digits if len(digits) % 2 == 0 else "0" + digits)
    except ValueError:
        return None


def _introduced(prefix: str, strings: list[Token]) -> Value:
    """A string with an introducer: ``_charset'x'``, ``N'x'``, ``b'101'``, ``x'FF'``, ``DATE 'x'``."""
    text = "".join(token.text for token in strings)
    upper = prefix.upper()
    if upper == "B" and len(strings) == 1 and set(text) <= {"0", "1"}:
        return int(text or "0", 2)
    if upper == "X" and len(strings) == 1:
        return _hexadecimal(text)
    if upper.startswith("_") or upper in _STRING_PREFIXES:
        return text
    return None


def _literal(items: list[Token]) -> tuple[bool, Value]:
    """(True, value) when ``items`` are one literal, else (False, None)."""
    if all(token.kind == "string" for token in items):
        return True, "".join(token.text for token in items)
    first = items[0]
    if first.kind == "word" and len(items) > 1 and all(token.kind == "string" for token in items[1:]):
        value = _introduced(first.text, items[1:])
        return value is not None, value
    if len(items) == 1 and first.kind == "word":
        upper = first.text.upper()
        if upper in ("NULL", "TRUE", "FALSE"):
            return True, {"NULL": None, "TRUE": 1, "FALSE": 0}[upper]
        if upper.startswith("0X"):
            value = _hexadecimal(first.text)
            return value is not None, value
    number = _signed(items)
    return number is not None, number


def default_of(items: list[Token]) -> Default:
    """The default whose tokens (after the word DEFAULT) are ``items``."""
    text = sql_text(items)
    known, value = _literal(items) if items else (False, None)
    return Literal(value, text) if known else Unknowable(text, EXPRESSION)

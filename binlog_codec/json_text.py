"""MySQL's JSON text form read back into the values of :mod:`binlog_codec.json_binary`.

The warehouse keeps JSON columns as MySQL prints them
(:func:`binlog_codec.json_binary.to_text`). Applying a WL#2955 diff vector to a
document kept that way needs the document as values again, and printing the
result must give the text MySQL would print for the document the server holds.
:func:`from_text` is the inverse of ``to_text`` on that text:

* integers are ints (int64 and uint64 alike);
* a number with an exponent is a double; one with a fraction is the double it
  prints as, unless ``to_text`` would print that double differently: then it was
  a DECIMAL (MySQL keeps its scale, ``1.50``), kept as the WL#8132 opaque
  DECIMAL value;
* dates, times and opaque values are printed as strings and stay strings: their
  text is all a later print needs.
"""

from __future__ import annotations

import json
from decimal import Decimal

from .json_binary import Opaque, JsonValue, to_text
from .value_encoder import encode_decimal

MYSQL_TYPE_NEWDECIMAL = 246


def from_text(text: str) -> JsonValue:
    """The value of a MySQL JSON text (see the module docstring); ``ValueError`` for text that
    is not JSON."""
    return json.loads(text, parse_float=_number, parse_constant=_no_constant)


def _number(token: str) -> float | Opaque:
    value = float(token)
    if "e" in token or "E" in token or to_text(value) == token:  # MySQL prints no DECIMAL with an exponent
        return value
    return decimal_value(Decimal(token))


def decimal_value(number: Decimal) -> Opaque:
    """A DECIMAL as the opaque value binary JSON holds it: precision, scale, ``decimal2bin``."""
    sign, digits, exponent = number.as_tuple()
    scale = max(0, -exponent)
    precision = max(len(digits), scale, 1)
    if precision > 65 or scale > 30:
        raise ValueError(f"{number} has more digits than a MySQL DECIMAL holds")
    return Opaque(MYSQL_TYPE_NEWDECIMAL, bytes((precision, scale)) + encode_decimal(number, precision, scale))


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")

"""Values with their Python types spelled out, for comparisons where ``1 == 1.0 == True``,
``0.0 == -0.0`` and ``Decimal("1.0") == Decimal("1.00")`` would hide a difference."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal


def typed(value):
    """``value`` (nested in dicts and lists) as tagged tuples that differ where the types or the
    exact floats, Decimal scales or timezones differ."""
    if isinstance(value, dict):
        return {key: typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [typed(item) for item in value]
    if isinstance(value, float):
        return ("float", value.hex())
    if isinstance(value, Decimal):
        return ("Decimal", value.as_tuple())
    if isinstance(value, datetime):
        return ("datetime", value, value.utcoffset())
    return (type(value).__name__, value)

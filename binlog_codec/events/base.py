"""The record every decoded event shares, and the registry of body decoders."""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from ..reader import EventHeader, FormatDescription, RawEvent

DECODERS: dict[int, Callable] = {}


def decoder(*type_codes: int):
    """Register the decorated function as the body decoder of ``type_codes``."""

    def register(function):
        for code in type_codes:
            DECODERS[code] = function
        return function

    return register


@dataclass(kw_only=True)
class Event:
    """An event: where it is in the file, its header, and (in subclasses) its decoded body."""

    file: str = field(repr=False)
    pos: int
    end_pos: int
    inner_offset: int | None = None
    header: EventHeader = field(repr=False)

    @property
    def type_name(self) -> str:
        return self.header.type_name

    @property
    def type_code(self) -> int:
        return self.header.type_code

    @property
    def size(self) -> int:
        return self.header.event_size

    def summary(self) -> str:
        """One line a person reads in ``binlog-codec events``."""
        return ""

    def fields(self) -> dict[str, Any]:
        """The decoded body as JSON-ready values (bytes become hex)."""
        base = {f.name for f in dataclasses.fields(Event)}
        return {
            f.name: to_json(getattr(self, f.name))
            for f in dataclasses.fields(self)
            if f.name not in base and f.repr
        }


def to_json(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if dataclasses.is_dataclass(value):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value


def location(raw: RawEvent) -> dict[str, Any]:
    """Keyword arguments that place a record where its raw event was found."""
    return {
        "file": raw.file,
        "pos": raw.pos,
        "end_pos": raw.end_pos,
        "inner_offset": raw.inner_offset,
        "header": raw.header,
    }


def uuid_text(raw16: bytes) -> str:
    return str(uuid.UUID(bytes=bytes(raw16)))


def short_text(text: str, limit: int = 200) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def decode_text(data: bytes) -> str:
    """Statement text as stored: UTF-8 where valid, invalid bytes kept as ``\\xNN`` escapes."""
    return data.decode("utf-8", "backslashreplace")


__all__ = [
    "DECODERS",
    "Event",
    "FormatDescription",
    "RawEvent",
    "decode_text",
    "decoder",
    "location",
    "short_text",
    "to_json",
    "uuid_text",
]

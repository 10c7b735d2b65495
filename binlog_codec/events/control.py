"""Control events: format description, rotate, stop, incident, heartbeats, payloads, skips.

Body layouts follow MySQL's ``control_events.h``; the binlog-version-1/3
START_EVENT_V3 is the predecessor of the FORMAT_DESCRIPTION_EVENT.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..event_types import EventType
from ..payload import parse_payload_header
from ..reader import CHECKSUM_NAMES, RawEvent
from ..wire import Cursor
from .base import Event, decoder, location


@dataclass(kw_only=True)
class FormatDescriptionEvent(Event):
    """FORMAT_DESCRIPTION_EVENT (15) or START_EVENT_V3 (1): the format of the events that follow."""

    binlog_version: int
    server_version: str
    create_timestamp: int
    header_length: int
    post_header_lengths: list[int]
    checksum: str | None

    def summary(self) -> str:
        return (
            f"server {self.server_version}, binlog v{self.binlog_version}, "
            f"checksum {self.checksum or 'none (pre-checksum format)'}"
        )


@decoder(EventType.FORMAT_DESCRIPTION, EventType.START_V3)
def _format_description(raw: RawEvent, cursor: Cursor) -> FormatDescriptionEvent:
    fde = raw.fde  # the reader decoded it already: it needed it for framing
    cursor.pos = cursor.end
    return FormatDescriptionEvent(
        **location(raw),
        binlog_version=fde.binlog_version,
        server_version=fde.server_version,
        create_timestamp=fde.create_timestamp,
        header_length=fde.header_length,
        post_header_lengths=list(fde.post_header_lengths),
        checksum=None if fde.checksum_alg is None else CHECKSUM_NAMES.get(fde.checksum_alg, str(fde.checksum_alg)),
    )


@dataclass(kw_only=True)
class RotateEvent(Event):
    """ROTATE_EVENT (4): ``position 8 | next_file``; the log continues in ``next_file``."""

    next_file: str
    position: int
    artificial: bool

    def summary(self) -> str:
        kind = " (artificial)" if self.artificial else ""
        return f"next file {self.next_file} at {self.position}{kind}"


@decoder(EventType.ROTATE)
def _rotate(raw: RawEvent, cursor: Cursor) -> RotateEvent:
    position = cursor.u64("position")
    name = cursor.rest().decode("utf-8", "backslashreplace")
    return RotateEvent(**location(raw), next_file=name, position=position, artificial=bool(raw.header.flags & 0x20))


@dataclass(kw_only=True)
class StopEvent(Event):
    """STOP_EVENT (3): the server stopped; the body is empty."""

    def summary(self) -> str:
        return "server stopped"


@decoder(EventType.STOP)
def _stop(raw: RawEvent, cursor: Cursor) -> StopEvent:
    return StopEvent(**location(raw))


INCIDENT_NAMES = {0: "NONE", 1: "LOST_EVENTS"}


@dataclass(kw_only=True)
class IncidentEvent(Event):
    """INCIDENT_EVENT (26): ``incident 2 | message_length 1 | message``; the source may have lost events."""

    incident: int
    message: str

    def summary(self) -> str:
        return f"incident {INCIDENT_NAMES.get(self.incident, self.incident)}: {self.message}"


@decoder(EventType.INCIDENT)
def _incident(raw: RawEvent, cursor: Cursor) -> IncidentEvent:
    incident = cursor.u16("incident")
    message = b""
    if cursor.remaining:
        message = cursor.take(cursor.u8("message length"), "message")
    return IncidentEvent(**location(raw), incident=incident, message=message.decode("utf-8", "backslashreplace"))


@dataclass(kw_only=True)
class HeartbeatEvent(Event):
    """HEARTBEAT_LOG_EVENT (27, body: log file name) and HEARTBEAT_LOG_EVENT_V2 (41, fields)."""

    log_file: str
    position: int

    def summary(self) -> str:
        return f"heartbeat {self.log_file} at {self.position}"


@decoder(EventType.HEARTBEAT)
def _heartbeat(raw: RawEvent, cursor: Cursor) -> HeartbeatEvent:
    name = cursor.rest().decode("utf-8", "backslashreplace")
    return HeartbeatEvent(**location(raw), log_file=name, position=raw.header.log_pos)


@decoder(EventType.HEARTBEAT_V2)
def _heartbeat_v2(raw: RawEvent, cursor: Cursor) -> HeartbeatEvent:
    """Fields ``type | length | value`` (packed integers); 1 log file name, 2 position, 0 ends."""
    name, position = "", raw.header.log_pos
    while cursor.remaining:
        field_type = cursor.packed_int("heartbeat field type")
        if field_type == 0:
            break
        value = cursor.take(cursor.packed_int("heartbeat field length"), "heartbeat field")
        if field_type == 1:
            name = value.decode("utf-8", "backslashreplace")
        elif field_type == 2:
            position = Cursor(value).packed_int("heartbeat position")
    return HeartbeatEvent(**location(raw), log_file=name, position=position)


@dataclass(kw_only=True)
class TransactionPayloadEvent(Event):
    """TRANSACTION_PAYLOAD_EVENT (40): a compressed transaction; its events follow, unwrapped."""

    compression: str
    payload_size: int
    uncompressed_size: int

    def summary(self) -> str:
        return f"{self.compression} payload, {self.payload_size} bytes, {self.uncompressed_size} uncompressed"


@decoder(EventType.TRANSACTION_PAYLOAD)
def _payload(raw: RawEvent, cursor: Cursor) -> TransactionPayloadEvent:
    header = parse_payload_header(raw.body)
    cursor.pos = cursor.end
    return TransactionPayloadEvent(
        **location(raw),
        compression=header.compression_name,
        payload_size=header.payload_size,
        uncompressed_size=header.uncompressed_size,
    )


@dataclass(kw_only=True)
class OpaqueEvent(Event):
    """An event kept as bytes: obsolete LOAD-family events (6, 7, 8, 10, 12), the pre-GA
    row events 20-22 of MySQL 5.1 betas, IGNORABLE_EVENT (28), and event types no server
    documents that carry the ignorable flag (skipped by their length)."""

    reason: str
    body: bytes

    def summary(self) -> str:
        return f"{self.reason}, {len(self.body)} bytes"


OBSOLETE = (EventType.LOAD, EventType.SLAVE, EventType.CREATE_FILE, EventType.EXEC_LOAD, EventType.NEW_LOAD)
PRE_GA_ROWS = (EventType.PRE_GA_WRITE_ROWS, EventType.PRE_GA_UPDATE_ROWS, EventType.PRE_GA_DELETE_ROWS)


@decoder(*OBSOLETE)
def _obsolete(raw: RawEvent, cursor: Cursor) -> OpaqueEvent:
    return OpaqueEvent(**location(raw), reason="obsolete event kept as bytes", body=cursor.rest())


@decoder(*PRE_GA_ROWS)
def _pre_ga(raw: RawEvent, cursor: Cursor) -> OpaqueEvent:
    return OpaqueEvent(**location(raw), reason="pre-GA row event kept as bytes", body=cursor.rest())


@decoder(EventType.IGNORABLE)
def _ignorable(raw: RawEvent, cursor: Cursor) -> OpaqueEvent:
    return OpaqueEvent(**location(raw), reason="ignorable event skipped", body=cursor.rest())


def skipped(raw: RawEvent, reason: str) -> OpaqueEvent:
    """The record of an event stepped over by its length."""
    return OpaqueEvent(**location(raw), reason=reason, body=raw.body)

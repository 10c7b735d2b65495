"""Errors raised while reading a binary log.

Every error names the file, the byte position of the event it concerns, the
event type when it is known, and what was expected, so that a user can go
straight to the offending bytes (``binlog-codec events --start-position``).
"""

from __future__ import annotations


class BinlogError(Exception):
    """A binary log could not be read as the format requires.

    ``position`` is the byte offset of the event's header in the file (or of
    the magic for file-level problems). For an event found inside a
    TRANSACTION_PAYLOAD event, ``position`` is the payload event's offset and
    ``inner_offset`` the event's offset inside the uncompressed payload.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        position: int | None = None,
        event_type: str | None = None,
        inner_offset: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.position = position
        self.event_type = event_type
        self.inner_offset = inner_offset

    def __str__(self) -> str:
        where = self.file or "<binlog>"
        if self.position is not None:
            where += f": at {self.position}"
            if self.inner_offset is not None:
                where += f"+{self.inner_offset}"
        if self.event_type:
            where += f" ({self.event_type})"
        return f"{where}: {self.message}"


class BadMagicError(BinlogError):
    """The file does not start with the 4-byte binlog magic ``\\xfebin``."""


class TruncatedError(BinlogError):
    """The file ends inside an event header or body."""


class CorruptEventError(BinlogError):
    """An event's header or body is inconsistent with the format."""


class ChecksumError(BinlogError):
    """An event's CRC32 does not match its bytes."""


class UnknownEventError(BinlogError):
    """An event type this decoder does not know, not flagged ignorable."""


class EncryptedBinlogError(BinlogError):
    """The file is encrypted (MariaDB START_ENCRYPTION_EVENT)."""

"""The shared binlog fixtures and the facts ``expected.json`` records about them."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "binlogs"

# Files FIXTURES.md marks as bad input on purpose: (error class name, position, type name or None).
BAD_FILES = {
    "blackbeam__rust_mysql_common/binlog_truncated_event.000001": ("TruncatedError", 4, "FORMAT_DESCRIPTION"),
    "blackbeam__rust_mysql_common/binlog_truncated_prev_gtid_event.000001": ("TruncatedError", 120, "PREVIOUS_GTIDS"),
    "blackbeam__rust_mysql_common/corrupt-relay-bin.000624": ("CorruptEventError", 91204, "QUERY"),
    "blackbeam__rust_mysql_common/ver_5_1-wl2325_r.001": ("CorruptEventError", 428, "XID"),
}


@lru_cache(maxsize=1)
def expected() -> dict:
    with open(FIXTURES / "expected.json", encoding="utf-8") as handle:
        return json.load(handle)["files"]


def all_files() -> list[str]:
    return sorted(expected())


def good_files() -> list[str]:
    return [name for name in all_files() if name not in BAD_FILES]


def path(name: str) -> Path:
    return FIXTURES / name


def facts(name: str, kind: str) -> list[dict]:
    return [fact for fact in expected()[name].get("facts", []) if fact["kind"] == kind]


def files_with_fact(kind: str) -> list[str]:
    return [name for name in all_files() if facts(name, kind)]


def files_with_measured(key: str, *, good_only: bool = True) -> list[str]:
    names = good_files() if good_only else all_files()
    return [name for name in names if key in expected()[name]["measured"]]

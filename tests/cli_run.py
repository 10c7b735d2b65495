"""Run ``binlog-codec`` in-process and capture what it printed."""

from __future__ import annotations

from binlog_codec.cli import main


def run(capsys, *args):
    """``(exit status, stdout, stderr)`` of ``binlog-codec ARGS...``."""
    status = main([str(a) for a in args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err

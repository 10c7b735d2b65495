"""Imports that take a second or more, started in a thread while the process has other work.

A run needs Great Expectations only when it validates and pyiceberg only when it
reads or commits the catalog, each after seconds of decoding; importing them
then would add their import time (seconds of CPU) to the run. Started early in
a thread, the import overlaps the run's work; the module's first user imports
it as usual and waits, under Python's import lock, for the thread to finish.
"""

from __future__ import annotations

import importlib
import threading

_STARTED: dict[tuple[str, ...], threading.Thread] = {}
_LOCK = threading.Lock()


def in_background(*modules: str) -> threading.Thread:
    """Start importing ``modules``, in order, in a thread; once per process and list of modules
    (a later call returns the first thread). The thread is returned started."""
    with _LOCK:
        if modules not in _STARTED:
            _STARTED[modules] = threading.Thread(target=_import, args=modules, name=f"import {', '.join(modules)}",
                                                 daemon=True)
            _STARTED[modules].start()
        return _STARTED[modules]


def _import(*modules: str) -> None:
    for module in modules:
        importlib.import_module(module)

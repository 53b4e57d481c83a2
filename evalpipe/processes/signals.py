"""How an evalpipe process answers the signals that end a run: SIGINT (Ctrl-C) raises ``KeyboardInterrupt``
however the process was started, and SIGTERM unwinds the run like Ctrl-C (``Terminated``), so both end with the
resume line and their documented exit code (130, 143).  Used by the CLI and by a variant's own process."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import NoReturn


class Terminated(KeyboardInterrupt):
    """SIGTERM delivered to evalpipe while a run is under way: unwinds like Ctrl-C, stopping the server and the
    worker; the CLI maps it to exit 143."""


def ctrl_c_interrupts() -> None:
    """Ctrl-C (SIGINT) stops a run however evalpipe was started.  A background shell job (``evalpipe run … &``
    in a script, ``nohup``, some CI runners) inherits SIGINT ignored, and Python leaves an inherited SIG_IGN in
    place: ``kill -INT`` would then do nothing, and the run would not stop its server and worker and exit 130
    as documented.  So the handler is installed here, explicitly (only the main thread may set one; a test
    calling ``main`` from another thread keeps what it has)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """SIGTERM unwinds the run like Ctrl-C (``Terminated``), so it ends with the resume line, exit 143."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> NoReturn:
        raise Terminated("SIGTERM")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)

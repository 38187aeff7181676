"""SIGTERM ends a run the way Ctrl-C (SIGINT) does: `timeout` and CI runners send SIGTERM, not SIGINT.

    with sigterm_as_interrupt():
        run_sweep(...)          # SIGTERM raises Terminated (a KeyboardInterrupt) here; the run is saved as
                                # "interrupted" and stays resumable
"""
from __future__ import annotations

import contextlib
import signal
import threading


class Terminated(KeyboardInterrupt):
    """A termination signal turned into an interrupt; `exit_code` is 128 + the signal number (143 for SIGTERM)."""

    def __init__(self, signum: int):
        self.signum = int(signum)
        self.exit_code = 128 + self.signum
        super().__init__(f"terminated by {signal.Signals(self.signum).name}")


def exit_code(exc: KeyboardInterrupt) -> int:
    """130 for Ctrl-C, 128 + signal for a Terminated."""
    return getattr(exc, "exit_code", 130)


def signal_name(exc: KeyboardInterrupt) -> str:
    return signal.Signals(exc.signum).name if isinstance(exc, Terminated) else "SIGINT"


def _raise_terminated(signum, frame):
    raise Terminated(signum)


@contextlib.contextmanager
def sigterm_as_interrupt():
    """Inside the block SIGTERM raises Terminated; the previous handler is restored on exit.

    NOTE: signal handlers can only be set from the main thread; elsewhere (a test runner's worker thread) the block
    runs with the handlers as they are.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)

"""One process at a time per run folder: `ptxmoe compare` holds an advisory lock on <run-dir>/.run.lock.

The lock is flock(2) on an open file, so the kernel drops it when the holder exits, even on SIGKILL: a crashed run
never leaves a stale lock behind. The file itself stays (removing a locked file would let two processes lock two
different inodes); it holds the pid of the last holder, for the message.
"""
from __future__ import annotations

import os
from pathlib import Path

from harness.errors import PtxmoeError

LOCK_FILE = ".run.lock"


class RunLockedError(PtxmoeError):
    """The run folder is in use by another process."""


class RunLock:
    """Context manager holding the run folder's lock; RunLockedError when another process holds it."""

    def __init__(self, run_dir):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        """Take the lock without waiting.

        Raises:
            RunLockedError: another process holds it (the message names the folder and that process's pid).
            PtxmoeError: the lock file cannot be created (e.g. a read-only folder).
        """
        import fcntl

        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise PtxmoeError(f"cannot create the lock file {self.path}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.read(fd, 32).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            raise RunLockedError(f"{self.run_dir} is in use by another ptxmoe process (pid {holder}); wait for it to "
                                 f"finish or stop it, then resume") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()

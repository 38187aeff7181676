"""Atomic file writes: a temp file in the target's folder, flushed and fsynced, then os.replace.

Readers see either the old file or the whole new one, never half of it; a failure leaves no temp file behind.
Files are written rw-r--r-- (0644) by default: a run.json or a page is meant to be read by others, while the temp
file mkstemp makes is private (0600).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

DEFAULT_MODE = 0o644


def atomic_write_bytes(path, data: bytes, mode: int = DEFAULT_MODE) -> Path:
    """Write `data` to `path` atomically (parent folders are created).

    Args:
        path: destination file.
        data: the bytes to write.
        mode: permission bits of the written file (default rw-r--r--).
    Returns:
        The destination as a Path.
    Raises:
        OSError: the folder cannot be created or written; the destination is then untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        _discard(tmp)
        raise
    return path


def atomic_write_text(path, text: str, encoding: str = "utf-8", mode: int = DEFAULT_MODE) -> Path:
    """Write `text` to `path` atomically (see atomic_write_bytes); newlines are written as given."""
    return atomic_write_bytes(path, text.encode(encoding), mode)


def atomic_copy(src, dst, mode: int = DEFAULT_MODE) -> Path:
    """Copy the file `src` to `dst` atomically (the copy is complete or absent, `mode` rw-r--r-- by default);
    returns `dst` as a Path."""
    dst = Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dst.parent, prefix=f".{dst.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as out, open(src, "rb") as inp:
            shutil.copyfileobj(inp, out, 1 << 20)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, dst)
    except BaseException:
        _discard(tmp)
        raise
    return dst


def _discard(tmp: str) -> None:
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass

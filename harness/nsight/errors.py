"""Errors of the Nsight readers: each names the file, where in it (line, table, action) and what was expected."""
from __future__ import annotations

from harness.errors import PtxmoeError


class NsightFormatError(PtxmoeError):
    """An Nsight file could not be read as the layout it claims (or as any layout we know).

    Attributes:
        path: the file.
        where: a 1-based line number (int), a place such as "table NVTX_EVENTS" (str), or None for the whole file.
        expected: what the reader expected to find there.
        found: what it found instead (shortened), or None.
    """

    def __init__(self, path, where, expected: str, found=None):
        self.path, self.where, self.expected, self.found = str(path), where, expected, found
        place = f"line {where}" if isinstance(where, int) else where
        msg = f"{self.path}: {place}: expected {expected}" if place else f"{self.path}: expected {expected}"
        if found is not None:
            shown = found if len(str(found)) <= 120 else str(found)[:117] + "..."
            msg += f", found {shown!r}" if isinstance(shown, str) else f", found {shown}"
        super().__init__(msg)

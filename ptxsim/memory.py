"""Simulated device memory: one flat global byte array with an allocator, and the generic-address windows."""
from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from ptxsim.errors import MemoryFault, ResourceLimitError

GLOBAL_BASE = 1 << 40  # global (and generic) addresses of device allocations start here; 0 is never valid
SHARED_WINDOW = 1 << 46  # generic address of shared-space offset 0 (cvta.shared adds it)
LOCAL_WINDOW = 1 << 47  # generic address of local-space offset 0 (cvta.local adds it)
WINDOW_SIZE = 1 << 40
ALLOC_ALIGN = 256

# shadow states of a global byte (for memcheck / initcheck)
UNMAPPED, LIVE, FREED = 0, 1, 2


@dataclass(frozen=True)
class Allocation:
    addr: int
    nbytes: int
    label: str

    @property
    def end(self) -> int:
        return self.addr + self.nbytes


class GlobalMemory:
    """Bump allocator over one growable uint8 array; freed ranges stay mapped-but-freed for memcheck."""

    def __init__(self, capacity: int = 1 << 20):
        self.data = np.zeros(capacity, np.uint8)
        self.state = np.zeros(capacity, np.uint8)  # UNMAPPED / LIVE / FREED per byte
        self.written = np.zeros(capacity, np.bool_)  # initcheck shadow
        self.top = 0
        self.allocs: list[Allocation] = []  # sorted by address (bump allocator keeps it sorted)
        self.freed: list[Allocation] = []

    def _grow(self, need: int) -> None:
        cap = len(self.data)
        if need <= cap:
            return
        while cap < need:
            cap *= 2
        try:
            grown = {name: np.zeros(cap, getattr(self, name).dtype) for name in ("data", "state", "written")}
        except MemoryError:
            raise ResourceLimitError(f"simulated global memory of {need} bytes does not fit in host memory "
                                     f"(3 bytes of host memory per simulated byte)") from None
        for name, new in grown.items():
            old = getattr(self, name)
            new[: len(old)] = old
            setattr(self, name, new)

    def alloc(self, nbytes: int, label: str = "") -> Allocation:
        from ptxsim.config import CONFIG

        if nbytes < 0:
            raise ResourceLimitError(f"alloc: nbytes must be >= 0, got {nbytes} ({label or 'allocation'})")
        off = self.top
        size = max(int(nbytes), 1)
        top = off + (size + ALLOC_ALIGN - 1) // ALLOC_ALIGN * ALLOC_ALIGN + ALLOC_ALIGN  # a guard gap after each
        if top > CONFIG.max_global:
            raise ResourceLimitError(f"allocating {nbytes} bytes for {label or 'a buffer'} would take simulated global "
                                     f"memory to {top} bytes; the limit is {CONFIG.max_global} bytes "
                                     "(PTXSIM_MAX_GLOBAL)")
        self.top = top
        self._grow(self.top + 16)
        self.state[off: off + nbytes] = LIVE
        a = Allocation(GLOBAL_BASE + off, int(nbytes), label)
        self.allocs.append(a)
        return a

    def free(self, addr: int) -> Allocation:
        for i, a in enumerate(self.allocs):
            if a.addr == addr:
                del self.allocs[i]
                off = a.addr - GLOBAL_BASE
                self.state[off: off + a.nbytes] = FREED
                self.freed.append(a)
                return a
        raise MemoryFault(f"free of address {addr:#x}, which is not the start of a live allocation "
                          f"(nearest: {self.describe(addr)})", space="global", addr=addr)

    def write_bytes(self, addr: int, raw: np.ndarray) -> None:
        off = addr - GLOBAL_BASE
        self.data[off: off + raw.nbytes] = raw.reshape(-1).view(np.uint8)
        self.written[off: off + raw.nbytes] = True

    def read_bytes(self, addr: int, nbytes: int) -> np.ndarray:
        off = addr - GLOBAL_BASE
        return self.data[off: off + nbytes].copy()

    @property
    def limit(self) -> int:
        return GLOBAL_BASE + self.top

    def nearest(self, addr: int) -> Allocation | None:
        every = sorted(self.allocs + self.freed, key=lambda a: a.addr)
        if not every:
            return None
        starts = [a.addr for a in every]
        i = bisect.bisect_right(starts, addr) - 1
        cands = [every[j] for j in (i, i + 1) if 0 <= j < len(every)]
        return min(cands, key=lambda a: 0 if a.addr <= addr < a.end else min(abs(addr - a.addr), abs(addr - a.end)))

    def describe(self, addr: int) -> str:
        a = self.nearest(addr)
        if a is None:
            return "no allocations"
        status = "freed " if a in self.freed else ""
        label = f" '{a.label}'" if a.label else ""
        if a.addr <= addr < a.end:
            rel = f"{addr - a.addr} bytes into"
        elif addr >= a.end:
            rel = f"{addr - a.end} bytes after the end of"
        else:
            rel = f"{a.addr - addr} bytes before"
        return f"{rel} {status}allocation{label} [{a.addr:#x}, {a.end:#x}) of {a.nbytes} bytes"

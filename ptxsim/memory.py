"""Simulated device memory: one flat global byte array with an allocator, and the generic-address windows."""
from __future__ import annotations

import bisect
import sys
from dataclasses import dataclass

import numpy as np

from ptxsim.errors import MemoryFault, ResourceLimitError

GLOBAL_BASE = 1 << 40  # global (and generic) addresses of device allocations start here; 0 is never valid
SHARED_WINDOW = 1 << 46  # generic address of shared-space offset 0 (cvta.shared adds it)
LOCAL_WINDOW = 1 << 47  # generic address of local-space offset 0 (cvta.local adds it)
PARAM_WINDOW = 3 << 46  # generic address of kernel-parameter offset 0 (cvta.param adds it: a __grid_constant__'s &)
WINDOW_SIZE = 1 << 40
ALLOC_ALIGN = 256

# shadow states of a global byte (for memcheck / initcheck)
UNMAPPED, LIVE, FREED = 0, 1, 2

# Lazy allocations are backed page by page: a page is filled from its allocation's source the first time a simulated
# access (or a copy) touches it. Aligned accesses of up to 64 bytes never straddle two pages.
PAGE_SHIFT = 16
PAGE = 1 << PAGE_SHIFT
MAX_RESERVED_BYTES = 1 << 40  # simulated global address space (virtual: backed only where touched)


def _round_up(n: int, to: int) -> int:
    return -(-n // to) * to


# NOTE: Python's mmap module names MAP_NORESERVE only from 3.13; without it Linux's heuristic overcommit refuses any
# mapping larger than RAM + swap (a dsv3 layer's 22 GB of lazy weights on a 16-23 GB machine)
_LINUX_MAP_NORESERVE = 0x4000 if sys.platform.startswith("linux") else 0


def reserve(nbytes: int) -> np.ndarray:
    """Zeroed bytes that the OS backs only where they are touched (anonymous mmap without swap reservation), so a
    simulated 15 GB allocation costs nothing until a CTA reads it."""
    import mmap

    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_NORESERVE", _LINUX_MAP_NORESERVE)
    return np.frombuffer(mmap.mmap(-1, max(int(nbytes), 1), flags=flags), np.uint8)


@dataclass(frozen=True)
class Allocation:
    addr: int
    nbytes: int
    label: str

    @property
    def end(self) -> int:
        return self.addr + self.nbytes


class ByteStates:
    """UNMAPPED / LIVE / FREED of global byte offsets, looked up in the allocation table (no byte per byte).

    Indexed like the byte array it replaces: `states[offsets]` for an int array, `states[offset]` for one int.
    """

    def __init__(self, gmem: GlobalMemory):
        self._gmem = gmem
        self._table = None

    def invalidate(self) -> None:
        self._table = None

    def _build(self):
        rows = sorted([(a.addr, a.end, LIVE) for a in self._gmem.allocs] +
                      [(a.addr, a.end, FREED) for a in self._gmem.freed])
        starts = np.array([r[0] - GLOBAL_BASE for r in rows], np.int64)
        ends = np.array([r[1] - GLOBAL_BASE for r in rows], np.int64)
        codes = np.array([r[2] for r in rows], np.uint8)
        self._table = (starts, ends, codes)
        return self._table

    def __len__(self) -> int:
        return self._gmem.top

    def live_span(self, lo: int, hi: int) -> bool:
        """True when the bytes [lo, hi] all lie in one live allocation (one lookup: the common, coalesced case)."""
        starts, ends, codes = self._table or self._build()
        i = int(np.searchsorted(starts, lo, "right")) - 1
        return i >= 0 and codes[i] == LIVE and hi < ends[i]

    def __getitem__(self, offsets):
        starts, ends, codes = self._table or self._build()
        o = np.asarray(offsets, np.int64)
        if starts.size == 0:
            out = np.zeros(o.shape, np.uint8)
        else:
            i = np.searchsorted(starts, o, "right") - 1
            ic = np.maximum(i, 0)
            out = np.where((i >= 0) & (o < ends[ic]), codes[ic], np.uint8(UNMAPPED)).astype(np.uint8)
        return out if o.ndim else out[()]


class GlobalMemory:
    """Bump allocator over one growable byte array; freed ranges stay mapped-but-freed for memcheck.

    The array is reserved, not committed: untouched bytes cost no RAM. Allocations made with a `fill` source are
    lazy: their pages materialise on first touch. The initcheck shadow (`written`) exists only once something asks
    for it; until then the ranges marked written / unwritten are logged and replayed.
    """

    def __init__(self, capacity: int = 1 << 20):
        self.data = reserve(capacity)
        self.top = 0
        self.eager_bytes = 0  # live bytes of non-lazy allocations (what PTXSIM_MAX_GLOBAL bounds)
        self._eager: dict[int, int] = {}  # offset -> bytes of each live non-lazy allocation
        self.allocs: list[Allocation] = []  # sorted by address (bump allocator keeps it sorted)
        self.freed: list[Allocation] = []
        self.state = ByteStates(self)
        self._written: np.ndarray | None = None
        self._written_log: list[tuple[int, int, bool]] = []
        self._sources: list[tuple[Allocation, object]] = []  # lazy allocations and their fill sources
        self._page_src = np.full(len(self.data) >> PAGE_SHIFT, -1, np.int32)
        self.pending_pages = 0  # lazy pages not filled yet
        self.filled_pages = 0  # lazy pages filled so far

    # -- capacity ------------------------------------------------------------------------------------------------
    def _grow(self, need: int) -> None:
        cap = len(self.data)
        if need <= cap:
            return
        while cap < need:
            cap *= 2
        try:
            new = reserve(cap)
        except MemoryError:
            raise ResourceLimitError(f"simulated global memory of {need} bytes does not fit in host memory") from None
        for lo, hi in self._committed_runs():
            new[lo:hi] = self.data[lo:hi]
        self.data = new
        src = np.full(cap >> PAGE_SHIFT, -1, np.int32)
        src[: len(self._page_src)] = self._page_src
        self._page_src = src
        if self._written is not None:
            shadow = reserve(cap).view(np.bool_)
            shadow[: len(self._written)] = self._written
            self._written = shadow

    def _committed_runs(self) -> list[tuple[int, int]]:
        """Byte ranges below `top` that hold data (pending lazy pages are skipped: copying them would commit them)."""
        npages = min(_round_up(self.top, PAGE) >> PAGE_SHIFT, len(self._page_src))
        pending = np.zeros(npages + 2, bool)
        pending[1:-1] = self._page_src[:npages] >= 0
        pending[0] = pending[-1] = True
        edges = np.flatnonzero(np.diff(pending.astype(np.int8)))
        return [(int(a) << PAGE_SHIFT, min(int(b) << PAGE_SHIFT, len(self.data))) for a, b in edges.reshape(-1, 2)]

    # -- allocation ----------------------------------------------------------------------------------------------
    def alloc(self, nbytes: int, label: str = "", fill=None) -> Allocation:
        """Allocate `nbytes`. `fill` makes it lazy: an int byte value, or a callable (start, stop) -> the uint8 bytes
        [start, stop) of the allocation, called per page the first time that page is touched."""
        from ptxsim.config import CONFIG

        if nbytes < 0:
            raise ResourceLimitError(f"alloc: nbytes must be >= 0, got {nbytes} ({label or 'allocation'})")
        lazy = fill is not None
        off = _round_up(self.top, PAGE) if lazy else self.top
        end = off + _round_up(max(int(nbytes), 1), ALLOC_ALIGN) + ALLOC_ALIGN  # a guard gap after each
        top = _round_up(end, PAGE) if lazy else end  # lazy pages belong to one allocation only
        # NOTE: PTXSIM_MAX_GLOBAL bounds the bytes backed eagerly (copied in, poisoned, module variables): those cost
        # host memory at once. Lazy allocations cost nothing until a CTA touches a page, so they are bounded only by
        # the address space ptxsim reserves (MAX_RESERVED_BYTES).
        eager = self.eager_bytes + (0 if lazy else int(nbytes))
        if eager > CONFIG.max_global:
            raise ResourceLimitError(f"allocating {nbytes} bytes for {label or 'a buffer'} would take eagerly backed "
                                     f"simulated global memory to {eager} bytes; the limit is {CONFIG.max_global} "
                                     "bytes (PTXSIM_MAX_GLOBAL)")
        if top > MAX_RESERVED_BYTES:
            raise ResourceLimitError(f"allocating {nbytes} bytes for {label or 'a buffer'} would take simulated global "
                                     f"memory to {top} bytes; ptxsim reserves at most {MAX_RESERVED_BYTES} bytes")
        # NOTE: grow before `top` moves: growth copies the committed bytes below `top`, and the new allocation's
        # pages are not marked lazy yet (moving `top` first copied up to a GB of its untouched range, committing it)
        self._grow(top + 16)
        self.top, self.eager_bytes = top, eager
        if not lazy:
            self._eager[off] = int(nbytes)
        a = Allocation(GLOBAL_BASE + off, int(nbytes), label)
        self.allocs.append(a)
        self.state.invalidate()
        if lazy and nbytes:
            first, last = off >> PAGE_SHIFT, (off + nbytes - 1) >> PAGE_SHIFT
            self._page_src[first: last + 1] = len(self._sources)
            self._sources.append((a, fill))
            self.pending_pages += last - first + 1
            self.mark_written(off, nbytes, True)  # a lazy buffer holds defined contents, as if copied in
        return a

    def free(self, addr: int) -> Allocation:
        for i, a in enumerate(self.allocs):
            if a.addr == addr:
                del self.allocs[i]
                self.freed.append(a)
                self.eager_bytes -= self._eager.pop(a.addr - GLOBAL_BASE, 0)
                self.state.invalidate()
                self._drop_pending(a.addr - GLOBAL_BASE, a.nbytes)
                return a
        raise MemoryFault(f"free of address {addr:#x}, which is not the start of a live allocation "
                          f"(nearest: {self.describe(addr)})", space="global", addr=addr)

    # -- lazy pages ----------------------------------------------------------------------------------------------
    def _drop_pending(self, off: int, nbytes: int) -> None:
        if nbytes <= 0 or not self.pending_pages:
            return
        pages = self._page_src[off >> PAGE_SHIFT: ((off + nbytes - 1) >> PAGE_SHIFT) + 1]
        self.pending_pages -= int(np.count_nonzero(pages >= 0))
        pages[:] = -1

    def _page_contents(self, page: int) -> tuple[int, int, np.ndarray | int]:
        """(lo, hi, contents) of a pending page: the allocation's bytes [lo, hi) in it, from its fill source."""
        a, fill = self._sources[int(self._page_src[page])]
        base = a.addr - GLOBAL_BASE
        lo, hi = max(page << PAGE_SHIFT, base), min((page + 1) << PAGE_SHIFT, base + a.nbytes)
        if isinstance(fill, (int, np.integer)):
            return lo, hi, int(fill) & 0xFF
        raw = np.asarray(fill(lo - base, hi - base)).reshape(-1).view(np.uint8)
        if raw.size != hi - lo:
            raise MemoryFault(f"the fill source of allocation '{a.label}' returned {raw.size} bytes for its "
                              f"bytes [{lo - base}, {hi - base}); expected {hi - lo}", space="global",
                              addr=GLOBAL_BASE + lo)
        return lo, hi, raw

    def _fill_page(self, page: int) -> None:
        lo, hi, contents = self._page_contents(page)
        self.data[lo:hi] = contents
        self._page_src[page] = -1
        self.pending_pages -= 1
        self.filled_pages += 1

    def touch(self, offsets: np.ndarray) -> None:
        """Fill the pending pages holding these byte offsets (one per lane; an aligned access stays in one page).
        Offsets past the heap are clamped to its last page (such an access faults in the bounds check anyway)."""
        if not self.pending_pages:
            return
        offsets = np.asarray(offsets)
        if offsets.dtype != np.uint64:
            offsets = offsets.astype(np.uint64)
        pages = np.minimum(offsets >> np.uint64(PAGE_SHIFT), np.uint64(len(self._page_src) - 1))
        src = self._page_src[pages]
        if src.max(initial=-1) >= 0:
            for page in np.unique(pages[src >= 0]):
                self._fill_page(int(page))

    def touch_range(self, off: int, nbytes: int, whole_pages_overwritten: bool = False) -> None:
        """Fill the pending pages of [off, off+nbytes); with `whole_pages_overwritten`, pages the range covers whole
        are about to be overwritten, so they are marked filled without computing their contents."""
        if nbytes <= 0 or not self.pending_pages:
            return
        first, last = off >> PAGE_SHIFT, (off + nbytes - 1) >> PAGE_SHIFT
        for page in np.flatnonzero(self._page_src[first: last + 1] >= 0) + first:
            page = int(page)
            whole = off <= page << PAGE_SHIFT and (page + 1) << PAGE_SHIFT <= off + nbytes
            if whole and whole_pages_overwritten:
                self._page_src[page] = -1
                self.pending_pages -= 1
            else:
                self._fill_page(page)

    # -- initcheck shadow ----------------------------------------------------------------------------------------
    @property
    def written(self) -> np.ndarray:
        """Per byte: written since allocation (initcheck's shadow), built on first use."""
        if self._written is None:
            shadow = reserve(len(self.data)).view(np.bool_)
            for off, nbytes, value in self._written_log:
                shadow[off: off + nbytes] = value
            self._written, self._written_log = shadow, []
        return self._written

    @property
    def has_shadow(self) -> bool:
        return self._written is not None

    def mark_written(self, off: int, nbytes: int, value: bool = True) -> None:
        if self._written is None:
            self._written_log.append((int(off), int(nbytes), bool(value)))
        else:
            self._written[off: off + nbytes] = value

    # -- host copies ---------------------------------------------------------------------------------------------
    def write_bytes(self, addr: int, raw: np.ndarray) -> None:
        off = addr - GLOBAL_BASE
        self.touch_range(off, raw.nbytes, whole_pages_overwritten=True)
        self.data[off: off + raw.nbytes] = raw.reshape(-1).view(np.uint8)
        self.mark_written(off, raw.nbytes, True)

    def read_bytes(self, addr: int, nbytes: int) -> np.ndarray:
        """A copy of [addr, addr+nbytes). Pending lazy pages are produced into the copy without being committed (an
        output read back after a sampled run costs no simulated memory for the pages no CTA wrote)."""
        out = np.empty(max(int(nbytes), 0), np.uint8)
        return self.read_into(addr, out)

    def view(self, addr: int, nbytes: int) -> np.ndarray:
        """[addr, addr+nbytes) as a read-only view of the heap, no copy; its pending lazy pages are filled first (as a
        kernel's read would). It shows the bytes as they are now: the heap array is replaced when it grows, and
        ptxsim never reuses freed addresses, so a view of a buffer nothing writes any more (freed, or its device
        dropped) stays what it was."""
        off = addr - GLOBAL_BASE
        self.touch_range(off, nbytes)
        out = self.data[off: off + nbytes]
        out.flags.writeable = False
        return out

    def read_into(self, addr: int, out: np.ndarray) -> np.ndarray:
        """Fill the uint8 array `out` with [addr, addr+out.size) (read_bytes without its own copy); returns `out`."""
        off, nbytes = addr - GLOBAL_BASE, out.size
        out[:] = self.data[off: off + nbytes]
        if nbytes <= 0 or not self.pending_pages:
            return out
        first, last = off >> PAGE_SHIFT, (off + nbytes - 1) >> PAGE_SHIFT
        for page in np.flatnonzero(self._page_src[first: last + 1] >= 0) + first:
            lo, hi, contents = self._page_contents(int(page))
            a, b = max(lo, off), min(hi, off + nbytes)
            if a < b:
                out[a - off: b - off] = contents if isinstance(contents, int) else contents[a - lo: b - lo]
        return out

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

"""The L2 between the simulated CTAs and DRAM: an LRU over whole waves (footprint per wave), sized from the device.

A wave is the CTAs resident together (blocks per SM x SMs, in launch order). The model, at sector (32 B) granularity:
- within a wave every sector is read from DRAM once: co-resident CTAs run in near lockstep, so a sector another CTA
  of the same wave touched is an L2 hit (the accesses are close in time);
- across waves the L2 is an LRU whose unit is a wave: at the start of wave w it still holds the sectors of the most
  recent waves w-1, w-2, ... whose footprints (distinct sectors each touched) together fit `capacity_bytes`; the
  first wave back that does not fit, and everything older, is gone. NOTE: a wave whose own footprint exceeds the
  L2 (a dsv3 GEMM wave streams hundreds of MB of weights) leaves nothing the next wave can use: LRU has evicted its
  early k-slices, which are what the next wave reads first. This is all-or-nothing per wave, not a partial keep.
- waves that were not simulated (sampled runs) are assumed to have the mean footprint of the simulated ones, so a
  gap ages the L2 as much as the skipped waves would have (a gap wider than the L2 starts the next sampled wave cold).
  Sectors the sampled waves share across a gap are hits only when the gap's estimated footprint fits.
  NOTE (sampling bias): extrapolation scales every sampled wave alike, so data all waves share but DRAM serves once
  (a table every CTA reads) is over-counted by up to 1 / sample_fraction, and a sampled wave that is mostly
  early-exit CTAs (a grouped GEMM's padding rows at the end of the grid) under-counts.

DRAM reads are the sectors that miss; `lts__t_sectors_srcunit_tex_op_read_lookup_hit` counts the hits. Writes are
write-back and counted by the caller (each written sector once).
"""
from __future__ import annotations

import numpy as np

SECTOR = 32


def lazy_zeros(n: int, dtype) -> np.ndarray:
    """n zeros of `dtype` in an anonymous mapping: pages are committed only when written (reads of untouched pages
    see the kernel's shared zero page), so a table over a mostly untouched heap costs what is touched.
    NOTE: like ptxsim.memory.reserve (not imported: the model imports nothing from the simulator core), with Linux's
    MAP_NORESERVE, which Python's mmap names only from 3.13: tables larger than RAM map under heuristic overcommit."""
    import mmap
    import sys

    dtype = np.dtype(dtype)
    noreserve = getattr(mmap, "MAP_NORESERVE", 0x4000 if sys.platform.startswith("linux") else 0)
    raw = mmap.mmap(-1, max(int(n) * dtype.itemsize, 1), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | noreserve)
    return np.frombuffer(raw, np.uint8)[: int(n) * dtype.itemsize].view(dtype)


class WaveL2:
    """Footprint-per-wave LRU over `nsec` sectors of global memory; capacity None = unbounded (every re-touch hits)."""

    def __init__(self, nsec: int, capacity_bytes: int | None = None):
        if capacity_bytes is not None and (not isinstance(capacity_bytes, (int, np.integer)) or capacity_bytes < 0):
            from ptxsim.model.errors import ModelArgumentError

            raise ModelArgumentError(f"WaveL2: capacity_bytes must be an integer >= 0 or None, got {capacity_bytes!r}")
        self.capacity_sectors = None if capacity_bytes is None else int(capacity_bytes) // SECTOR
        # 1 + the last wave that touched each sector (0: never); zero-filled and lazily committed, because it spans
        # the whole heap and a sampled run touches little of it
        self.last = lazy_zeros(nsec, np.int32)
        self.footprints: dict[int, int] = {}  # simulated wave -> distinct sectors it touched
        self._done: list[int] = []  # finished simulated waves, ascending, and the prefix sums of their footprints
        self._prefix: list[int] = [0]
        self.wave = -1
        self.kept_from = 0  # sectors last touched in a wave >= kept_from are in L2 at this wave

    def begin_wave(self, wave: int) -> None:
        """Start wave `wave` (waves come in increasing order; the same wave again continues it)."""
        if wave == self.wave:
            return
        if wave < self.wave:
            from ptxsim.model.errors import ModelArgumentError

            raise ModelArgumentError(f"WaveL2: wave {wave} after wave {self.wave}; waves must come in launch order")
        if self.wave >= 0:
            self._done.append(self.wave)
            self._prefix.append(self._prefix[-1] + self.footprints[self.wave])
        self.wave = wave
        self.footprints[wave] = 0
        self.kept_from = self._kept_from(wave)

    def _between(self, start: int, wave: int) -> float:
        """Footprint (sectors) of waves start..wave-1: simulated ones as counted, skipped ones at the mean."""
        import bisect

        i0 = bisect.bisect_left(self._done, start)
        n = len(self._done)
        mean = self._prefix[-1] / n if n else 0.0
        return self._prefix[-1] - self._prefix[i0] + mean * ((wave - start) - (n - i0))

    def _kept_from(self, wave: int) -> int:
        """The oldest wave whose sectors are still in L2 at the start of `wave` (== wave: a cold L2). The window only
        moves forward (footprints only add up), so a binary search from the last answer finds it."""
        if self.capacity_sectors is None:
            return 0
        lo, hi = self.kept_from, wave  # _between(hi) == 0 fits; find the smallest start that fits
        while lo < hi:
            mid = (lo + hi) // 2
            if self._between(mid, wave) <= self.capacity_sectors:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def access(self, sectors: np.ndarray) -> np.ndarray:
        """Touch distinct `sectors` in the current wave; returns the ones that miss (read from DRAM)."""
        stamp = self.wave + 1
        last = self.last[sectors]  # 1 + the wave, 0 = never
        self.footprints[self.wave] += int(np.count_nonzero(last != stamp))
        self.last[sectors] = stamp
        return sectors[last <= self.kept_from]  # kept_from <= wave: this wave's own earlier touches always hit

    def footprint_bytes(self, wave: int) -> int:
        """Distinct bytes wave `wave` touched (0 for a wave not simulated)."""
        return SECTOR * self.footprints.get(wave, 0)

"""Memory counters with the hardware's accounting: global requests and distinct 32-byte sectors per
warp-instruction, first-touch DRAM bytes vs L2 hits, shared-memory wavefronts and bank conflicts."""
from __future__ import annotations

import numpy as np

SECTOR = 32


class Hook:
    """Observer of a running launch; counters and sanitizers override what they need."""

    def on_access(self, st, ins, space, addr, lanes, nbytes, is_store):
        pass

    def on_exit(self, st, lanes):
        pass

    def on_barrier(self, st, ins, lanes, bid):
        pass

    def on_release(self, st, ready):
        pass

    def on_shfl(self, st, ins, la, src, ok):
        pass

    def on_warp_sync(self, st, ins, lanes):
        pass

    def on_async_issue(self, st, rec):
        pass

    def on_async_complete(self, st, rec, sel):
        pass

    def on_batch_end(self, st):
        pass

    def on_async_hazard(self, st, ins, lane, addr, space, message):
        """Hopper asynchronous-unit misuse (mbarrier tx underflow, early wgmma accumulator read)."""

    def on_mbar_arrive(self, st, bar, la):
        """Lanes la arrived on mbarrier bar (before the arrival may complete its phase)."""

    def on_mbar_phase(self, st, bar):
        """mbarrier bar completed phase bar.phase - 1."""

    def on_mbar_observe(self, st, bar, la, phase):
        """Lanes la observed phase `phase` of bar complete (a wait returned true or resumed)."""

    def on_wgmma_retire(self, st, line, lane, phys):
        """Strict timing: the wgmma.mma_async of PTX line `line` (warpgroup of lane) stopped reading shared bytes
        phys at the wgmma.wait_group retiring it."""

    def on_sync_groups(self, st, groups, memory_order=True):
        """The batch warps in each row of groups [g, k] synchronised (barrier.cluster, a warpgroup's wgmma wait).
        memory_order False: an execution rendezvous that orders no plain memory access between them (the wgmma wait:
        the PTX memory model gives it no release / acquire semantics)."""

    def on_bulk(self, st, ins, event, lanes, payload):
        """cp.async.bulk stores: event "read" (payload: shared words the store reads), "commit", "wait" (payload:
        groups left pending)."""


def _distinct_per_warp(w, key):
    """Number of distinct (warp, key) pairs and of distinct warps (w is sorted: lanes are in order)."""
    if w.size == 0:
        return 0, 0
    wchange = w[1:] != w[:-1]
    nw = 1 + int(np.count_nonzero(wchange))
    dk = np.diff(key)
    if np.all((dk >= 0) | wchange):  # keys ascend within every warp (coalesced): count the steps
        return nw + int(np.count_nonzero((dk != 0) & ~wchange)), nw
    k = (w.astype(np.int64) << 42) | key.astype(np.int64)
    return int(np.unique(k).size), nw


def _distinct(keys):
    """Distinct values of an int array (fast when it is already sorted)."""
    if keys.size == 0:
        return keys
    d = np.diff(keys)
    if np.all(d >= 0):
        return keys[np.concatenate(([True], d != 0))]
    return np.unique(keys)


class MemCounters(Hook):
    """Global/shared/local counters of one launch. DRAM reads go through an L2 model (ptxsim.model.l2.WaveL2:
    footprint per wave; `l2_bytes` None = unbounded, so only a sector's first touch in the launch reads DRAM)."""

    def __init__(self, gmem, l2_bytes: int | None = None):
        from ptxsim.model.l2 import WaveL2, lazy_zeros

        self.gmem = gmem
        self.t = {}
        self.per_pc = {}
        nsec = (gmem.top + SECTOR - 1) // SECTOR + 1
        self.nsec = nsec
        self.l2 = WaveL2(nsec, l2_bytes)
        self.l2.begin_wave(0)
        # NOTE: per-sector tables span the whole heap (a dsv3 GEMM's 15 GB of lazy weights: 470 M sectors), so they
        # are zero-filled lazy mappings that cost memory only where a simulated access touches them.
        self.written = lazy_zeros(nsec, np.bool_)
        self.n_written = 0  # sectors written so far (counted as they are first written; no scan of the table)
        # L1 model: 1 + the CTA whose L1-allocating load last brought each sector in (0: none). A load sector is an L1
        # hit when its own CTA allocated it before. NOTE: L1 is per SM, shared by its resident CTAs, and has a
        # capacity; both are ignored (per-CTA, unbounded), which suits the small reuse distances of tiled kernels.
        self.l1_owner = lazy_zeros(nsec, np.int64)
        # Weighted totals of a stratified sample (ptxsim.launch's sample_ranges): each count also added times the
        # weight of the wave it happened in; None when every wave weighs the same (the plain counts, scaled once)
        self.weighted: WeightedCounts | None = None

    def weigh(self) -> None:
        """Keep weighted totals from now on (before the first access): `begin_wave(wave, weight)` sets the weight."""
        self.weighted = WeightedCounts()

    def _add(self, pc, key, v):
        self.t[key] = self.t.get(key, 0) + v
        d = self.per_pc.setdefault(pc, {})
        d[key] = d.get(key, 0) + v
        if self.weighted is not None:
            self.weighted.add(pc, key, v)

    def on_access(self, st, ins, space, addr, lanes, nbytes, is_store):
        la = st.lane_array(lanes)
        if la.size == 0:
            return
        if space == "global":
            self._global(st, ins, addr, la, nbytes, is_store)
        elif space == "shared":
            self._shared(st, ins, addr, la, nbytes, is_store)
        elif space == "local":
            op = "st" if is_store else "ld"
            w = la >> 5
            self._add(ins.pc, f"local_{op}_requests", 1 + int(np.count_nonzero(w[1:] != w[:-1])))

    def _global(self, st, ins, addr, la, nbytes, is_store):
        from ptxsim.memory import GLOBAL_BASE

        op = "atom" if ins.klass == "atom" else ("cp_async" if ins.klass == "cp_async" else
                                                 ("st" if is_store else "ld"))
        off = (addr - np.uint64(GLOBAL_BASE)).astype(np.int64)
        w = la >> 5
        if nbytes <= SECTOR:  # accesses are aligned to their size (checked), so they never cross a sector
            secs, ww = off >> 5, w
        else:
            first, last = off >> 5, (off + nbytes - 1) >> 5
            span = int((last - first).max()) + 1
            secs = first[:, None] + np.arange(span)[None, :]
            keep = secs <= last[:, None]
            ww = np.broadcast_to(w[:, None], secs.shape)[keep]
            secs = secs[keep]
        nsec, nreq = _distinct_per_warp(ww, secs)
        if op == "cp_async":
            self._add(ins.pc, "ptxsim__cp_async_global_sectors.sum", nsec)
            self._add(ins.pc, "ptxsim__cp_async_global_requests.sum", nreq)
        else:
            self._add(ins.pc, f"l1tex__t_requests_pipe_lsu_mem_global_op_{op}.sum", nreq)
            self._add(ins.pc, f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum", nsec)
            self._add(ins.pc, f"ptxsim__bytes_requested_global_op_{op}.sum", nbytes * la.size)
            if op == "ld":
                self._l1(st, ins, secs, ww)
        uniq = _distinct(secs)
        if uniq.size and uniq[-1] >= self.nsec:
            uniq = uniq[uniq < self.nsec]
        # write-allocate in L2, written back once (dram__bytes_write); bulk/TMA stores (op cp_async) are writes too
        if is_store and op in ("st", "cp_async"):
            self._mark_written(uniq)
            self.l2.access(uniq)
            return
        new = self.l2.access(uniq)
        self._add(ins.pc, "dram__bytes_read.sum", SECTOR * int(new.size))
        self._add(ins.pc, "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum", nsec - int(new.size))
        if op == "atom":
            self._mark_written(uniq)

    def _mark_written(self, uniq) -> None:
        """Mark distinct sectors written back (each counts once in dram__bytes_write)."""
        new = int(uniq.size) - int(np.count_nonzero(self.written[uniq]))
        self.n_written += new
        if self.weighted is not None:
            self.weighted.written_sectors += self.weighted.weight * new
        self.written[uniq] = True

    def begin_wave(self, wave: int, weight: float = 1.0) -> None:
        """The CTAs that follow belong to wave `wave` (the L2 model ages by waves), which stands for `weight` waves
        in the weighted totals (weigh())."""
        self.l2.begin_wave(wave)
        if self.weighted is not None:
            self.weighted.weight = float(weight)

    def _l1(self, st, ins, secs, ww):
        """Count L1-hit sectors of a global load and allocate its sectors in L1, unless a hint keeps it out of L1
        (then it neither hits nor allocates)."""
        if not l1_allocates(ins.mods):
            return
        cta = st.cta_ids[st.slot[ww * 32]].astype(np.int64) + 1  # a warp's lanes are all in one CTA; 0 = none
        inside = secs < len(self.l1_owner)
        secs_in, ww_in, cta_in = secs[inside], ww[inside], cta[inside]
        hit = self.l1_owner[secs_in] == cta_in
        if hit.any():
            hits, _ = _distinct_per_warp(ww_in[hit], secs_in[hit])
            self._add(ins.pc, "ptxsim__l1_hit_sectors_global_op_ld.sum", hits)
        self.l1_owner[secs_in] = cta_in

    def _shared(self, st, ins, addr, la, nbytes, is_store):
        op = "st" if is_store else "ld"
        if ins.klass == "atom":
            op = "atom"
        whole = la is st.lane_index  # every lane of the batch: whole warps in order
        wavefronts, phases = shared_wavefronts(la, addr, nbytes, whole_warps=whole)
        conflicts = wavefronts - phases
        if op == "atom":
            self._add(ins.pc, "ptxsim__shared_atom_wavefronts.sum", wavefronts)
            return
        k_wave, k_conf, k_req = _SHARED_KEYS[op]
        self._add(ins.pc, k_wave, wavefronts)
        self._add(ins.pc, k_conf, conflicts)
        self._add(ins.pc, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", conflicts)
        if whole:
            self._add(ins.pc, k_req, la.size >> 5)
            return
        w = la >> 5
        self._add(ins.pc, k_req, 1 + int(np.count_nonzero(w[1:] != w[:-1])))

    def totals(self) -> dict:
        out = {k: 0 for k in (
            "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
            "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
            "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum",
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
            "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum", "ptxsim__l1_hit_sectors_global_op_ld.sum")}
        out.update(self.t)
        out["dram__bytes_write.sum"] = SECTOR * self.n_written
        return out

    def weighted_view(self) -> WeightedView:
        """The weighted totals (weigh()) with the same interface as this object's plain ones."""
        return WeightedView(self, self.weighted)


class WeightedCounts:
    """Counts times the weight of the wave they happened in (a stratified sample: ptxsim.launch's sample_ranges)."""

    def __init__(self):
        self.weight = 1.0
        self.t: dict = {}
        self.per_pc: dict = {}
        self.written_sectors = 0.0

    def add(self, pc, key, v) -> None:
        wv = self.weight * v
        self.t[key] = self.t.get(key, 0.0) + wv
        d = self.per_pc.setdefault(pc, {})
        d[key] = d.get(key, 0.0) + wv


class WeightedView:
    """MemCounters' totals() and per_pc, from its weighted counts (every key the plain totals have, 0 where unseen)."""

    def __init__(self, mem: MemCounters, weighted: WeightedCounts):
        self.mem, self.w = mem, weighted
        self.per_pc = weighted.per_pc

    def totals(self) -> dict:
        out = dict.fromkeys(self.mem.totals(), 0.0)
        out.update(self.w.t)
        out["dram__bytes_write.sum"] = SECTOR * self.w.written_sectors
        return out


# Load qualifiers that keep a line out of L1 (PTX ISA "Cache operators" and the L1 eviction-priority hints):
# .cg caches in L2 only, .cv fetches again every time, L1::no_allocate does not allocate. .ca (default), .nc, .cs,
# .lu and L1::evict_first/last/normal/unchanged allocate (eviction priority only matters with a capacity model).
L1_BYPASS = frozenset({".cg", ".cv", ".L1::no_allocate"})


def l1_allocates(mods) -> bool:
    """Whether a global load with these qualifiers allocates its lines in L1."""
    return not (L1_BYPASS & set(mods))


# (wavefronts, bank conflicts, requests) metric names of shared loads and stores
_SHARED_KEYS = {op: (f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum",
                     f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum",
                     f"ptxsim__shared_requests_op_{op}.sum") for op in ("ld", "st")}


class NoCounters(Hook):
    """Stand-in when counters are off: every memory metric reads 0."""

    per_pc: dict = {}

    def weigh(self) -> None:
        pass

    def begin_wave(self, wave: int, weight: float = 1.0) -> None:
        pass

    def totals(self) -> dict:
        return {}

    def weighted_view(self) -> NoCounters:
        return self


def _worst_banks(w2):
    """Sum over the rows of 4-byte word addresses of the most distinct words any one bank holds."""
    key = np.sort(((w2 & 31) << 40) | (w2 & ((1 << 40) - 1)), axis=1)
    distinct = np.concatenate((np.ones((key.shape[0], 1), bool), np.diff(key, axis=1) != 0), axis=1)
    bank = key >> 40
    rows = np.broadcast_to(np.arange(key.shape[0])[:, None], key.shape)
    cnt = np.bincount((rows * 32 + bank)[distinct], minlength=key.shape[0] * 32).reshape(-1, 32)
    return int(cnt.max(axis=1).sum())


def shared_wavefronts(la, addr, nbytes, whole_warps=False):
    """(wavefronts, phases) of one shared-memory warp-instruction: per phase (the warp for <= 4-byte accesses,
    each half-warp for 8-byte, each quarter-warp for 16-byte) the most distinct 4-byte words any one of the 32 banks
    must serve (the same word is a broadcast). whole_warps: la is known to be whole warps in order (every lane)."""
    words = max(nbytes // 4, 1)
    per_phase = 32 if nbytes <= 4 else (16 if nbytes == 8 else 8)
    wa = (addr >> np.uint64(2)).view(np.int64) if addr.dtype == np.uint64 else addr.astype(np.int64) >> 2
    full = whole_warps or (la.size % 32 == 0 and la.size and np.all(la[::32] % 32 == 0)
                           and np.all(la[31::32] - la[::32] == 31))
    if full:  # whole warps in order: work on [phases, lanes-per-phase * words]
        w2 = wa.reshape(-1, per_phase)
        phases = w2.shape[0]
        if phases == 0:
            return 0, 0
        # NOTE: a phase's wavefronts depend only on its words relative to its first one (adding the same amount to
        # every word rotates the banks), so when every phase reads the same pattern (each warp the same tile shape:
        # every shared access of the Numba and CUDA C++ GEMMs) one phase is counted for all
        rel = w2 - w2[:, :1]
        if (rel == rel[0]).all():
            one = w2[:1] if words == 1 else (w2[:1, :, None] + np.arange(words)).reshape(1, -1)
            if int(one.max()) - int(one.min()) < 32:
                return phases, phases
            key = np.unique(((one & 31) << 40) | (one & ((1 << 40) - 1)))  # _worst_banks of one row, in 3 calls
            return phases * int(np.bincount(key >> 40, minlength=32).max()), phases
        if words > 1:
            w2 = (w2[:, :, None] + np.arange(words)).reshape(phases, -1)
        # NOTE: words within a span of 32 sit in distinct banks unless equal (a broadcast), so a phase whose words
        # span < 32 (unit strides, broadcasts and mixes of both: most tiles) is one wavefront; only the other phases
        # are sorted (the sort was most of a Numba GEMM's counter time)
        spread = (w2.max(axis=1) - w2.min(axis=1)) >= 32
        if not spread.any():
            return phases, phases
        return _worst_banks(w2[spread]) + phases - int(np.count_nonzero(spread)), phases
    lane = la & 31
    phase = (la >> 5) * 4 + lane // per_phase
    if words > 1:
        wa = (wa[:, None] + np.arange(words)[None, :]).reshape(-1)
        phase = np.repeat(phase, words)
    key = np.unique((phase << 40) | ((wa & 31) << 34) | (wa & ((1 << 34) - 1)))
    upb, cnt = np.unique(key >> 34, return_counts=True)
    ph, inv = np.unique(upb >> 6, return_inverse=True)
    worst = np.zeros(ph.size, np.int64)
    np.maximum.at(worst, inv, cnt)
    return int(worst.sum()), int(ph.size)

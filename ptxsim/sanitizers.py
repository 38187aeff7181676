"""Sanitizers, like compute-sanitizer: memcheck, racecheck, initcheck, synccheck and the `.nc` hazard.

Each is a Hook on the running launch. A finding raises its SanitizerError subclass, or with sanitize_report=True
is collected on stats.sanitizer_reports (execution continues; memcheck then skips the bad lanes' accesses).
Every report names kernel, PTX line, CTA, thread and address.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ptxsim.counters import Hook
from ptxsim.errors import (
    AsynccheckError,
    InitcheckError,
    LaunchError,
    MemcheckError,
    NcHazardError,
    RacecheckError,
    SynccheckError,
)
from ptxsim.lanes import EXITED
from ptxsim.memory import GLOBAL_BASE

NAMES = ("memcheck", "racecheck", "initcheck", "synccheck", "nc", "asynccheck")
MAX_REPORTS = 100


@dataclass(frozen=True)
class SanitizerReport:
    tool: str
    kernel: str
    line: int
    instruction: str
    cta: tuple
    thread: tuple
    address: int
    space: str
    message: str
    count: int = 1  # lanes with the same finding in this warp-instruction

    def __str__(self):
        more = f" (and {self.count - 1} more thread(s) in this instruction)" if self.count > 1 else ""
        return (f"[{self.tool}] {self.message} in kernel {self.kernel} at PTX line {self.line} (`{self.instruction}`), "
                f"CTA {self.cta}, thread {self.thread}, {self.space} address {self.address:#x}{more}")


class Sanitizer(Hook):
    tool = ""
    error = MemcheckError
    needs_written = False

    def __init__(self, report_only: bool, dev):
        self.report_only = report_only
        self.dev = dev
        self.reports: list[SanitizerReport] = []

    def report(self, st, ins, lane: int, addr: int, space: str, message: str, count: int = 1):
        cta, tid = st.where(int(lane))
        r = SanitizerReport(self.tool, st.prog.name, ins.line, ins.text, cta, tid, int(addr), space, message, count)
        if not self.report_only:
            raise self.error(str(r), r)
        if len(self.reports) < MAX_REPORTS:
            self.reports.append(r)


class Memcheck(Sanitizer):
    """Out-of-bounds, misaligned and use-after-free accesses (checked in access.check; this reports them)."""

    tool, error = "memcheck", MemcheckError

    def on_fault(self, st, ins, space, addr, lanes, bad, kind, nbytes):
        idx = np.flatnonzero(bad)
        la = st.lane_array(lanes)
        i = int(idx[0])
        where = ""
        if space == "global":
            where = f" ({st.launch.gmem.describe(int(addr[i]))})"
        self.report(st, ins, la[i], addr[i], space, f"{kind} of {nbytes} bytes{where}", len(idx))


class Initcheck(Sanitizer):
    """Reads of global or shared bytes never written (host copies and stores count as writes)."""

    tool, error = "initcheck", InitcheckError
    needs_written = True

    def __init__(self, report_only, dev):
        super().__init__(report_only, dev)
        self.smem_written = None

    def _shadow(self, st):
        if self.smem_written is None or self.smem_written.shape != st.smem.shape or self._st is not st:
            self.smem_written = np.zeros(st.smem.shape, np.bool_)
            self._st = st
        return self.smem_written

    _st = None

    def on_access(self, st, ins, space, addr, lanes, nbytes, is_store):
        if space == "global":
            phys = (addr - np.uint64(GLOBAL_BASE)).astype(np.int64)
            shadow = st.launch.gmem.written
        elif space == "shared":
            phys = (st.smem_base[lanes] + addr).astype(np.int64)
            shadow = self._shadow(st)
        else:
            return
        if is_store:
            if space == "shared":
                for k in range(nbytes):
                    shadow[phys + k] = True
            if ins.klass != "atom":
                return
        ok = np.ones(phys.shape, bool)
        for k in range(nbytes):
            ok &= shadow[phys + k]
        if not ok.all():
            bad = np.flatnonzero(~ok)
            la = st.lane_array(lanes)
            self.report(st, ins, la[bad[0]], addr[bad[0]], space,
                        f"read of uninitialised {space} memory ({nbytes} bytes never written)", len(bad))

    def on_async_complete(self, st, rec, sel):
        shadow = self._shadow(st)
        idx = rec["phys"][sel][:, None] + np.arange(rec["data"].shape[1])
        shadow[idx] = True


class Racecheck(Sanitizer):
    """Shared-memory hazards between different warps of a CTA with no barrier between them (per 4-byte word): no
    bar.sync, and no mbarrier release (arrive after the access) acquired by the other warp (a wait that observed
    the phase), the PTX memory model's release / acquire pattern of producer-consumer pipelines (ptxsim/asyncrace.py
    keeps the warps' vector clocks)."""

    tool, error = "racecheck", RacecheckError

    def _init(self, st):
        if getattr(self, "_st", None) is not st:
            self._st = st
            nw = st.smem.size // 4 + 1
            self.w_warp = np.full(nw, -1, np.int64)
            self.w_epoch = np.full(nw, -1, np.int64)
            self.r_warp = np.full(nw, -1, np.int64)  # -2: read by several warps
            self.r_epoch = np.full(nw, -1, np.int64)
            self.w_clock = np.zeros(nw, np.int64)  # the writer warp's own vector-clock entry at its write
            self.epoch = np.zeros(st.nctas, np.int64)
            from ptxsim.asyncrace import AsyncOrder

            self.order = AsyncOrder(st, nw)
            self.in_flight = np.zeros(nw, np.int64)  # cp.async copies not yet waited for, per word
            self.flight_line = np.zeros(nw, np.int64)  # PTX line of the newest copy issued into each word
            self.bulk = []  # bulk stores whose source reads are not retired: [lane, words, group (-1: open)]
            self.bulk_committed = np.zeros(st.nlanes, np.int64)

    def _async_words(self, rec, sel=None):
        phys = rec["phys"] if sel is None else rec["phys"][sel]
        size = rec["data"].shape[1]
        return ((phys[:, None] + np.arange(0, size, 4)) >> 2).reshape(-1)

    def on_async_issue(self, st, rec):
        self._init(st)
        words = self._async_words(rec)
        self._ordered(st, rec, words)
        busy = self.in_flight[words] > 0
        if busy.any():  # two asynchronous writes to one word with nothing ordering them
            i = int(np.flatnonzero(busy)[0])
            lane = int(rec["lanes"][min(i * len(rec["lanes"]) // len(words), len(rec["lanes"]) - 1)])
            ins = rec["ins"]
            self.report(st, ins, lane, (int(words[i]) * 4) % st.smem_stride, "shared",
                        f"asynchronous copy into shared memory that the copy issued at PTX line "
                        f"{int(self.flight_line[words[i]])} still has in flight (no waiter observed its completion "
                        "yet): was the stage refilled before its consumers released it?", int(np.count_nonzero(busy)))
        np.add.at(self.in_flight, words, 1)
        self.flight_line[words] = rec["ins"].line

    def _ordered(self, st, rec, words: np.ndarray) -> None:
        """An async copy must be ordered after the last read of every word it overwrites (ptxsim/asyncrace.py)."""
        lanes = rec["lanes"]
        per = len(words) // max(len(lanes), 1)
        word_lane = np.repeat(lanes, per)
        for warp in np.unique(lanes >> 5).tolist():  # the issuing warp's clock orders its lanes' copies
            mine = (word_lane >> 5) == warp
            w = words[mine]
            bad = self.order.unordered(w, warp)
            if bad.size:
                lane = int(word_lane[mine][bad[0]])
                k = int(w[bad[0]])
                reader = int(self.order.rd_warp[k])
                self.report(st, rec["ins"], lane, (k * 4) % st.smem_stride, "shared",
                            f"asynchronous copy overwrites shared memory that warp {reader % self.order.wpc} of "
                            f"{'this' if reader // self.order.wpc == st.slot[lane] else 'a peer'} CTA read at PTX line "
                            f"{int(self.order.rd_line[k])} with nothing ordering the read before the copy (the reader "
                            "did not release it, by mbarrier.arrive after the read, or this thread did not observe "
                            "that release through a wait that returned true, or no bar.sync between)", int(bad.size))
                return

    def on_mbar_arrive(self, st, bar, la):
        self._init(st)
        self.order.release(bar.phys, np.unique(np.asarray(la) >> 5))

    def on_mbar_phase(self, st, bar):
        self._init(st)
        self.order.phase_complete(bar.phys, bar.phase - 1)

    def on_mbar_observe(self, st, bar, la, phase):
        self._init(st)
        self.order.acquire(bar.phys, phase, np.unique(np.asarray(la) >> 5))

    def on_sync_groups(self, st, groups, memory_order=True):
        self._init(st)
        self.order.join(groups, memory_order=memory_order)

    def on_wgmma_retire(self, st, line, lane, phys):
        self._init(st)
        self.order.retired_read(np.unique(phys >> 2), lane >> 5, line)

    def on_async_complete(self, st, rec, sel):
        self._init(st)
        words = self._async_words(rec, sel)
        np.add.at(self.in_flight, words, -1)
        if ".bulk" not in rec["ins"].mods and not rec.get("via_mbarrier"):
            # NOTE: a landed cp.async is the issuing thread's write: another warp may read it only after a barrier
            # (bulk copies, and cp.async tracked by cp.async.mbarrier.arrive, are published by their mbarrier)
            lanes = np.repeat(rec["lanes"][sel], len(words) // max(len(sel), 1))
            self.w_warp[words] = lanes >> 5
            self.w_epoch[words] = self.epoch[st.slot[lanes]]
            self.w_clock[words] = self.order.own(lanes >> 5)

    def on_bulk(self, st, ins, event, lanes, payload):
        """A bulk store reads its shared source from its issue until the cp.async.bulk.wait_group.read that retires
        its group: another warp's write of the source must be ordered before the issue (bar.sync, or an mbarrier
        release the issuing warp acquired), and another warp's write after the retire must be ordered after that wait
        (the waiting thread's barrier after it): the retire counts as the waiting warp's read, at the wait."""
        self._init(st)
        if event == "read":
            lane, words = int(lanes[0]), np.asarray(payload, np.int64)
            self._bulk_read(st, ins, lane, words, check=True)
            self.bulk.append([lane, words, -1])
            return
        mine = set(np.asarray(lanes).tolist())
        if event == "commit":
            for s in self.bulk:
                if s[2] < 0 and s[0] in mine:
                    s[2] = int(self.bulk_committed[s[0]])
            self.bulk_committed[np.asarray(lanes)] += 1
            return
        left = []
        for s in self.bulk:
            if s[0] in mine and 0 <= s[2] < self.bulk_committed[s[0]] - payload:
                self._bulk_read(st, ins, s[0], s[1], check=False)
            else:
                left.append(s)
        self.bulk = left

    def _bulk_read(self, st, ins, lane: int, words: np.ndarray, check: bool) -> None:
        warp, ep = lane >> 5, self.epoch[st.slot[lane]]
        warps = np.full(len(words), warp, np.int64)
        if check:
            hit = (self.w_epoch[words] == ep) & (self.w_warp[words] != warp) & (self.w_warp[words] >= 0)
            if hit.any():  # a write released by mbarrier.arrive and acquired by this warp's wait is ordered
                hit &= ~self.order.saw(warps, self.w_warp[words], self.w_clock[words])
            if hit.any():
                i = int(np.flatnonzero(hit)[0])
                other = int(self.w_warp[words[i]]) % (st.padded // 32)
                self.report(st, ins, lane, (int(words[i]) * 4) % st.smem_stride, "shared",
                            f"cp.async.bulk store reads shared memory warp {other} of the same CTA wrote, with no "
                            "barrier between the write and the store's issue", int(np.count_nonzero(hit)))
        self.order.read(words, warps, ins.line)
        prev = np.where(self.r_epoch[words] == ep, self.r_warp[words], -1)
        self.r_warp[words] = np.where((prev == -1) | (prev == warp), warp, -2)
        self.r_epoch[words] = ep

    def on_release(self, st, ready):
        self._init(st)
        slots = np.flatnonzero(ready.any(axis=1))
        self.epoch[slots] += 1
        if slots.size:
            wpc = self.order.wpc
            waited = np.zeros(len(self.order.vc), np.bool_)
            waited[st.sched.released >> 5] = True
            self.order.join(slots[:, None] * wpc + np.arange(wpc), waited, memory_order=False)
            # the memory-model clocks: only the warps that waited at the barrier, and only where one barrier of the
            # CTA completed (a named barrier of 128 threads orders nothing for the CTA's other warps)
            rel_warps = np.unique(st.sched.released >> 5)
            for slot in slots[ready[slots].sum(axis=1) == 1]:
                mine = rel_warps[rel_warps // wpc == slot]
                if mine.size:
                    self.order.join_memory(mine[None, :])

    def on_access(self, st, ins, space, addr, lanes, nbytes, is_store):
        if space != "shared" or ins.klass == "atom":
            return
        self._init(st)
        la = st.lane_array(lanes)
        words = max(nbytes // 4, 1)
        phys = ((st.smem_base[lanes] + addr).astype(np.int64) >> 2)
        if words > 1:
            phys = (phys[:, None] + np.arange(words)).reshape(-1)
            la = np.repeat(la, words)
            addr = np.repeat(addr, words)
        warp = la >> 5
        ep = self.epoch[st.slot[la]]
        if not is_store and ".shared::cluster" not in ins.mods:  # NOTE: a peer's words are not attributed (yet)
            self.order.read(phys, warp, ins.line)
        kind = None
        flying = self.in_flight[phys] > 0
        if flying.any():
            i = int(np.flatnonzero(flying)[0])
            issued = int(self.flight_line[phys[i]])
            self.report(st, ins, la[i], addr[i], space, f"{'write to' if is_store else 'read of'} the destination "
                        f"of the asynchronous copy issued at PTX line {issued} before a waiter observed its completion "
                        "(cp.async.wait_group / wait_all for cp.async; for cp.async.bulk{.tensor}, an mbarrier "
                        "try_wait / test_wait that returned true for the phase the copy completes)",
                        int(np.count_nonzero(flying)))
        if is_store:
            raw = (self.w_epoch[phys] == ep) & (self.w_warp[phys] != warp) & (self.w_warp[phys] >= 0)
            war = (self.r_epoch[phys] == ep) & (self.r_warp[phys] != warp) & (self.r_warp[phys] != -1)
            if raw.any():  # a write released by mbarrier.arrive and acquired by this warp's wait is ordered
                raw &= ~self.order.saw(warp, self.w_warp[phys], self.w_clock[phys])
            if war.any():  # so is a single reader's read (several readers: not tracked apart, still a hazard)
                one = war & (self.r_warp[phys] >= 0) & (self.order.rd_warp[phys] == self.r_warp[phys])
                war &= ~(one & self.order.saw(warp, np.maximum(self.r_warp[phys], 0), self.order.rd_epoch[phys]))
            # two warps writing one word in the same instruction
            order = np.lexsort((warp, phys))
            sp, sw = phys[order], warp[order]
            same = (sp[1:] == sp[:-1]) & (sw[1:] != sw[:-1])
            waw_now = np.zeros(phys.shape, bool)
            waw_now[order[1:][same]] = True
            hit = raw | war | waw_now
            if hit.any():
                i = int(np.flatnonzero(hit)[0])
                kind = ("write-after-write" if raw[i] or waw_now[i] else "write-after-read")
            self.w_warp[phys] = warp
            self.w_epoch[phys] = ep
            self.w_clock[phys] = self.order.own(warp)
        else:
            hit = (self.w_epoch[phys] == ep) & (self.w_warp[phys] != warp) & (self.w_warp[phys] >= 0)
            if hit.any():  # a write released by mbarrier.arrive and acquired by this warp's wait is ordered
                hit &= ~self.order.saw(warp, self.w_warp[phys], self.w_clock[phys])
            if hit.any():
                kind = "read-after-write"
            prev = np.where(self.r_epoch[phys] == ep, self.r_warp[phys], -1)
            self.r_warp[phys] = np.where((prev == -1) | (prev == warp), warp, -2)
            self.r_epoch[phys] = ep
        if kind is not None:
            i = int(np.flatnonzero(hit)[0])
            j = int(phys[i])
            other = int(self.w_warp[j] if kind != "write-after-read" else self.r_warp[j])
            who = f"warp {other % (st.padded // 32)}" if other >= 0 else "several warps"
            self.report(st, ins, la[i], addr[i], space,
                        f"shared-memory {kind} hazard with {who} of the same CTA and no barrier between",
                        int(np.count_nonzero(hit)))


class Synccheck(Sanitizer):
    """bar.sync / barrier.sync.aligned reached by only part of a warp (a barrier in divergent code)."""

    tool, error = "synccheck", SynccheckError

    def on_barrier(self, st, ins, lanes, bid):
        if ins.op == "barrier" and ".aligned" not in ins.mods:
            return  # barrier.sync without .aligned may be reached divergently on sm_70+
        la = st.lane_array(lanes)
        w = la >> 5
        present = np.bincount(w, minlength=st.nlanes // 32)
        alive = np.bincount(np.flatnonzero(st.pc < EXITED) >> 5, minlength=st.nlanes // 32)
        ws = np.unique(w)
        bad = ws[present[ws] < alive[ws]]  # warps with running lanes elsewhere
        if bad.size:
            x = int(bad[0])
            lane = int(la[w == x][0])
            self.report(st, ins, lane, 0, "barrier", f"barrier reached by {int(present[x])} of the "
                        f"{int(alive[x])} running threads of warp {int(x % (st.padded // 32))} (divergent code)",
                        len(bad))


    def on_partial_warpgroup(self, st, ins, lane, message, count):
        self.report(st, ins, lane, 0, "warpgroup", message, count)

    def on_shfl(self, st, ins, la, src, ok):
        act = np.zeros(st.nlanes, np.bool_)
        act[la] = True
        bad = ok & ~act[src]
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            self.report(st, ins, la[i], 0, "register", f"shfl.sync reads lane {int(src[i]) & 31}, which is not "
                        "active in this warp-instruction (undefined value)", int(bad.sum()))


class NcHazard(Sanitizer):
    """A write in the same launch to an address read through ld.global.nc (the read-only promise broken)."""

    tool, error = "nc", NcHazardError

    def __init__(self, report_only, dev):
        super().__init__(report_only, dev)
        n = len(dev.gmem.data)
        self.nc_read = np.zeros(n, np.bool_)
        self.written = np.zeros(n, np.bool_)

    def on_access(self, st, ins, space, addr, lanes, nbytes, is_store):
        if space != "global":
            return
        phys = (addr - np.uint64(GLOBAL_BASE)).astype(np.int64)
        is_nc = not is_store and bool(ins.aux.nc)
        if is_store or ins.klass == "atom":
            hit = np.zeros(phys.shape, bool)
            for k in range(nbytes):
                hit |= self.nc_read[phys + k]
                self.written[phys + k] = True
            if hit.any():
                i = int(np.flatnonzero(hit)[0])
                self.report(st, ins, st.lane_array(lanes)[i], addr[i], space,
                            "write to memory this launch also reads through ld.global.nc", int(hit.sum()))
        if is_nc:
            hit = np.zeros(phys.shape, bool)
            for k in range(nbytes):
                hit |= self.written[phys + k]
                self.nc_read[phys + k] = True
            if hit.any():
                i = int(np.flatnonzero(hit)[0])
                self.report(st, ins, st.lane_array(lanes)[i], addr[i], space,
                            "ld.global.nc of memory written earlier in this launch", int(hit.sum()))


class Asynccheck(Sanitizer):
    """Hopper asynchronous units: mbarrier tx-count underflow, wgmma accumulators read before wgmma.wait_group."""

    tool, error = "asynccheck", AsynccheckError

    def __init__(self, report_only, dev):
        super().__init__(report_only, dev)
        self._st = None
        self.stores = []

    def on_async_hazard(self, st, ins, lane, addr, space, message):
        self.report(st, ins, lane, addr, space, message)

    def on_async_complete(self, st, rec, sel):
        """A landed copy: bulk copies write through the async proxy, cp.async through the generic one (its issuing
        thread's write, for the fence.proxy.async rule)."""
        if st.rules is None:
            return
        size = rec["data"].shape[1]
        words = ((rec["phys"][sel][:, None] + np.arange(0, size, 4)) >> 2)
        if ".bulk" in rec["ins"].mods:
            st.rules.async_write(words.reshape(-1))
        else:
            lanes = np.repeat(rec["lanes"][sel], words.shape[1])
            st.rules.generic_write(st, rec["ins"], words.reshape(-1), lanes, rec["ins"].line)

    def on_release(self, st, ready):
        if st.rules is not None:
            st.rules.cta_barrier(st, ready.any(axis=1))

    def _init(self, st):
        if self._st is not st:  # a new batch of CTAs: shared memory starts afresh
            self._st = st
            self.reading = np.zeros(st.smem.size // 4 + 1, np.int64)  # bulk stores reading each shared word
            self.stores = []  # [lane, words, group (-1: not committed), line]
            self.committed = np.zeros(st.nlanes, np.int64)

    def on_bulk(self, st, ins, event, lanes, payload):
        self._init(st)
        if event == "read":
            if st.rules is not None:
                st.rules.async_read(st, ins, payload, np.asarray(lanes), "cp.async.bulk store (its source)")
            self.stores.append([int(lanes[0]), payload, -1, ins.line])
            np.add.at(self.reading, payload, 1)
            return
        mine = set(np.asarray(lanes).tolist())
        if event == "commit":
            for s in self.stores:
                if s[2] < 0 and s[0] in mine:
                    s[2] = int(self.committed[s[0]])
            self.committed[lanes] += 1
            return
        left = []
        for s in self.stores:
            if s[0] in mine and 0 <= s[2] < self.committed[s[0]] - payload:
                np.add.at(self.reading, s[1], -1)
            else:
                left.append(s)
        self.stores = left

    def on_access(self, st, ins, space, addr, lanes, nbytes, is_store):
        if space != "shared" or not (is_store or ins.klass == "atom") or ins.op == "wgmma":
            return
        self._init(st)
        words = (st.smem_base[lanes] + addr).astype(np.int64) >> 2
        if nbytes > 4:
            words = words[:, None] + np.arange(nbytes // 4)
        if st.rules is not None and ".shared::cluster" not in ins.mods:  # a peer's words are not attributed (yet)
            la = st.lane_array(lanes)
            st.rules.generic_write(st, ins, words.reshape(-1), np.repeat(la, words.size // max(len(la), 1)), ins.line)
        if not self.stores:
            return
        hit = (self.reading[words] > 0).reshape(len(addr), -1).any(axis=1)
        if hit.any():
            i = int(np.flatnonzero(hit)[0])
            self.report(st, ins, st.lane_array(lanes)[i], addr[i], space,
                        "write to shared memory a cp.async.bulk store still reads (before "
                        "cp.async.bulk.wait_group.read retired its group)", int(np.count_nonzero(hit)))


_TOOLS = {"memcheck": Memcheck, "racecheck": Racecheck, "initcheck": Initcheck, "synccheck": Synccheck,
          "nc": NcHazard, "asynccheck": Asynccheck}


def make_sanitizers(sanitize, report: bool, dev) -> list:
    """Sanitizer hooks for `sanitize` (None, "all", a name, or a set of names)."""
    if sanitize is None or sanitize is False or (not isinstance(sanitize, str) and len(sanitize) == 0):
        return []
    names = set(NAMES) if sanitize == "all" else ({sanitize} if isinstance(sanitize, str) else set(sanitize))
    bad = names - set(NAMES)
    if bad:
        raise LaunchError(f"unknown sanitizer(s) {sorted(bad)}; choose from {', '.join(NAMES)} or 'all'")
    return [_TOOLS[n](report, dev) for n in NAMES if n in names]

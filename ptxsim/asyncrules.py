"""asynccheck's ordering rules for Hopper's asynchronous units, per batch of CTAs (made when asynccheck is on).

Each rule fires on what the PTX ISA makes undefined, and stays quiet on the legal patterns CUTLASS and DeepGEMM use:
- wgmma.fence (PTX ISA, "Async Proxy" / wgmma register accesses): a thread's wgmma.mma_async with no wgmma.fence
  before it at all, or one whose accumulator registers another instruction read or wrote, or whose A-fragment
  registers another instruction wrote, after the thread's last wgmma.fence. Chained mma_async on the same
  accumulators need no fence (the ISA orders those), so wgmma's own accesses do not count.
- fence.proxy.async: shared memory written through the generic proxy (st, atom, a landed cp.async) and then read by
  the async proxy (a wgmma descriptor operand, a bulk / tensor store's source) with no fence.proxy.async between, by
  the writing thread after its write or by an issuing thread after the write. A bulk copy landing in a word makes it
  async-proxy data again. (The other direction, async writes read by threads, is ordered by the mbarrier completion.)
- mbarrier initialisation: a barrier used by a thread other than the one that initialised it before the init is
  visible: in the CTA after a bar.sync / barrier.cluster completes; in a peer CTA (remote arrive, multicast
  complete_tx) after a barrier.cluster completes that the initialising thread entered with release semantics
  (barrier.cluster.arrive without .relaxed) or after fence.mbarrier_init (or a cluster-scope fence.acq_rel / sc).
- Clusters: a CTA exiting while an access of a peer into its shared memory (remote arrive, multicast copy, st / ld /
  atom .shared::cluster) has not been observed complete: no barrier.cluster completed after it, and no wait of the
  CTA observed a phase of the barrier it signalled that completed after it (DeepGEMM's extra round of empty waits).
- tensormap proxy (PTX ISA, tensormap.replace / "Proxies" / fence.proxy.tensormap::generic): a tensor map in global
  memory changed on the device (tensormap.replace .global, or any change after a release) and then used by a copy
  (cp.async.bulk.tensor) with no tensormap-proxy release after the change (fence.proxy.tensormap::generic.release by
  the writing thread, or the change made by tensormap.cp_fenceproxy, whose copy is the release), or with no
  fence.proxy.tensormap::generic.acquire of that map by the copying thread after the release. A map no kernel
  thread released is taken as the host's (its bytes at first use are its release: a later change is caught, a plain
  st.global before the first use is not).
Reports go to the sanitizers' on_async_hazard (asynccheck), once per rule and PTX line.
"""
from __future__ import annotations

import numpy as np

from ptxsim.program import NOT, PAIR, REG, VEC

# instructions whose first operand is not a destination register
_NO_DEST = frozenset(("st", "red", "bar", "barrier", "bra", "call", "ret", "exit", "cp", "fence", "membar",
                      "prefetch", "prefetchu", "stmatrix", "wgmma", "setmaxnreg", "griddepcontrol", "elect"))


_RULES = {"first": "wgmma.fence", "touch": "wgmma.fence", "proxy": "fence.proxy.async",
          "init-remote": "mbarrier.init visibility", "init-local": "mbarrier.init visibility",
          "init-async": "mbarrier.init visibility", "exit": "cluster exit", "tmap-release": "tensormap proxy",
          "tmap-changed": "tensormap proxy", "tmap-acquire": "tensormap proxy"}


def _regs(op):
    if op.kind == REG:
        yield op.idx
    elif op.kind in (VEC, PAIR, NOT):
        for o in op.items:
            yield from _regs(o)


class AsyncRules:
    def __init__(self, st):
        self.st = st
        acc, afrag = set(), set()
        for ins in st.prog.instrs:
            if ins.op == "wgmma" and ".mma_async" in ins.mods and len(ins.ops) > 1:
                acc.update(_regs(ins.ops[0]))
                if ins.ops[1].kind == VEC:
                    afrag.update(_regs(ins.ops[1]))
        self.acc, self.afrag = frozenset(acc), frozenset(afrag)
        n = st.nlanes
        self.wg_fence = np.full(n, -1, np.int64)  # st.clock of each lane's last wgmma.fence
        self.touch = {r: np.full(n, -1, np.int64) for r in acc | afrag}  # clock of the last access per lane
        self.touch_line = {}
        self.proxy_fence = np.full(n, -1, np.int64)  # clock of each lane's last fence.proxy.async
        self.gw_clock = None  # per shared word: clock of the last generic-proxy write (-1: none / async data)
        self.gw_lane = None
        self.gw_line = None
        self.pending = {}  # CTA slot -> [(clock, barrier byte or -1, lane, line)] of peers' accesses into it
        self.tm_unreleased = {}  # global map address -> (lane, line) of a tensormap.replace not yet released
        self.tm_released = {}  # global map address -> (release clock, its 128 bytes then, line); clock -1: the host's
        self.tm_acquired = {}  # (lane, global map address) -> clock of the lane's last acquire fence of it
        self.said = set()

    def _say(self, ins, lane: int, addr: int, space: str, key, message: str) -> None:
        """Report once per (rule, PTX instruction or CTA), the message led by the rule's name."""
        if key in self.said:
            return
        self.said.add(key)
        st = self.st
        for h in st.hooks:
            h.on_async_hazard(st, ins, lane, addr, space, f"{_RULES[key[0]]} rule: {message}")

    # -- wgmma.fence ------------------------------------------------------------------------------------------------
    def on_instruction(self, st, ins, lanes) -> None:
        """Every executed non-wgmma instruction: pending-accumulator uses, and accesses to wgmma registers."""
        if st.reg_watch:
            from ptxsim.ops.wgmma import check_accumulator_use

            check_accumulator_use(st, ins, lanes)
        touched = ins.aux.wg_touch
        if touched is None:
            named = set()
            for op in ins.ops:
                named.update(_regs(op))
            if ins.guard is not None:
                named.add(ins.guard[0])
            written = set(_regs(ins.ops[0])) if ins.ops and ins.op not in _NO_DEST else set()
            touched = ins.aux.wg_touch = tuple(sorted((named & self.acc) | (written & self.afrag)))
        if touched:
            la = st.lane_array(lanes)
            for r in touched:
                self.touch[r][la] = st.clock
                self.touch_line[r] = ins.line

    def wgmma_fence(self, st, lanes) -> None:
        self.wg_fence[st.lane_array(lanes)] = st.clock

    def wgmma_issue(self, st, ins, la2) -> None:
        flat = la2.reshape(-1)
        fenced = self.wg_fence[flat]
        if (fenced < 0).any():
            i = int(np.flatnonzero(fenced < 0)[0])
            self._say(ins, int(flat[i]), 0, "register", ("first", ins.pc),
                      "wgmma.mma_async with no wgmma.fence before it in this thread (the PTX ISA requires "
                      "wgmma.fence before a warpgroup's first wgmma.mma_async)")
            return
        regs = ins.aux.wg_regs
        if regs is None:
            regs = set(_regs(ins.ops[0]))
            if ins.ops[1].kind == VEC:
                regs.update(_regs(ins.ops[1]))
            regs = ins.aux.wg_regs = tuple(sorted(regs & self.touch.keys()))
        for r in regs:
            bad = self.touch[r][flat] > fenced
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                name = st.prog.reg_names[r]
                what = "accumulator" if r in self.acc else "A-fragment"
                self._say(ins, int(flat[i]), 0, "register", ("touch", ins.pc),
                          f"{what} register {name} was accessed at PTX line {self.touch_line.get(r, 0)} after this "
                          "thread's last wgmma.fence, and this wgmma.mma_async uses it (the PTX ISA requires "
                          "wgmma.fence between a register access and the wgmma.mma_async that accesses the same "
                          "register)")
                return

    # -- fence.proxy.async ------------------------------------------------------------------------------------------
    def fence(self, st, ins, lanes) -> None:
        """fence / membar: fence.proxy.async orders this thread's generic and async-proxy accesses;
        fence.mbarrier_init (or a cluster-scope acq_rel / sc fence) releases its mbarrier inits to the cluster."""
        mods = ins.mods
        proxy = ".proxy.async" in mods or (".proxy" in mods and any(m.startswith(".async") for m in ins.modlist))
        # fence.proxy.async.global orders global memory only; no state space (or .shared::*) covers shared memory
        if proxy and ".global" not in mods:
            self.proxy_fence[st.lane_array(lanes)] = st.clock
            self.async_inits(st, st.lane_array(lanes))
        if ".mbarrier_init" in mods or (".cluster" in mods and not proxy):
            self.release_inits(st, st.lane_array(lanes))
            if ".mbarrier_init" in mods:
                self.async_inits(st, st.lane_array(lanes))

    def _shadow(self):
        if self.gw_clock is None:
            nw = self.st.smem.size // 4 + 1
            self.gw_clock = np.full(nw, -1, np.int64)
            self.gw_lane = np.zeros(nw, np.int64)
            self.gw_line = np.zeros(nw, np.int32)

    def generic_write(self, st, ins, words: np.ndarray, lanes: np.ndarray, line: int) -> None:
        self._shadow()
        self.gw_clock[words] = st.clock
        self.gw_lane[words] = lanes
        self.gw_line[words] = line

    def async_write(self, words: np.ndarray) -> None:
        if self.gw_clock is not None:
            self.gw_clock[words] = -1

    def async_read(self, st, ins, words: np.ndarray, issuers: np.ndarray, what: str) -> None:
        if self.gw_clock is None or not len(words):
            return
        t = self.gw_clock[words]
        dirty = (t >= 0) & (t > self.proxy_fence[self.gw_lane[words]]) & (t > int(self.proxy_fence[issuers].max()))
        if dirty.any():
            i = int(np.flatnonzero(dirty)[0])
            w = int(words[i])
            off = (w * 4) % st.smem_stride
            self._say(ins, int(issuers[0]), off, "shared", ("proxy", ins.pc),
                      f"{what} reads shared memory written through the generic proxy at PTX line "
                      f"{int(self.gw_line[w])} with no fence.proxy.async between (by the writing thread after its "
                      f"write, or by the issuing thread) ({int(np.count_nonzero(dirty))} word(s), the first at shared "
                      f"address {off:#x})")

    # -- mbarrier initialisation ------------------------------------------------------------------------------------
    def mbar_use(self, st, ins, bar, la: np.ndarray) -> None:
        if bar.visible_cluster:
            return
        slot = st.slot[la]
        remote = slot != bar.cta
        local_bad = ~remote & (la != bar.init_lane) & (not bar.visible_cta)
        if remote.any():
            i = int(np.flatnonzero(remote)[0])
            self._say(ins, int(la[i]), bar.offset, "shared", ("init-remote", ins.pc),
                      f"a peer CTA uses the mbarrier at shared address {bar.offset:#x} of CTA slot rank "
                      f"{self._rank(bar.cta)} before its mbarrier.init (PTX line {bar.line}) is visible to the "
                      "cluster: expected fence.mbarrier_init.release.cluster (or barrier.cluster.arrive with release "
                      "semantics) after the init, then a barrier.cluster that completes before the use")
        elif local_bad.any():
            i = int(np.flatnonzero(local_bad)[0])
            self._say(ins, int(la[i]), bar.offset, "shared", ("init-local", ins.pc),
                      f"the mbarrier at shared address {bar.offset:#x} is used by a thread other than the one that "
                      f"initialised it (PTX line {bar.line}) with no bar.sync / barrier.cluster between the init "
                      "and the use")

    def _rank(self, slot: int) -> int:
        cl = self.st.cluster
        return 0 if cl is None else int(cl.rank[slot])

    def async_inits(self, st, la: np.ndarray) -> None:
        """fence.proxy.async / fence.mbarrier_init by the initialising thread: its inits are visible to the async
        proxy (the bulk copies that complete_tx on them)."""
        if st.mbars is None:
            return
        lanes = set(la.tolist())
        for bar in st.mbars.bars.values():
            if bar.init_lane in lanes:
                bar.async_visible = True

    def mbar_async_use(self, st, ins, bar, lane: int) -> None:
        """A bulk copy (the async proxy) signals bar: its init must have been fenced for the async proxy."""
        if bar.async_visible:
            return
        self._say(ins, lane, bar.offset, "shared", ("init-async", ins.pc),
                  f"a bulk copy signals the mbarrier at shared address {bar.offset:#x} (initialised at PTX line "
                  f"{bar.line}) but its initialising thread made the init visible to the async proxy "
                  "neither with fence.proxy.async (shared) nor with fence.mbarrier_init after it")

    def release_inits(self, st, la: np.ndarray) -> None:
        if st.mbars is None:
            return
        lanes = set(la.tolist())
        for bar in st.mbars.bars.values():
            if bar.init_lane in lanes:
                bar.released = True

    def cta_barrier(self, st, ready: np.ndarray) -> None:
        """A bar.sync released in the CTAs where `ready` (per slot) is true."""
        if st.mbars is None:
            return
        for bar in st.mbars.bars.values():
            if ready[bar.cta]:
                bar.visible_cta = True

    def cluster_arrive(self, st, ins, la: np.ndarray) -> None:
        if ".relaxed" not in ins.mods:
            self.release_inits(st, la)

    def cluster_complete(self, st, slots: np.ndarray) -> None:
        """barrier.cluster completed for the CTAs in `slots`: inits released before it become visible."""
        done = np.zeros(st.nctas, bool)
        done[slots] = True
        if st.mbars is not None:
            for bar in st.mbars.bars.values():
                if done[bar.cta]:
                    bar.visible_cta = True
                    bar.visible_cluster = bar.visible_cluster or bar.released

    def cluster_waited(self, st, slots: np.ndarray, clock: int) -> None:
        """Threads of these CTAs passed barrier.cluster.wait on a phase completed at `clock`: the peers' accesses into
        them before it are complete (an arrive without the wait promises nothing)."""
        for s in np.unique(slots).tolist():
            entries = self.pending.get(s)
            if entries:
                self.pending[s] = [e for e in entries if e[0] > clock]

    # -- clusters ---------------------------------------------------------------------------------------------------
    def remote_access(self, st, ins, la: np.ndarray, target: np.ndarray, bar: int = -1) -> None:
        """Accesses of lanes la into the shared memory of CTA slots `target` (only those in another CTA count)."""
        remote = target != st.slot[la]
        if not remote.any():
            return
        tr, lr = target[remote], la[remote]
        uniq, first = np.unique(tr, return_index=True)
        for t, i in zip(uniq.tolist(), first.tolist(), strict=True):
            self.pending.setdefault(t, []).append((st.clock, bar, int(lr[i]), ins.line))

    def observed(self, st, slot: int, bar, want: int) -> None:
        """A thread of CTA `slot` observed phase `want` of `bar` complete: the peers' accesses into the CTA that
        this phase covers (on this barrier, or plain accesses before the phase completed) are complete."""
        entries = self.pending.get(slot)
        if not entries or want < 0 or want >= len(bar.complete_clock):
            return
        tc = bar.complete_clock[want]
        self.pending[slot] = [e for e in entries if not (e[0] <= tc and e[1] in (-1, bar.phys))]

    def cta_exit(self, st, ins, slots: np.ndarray, la: np.ndarray) -> None:
        for s in slots:
            entries = self.pending.pop(int(s), None)
            if not entries:
                continue
            clock, bar, src, line = entries[0]
            cta, tid = st.where(src)
            lane = int(la[st.slot[la] == s][0]) if (st.slot[la] == s).any() else src
            what = "arrive / complete_tx on its mbarrier" if bar >= 0 else "access to its shared memory"
            self._say(ins, lane, 0 if bar < 0 else bar % st.smem_stride, "shared", ("exit", int(s)),
                      f"CTA exits while a peer's {what} (PTX line {line}, CTA {cta} thread {tid}) is not known to "
                      f"be complete: expected a barrier.cluster after it before exit, or a wait on the barrier that "
                      f"observes a phase it completed ({len(entries)} such access(es))")

    # -- tensormap proxy --------------------------------------------------------------------------------------------
    def tensormap_written(self, st, ins, la: np.ndarray, space: str, addr: np.ndarray) -> None:
        """tensormap.replace: a map in global memory changed through the generic proxy (one in shared memory reaches
        the tensormap proxy only through tensormap.cp_fenceproxy)."""
        if space != "global":
            return
        for lane, a in zip(la.tolist(), addr.tolist(), strict=True):
            self.tm_unreleased[a] = (lane, ins.line)

    def tensormap_released(self, st, ins, la: np.ndarray, addr: np.ndarray, copied: bool) -> None:
        """The maps at addr (global) are released to the tensormap proxy as they are now."""
        for a in set(addr.tolist()):
            self.tm_unreleased.pop(a, None)
            self.tm_released[a] = (st.clock, bytes(st.launch.gmem.read_bytes(a, 128)), ins.line)

    def tensormap_fence(self, st, ins, la: np.ndarray) -> None:
        if ins.aux.mode == ".release":  # this thread's earlier replaces of global maps
            mine = set(la.tolist())
            done = [a for a, (lane, _) in self.tm_unreleased.items() if lane in mine]
            if done:
                self.tensormap_released(st, ins, la, np.array(done, np.uint64), copied=False)
            return
        addr = st.address(ins.ops[0], la)
        for lane, a in zip(la.tolist(), addr.tolist(), strict=True):
            self.tm_acquired[(lane, a)] = st.clock

    def tensormap_use(self, st, ins, lane: int, addr: int, raw) -> None:
        """A copy issued by `lane` reads the map at global address addr (bytes raw)."""
        raw = bytes(raw)
        pend = self.tm_unreleased.get(addr)
        if pend is not None:
            self._say(ins, lane, addr, "global", ("tmap-release", ins.pc),
                      f"the tensor map at global address {addr:#x} was changed by tensormap.replace at PTX line "
                      f"{pend[1]} and this copy uses it with no fence.proxy.tensormap::generic.release by the writing "
                      "thread between (the PTX ISA orders a generic-proxy write of a tensor map before the "
                      "tensormap proxy's read only through a release and an acquire)")
            return
        rel = self.tm_released.get(addr)
        if rel is None:  # the host's map: its bytes now are its release
            self.tm_released[addr] = (-1, raw, 0)
            return
        clock, snap, line = rel
        if raw != snap:
            self._say(ins, lane, addr, "global", ("tmap-changed", ins.pc),
                      f"the tensor map at global address {addr:#x} changed after its last release to the tensormap "
                      f"proxy{f' (PTX line {line})' if line else ' (the bytes the kernel started with)'} with no "
                      "release since (expected tensormap.cp_fenceproxy, or fence.proxy.tensormap::generic.release "
                      "after the write)")
            return
        if clock >= 0 and self.tm_acquired.get((lane, addr), -1) < clock:
            self._say(ins, lane, addr, "global", ("tmap-acquire", ins.pc),
                      f"the tensor map at global address {addr:#x} was released to the tensormap proxy at PTX line "
                      f"{line} and this copy uses it with no fence.proxy.tensormap::generic.acquire of it by the "
                      "copying thread after that release (expected fence.proxy.tensormap::generic.acquire.<scope> "
                      "[map], 128 before the copy)")

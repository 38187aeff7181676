"""Thread-block clusters: the cluster shape of a launch, the CTA order that keeps each cluster in one batch, the
%cluster_* special registers, shared::cluster addresses of peer CTAs, and barrier.cluster.

A .shared::cluster address is (rank + 1) << 24 | offset for CTA `rank` of the cluster (what `mapa` returns); an
address without those bits is the CTA's own (a .shared::cta address is a valid .shared::cluster address). Generic
addresses add the shared window. Shared memory per CTA is below 2^24 bytes, so the two never mix.
"""
from __future__ import annotations

import numpy as np

from ptxsim.errors import LaunchError, MemoryFault
from ptxsim.lanes import BLOCKED

RANK_SHIFT = 24
OFFSET_MASK = (1 << RANK_SHIFT) - 1
MAX_CLUSTER = 16  # CTAs per cluster (8 portable, 16 with the non-portable attribute)
CLUSTER_WAIT = -3  # Scheduler.wait_id of a thread blocked in barrier.cluster.wait


def cluster_shape(kernel, grid: tuple, cluster) -> tuple | None:
    """The launch's cluster shape: the `cluster` argument, else the kernel's .reqnctapercluster, else None."""
    explicit = cluster is not None
    if cluster is None:
        fn = next((f for f in kernel.module.ast.functions if f.name == kernel.name), None)
        d = fn.directives if fn is not None else {}
        if "reqnctapercluster" in d:
            cluster = tuple(int(v) for v in d["reqnctapercluster"])
        elif "explicitcluster" in d:
            raise LaunchError(f"kernel {kernel.name} is .explicitcluster: launch it with cluster=(x, y, z)")
        else:
            return None
    c = tuple(int(v) for v in (cluster if isinstance(cluster, (tuple, list)) else (cluster,)))
    c = c + (1,) * (3 - len(c))
    size = c[0] * c[1] * c[2]
    if len(c) != 3 or min(c) < 1 or size > MAX_CLUSTER:
        raise LaunchError(f"cluster {cluster!r}: expected 1 to 3 positive dimensions of at most {MAX_CLUSTER} CTAs "
                          "in all")
    if any(g % k for g, k in zip(grid, c, strict=True)):
        raise LaunchError(f"grid {grid} is not a whole number of clusters {c} ("
                          f"{'explicit' if explicit else '.reqnctapercluster'}); each grid dimension must be a "
                          "multiple of the cluster's")
    return c


def cta_order(grid: tuple, c: tuple) -> np.ndarray:
    """Linear CTA ids with the CTAs of each cluster next to each other, in cluster-rank order."""
    gx, gy, gz = grid
    cx, cy, cz = c
    ids = np.arange(gx * gy * gz, dtype=np.int64)
    x, y, z = ids % gx, (ids // gx) % gy, ids // (gx * gy)
    cid = (x // cx) + (gx // cx) * ((y // cy) + (gy // cy) * (z // cz))
    rank = (x % cx) + cx * ((y % cy) + cy * (z % cz))
    return ids[np.lexsort((rank, cid))]


class Clusters:
    """Cluster geometry of one batch (whole clusters only) and its barrier.cluster state."""

    def __init__(self, st, c: tuple):
        self.c = c
        self.size = c[0] * c[1] * c[2]
        gx, gy, gz = st.launch.grid
        cid = st.cta_ids
        x, y, z = cid % gx, (cid // gx) % gy, cid // (gx * gy)
        self.rank = (x % c[0]) + c[0] * ((y % c[1]) + c[1] * (z % c[2]))  # per batch slot
        self.first_slot = np.arange(st.nctas) - self.rank  # slot of rank 0 of each slot's cluster
        if np.any(self.first_slot < 0) or st.nctas % self.size:
            raise LaunchError(f"internal: a batch of {st.nctas} CTAs splits a cluster of {self.size}")
        self.cluster_of_slot = self.first_slot // self.size
        ncl = st.nctas // self.size
        self.phase = np.zeros(ncl, np.int64)
        self.done_clock: list[list[int]] = [[] for _ in range(ncl)]  # st.clock at which each phase completed
        self.arrived = np.zeros(ncl, np.int64)
        self.arrive_phase = np.full(st.nlanes, -1, np.int64)  # barrier.cluster phase each thread arrived in
        self.exited = np.zeros(st.nctas, np.bool_)  # CTAs whose threads have all exited
        sl = st.slot
        per = {"x": (x, c[0], gx), "y": (y, c[1], gy), "z": (z, c[2], gz)}
        st.sregs["%cluster_ctarank"] = self.rank[sl].astype(np.uint32)
        for a, (coord, k, g) in per.items():
            st.sregs[f"%cluster_ctaid.{a}"] = (coord % k)[sl].astype(np.uint32)
            st.sregs[f"%clusterid.{a}"] = (coord // k)[sl].astype(np.uint32)
            st.uniform[f"%cluster_nctaid.{a}"] = k
            st.uniform[f"%nclusterid.{a}"] = g // k
        st.uniform["%cluster_nctarank"] = self.size
        st.uniform["%is_explicit_cluster"] = 1

    # -- shared::cluster addresses ----------------------------------------------------------------------------------
    def target_slot(self, st, addr: np.ndarray, lanes, ins=None) -> np.ndarray:
        """Batch slot of the CTA each shared::cluster address names; an exited peer's is a MemoryFault."""
        own = st.slot[lanes]
        r = (addr >> np.uint64(RANK_SHIFT)).astype(np.int64)
        if not r.any():
            return own
        bad = r > self.size
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise MemoryFault(f"shared::cluster address {int(addr[i]):#x} names CTA rank {int(r[i]) - 1}; the "
                              f"cluster has {self.size} CTAs", space="shared", addr=int(addr[i]))
        slot = np.where(r > 0, self.first_slot[own] + r - 1, own)
        self.check_alive(st, ins, slot, st.lane_array(lanes), addr)
        return slot

    def check_alive(self, st, ins, slot: np.ndarray, la: np.ndarray, addr) -> None:
        """An access into the shared memory (or mbarriers) of a CTA that has exited is a MemoryFault."""
        dead = self.exited[slot]
        if not dead.any():
            return
        i = int(np.flatnonzero(dead)[0])
        cta, tid = st.where(int(la[i]))
        where = f" at PTX line {ins.line} (`{ins.text}`)" if ins is not None else ""
        a = int(np.asarray(addr).reshape(-1)[i if np.size(addr) > 1 else 0])
        raise MemoryFault(f"access{where} in kernel {st.prog.name}, CTA {cta} thread {tid}, to the shared memory of "
                          f"cluster CTA rank {int(self.rank[slot[i]])}, which has exited (shared::cluster address "
                          f"{a:#x}); a CTA must not exit while its peers may still access its shared memory "
                          "(barrier.cluster before exit)", space="shared", addr=a, cta=cta, thread=tid,
                          line=0 if ins is None else ins.line, kernel=st.prog.name)

    def mark_exited(self, st, ins, la: np.ndarray) -> None:
        newly = np.flatnonzero((st.sched.live == 0) & ~self.exited)
        if newly.size:
            self.exited[newly] = True
            if st.rules is not None:
                st.rules.cta_exit(st, ins, newly, la)

    def shared_region(self, st, addr, lanes, ins=None):
        off = addr & np.uint64(OFFSET_MASK)
        slot = self.target_slot(st, addr, lanes, ins)
        if st.rules is not None and ins is not None:
            st.rules.remote_access(st, ins, st.lane_array(lanes), slot)
        return ("shared", st.smem, (slot * st.smem_stride).astype(np.uint64) + off, lanes, None, off)

    # -- barrier.cluster ------------------------------------------------------------------------------------------
    def arrive(self, st, la: np.ndarray, ins=None) -> None:
        if st.rules is not None and ins is not None:
            st.rules.cluster_arrive(st, ins, la)
        cl = self.cluster_of_slot[st.slot[la]]
        self.arrive_phase[la] = self.phase[cl]
        self.arrived += np.bincount(cl, minlength=len(self.arrived))
        self.complete(st)

    def wait(self, st, la: np.ndarray) -> None:
        cl = self.cluster_of_slot[st.slot[la]]
        passed = self.arrive_phase[la] < self.phase[cl]
        if st.rules is not None and passed.any():
            for c in np.unique(cl[passed]).tolist():
                st.rules.cluster_waited(st, st.slot[la[passed & (cl == c)]], self.done_clock[c][-1])
        blocked = la[~passed]
        if blocked.size:
            st.pc[blocked] += BLOCKED
            st.sched.wait_id[blocked] = CLUSTER_WAIT

    def complete(self, st) -> None:
        """Complete every cluster whose live threads have all arrived, and release its waiters."""
        live = np.bincount(self.cluster_of_slot, weights=st.sched.live, minlength=len(self.arrived)).astype(np.int64)
        done = np.flatnonzero((self.arrived >= live) & (self.arrived > 0))
        if not done.size:
            return
        self.phase[done] += 1
        self.arrived[done] = 0
        for c in done.tolist():
            self.done_clock[c].append(st.clock)
        slots = np.flatnonzero(np.isin(self.cluster_of_slot, done))
        if st.rules is not None:
            st.rules.cluster_complete(st, slots)
        if st.hooks:
            wpc = st.padded // 32
            groups = (slots.reshape(-1, self.size)[:, :, None] * wpc + np.arange(wpc)).reshape(len(done), -1)
            for h in st.hooks:
                h.on_sync_groups(st, groups)
        w = np.flatnonzero(st.sched.wait_id == CLUSTER_WAIT)
        rel = w[np.isin(self.cluster_of_slot[st.slot[w]], done)]
        if rel.size and st.rules is not None:
            st.rules.cluster_waited(st, st.slot[rel], st.clock)
        if rel.size:
            st.pc[rel] -= BLOCKED
            st.sched.wait_id[rel] = -1

    def deadlock_line(self, st, lane: int, count: int) -> str:
        cl = int(self.cluster_of_slot[st.slot[lane]])
        ins = st.prog.instrs[int(st.pc[lane] - BLOCKED - 1)]
        live = int(st.sched.live[self.cluster_of_slot == cl].sum())
        cta, _ = st.where(lane)
        return (f"  CTA {cta}: {count} thread(s) waiting at PTX line {ins.line} (`{ins.text}`) for barrier.cluster "
                f"phase {int(self.phase[cl])}: {int(self.arrived[cl])} of the cluster's {live} live threads arrived")

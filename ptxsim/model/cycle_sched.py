"""The order ptxas issues one loop iteration in, for model v2's replay (cycle_trace.py).

ptxas list-schedules straight-line code on true (read-after-write) dependences: PTX registers are virtual, so a PTX
register written twice is two SASS registers and its reuse orders nothing. Its scheduler starts long-latency global
loads early, so their latency runs under the work before their first use. In this project's warp-specialised
grouped GEMM (ptx_impl/kernels/grouped_gemm_fp8_ws_m16n128.ptx, ptxas of CUDA 12 for sm_90a, read with nvdisasm)
the five `ld.global.nc` scale loads of the promotion, written in PTX after `wgmma.wait_group` each next to its use,
are five back-to-back LDG.E.CONSTANT at the top of the k-iteration, above the full slot's SYNCS.PHASECHK.TRYWAIT
and the QGMMAs, with their address arithmetic (docs/model-validation.md, "What ptxas emits").

`schedule(instrs, unit)` reorders one iteration (a list of pcs) the same way: a stable topological order of the
iteration's true dependences in which the global loads and the ALU instructions their addresses come from go first.
Memory and synchronisation instructions keep their order among themselves (stores, atomics, shared and local
accesses, barriers, fences, mbarrier and wgmma operations, async copies, and global loads that are not `.nc`);
`.nc` loads (read-only for the kernel's lifetime) may pass them, as ptxas's did. A guarded branch that is not a
try_wait retry ends the region a load may move across (ptxas does not speculate loads past a condition).
NOTE: no register-pressure limit (ptxas keeps fewer loads in flight when registers run out), and only loads are
prioritised; the rest keeps PTX order.
"""
from __future__ import annotations

import heapq

from ptxsim.model.stream import _dest_src

_ORDERED_OPS = {"st", "atom", "red", "bar", "barrier", "membar", "fence", "mbarrier", "wgmma", "cp", "setmaxnreg",
                "griddepcontrol", "elect", "nanosleep", "trap", "exit", "ret", "bra", "call"}


def _is_global_load(ins) -> bool:
    return ins.klass == "ld_global"


def _ordered(ins) -> bool:
    """Keeps its order among the other ordered instructions. A loop's back edge does not: in an unrolled body
    (iterations scheduled together) ptxas's one pass has no branch between them."""
    if ins.control and ins.op == "bra" and 0 <= ins.target <= ins.pc:
        return False
    if ins.op in _ORDERED_OPS or ins.control:
        return True
    if ins.op == "ld" and not _is_global_load(ins):
        return True            # shared / local loads read what a barrier or an async copy made visible
    return _is_global_load(ins) and ".nc" not in ins.mods


def _fence(instrs, ins) -> bool:
    """A point nothing moves across: a guarded branch that is not a try_wait retry."""
    if not (ins.control and ins.op == "bra" and ins.guard is not None):
        return False
    target = ins.target
    if 0 <= target < len(instrs):
        head = instrs[target]
        if head.op == "mbarrier" and (".try_wait" in head.mods or ".test_wait" in head.mods):
            return False
    return not (0 <= target <= ins.pc)        # the loop's own back edge ends the iteration anyway


def schedule(instrs, unit: list[int], info: dict | None = None) -> list[int]:
    """`unit` (pcs of one iteration, in the order the PTX runs them) in the order ptxas issues them (module
    docstring). `info` caches _dest_src per pc across calls."""
    if not any(_is_global_load(instrs[pc]) for pc in unit):
        return unit
    info = {} if info is None else info
    out: list[int] = []
    start = 0
    for i, pc in enumerate(unit):                 # regions between fences are scheduled one by one
        if _fence(instrs, instrs[pc]):
            out.extend(_region(instrs, unit[start: i + 1], info))
            start = i + 1
    out.extend(_region(instrs, unit[start:], info))
    return out


def _region(instrs, region: list[int], info: dict) -> list[int]:
    n = len(region)
    if n < 3 or not any(_is_global_load(instrs[pc]) for pc in region):
        return region
    sets = []
    for pc in region:
        if pc not in info:
            info[pc] = _dest_src(instrs[pc])
        sets.append(info[pc])
    preds: list[set] = [set() for _ in range(n)]
    writer: dict[int, int] = {}
    last_ordered = -1
    for i, pc in enumerate(region):
        dst, src = sets[i]
        for reg in src:
            if reg in writer:
                preds[i].add(writer[reg])
        if _ordered(instrs[pc]):
            if last_ordered >= 0:
                preds[i].add(last_ordered)
            last_ordered = i
        for reg in dst:
            writer[reg] = i
    # the global loads and every instruction their sources come from go first
    urgent = [False] * n
    for i in range(n - 1, -1, -1):
        if _is_global_load(instrs[region[i]]):
            urgent[i] = True
        if urgent[i]:
            for p in preds[i]:
                if not _ordered(instrs[region[p]]):
                    urgent[p] = True
    succs: list[list[int]] = [[] for _ in range(n)]
    indeg = [len(p) for p in preds]
    for i, ps in enumerate(preds):
        for p in ps:
            succs[p].append(i)
    ready = [(0 if urgent[i] else 1, i) for i in range(n) if indeg[i] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, i = heapq.heappop(ready)
        order.append(region[i])
        for j in succs[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                heapq.heappush(ready, (0 if urgent[j] else 1, j))
    return order

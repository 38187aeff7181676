"""Handler families and the one table opcode -> Spec(handler, class, modifiers, prepare, control).

Every handler has the signature `handler(state, ins, lanes) -> None` and works on whole lane vectors.
Timing-model costs are not semantics and live apart, in ptxsim/model/. The entry type lives in ptxsim/ops/opspec.py
(families import it from there: this package imports every family).
"""
from __future__ import annotations

from ptxsim.ops.opspec import Spec


def build_table() -> dict:
    # bulk, cluster, mbarrier and wgmma: Hopper (sm_90) clusters and asynchronous units
    from ptxsim.ops import (
        alu,
        atomic,
        bulk,
        cluster,
        control,
        convert,
        fp,
        mbarrier,
        memory,
        setmaxnreg,
        sync,
        tensor,
        tmapreplace,
        warp,
        wgmma,
    )

    table = {}
    for family in (alu, fp, convert, memory, atomic, control, sync, warp, tensor, mbarrier, wgmma, cluster,
                   setmaxnreg, tmapreplace):
        for name, s in family.OPS.items():
            if name in table:
                table[name] = _merge(table[name], s, name)
            else:
                table[name] = s
    table["cp"] = bulk.with_bulk(table["cp"])  # cp.async.bulk{.tensor} share the `cp` opcode with cp.async
    table["barrier"] = cluster.with_cluster_barrier(table["barrier"])  # barrier.cluster.arrive / .wait
    return table


def _merge(a: Spec, b: Spec, name: str) -> Spec:
    """Opcodes shared by families (add is integer and float): dispatch on the instruction's type at decode."""
    from ptxsim.ops.common import dispatch_by_type

    return dispatch_by_type(name, a, b)


_TABLE = None


def table() -> dict:
    global _TABLE
    if _TABLE is None:
        _TABLE = build_table()
    return _TABLE

"""Barriers and fences: bar/barrier .sync .arrive .red, bar.warp.sync, membar/fence (no-ops here: the simulator
is sequentially consistent)."""
from __future__ import annotations

import numpy as np

from ptxsim.errors import DecodeError, PtxSimError
from ptxsim.ops.common import unsupported
from ptxsim.ops.opspec import spec
from ptxsim.program import ADDR, IMM, NOT, REG
from ptxsim.ptxtypes import TYPES
from ptxsim.warpsync import WarpSyncs

U32 = TYPES["u32"]


def bar(st, ins, lanes):
    n = st.count(lanes)
    bid = np.broadcast_to(np.asarray(st.read(ins.ops[0], lanes, U32)), (n,)).astype(np.int64) \
        if ins.aux.has_id else np.zeros(n, np.int64)
    cnt = None
    if ins.aux.count_op is not None:
        cnt = np.broadcast_to(np.asarray(st.read(ins.aux.count_op, lanes, U32)), (n,)).astype(np.int64)
    _check_range(st, ins, lanes, bid, cnt)
    pred = None
    if ins.aux.red:
        pred = np.broadcast_to(np.asarray(st.read(ins.aux.pred_op, lanes, TYPES["pred"])), (n,))
    st.sched.barrier(ins, lanes, bid, cnt, ins.aux.mode, pred)


def _check_range(st, ins, lanes, bid, cnt):
    """A register barrier id outside 0..15 or a thread count that is not a positive multiple of 32 up to 1024."""
    bad_id = (bid < 0) | (bid > 15)
    bad_cnt = ((cnt <= 0) | (cnt > 1024) | (cnt % 32 != 0)) if cnt is not None else np.zeros_like(bad_id)
    if bad_id.any() or bad_cnt.any():
        i = int(np.flatnonzero(bad_id | bad_cnt)[0])
        cta, tid = st.where(int(st.lane_array(lanes)[i]))
        what = (f"barrier id {int(bid[i])} (expected 0..15)" if bad_id[i] else
                f"thread count {int(cnt[i])} (expected a multiple of 32 from 32 to 1024)")
        raise PtxSimError(f"{what} in kernel {st.prog.name} at PTX line {ins.line} (`{ins.text}`), CTA {cta}, "
                          f"thread {tid}")


def warp_sync(st, ins, lanes):
    """bar.warp.sync membermask: a convergence point; a thread waits until every non-exited member has executed a
    bar.warp.sync (ptxsim/warpsync.py). A group holding all its members (the usual case) goes straight on."""
    for h in st.hooks:
        h.on_warp_sync(st, ins, lanes)
    if isinstance(lanes, slice):
        return  # every thread of the batch is here
    op = ins.ops[0]
    members = (np.full(len(lanes), ins.aux.members, np.uint64) if op.kind == IMM else
               np.broadcast_to(np.asarray(st.read(op, lanes, U32)), (len(lanes),)).astype(np.uint64))
    WarpSyncs.of(st).arrive(st, ins, st.lane_array(lanes), members)


def fence(st, ins, lanes):
    """membar / fence: ordering is trivially satisfied by sequential simulation; asynccheck's proxy and mbarrier-init
    rules note them (ptxsim/asyncrules.py)."""
    if st.rules is not None:
        if ins.aux.tmap_fence:
            st.rules.tensormap_fence(st, ins, st.lane_array(lanes))
        else:
            st.rules.fence(st, ins, lanes)


def _prep_fence(ins, dec, ctx):
    """fence.proxy.tensormap::generic.release.<scope> and .acquire.<scope> [map], 128 (tensormap.replace's
    ordering; ptxsim/asyncrules.py); the other fences take no operands."""
    tmap = ".tensormap::generic" in ins.mods
    ins.aux.tmap_fence = tmap
    if not tmap:
        if ins.ops:
            raise DecodeError(f"{ins.op} takes no operands")
        return
    if ".proxy" not in ins.mods or len(ins.mods & {".release", ".acquire"}) != 1 \
            or not ins.mods & {".cta", ".cluster", ".gpu", ".sys"}:
        raise unsupported(ins, "expected fence.proxy.tensormap::generic.{release,acquire}.{cta,cluster,gpu,sys}")
    ins.aux.mode = ".release" if ".release" in ins.mods else ".acquire"  # read by asynccheck: no set lookup per run
    if ".release" in ins.mods and ins.ops:
        raise DecodeError("fence.proxy.tensormap::generic.release takes no operands")
    if ".acquire" in ins.mods and (len(ins.ops) != 2 or ins.ops[0].kind != ADDR or ins.ops[1].kind != IMM
                                   or int(ins.ops[1].value) != 128):
        raise DecodeError("fence.proxy.tensormap::generic.acquire takes [addr], 128")


def _prep_bar(ins, dec, ctx):
    mods = ins.mods
    if ".warp" in mods:
        if len(ins.ops) != 1:
            raise unsupported(ins, f"bar.warp.sync takes one membermask operand, got {len(ins.ops)}")
        if ins.ops[0].kind == IMM:
            ins.aux.members = int(ins.ops[0].value) & 0xFFFFFFFF
        ins.handler = warp_sync
        ins.control = True  # it may hold threads (pc + BLOCKED), so it ends the straight-line run
        ins.klass = "warp"
        return
    red = ".red" in mods
    mode = "arrive" if ".arrive" in mods else "red" if red else "sync"
    ops = list(ins.ops)
    ins.aux.red = red
    ins.aux.mode = mode
    if red:
        # bar.red.popc.u32 d, a{, b}, {!}c ; bar.red.and.pred p, a{, b}, {!}c
        redop = next((m for m in (".popc", ".and", ".or") if m in mods), None)
        if redop is None:
            raise unsupported(ins, "bar.red needs .popc, .and or .or")
        ins.aux.redop = redop
        ins.aux.dst = ops.pop(0)
        ins.aux.pred_op = ops.pop()
        if ins.aux.pred_op.kind not in (IMM, REG, NOT):
            raise unsupported(ins, "bar.red's last operand must be a predicate")
    if len(ops) not in (1, 2) and not (mode == "sync" and not ops and ins.op == "barrier"):
        raise unsupported(ins, f"expected barrier id and optional thread count, got {len(ops)} operand(s)")
    ins.aux.has_id = len(ops) >= 1
    # NOTE: the thread count is optional, so ops may be shorter than the names (strict=False)
    for what, op in zip(("barrier id", "thread count"), ops, strict=False):
        if op.kind == IMM and op.name != "int":
            raise unsupported(ins, f"{what} {op.value!r} is not an integer")
    if ops and ops[0].kind == IMM and not 0 <= int(ops[0].value) < 16:
        raise unsupported(ins, f"barrier id {ops[0].value} out of range 0..15")
    ins.aux.count_op = ops[1] if len(ops) == 2 else None
    ins.ops = tuple(ops)  # barrier id first, then the optional thread count
    if ins.aux.count_op is not None and ins.aux.count_op.kind == IMM and int(ins.aux.count_op.value) % 32:
        raise unsupported(ins, f"barrier thread count {ins.aux.count_op.value} is not a multiple of 32")
    ins.klass = "barrier"


_BMODS = (".sync", ".arrive", ".red", ".popc", ".and", ".or", ".aligned", ".warp", ".cta", ".sync.aligned")
OPS = {
    "bar": spec(bar, "barrier", _BMODS, _prep_bar, control=True),
    "barrier": spec(bar, "barrier", _BMODS, _prep_bar, control=True),
    "membar": spec(fence, "other", (".gl", ".cta", ".sys", ".proxy", ".alias"), None),
    "fence": spec(fence, "other", (".sc", ".acq_rel", ".cta", ".gpu", ".sys", ".cluster", ".proxy", ".async",
                                   ".alias", ".shared::cta", ".global", ".proxy.async", ".mbarrier_init",
                                   ".release", ".acquire", ".sync_restrict", ".shared::cluster", ".op_restrict",
                                   ".tensormap::generic"), _prep_fence),
    "griddepcontrol": spec(fence, "other", (".launch_dependents", ".wait"), None),
}

"""Warp collectives over converged lanes: shfl.sync, vote.sync, redux.sync, match.sync, activemask."""
from __future__ import annotations

import numpy as np

from ptxsim.ops.common import need, unsupported
from ptxsim.ops.opspec import spec
from ptxsim.program import PAIR, REG
from ptxsim.ptxtypes import TYPES
from ptxsim.warpsync import gather_members

U32, PRED = TYPES["u32"], TYPES["pred"]


def _segments(la):
    """(starts, seg) of the warps present in the sorted lane array la."""
    w = la >> 5
    starts = np.flatnonzero(np.concatenate(([True], w[1:] != w[:-1])))
    seg = np.cumsum(np.concatenate(([True], w[1:] != w[:-1]))) - 1
    return starts, seg


def _u32(st, op, lanes, n):
    return np.broadcast_to(np.asarray(st.read(op, lanes, U32)), (n,)).astype(np.int64)


def shfl(st, ins, lanes):
    la = st.lane_array(lanes)
    n = len(la)
    lid = la & 31
    b = _u32(st, ins.ops[2], lanes, n) & 31
    c = _u32(st, ins.ops[3], lanes, n)
    segmask = (c >> 8) & 31
    cval = c & 31
    max_lane = (lid & segmask) | (cval & ~segmask)
    min_lane = lid & segmask
    mode = ins.aux.mode
    if mode == ".up":
        j = lid - b
        ok = j >= max_lane
    elif mode == ".down":
        j = lid + b
        ok = j <= max_lane
    elif mode == ".bfly":
        j = lid ^ b
        ok = j <= max_lane
    else:
        j = min_lane | (b & ~segmask)
        ok = j <= max_lane
    src = np.where(ok, (la & ~31) + j, la)
    t = ins.types[0]
    a = ins.ops[1]
    if a.kind == REG:
        val = st.regs[a.idx][src]
        val = val.view(t.dtype) if a.bits == t.bits else val.astype(t.uint).view(t.dtype)
    else:
        val = np.full(n, st.read(a, lanes, t))
    for h in st.hooks:
        h.on_shfl(st, ins, la, src, ok)
    d = ins.ops[0]
    if d.kind == PAIR:
        st.write(d.items[0], lanes, val, t)
        st.write(d.items[1], lanes, ok, PRED)
    else:
        st.write(d, lanes, val, t)


def _pred(st, ins, lanes, n):
    return np.broadcast_to(np.asarray(st.read(ins.ops[1], lanes, PRED)), (n,))


def vote(st, ins, lanes):
    la = st.lane_array(lanes)
    n = len(la)
    p = _pred(st, ins, lanes, n)
    starts, seg = _segments(la)
    mode = ins.aux.mode
    if mode == ".ballot":
        bits = p.astype(np.uint64) << (la & 31).astype(np.uint64)
        r = np.bitwise_or.reduceat(bits, starts)[seg].astype(np.uint32)
        st.write(ins.ops[0], lanes, r, U32)
        return
    alls = np.logical_and.reduceat(p, starts)[seg]
    anys = np.logical_or.reduceat(p, starts)[seg]
    r = {".all": alls, ".any": anys, ".uni": alls | ~anys}[mode]
    st.write(ins.ops[0], lanes, r, PRED)


def activemask(st, ins, lanes):
    la = st.lane_array(lanes)
    starts, seg = _segments(la)
    bits = np.uint64(1) << (la & 31).astype(np.uint64)
    st.write(ins.ops[0], lanes, np.bitwise_or.reduceat(bits, starts)[seg].astype(np.uint32), U32)


def elect(st, ins, lanes):
    """elect.sync d|p, membermask: a convergence point of the mask (warpsync.gather_members: lanes that arrive
    before the rest of their mask wait for it); then the lowest lane of each warp running it is the leader."""
    la = st.lane_array(lanes)
    members = np.broadcast_to(np.asarray(st.read(ins.ops[1], lanes, U32)), (len(la),)).astype(np.uint64)
    la = gather_members(st, ins, la, members)
    if not la.size:
        return
    starts, seg = _segments(la)
    leader = (la[starts] & 31)[seg]
    d = ins.ops[0]
    if d.kind == PAIR:
        st.write(d.items[0], la, leader.astype(np.uint32), U32)
        st.write(d.items[1], la, (la & 31) == leader, PRED)
    else:
        st.write(d, la, (la & 31) == leader, PRED)


def _prep_elect(ins, dec, ctx):
    need(ins, 2, 0)
    ins.control = True  # it may hold threads before it (pc + BLOCKED) until their mask is complete


_REDUX = {".add": np.add, ".min": np.minimum, ".max": np.maximum, ".and": np.bitwise_and, ".or": np.bitwise_or,
          ".xor": np.bitwise_xor}


def redux(st, ins, lanes):
    """redux.sync d, a, membermask: lanes of a warp that name the same membermask reduce together, so two
    half-warps executing it with masks 0x0000ffff and 0xffff0000 (cooperative_groups' tile reductions) each get
    their own result."""
    la = st.lane_array(lanes)
    n = len(la)
    t = ins.types[0]
    v = np.broadcast_to(np.asarray(st.read(ins.ops[1], lanes, t)), (n,))
    mask = _u32(st, ins.ops[2], lanes, n)
    key = ((la >> 5).astype(np.int64) << 32) | mask  # one group per (warp, membermask)
    order = np.argsort(key, kind="stable")
    sk = key[order]
    first = np.concatenate(([True], sk[1:] != sk[:-1]))
    starts = np.flatnonzero(first)
    seg = np.empty(n, np.int64)
    seg[order] = np.cumsum(first) - 1
    vs = v[order]
    op = ins.aux.op
    if op == ".add":
        r = (np.add.reduceat(vs.astype(np.int64), starts) & 0xFFFFFFFF).astype(np.uint32).view(t.dtype)
    else:
        r = _REDUX[op].reduceat(vs, starts)
    st.write(ins.ops[0], lanes, np.ascontiguousarray(r[seg]), t)


def match(st, ins, lanes):
    la = st.lane_array(lanes)
    n = len(la)
    t = ins.types[0]
    v = np.broadcast_to(np.asarray(st.read(ins.ops[1], lanes, t)), (n,)).view(t.uint)
    act = np.zeros(st.nlanes, np.bool_)
    act[la] = True
    full = np.zeros(st.nlanes, t.uint)
    full[la] = v
    base = la & ~31
    mask = np.zeros(n, np.uint64)
    for k in range(32):
        partner = base + k
        eq = act[partner] & (full[partner] == v)
        mask |= eq.astype(np.uint64) << np.uint64(k)
    starts, seg = _segments(la)
    present = np.bitwise_or.reduceat(np.uint64(1) << (la & 31).astype(np.uint64), starts)[seg]
    d = ins.ops[0]
    if ins.aux.mode == ".any":
        st.write(d, lanes, mask.astype(np.uint32), U32)
        return
    same = mask == present
    allsame = np.logical_and.reduceat(same, starts)[seg]
    r = np.where(allsame, present, 0).astype(np.uint32)
    if d.kind == PAIR:
        st.write(d.items[0], lanes, r, U32)
        st.write(d.items[1], lanes, allsame, PRED)
    else:
        st.write(d, lanes, r, U32)


def _prep_mode(modes, nops):
    def prep(ins, dec, ctx):
        found = [m for m in ins.modlist if m in modes]
        if len(found) != 1:
            raise unsupported(ins, f"expected one of {' '.join(modes)}")
        ins.aux.mode = ins.aux.op = found[0]
        need(ins, nops, (0, 1))
        ins.klass = "warp"
    return prep


_SH = (".up", ".down", ".bfly", ".idx")
_VOTE = (".all", ".any", ".uni", ".ballot")
OPS = {
    "shfl": spec(shfl, "warp", _SH + (".sync",), _prep_mode(_SH, 5)),
    "vote": spec(vote, "warp", _VOTE + (".sync",), _prep_mode(_VOTE, (2, 3))),
    "redux": spec(redux, "warp", tuple(_REDUX) + (".sync",), _prep_mode(tuple(_REDUX), 3)),
    "match": spec(match, "warp", (".any", ".all", ".sync"), _prep_mode((".any", ".all"), 3)),
    "elect": spec(elect, "warp", (".sync",), _prep_elect),
    "activemask": spec(activemask, "warp", (), lambda i, d, c: need(i, 1, 1)),
}

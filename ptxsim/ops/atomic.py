"""atom / red on global and shared memory: colliding lanes take effect in lane order, each lane gets the value
before its own update (integer add by a segmented exclusive scan; the other ops by rounds of distinct addresses)."""
from __future__ import annotations

import numpy as np

from ptxsim import access
from ptxsim import numerics as nm
from ptxsim.ops.common import unsupported
from ptxsim.ops.fp import _unpack
from ptxsim.ops.opspec import spec
from ptxsim.ptxtypes import TYPES

_OPS = (".add", ".and", ".or", ".xor", ".cas", ".exch", ".inc", ".dec", ".min", ".max")


def _apply(op, t, old, b, c, ftz):
    """New memory value for one round (distinct addresses)."""
    if op == ".add":
        if t.name in ("f16x2", "bf16x2", "f16", "bf16"):
            from ptxsim.ops.fp import _pack

            po, pb = _unpack(old, t), _unpack(b, t)

            class _I:
                mods = frozenset()
            return _pack([x.astype(np.float64) + y.astype(np.float64) for x, y in zip(po, pb, strict=True)], t, _I)
        if t.kind == "f":
            r = old + b
            return nm.ftz32(r) if ftz and t.bits == 32 else r
        return (old.view(t.uint) + np.asarray(b).view(t.uint)).view(t.dtype)
    if op == ".and":
        return old & b
    if op == ".or":
        return old | b
    if op == ".xor":
        return old ^ b
    if op == ".exch":
        return np.broadcast_to(b, old.shape).astype(t.dtype)
    if op == ".cas":
        return np.where(old == b, c, old).astype(t.dtype)
    if op == ".min":
        return np.minimum(old, b)
    if op == ".max":
        return np.maximum(old, b)
    if op == ".inc":
        u, bu = old.view(t.uint), np.asarray(b).view(t.uint)
        return np.where(u >= bu, 0, u + 1).astype(t.uint).view(t.dtype)
    if op == ".dec":
        u, bu = old.view(t.uint), np.asarray(b).view(t.uint)
        return np.where((u == 0) | (u > bu), bu, u - 1).astype(t.uint).view(t.dtype)
    raise ValueError(op)


def _int_add(view, idx, b, t):
    """Segmented exclusive scan in lane order: the old value each lane sees, and the final memory values."""
    order = np.argsort(idx, kind="stable")
    si = idx[order]
    vb = np.broadcast_to(np.asarray(b).view(t.uint), idx.shape)[order].astype(np.uint64)
    cs = np.cumsum(vb, dtype=np.uint64)
    starts = np.concatenate(([True], si[1:] != si[:-1]))
    grp = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    base = (cs - vb)[first]  # inclusive-before at the start of each group
    excl = cs - vb - base[grp]
    mem = view[si].view(t.uint).astype(np.uint64)
    olds_sorted = (mem + excl).astype(t.uint)
    ends = np.concatenate((first[1:], [len(si)])) - 1
    total = cs[ends] - base
    view[si[first]] = (mem[first] + total).astype(t.uint).view(t.dtype)
    old = np.empty(idx.shape, t.uint)
    old[order] = olds_sorted
    return old.view(t.dtype)


def _atomic(st, ins, lanes, want_old):
    t = ins.types[0]
    op = ins.aux.op
    n = st.count(lanes)
    aop = ins.ops[1] if want_old else ins.ops[0]
    bi = 2 if want_old else 1
    addr = st.address(aop, lanes)
    if ins.space == "" and aop.base is None and aop.name == "shared":
        from ptxsim.memory import SHARED_WINDOW
        addr = addr + np.uint64(SHARED_WINDOW)
    b = np.broadcast_to(np.asarray(st.read(ins.ops[bi], lanes, t)), (n,))
    c = np.broadcast_to(np.asarray(st.read(ins.ops[bi + 1], lanes, t)), (n,)) if op == ".cas" else None
    out = np.zeros(n, t.dtype)
    size = t.bits // 8
    st.mem_writes += 1
    for sp, buf, phys, sub, idx_in, raw in access.regions(st, ins, ins.space, addr, lanes):
        bad = access.check(st, ins, sp, raw, sub, size, "atomic")
        if bad is not None:  # memcheck report mode: drop the bad lanes
            keep = np.flatnonzero(~bad)
            raw, phys, sub = raw[keep], phys[keep], st.lane_array(sub)[keep]
            idx_in = keep if idx_in is None else idx_in[keep]
        for h in st.hooks:
            h.on_access(st, ins, sp, raw, sub, size, True)
        if sp == "global" and st.launch.track_written:  # an atomic writes its address, as a store does
            w = st.launch.gmem.written
            for k in range(size):
                w[(phys + np.uint64(k)).astype(np.int64)] = True
        sel = slice(None) if idx_in is None else idx_in
        view = buf.view(t.dtype)
        idx = (phys // np.uint64(size)).astype(np.int64)
        bs = b[sel]
        if op == ".add" and t.kind in ("u", "s", "b"):
            out[sel] = _int_add(view, idx, bs, t)
            continue
        cs = c[sel] if c is not None else None
        if op == ".add" and t.kind == "f" and _float_add_by_group(view, idx, bs, out, sel, t):
            continue
        olds = np.zeros(len(idx), t.dtype)
        pending = np.arange(len(idx))
        ftz = sp == "global" or ".ftz" in ins.mods
        while pending.size:
            _, first = np.unique(idx[pending], return_index=True)
            pick = pending[first]
            old = view[idx[pick]]
            olds[pick] = old
            view[idx[pick]] = _apply(op, t, old, bs[pick], cs[pick] if cs is not None else None, ftz)
            pending = np.delete(pending, first)
        out[sel] = olds
    if want_old:
        st.write(ins.ops[0], lanes, out, t)


def _float_add_by_group(view, idx, b, out, sel, t) -> bool:
    """Float add with few distinct addresses: a sequential accumulate per address (lane order, one rounding per
    add). Returns False (caller falls back to rounds) when many addresses or subnormals are involved."""
    order = np.argsort(idx, kind="stable")
    si = idx[order]
    starts = np.flatnonzero(np.concatenate(([True], si[1:] != si[:-1])))
    if len(starts) > 8:
        return False
    ends = np.concatenate((starts[1:], [len(si)]))
    olds = np.empty(len(idx), t.dtype)
    vb = np.broadcast_to(b, idx.shape)[order].astype(t.dtype)
    news = []
    tiny = np.finfo(t.dtype).tiny
    for s0, e0 in zip(starts, ends, strict=True):
        acc = np.add.accumulate(np.concatenate(([view[si[s0]]], vb[s0:e0])).astype(t.dtype), dtype=t.dtype)
        if np.any((acc != 0) & (np.abs(acc) < tiny)):
            return False
        olds[order[s0:e0]] = acc[:-1]
        news.append((si[s0], acc[-1]))
    for a, v in news:
        view[a] = v
    out[sel] = olds
    return True


def atom(st, ins, lanes):
    _atomic(st, ins, lanes, True)


def red(st, ins, lanes):
    _atomic(st, ins, lanes, False)


def _prep(ins, dec, ctx):
    ops = [m for m in ins.modlist if m in _OPS]
    if len(ops) != 1 or len(ins.types) != 1:
        raise unsupported(ins, "expected one operation (.add .min .max .and .or .xor .exch .cas .inc .dec) and "
                          "one type")
    ins.aux.op = ops[0]
    t = ins.types[0]
    if ops[0] in (".inc", ".dec") and t.name != "u32":
        raise unsupported(ins, ".inc/.dec are .u32 only")
    if t.kind == "f" and ops[0] not in (".add", ".exch", ".min", ".max"):
        raise unsupported(ins, f"{ops[0]} is not defined for .{t.name}")
    if ins.space not in ("global", "shared", ""):
        raise unsupported(ins, f"atomics on .{ins.space} are not supported")
    nops = (3 if ins.op == "atom" else 2) + (1 if ops[0] == ".cas" else 0)
    if len(ins.ops) not in (nops, nops + 1):
        raise unsupported(ins, f"expected {nops} operands, got {len(ins.ops)}")
    ins.klass = "atom"


# vector atomics (.v2 .v4) unsupported
_MODS = _OPS + (".global", ".shared", ".shared::cta", ".shared::cluster", ".noftz", ".ftz")
OPS = {"atom": spec(atom, "atom", _MODS, _prep, hints=True), "red": spec(red, "atom", _MODS, _prep, hints=True)}
_ = TYPES

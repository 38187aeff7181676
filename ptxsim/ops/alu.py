"""Integer and bit handlers: add sub mul mad div rem abs neg min max, logic, shifts, bit fields, mov, setp selp."""
from __future__ import annotations

import numpy as np

from ptxsim.ops.common import need, unsupported
from ptxsim.ops.opspec import spec
from ptxsim.program import IMM, PAIR, REG, SREG, SYM, VEC
from ptxsim.ptxtypes import TYPES

M32 = np.uint64(0xFFFFFFFF)
S32 = np.uint64(32)


def _rd(st, ins, lanes, i, t=None):
    return st.read(ins.ops[i], lanes, t or ins.types[0])


def _wr(st, ins, lanes, v, t=None, i=0):
    t = t or ins.types[0]
    st.write(ins.ops[i], lanes, np.asarray(v, dtype=t.dtype) if np.ndim(v) == 0 else v.astype(t.dtype, copy=False), t)


def _u(v, t):
    return v.view(t.uint) if hasattr(v, "view") else v


# -- add / sub with .sat and carry ------------------------------------------------------------------------------
def _sat32(x):
    return np.clip(x, -(2**31), 2**31 - 1).astype(np.int32)


def add(st, ins, lanes):
    t = ins.types[0]
    a, b = _rd(st, ins, lanes, 1), _rd(st, ins, lanes, 2)
    if ".sat" in ins.mods:
        _wr(st, ins, lanes, _sat32(np.int64(1) * a.astype(np.int64) + b))
        return
    r = (a + b).astype(t.dtype)
    if ".cc" in ins.mods:
        st.carry[lanes] = _u(r, t) < _u(np.asarray(a, t.dtype), t)
    _wr(st, ins, lanes, r)


def sub(st, ins, lanes):
    t = ins.types[0]
    a, b = _rd(st, ins, lanes, 1), _rd(st, ins, lanes, 2)
    if ".sat" in ins.mods:
        _wr(st, ins, lanes, _sat32(a.astype(np.int64) - b))
        return
    if ".cc" in ins.mods:
        st.carry[lanes] = _u(np.asarray(a, t.dtype), t) < _u(np.asarray(b, t.dtype), t)
    _wr(st, ins, lanes, (a - b).astype(t.dtype))


def addc(st, ins, lanes):
    t = ins.types[0]
    a, b = _u(np.asarray(_rd(st, ins, lanes, 1)), t), _u(np.asarray(_rd(st, ins, lanes, 2)), t)
    cf = st.carry[lanes].astype(t.uint)
    r = (a + b + cf).astype(t.uint)
    if ".cc" in ins.mods:  # carry out: the sum wrapped (r < a), or b + cf wrapped to r == a
        st.carry[lanes] = (r < a) | ((cf == 1) & (r == a))
    _wr(st, ins, lanes, r.view(t.dtype))


def subc(st, ins, lanes):
    t = ins.types[0]
    a, b = _u(np.asarray(_rd(st, ins, lanes, 1)), t), _u(np.asarray(_rd(st, ins, lanes, 2)), t)
    cf = st.carry[lanes].astype(t.uint)
    r = (a - b - cf).astype(t.uint)
    if ".cc" in ins.mods:
        st.carry[lanes] = (a < b) | ((cf == 1) & (a == b))
    _wr(st, ins, lanes, r.view(t.dtype))


# -- multiply ---------------------------------------------------------------------------------------------------
def _mulhi_u64(a, b):
    a, b = np.asarray(a, np.uint64), np.asarray(b, np.uint64)
    a0, a1, b0, b1 = a & M32, a >> S32, b & M32, b >> S32
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> S32) + (p01 & M32) + (p10 & M32)
    return p11 + (p01 >> S32) + (p10 >> S32) + (mid >> S32)


def _mul_parts(ins, a, b):
    """(result type, product) for mul/mad .lo/.hi/.wide."""
    t = ins.types[0]
    if ".wide" in ins.mods:
        wt = TYPES[("s" if t.signed else "u") + str(t.bits * 2)]
        return wt, np.asarray(a).astype(wt.dtype) * np.asarray(b).astype(wt.dtype)
    if ".hi" in ins.mods:
        if t.bits == 64:
            h = _mulhi_u64(_u(np.asarray(a), t), _u(np.asarray(b), t))
            if t.signed:
                au, bu = np.asarray(a).view(np.uint64), np.asarray(b).view(np.uint64)
                h = h - np.where(np.asarray(a) < 0, bu, np.uint64(0)) - np.where(np.asarray(b) < 0, au, np.uint64(0))
            return t, np.asarray(h).view(t.dtype)
        big = np.int64 if t.signed else np.uint64
        p = np.asarray(a).astype(big) * np.asarray(b).astype(big)
        return t, (p >> t.bits).astype(t.dtype)
    # .lo (default for mul24 too)
    return t, (np.asarray(_u(np.asarray(a), t)) * _u(np.asarray(b), t)).astype(t.uint).view(t.dtype)


def _s24(x, t):
    x = np.asarray(x).astype(np.int64) & 0xFFFFFF
    return np.where(x & 0x800000, x - (1 << 24), x) if t.signed else x


def mul(st, ins, lanes):
    a, b = _rd(st, ins, lanes, 1), _rd(st, ins, lanes, 2)
    rt, p = _mul_parts(ins, a, b)
    _wr(st, ins, lanes, p, rt)


def mad(st, ins, lanes):
    a, b = _rd(st, ins, lanes, 1), _rd(st, ins, lanes, 2)
    rt, p = _mul_parts(ins, a, b)
    c = st.read(ins.ops[3], lanes, rt)
    if ".sat" in ins.mods:
        _wr(st, ins, lanes, _sat32(np.asarray(p).astype(np.int64) + c), rt)
        return
    _wr(st, ins, lanes, (np.asarray(p).view(rt.uint) + np.asarray(c).view(rt.uint)).view(rt.dtype), rt)


def mul24(st, ins, lanes):
    t = ins.types[0]
    p = _s24(_rd(st, ins, lanes, 1), t) * _s24(_rd(st, ins, lanes, 2), t)
    r = (p >> 16) if ".hi" in ins.mods else p
    _wr(st, ins, lanes, (r & 0xFFFFFFFF).astype(np.uint32).view(t.dtype))


def mad24(st, ins, lanes):
    t = ins.types[0]
    p = _s24(_rd(st, ins, lanes, 1), t) * _s24(_rd(st, ins, lanes, 2), t)
    r = ((p >> 16) if ".hi" in ins.mods else p) + np.asarray(_rd(st, ins, lanes, 3)).astype(np.int64)
    _wr(st, ins, lanes, (r & 0xFFFFFFFF).astype(np.uint32).view(t.dtype))


def sad(st, ins, lanes):
    t = ins.types[0]
    a, b = np.asarray(_rd(st, ins, lanes, 1)), np.asarray(_rd(st, ins, lanes, 2))
    d = np.where(a >= b, a - b, b - a).astype(t.dtype)
    _wr(st, ins, lanes, (_u(d, t) + _u(np.asarray(_rd(st, ins, lanes, 3)), t)).view(t.dtype))


def _tdiv(a, b, t):
    """Truncating division and remainder; division by zero gives all-ones (unsigned) / -1 (signed) and rem = a."""
    a, b = np.asarray(a), np.asarray(b)
    a, b = np.broadcast_arrays(a, b)
    zero = b == 0
    bs = np.where(zero, 1, b).astype(t.dtype)
    if t.signed:
        ai, bi = a.astype(np.int64), bs.astype(np.int64)
        q = ai // bi  # floors; truncate toward zero instead
        q = np.where(((ai % bi) != 0) & ((ai < 0) != (bi < 0)), q + 1, q)
        r = ai - q * bi
        q = np.where(zero, -1, q).astype(t.dtype)
        r = np.where(zero, a, r).astype(t.dtype)
        return q, r
    q = np.where(zero, np.iinfo(t.dtype).max, a // bs).astype(t.dtype)
    r = np.where(zero, a, a % bs).astype(t.dtype)
    return q, r


def div(st, ins, lanes):
    t = ins.types[0]
    _wr(st, ins, lanes, _tdiv(_rd(st, ins, lanes, 1), _rd(st, ins, lanes, 2), t)[0])


def rem(st, ins, lanes):
    t = ins.types[0]
    _wr(st, ins, lanes, _tdiv(_rd(st, ins, lanes, 1), _rd(st, ins, lanes, 2), t)[1])


def _unary(fn):
    def h(st, ins, lanes):
        t = ins.types[0]
        _wr(st, ins, lanes, fn(np.asarray(_rd(st, ins, lanes, 1)), t))
    return h


def _binary(fn):
    def h(st, ins, lanes):
        t = ins.types[0]
        _wr(st, ins, lanes, fn(np.asarray(_rd(st, ins, lanes, 1)), np.asarray(_rd(st, ins, lanes, 2)), t))
    return h


abs_ = _unary(lambda a, t: np.where(a < 0, (0 - a.view(t.uint)).view(t.dtype), a) if t.signed else a)
neg = _unary(lambda a, t: (np.zeros((), t.uint) - a.view(t.uint)).view(t.dtype))
not_ = _unary(lambda a, t: ~a)
cnot = _unary(lambda a, t: (a == 0).astype(t.dtype))
min_ = _binary(lambda a, b, t: np.minimum(a, b))
max_ = _binary(lambda a, b, t: np.maximum(a, b))
and_ = _binary(lambda a, b, t: a & b)
or_ = _binary(lambda a, b, t: a | b)
xor = _binary(lambda a, b, t: a ^ b)


def shl(st, ins, lanes):
    t = ins.types[0]
    a = np.asarray(_rd(st, ins, lanes, 1)).view(t.uint)
    n = np.asarray(st.read(ins.ops[2], lanes, TYPES["u32"])).astype(t.uint)
    r = np.where(n >= t.bits, 0, a << np.minimum(n, t.bits - 1)).astype(t.uint)
    _wr(st, ins, lanes, r.view(t.dtype))


def shr(st, ins, lanes):
    t = ins.types[0]
    a = np.asarray(_rd(st, ins, lanes, 1))
    n = np.asarray(st.read(ins.ops[2], lanes, TYPES["u32"]))
    if t.signed:
        r = a >> np.minimum(n, t.bits - 1).astype(t.dtype)
    else:
        a = a.view(t.uint)
        r = np.where(n >= t.bits, 0, a >> np.minimum(n, t.bits - 1).astype(t.uint)).astype(t.uint)
    _wr(st, ins, lanes, r.view(t.dtype))


def _smear(x, bits):
    x = x.copy()
    s = 1
    while s < bits:
        x |= x >> x.dtype.type(s)
        s *= 2
    return x


def popc(st, ins, lanes):
    t = ins.types[0]
    a = np.asarray(_rd(st, ins, lanes, 1)).view(t.uint)
    _wr(st, ins, lanes, np.bitwise_count(a).astype(np.uint32), TYPES["u32"])


def clz(st, ins, lanes):
    t = ins.types[0]
    a = np.asarray(_rd(st, ins, lanes, 1)).view(t.uint)
    _wr(st, ins, lanes, (t.bits - np.bitwise_count(_smear(a, t.bits)).astype(np.int64)).astype(np.uint32),
        TYPES["u32"])


def bfind(st, ins, lanes):
    t = ins.types[0]
    a = np.asarray(_rd(st, ins, lanes, 1))
    u = np.where(a < 0, ~a, a).view(t.uint) if t.signed else a.view(t.uint)
    msb = np.bitwise_count(_smear(u, t.bits)).astype(np.int64) - 1
    if ".shiftamt" in ins.mods:
        msb = np.where(msb < 0, -1, t.bits - 1 - msb)
    _wr(st, ins, lanes, (msb & 0xFFFFFFFF).astype(np.uint32), TYPES["u32"])


_REV8 = np.array([int(f"{i:08b}"[::-1], 2) for i in range(256)], np.uint8)


def brev(st, ins, lanes):
    t = ins.types[0]
    a = np.ascontiguousarray(np.asarray(_rd(st, ins, lanes, 1)).view(t.uint))
    b = _REV8[a.view(np.uint8).reshape(a.shape + (t.bits // 8,))][..., ::-1]
    _wr(st, ins, lanes, np.ascontiguousarray(b).view(t.uint).reshape(a.shape).view(t.dtype))


def bfe(st, ins, lanes):
    t = ins.types[0]
    a = np.asarray(_rd(st, ins, lanes, 1)).view(t.uint).astype(np.uint64)
    u32 = TYPES["u32"]
    pos = np.asarray(st.read(ins.ops[2], lanes, u32)).astype(np.int64) & 0xFF
    ln = np.asarray(st.read(ins.ops[3], lanes, u32)).astype(np.int64) & 0xFF
    w = t.bits
    i = np.arange(w, dtype=np.int64)
    pos_, ln_, a_ = np.broadcast_arrays(np.atleast_1d(pos), np.atleast_1d(ln), np.atleast_1d(a))
    if t.signed:
        sb_idx = np.minimum(pos_ + ln_ - 1, w - 1)
        sbit = np.where(ln_ == 0, 0, (a_ >> np.clip(sb_idx, 0, w - 1).astype(np.uint64)) & np.uint64(1))
    else:
        sbit = np.zeros(pos_.shape, np.uint64)
    src = pos_[:, None] + i[None, :]
    take = (i[None, :] < ln_[:, None]) & (src <= w - 1)
    bits = np.where(take, (a_[:, None] >> np.clip(src, 0, w - 1).astype(np.uint64)) & np.uint64(1),
                    sbit[:, None].astype(np.uint64))
    r = (bits << i.astype(np.uint64)[None, :]).sum(axis=1, dtype=np.uint64)
    r = r.astype(t.uint).view(t.dtype)
    _wr(st, ins, lanes, r if np.ndim(a) else r[0])


def bfi(st, ins, lanes):
    t = ins.types[0]
    f = np.asarray(_rd(st, ins, lanes, 1)).view(t.uint).astype(np.uint64)
    b = np.asarray(_rd(st, ins, lanes, 2)).view(t.uint).astype(np.uint64)
    u32 = TYPES["u32"]
    pos = np.asarray(st.read(ins.ops[3], lanes, u32)).astype(np.uint64) & np.uint64(0xFF)
    ln = np.asarray(st.read(ins.ops[4], lanes, u32)).astype(np.uint64) & np.uint64(0xFF)
    w = np.uint64(t.bits)
    ln = np.minimum(ln, w)
    full = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - t.bits)
    mask = np.where(ln >= 64, full, ((np.uint64(1) << np.minimum(ln, 63)) - np.uint64(1)))
    mask = np.where(pos >= w, np.uint64(0), (mask << np.minimum(pos, w - np.uint64(1))) & full)
    r = (b & ~mask) | ((f << np.minimum(pos, w - np.uint64(1))) & mask)
    _wr(st, ins, lanes, (r & full).astype(t.uint).view(t.dtype))


_PRMT_MODES = {".f4e": lambda s: [(s + k) & 7 for k in range(4)], ".b4e": lambda s: [(s - k) & 7 for k in range(4)],
               ".rc8": lambda s: [s & 3] * 4, ".ecl": lambda s: [max(k, s & 3) for k in range(4)],
               ".ecr": lambda s: [min(k, s & 3) if k <= (s & 3) else (s & 3) for k in range(4)],
               ".rc16": lambda s: [(s & 1) * 2, (s & 1) * 2 + 1] * 2}


def prmt(st, ins, lanes):
    u32 = TYPES["u32"]
    a = np.asarray(st.read(ins.ops[1], lanes, u32)).astype(np.uint64)
    b = np.asarray(st.read(ins.ops[2], lanes, u32)).astype(np.uint64)
    c = np.asarray(st.read(ins.ops[3], lanes, u32)).astype(np.uint64)
    a, b, c = np.broadcast_arrays(np.atleast_1d(a), np.atleast_1d(b), np.atleast_1d(c))
    pool = a | (b << np.uint64(32))  # bytes 0..3 from a, 4..7 from b
    mode = next((m for m in ins.modlist if m in _PRMT_MODES), None)
    r = np.zeros(a.shape, np.uint64)
    for k in range(4):
        if mode is None:
            sel = (c >> np.uint64(4 * k)) & np.uint64(0xF)
            idx = sel & np.uint64(7)
            byte = (pool >> (idx * np.uint64(8))) & np.uint64(0xFF)
            sign = np.where(byte & np.uint64(0x80), np.uint64(0xFF), np.uint64(0))
            byte = np.where(sel & np.uint64(8), sign, byte)
        else:
            s = c & np.uint64(3)
            idx = np.select([s == v for v in range(4)], [np.uint64(_PRMT_MODES[mode](v)[k]) for v in range(4)])
            byte = (pool >> (idx * np.uint64(8))) & np.uint64(0xFF)
        r |= byte << np.uint64(8 * k)
    _wr(st, ins, lanes, r.astype(np.uint32), u32)


def shf(st, ins, lanes):
    u32 = TYPES["u32"]
    lo = np.asarray(st.read(ins.ops[1], lanes, u32)).astype(np.uint64)
    hi = np.asarray(st.read(ins.ops[2], lanes, u32)).astype(np.uint64)
    n = np.asarray(st.read(ins.ops[3], lanes, u32)).astype(np.uint64)
    n = np.minimum(n, np.uint64(32)) if ".clamp" in ins.mods else n & np.uint64(31)
    v = lo | (hi << S32)
    if ".l" in ins.mods:
        r = np.where(n >= 32, lo, (v << n) >> S32) if ".clamp" in ins.mods else (v << n) >> S32
    else:
        r = np.where(n >= 32, hi, v >> n) if ".clamp" in ins.mods else v >> n
    _wr(st, ins, lanes, (np.asarray(r) & M32).astype(np.uint32), u32)


def lop3(st, ins, lanes):
    t = ins.types[0]
    a, b, c = (np.asarray(_rd(st, ins, lanes, i)) for i in (1, 2, 3))
    lut = int(ins.ops[4].value)
    r = np.zeros(np.broadcast(a, b, c).shape, t.dtype)
    for i in range(8):
        if lut >> i & 1:
            r |= (a if i & 4 else ~a) & (b if i & 2 else ~b) & (c if i & 1 else ~c)
    _wr(st, ins, lanes, r)


def dp4a(st, ins, lanes):
    ta, tb = ins.types[0], ins.types[1]
    u32 = TYPES["u32"]
    a = np.ascontiguousarray(np.atleast_1d(st.read(ins.ops[1], lanes, u32))).view(np.int8 if ta.signed else np.uint8)
    b = np.ascontiguousarray(np.atleast_1d(st.read(ins.ops[2], lanes, u32))).view(np.int8 if tb.signed else np.uint8)
    a, b = a.reshape(-1, 4).astype(np.int64), b.reshape(-1, 4).astype(np.int64)
    acc_t = TYPES["s32"] if (ta.signed or tb.signed) else u32
    c = np.asarray(st.read(ins.ops[3], lanes, acc_t)).astype(np.int64)
    r = (a * b).sum(axis=1) + c
    _wr(st, ins, lanes, (r & 0xFFFFFFFF).astype(np.uint32).view(acc_t.dtype), acc_t)


# -- compare / select / move ------------------------------------------------------------------------------------
_ICMP = {".eq": np.equal, ".ne": np.not_equal, ".lt": np.less, ".le": np.less_equal, ".gt": np.greater,
         ".ge": np.greater_equal, ".lo": np.less, ".ls": np.less_equal, ".hi": np.greater, ".hs": np.greater_equal}
_BOOL = {".and": np.logical_and, ".or": np.logical_or, ".xor": np.logical_xor}


def compare(ins, a, b, t):
    """Comparison named by the instruction's compare modifier (integer or float semantics)."""
    cmp = ins.aux.cmp
    if t.kind == "f":
        from ptxsim.ops.fp import fcompare

        return fcompare(cmp, a, b, ".ftz" in ins.mods and t.bits == 32)
    if cmp in (".lo", ".ls", ".hi", ".hs"):
        a, b = np.asarray(a).view(t.uint), np.asarray(b).view(t.uint)
    return _ICMP[cmp](a, b)


def _prep_setp(ins, dec, ctx):
    cmps = [m for m in ins.modlist if m in _ICMP or m in _FCMP_NAMES]
    if len(cmps) != 1:
        raise unsupported(ins, "expected exactly one comparison operator")
    ins.aux.cmp = cmps[0]
    ins.aux.combine = next((_BOOL[m] for m in ins.modlist if m in _BOOL), None)
    need(ins, (3, 4), (1, 2))


_FCMP_NAMES = {".equ", ".neu", ".ltu", ".leu", ".gtu", ".geu", ".num", ".nan"}


def setp(st, ins, lanes):
    t = ins.types[-1]
    a, b = st.read(ins.ops[1], lanes, t), st.read(ins.ops[2], lanes, t)
    r = np.asarray(compare(ins, a, b, t))
    pt = TYPES["pred"]
    comb = ins.aux.combine
    d = ins.ops[0]
    if comb is not None:
        c = np.asarray(st.read(ins.ops[3], lanes, pt))
        p, q = comb(r, c), comb(~r, c)
    else:
        p, q = r, ~r
    n = st.count(lanes)
    if d.kind == PAIR:
        st.write(d.items[0], lanes, np.broadcast_to(p, (n,)), pt)
        st.write(d.items[1], lanes, np.broadcast_to(q, (n,)), pt)
    else:
        st.write(d, lanes, np.broadcast_to(p, (n,)), pt)


def set_(st, ins, lanes):
    dt, t = ins.types[0], ins.types[-1]
    a, b = st.read(ins.ops[1], lanes, t), st.read(ins.ops[2], lanes, t)
    r = np.asarray(compare(ins, a, b, t))
    if ins.aux.combine is not None:
        r = ins.aux.combine(r, np.asarray(st.read(ins.ops[3], lanes, TYPES["pred"])))
    n = st.count(lanes)
    r = np.broadcast_to(r, (n,))
    if dt.kind == "f":
        v = r.astype(dt.dtype)
    else:
        v = np.where(r, np.iinfo(dt.uint).max, 0).astype(dt.uint).view(dt.dtype)
    _wr(st, ins, lanes, v, dt)


def selp(st, ins, lanes):
    t = ins.types[0]
    a, b = st.read(ins.ops[1], lanes, t), st.read(ins.ops[2], lanes, t)
    c = st.read(ins.ops[3], lanes, TYPES["pred"])
    n = st.count(lanes)
    _wr(st, ins, lanes, np.broadcast_to(np.where(c, a, b), (n,)).astype(t.dtype))


def slct(st, ins, lanes):
    t, ct = ins.types[0], ins.types[1]
    a, b = st.read(ins.ops[1], lanes, t), st.read(ins.ops[2], lanes, t)
    c = np.asarray(st.read(ins.ops[3], lanes, ct))
    if ct.kind == "f" and ".ftz" in ins.mods:
        c = np.where(np.abs(c) < np.finfo(np.float32).tiny, np.float32(0), c)
    cond = c >= 0 if ct.kind != "f" else (c >= 0)
    n = st.count(lanes)
    _wr(st, ins, lanes, np.broadcast_to(np.where(cond, a, b), (n,)).astype(t.dtype))


def mov(st, ins, lanes):
    t = ins.types[0]
    d, s = ins.ops[0], ins.ops[1]
    n = st.count(lanes)
    if s.kind == VEC:  # pack: first element is the least significant
        parts = s.items
        w = t.bits // len(parts)
        pt = TYPES[f"b{w}"]
        acc = np.zeros(n, t.uint)
        for k, p in enumerate(parts):
            acc |= np.asarray(st.read(p, lanes, pt)).astype(t.uint) << t.uint.type(k * w)
        st.write(d, lanes, acc.view(t.dtype), t)
        return
    v = st.read(s, lanes, t)
    if d.kind == VEC:
        w = t.bits // len(d.items)
        pt = TYPES[f"b{w}"]
        u = np.broadcast_to(np.asarray(v).view(t.uint), (n,))
        outs = [(u >> t.uint.type(k * w)).astype(pt.dtype) for k in range(len(d.items))]
        for k, p in enumerate(d.items):
            st.write(p, lanes, outs[k], pt)
        return
    if np.ndim(v) == 0:
        v = np.full(n, v, t.dtype)
    st.write(d, lanes, v, t)


def _prep_mov(ins, dec, ctx):
    need(ins, 2)
    s = ins.ops[1]
    if s.kind not in (REG, IMM, VEC, SYM, SREG):
        raise unsupported(ins, f"cannot move from operand {s!r}")


def _p(n, t=1):
    def prep(ins, dec, ctx):
        need(ins, n, t)
    return prep


OPS = {
    "add": spec(add, "int", (".sat", ".cc"), _p(3)), "sub": spec(sub, "int", (".sat", ".cc"), _p(3)),
    "addc": spec(addc, "int", (".cc",), _p(3)), "subc": spec(subc, "int", (".cc",), _p(3)),
    "mul": spec(mul, "int", (".lo", ".hi", ".wide"), _p(3)), "mad": spec(mad, "int", (".lo", ".hi", ".wide", ".sat"),
                                                                          _p(4)),
    "mul24": spec(mul24, "int", (".lo", ".hi"), _p(3)), "mad24": spec(mad24, "int", (".lo", ".hi"), _p(4)),
    "sad": spec(sad, "int", (), _p(4)), "div": spec(div, "int", (), _p(3)), "rem": spec(rem, "int", (), _p(3)),
    "abs": spec(abs_, "int", (), _p(2)), "neg": spec(neg, "int", (), _p(2)),
    "min": spec(min_, "int", (), _p(3)), "max": spec(max_, "int", (), _p(3)),
    "and": spec(and_, "int", (), _p(3)), "or": spec(or_, "int", (), _p(3)), "xor": spec(xor, "int", (), _p(3)),
    "not": spec(not_, "int", (), _p(2)), "cnot": spec(cnot, "int", (), _p(2)),
    "shl": spec(shl, "int", (), _p(3)), "shr": spec(shr, "int", (), _p(3)),
    "popc": spec(popc, "int", (), _p(2)), "clz": spec(clz, "int", (), _p(2)),
    "bfind": spec(bfind, "int", (".shiftamt",), _p(2)), "brev": spec(brev, "int", (), _p(2)),
    "bfe": spec(bfe, "int", (), _p(4)), "bfi": spec(bfi, "int", (), _p(5)),
    "prmt": spec(prmt, "int", tuple(_PRMT_MODES), _p(4)), "shf": spec(shf, "int", (".l", ".r", ".wrap", ".clamp"),
                                                                       _p(4)),
    "lop3": spec(lop3, "int", (), _p(5)), "dp4a": spec(dp4a, "int", (), _p(4, 2)),
    "setp": spec(setp, "int", tuple(_ICMP) + tuple(_FCMP_NAMES) + tuple(_BOOL) + (".ftz",), _prep_setp),
    "set": spec(set_, "int", tuple(_ICMP) + tuple(_FCMP_NAMES) + tuple(_BOOL) + (".ftz",), _prep_setp),
    "selp": spec(selp, "int", (), _p(4)), "slct": spec(slct, "int", (".ftz",), _p(4, 2)),
    "mov": spec(mov, "int", (), _prep_mov),
}

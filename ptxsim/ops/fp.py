"""Floating-point handlers: f32/f64 and f16/bf16 (scalar and x2) arithmetic, fma, div, approximate functions."""
from __future__ import annotations

import numpy as np

from ptxsim import numerics as nm
from ptxsim.ops.common import need, unsupported
from ptxsim.ops.opspec import spec
from ptxsim.ptxtypes import TYPES

_RND = (".rn", ".rz", ".rm", ".rp")
F32, F64 = TYPES["f32"], TYPES["f64"]


def _mode(ins):
    return next((m for m in ins.modlist if m in _RND), ".rn")


def _klass(t):
    return {"f32": "fp32", "f64": "fp64"}.get(t.name, "fp16")


# -- packed / half helpers: unpack to f32 lanes, compute, repack -------------------------------------------------
def _halves(t):
    if t.name in ("f16x2", "bf16x2"):
        return 2, t.name[:-2]
    if t.name in ("f16", "bf16"):
        return 1, t.name
    return 0, ""


def _unpack(v, t):
    """f32 values [n, k] of a half/bf16/x2 operand (k = 1 or 2, index 0 = low half)."""
    k, kind = _halves(t)
    u = np.atleast_1d(np.asarray(v)).view(np.uint16 if k == 1 else np.uint32).astype(np.uint32)
    parts = [u & np.uint32(0xFFFF)] + ([u >> np.uint32(16)] if k == 2 else [])
    return [nm.half_bits_to_f32(p, kind) for p in parts]


def _pack(parts64, t, ins):
    """Round f64 values (exact results) to the half kind once and repack."""
    k, kind = _halves(t)
    bits = []
    for p in parts64:
        ro = nm.f64_to_f32_ro(p) if kind == "bf16" else np.asarray(p, np.float64)
        if kind == "f16":
            with np.errstate(all="ignore"):
                h = np.asarray(ro, np.float64).astype(np.float16).view(np.uint16)
        else:
            h = nm.f32_to_bf16_bits(ro)
        if ".ftz" in ins.mods and kind == "f16":
            h = np.where((h & 0x7C00) == 0, h & 0x8000, h).astype(np.uint16)
        if ".sat" in ins.mods or ".relu" in ins.mods:
            f = nm.half_bits_to_f32(h, kind)
            f = nm.sat01(f) if ".sat" in ins.mods else np.where(f < 0, np.float32(0), f)
            h = nm.to_half_bits(f, kind)
        bits.append(h.astype(np.uint32))
    if k == 1:
        return bits[0].astype(np.uint16).view(t.dtype)
    return (bits[0] | (bits[1] << np.uint32(16))).astype(np.uint32).view(t.dtype)


def _half_op(fn):
    def h(st, ins, lanes):
        t = ins.types[-1]
        srcs = [_unpack(st.read(o, lanes, t), t) for o in ins.ops[1:]]
        n = st.count(lanes)
        outs = [np.broadcast_to(fn(*[s[i].astype(np.float64) for s in srcs]), (n,)) for i in range(len(srcs[0]))]
        st.write(ins.ops[0], lanes, _pack(outs, t, ins), t)
    return h


# -- f32 / f64 --------------------------------------------------------------------------------------------------
def _in(st, ins, lanes, i, t):
    v = st.read(ins.ops[i], lanes, t)
    if t.bits == 32 and ".ftz" in ins.mods:
        v = nm.ftz32(v)
    return v


def _out(st, ins, lanes, v, t):
    v = np.asarray(v, t.dtype)
    if t.bits == 32 and ".ftz" in ins.mods:
        v = nm.ftz32(v)
    if ".sat" in ins.mods:
        v = nm.sat01(v)
    if ".relu" in ins.mods:  # negative -> +0; NaN stays NaN
        v = np.where(v < 0, t.dtype.type(0), v)
    n = st.count(lanes)
    st.write(ins.ops[0], lanes, np.broadcast_to(v, (n,)).astype(t.dtype), t)


def _addsub(sign):
    def h(st, ins, lanes):
        t = ins.types[-1]
        if _halves(t)[0]:
            return _half_op(lambda a, b: a + sign * b)(st, ins, lanes)
        a, b = _in(st, ins, lanes, 1, t), _in(st, ins, lanes, 2, t)
        mode = _mode(ins)
        if t.bits == 32:
            if mode == ".rn":
                r = a + b if sign > 0 else a - b
            else:
                s, e = nm.two_sum(np.float64(1) * a, sign * np.float64(1) * b)
                r = nm.f64_to_f32(s, e, mode)
        else:
            s, e = nm.two_sum(a, sign * b)
            r = nm.directed64(s, e, mode)
        _out(st, ins, lanes, r, t)
    return h


def mul(st, ins, lanes):
    t = ins.types[-1]
    if _halves(t)[0]:
        return _half_op(lambda a, b: a * b)(st, ins, lanes)
    a, b = _in(st, ins, lanes, 1, t), _in(st, ins, lanes, 2, t)
    mode = _mode(ins)
    if t.bits == 32:
        r = a * b if mode == ".rn" else nm.f64_to_f32(np.float64(1) * a * b, None, mode)
    else:
        p, e = nm.two_prod(np.asarray(a), np.asarray(b))
        r = nm.directed64(p, e, mode)
    _out(st, ins, lanes, r, t)


def fma(st, ins, lanes):
    t = ins.types[-1]
    if _halves(t)[0]:
        if _halves(t)[1] == "f16":  # f16 product and sum are exact in f64: one rounding
            return _half_op(lambda a, b, c: a * b + c)(st, ins, lanes)
        return _half_op(lambda a, b, c: nm.round_to_odd64(*nm.two_sum(a * b, c)))(st, ins, lanes)
    a, b, c = (_in(st, ins, lanes, i, t) for i in (1, 2, 3))
    mode = _mode(ins)
    r = nm.fma_f32(a, b, c, mode) if t.bits == 32 else nm.fma_f64(a, b, c, mode)
    _out(st, ins, lanes, r, t)


def div(st, ins, lanes):
    t = ins.types[-1]
    a, b = _in(st, ins, lanes, 1, t), _in(st, ins, lanes, 2, t)
    mode = _mode(ins)
    if t.bits == 32 and (".approx" in ins.mods):
        r = np.float32(a) * (np.float32(1) / np.asarray(b, np.float32)) if np.ndim(a) == 0 else \
            a * (np.float32(1) / np.asarray(b, np.float32))
        # NOTE: PTX ISA, div: for 2^126 < |b| < 2^128 div.approx.f32 returns 0 (NaN when a is infinite): the
        # hardware reciprocal of such b is subnormal and flushed, where NumPy's 1/b keeps it.
        huge = (np.abs(np.asarray(b, np.float32)) > np.float32(2.0**126)) & np.isfinite(b)
        if np.any(huge):
            zero = np.copysign(np.float32(0), np.asarray(a, np.float32)) * np.sign(np.asarray(b, np.float32))
            r = np.where(huge, np.where(np.isinf(a), np.float32(np.nan), zero), r).astype(np.float32)
    elif mode == ".rn" or ".full" in ins.mods:
        r = np.asarray(a) / np.asarray(b)
    else:
        r = np.asarray(np.asarray(a) / np.asarray(b), t.dtype)
        wide = np.float64 if t.bits == 32 else np.longdouble
        rem = np.asarray(a, wide) - r.astype(wide) * np.asarray(b, wide)  # sign of (exact - r) * b
        d = np.where(np.asarray(b) < 0, -rem, rem).astype(np.float64)
        r = nm._directed(r, d, mode, t.dtype.type)
    _out(st, ins, lanes, r, t)


def _unary(fn32, fn64=None, half=None):
    def h(st, ins, lanes):
        t = ins.types[-1]
        if _halves(t)[0]:
            if half is None:
                raise unsupported(ins, "not available for half types")
            return _half_op(half)(st, ins, lanes)
        a = _in(st, ins, lanes, 1, t)
        f = fn32 if t.bits == 32 else (fn64 or fn32)
        with np.errstate(all="ignore"):
            r = f(np.asarray(a), ins)
        _out(st, ins, lanes, r, t)
    return h


def _f64_then_f32(fn):
    return lambda a, ins: np.asarray(fn(np.asarray(a, np.float64))).astype(a.dtype)


def _sqrt(a, ins):
    r = np.sqrt(a)
    mode = (ins.aux.mode if ins.aux.mode is not None else ".rn")
    if mode == ".rn":
        return r
    # directed: compare r*r with a exactly (an f32 square is exact in f64)
    d = np.asarray(a, np.float64) - np.asarray(r, np.float64) ** 2
    return nm._directed(r, np.where(np.isfinite(d), d, 0), mode, a.dtype.type)


def _rcp(a, ins):
    r = np.asarray(1, a.dtype) / a
    mode = (ins.aux.mode if ins.aux.mode is not None else ".rn")
    if mode == ".rn":
        return r
    # directed: the sign of 1 - r*a (exact in f64 for f32 operands) times the sign of a
    d = 1.0 - np.asarray(r, np.float64) * np.asarray(a, np.float64)
    d = np.where(np.asarray(a) < 0, -d, d)
    return nm._directed(r, np.where(np.isfinite(d), d, 0), mode, a.dtype.type)


def _rsqrt(a, ins):
    return (1.0 / np.sqrt(np.asarray(a, np.float64))).astype(a.dtype)


abs_ = _unary(lambda a, ins: np.abs(a), half=lambda a: np.abs(a))
neg = _unary(lambda a, ins: -a, half=lambda a: -a)
sqrt = _unary(_sqrt)
rcp = _unary(_rcp)
rsqrt = _unary(_rsqrt)
ex2 = _unary(_f64_then_f32(np.exp2), half=lambda a: np.exp2(a))
lg2 = _unary(_f64_then_f32(np.log2))
sin = _unary(_f64_then_f32(np.sin))
cos = _unary(_f64_then_f32(np.cos))
tanh = _unary(_f64_then_f32(np.tanh), half=lambda a: np.tanh(a))


def _minmax(fn_num, fn_nan):
    def h(st, ins, lanes):
        t = ins.types[-1]
        fn = fn_nan if ".NaN" in ins.mods else fn_num
        if _halves(t)[0]:
            return _half_op(lambda a, b: fn(a, b))(st, ins, lanes)
        a, b = _in(st, ins, lanes, 1, t), _in(st, ins, lanes, 2, t)
        if ".xorsign" in ins.mods:  # min/max of |a|, |b| with the sign a ^ b
            sign = np.signbit(a) ^ np.signbit(b)
            r = fn(np.abs(np.asarray(a)), np.abs(np.asarray(b)))
            r = np.copysign(r, np.where(sign, -1, 1)).astype(t.dtype)
        else:
            r = fn(np.asarray(a), np.asarray(b))
        _out(st, ins, lanes, r, t)
    return h


def _min_signed_zero(a, b):
    r = np.fmin(a, b)
    return np.where((a == 0) & (b == 0), np.where(np.signbit(a) | np.signbit(b), -abs(a), abs(a)), r).astype(r.dtype)


def _max_signed_zero(a, b):
    r = np.fmax(a, b)
    return np.where((a == 0) & (b == 0), np.where(np.signbit(a) & np.signbit(b), -abs(a), abs(a)), r).astype(r.dtype)


min_ = _minmax(_min_signed_zero, np.minimum)
max_ = _minmax(_max_signed_zero, np.maximum)


def copysign(st, ins, lanes):
    t = ins.types[-1]
    a, b = st.read(ins.ops[1], lanes, t), st.read(ins.ops[2], lanes, t)
    _out(st, ins, lanes, np.copysign(b, a), t)


_TESTP = {".finite": np.isfinite, ".infinite": np.isinf, ".number": lambda x: ~np.isnan(x), ".notanumber": np.isnan,
          ".normal": lambda x: np.isfinite(x) & (np.abs(x) >= np.finfo(x.dtype).tiny),
          ".subnormal": lambda x: (x != 0) & (np.abs(x) < np.finfo(x.dtype).tiny)}


def testp(st, ins, lanes):
    t = ins.types[-1]
    a = np.asarray(st.read(ins.ops[1], lanes, t))
    op = next(m for m in ins.modlist if m in _TESTP)
    n = st.count(lanes)
    st.write(ins.ops[0], lanes, np.broadcast_to(_TESTP[op](a), (n,)), TYPES["pred"])


def fcompare(cmp, a, b, ftz):
    a, b = np.asarray(a), np.asarray(b)
    if ftz:
        a, b = nm.ftz32(a), nm.ftz32(b)
    un = np.isnan(a) | np.isnan(b)
    base = cmp.rstrip("u") if cmp not in (".num", ".nan") else cmp
    ops = {".eq": np.equal, ".ne": np.not_equal, ".lt": np.less, ".le": np.less_equal, ".gt": np.greater,
           ".ge": np.greater_equal}
    if cmp == ".num":
        return ~un
    if cmp == ".nan":
        return un
    r = ops[base](a, b)
    if cmp.endswith("u"):
        return r | un
    return r & ~un


def _prep(nops, ntypes=1, rnd_required=False):
    def prep(ins, dec, ctx):
        need(ins, nops, ntypes)
        t = ins.types[-1]
        ins.klass = _klass(t) if t.name not in ("f16x2", "bf16x2", "f16", "bf16") else "fp16"
        if rnd_required and t.bits == 64 and not any(m in ins.mods for m in _RND):
            raise unsupported(ins, "f64 form requires a rounding modifier (.rn .rz .rm .rp)")
    return prep


def _prep_sfu(nops, rounding=False):
    def prep(ins, dec, ctx):
        need(ins, nops, 1)
        ins.klass = "sfu"
        modes = [m for m in ins.modlist if m in _RND]
        if not rounding and modes:
            raise unsupported(ins, f"{ins.op} takes .approx only, not {modes[0]}")
        if modes and ins.types[-1].bits == 64 and modes[0] != ".rn":
            raise unsupported(ins, f"directed rounding {modes[0]} is not supported for .f64 {ins.op}")
        if rounding and not modes and ".approx" not in ins.mods:
            raise unsupported(ins, f"{ins.op} needs .approx or a rounding modifier (.rn .rz .rm .rp)")
        ins.aux.mode = modes[0] if modes else ".rn"
    return prep


_FMODS = _RND + (".ftz", ".sat")
_APPROX = (".approx", ".ftz", ".full", ".rn", ".rz", ".rm", ".rp")
OPS = {
    "add": spec(_addsub(1), "fp32", _FMODS, _prep(3)), "sub": spec(_addsub(-1), "fp32", _FMODS, _prep(3)),
    "mul": spec(mul, "fp32", _FMODS, _prep(3)), "fma": spec(fma, "fp32", _FMODS + (".relu",), _prep(4)),
    "mad": spec(fma, "fp32", _FMODS, _prep(4)), "div": spec(div, "fp32", _APPROX, _prep(3)),
    "abs": spec(abs_, "fp32", (".ftz",), _prep(2)), "neg": spec(neg, "fp32", (".ftz",), _prep(2)),
    "min": spec(min_, "fp32", (".ftz", ".NaN", ".xorsign", ".abs"), _prep(3)),
    "max": spec(max_, "fp32", (".ftz", ".NaN", ".xorsign", ".abs"), _prep(3)),
    "sqrt": spec(sqrt, "sfu", _APPROX, _prep_sfu(2, True)), "rcp": spec(rcp, "sfu", _APPROX, _prep_sfu(2, True)),
    "rsqrt": spec(rsqrt, "sfu", _APPROX, _prep_sfu(2)), "ex2": spec(ex2, "sfu", _APPROX, _prep_sfu(2)),
    "lg2": spec(lg2, "sfu", _APPROX, _prep_sfu(2)), "sin": spec(sin, "sfu", _APPROX, _prep_sfu(2)),
    "cos": spec(cos, "sfu", _APPROX, _prep_sfu(2)), "tanh": spec(tanh, "sfu", _APPROX, _prep_sfu(2)),
    "copysign": spec(copysign, "fp32", (), _prep(3)), "testp": spec(testp, "fp32", tuple(_TESTP), _prep(2)),
}

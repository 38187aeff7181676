"""Fast handlers for the hottest simple instructions when every lane of the batch runs.

The generic handlers read each operand (a view when all lanes run), compute into a temporary, convert it to the
instruction type and copy it into the destination register: three or four passes over the lane vector and a dozen
Python calls. A Numba GEMM's inner loop is almost only such instructions (integer address arithmetic, setp/selp,
fma.rn.f32) on 4096-lane vectors, where per-call overhead and passes dominate. The handlers here compute straight
into the destination register (`out=`), on the raw register arrays where the operation does not depend on the
signedness (two's-complement add, sub, mul.lo, logic and truncation give the same bits).

`specialise(ins)` picks one at decode time, only for forms whose register operands are exactly as wide as the
instruction type (so the raw register array holds the operand's bits, with no truncation or extension) and whose
modifiers change nothing; it returns None otherwise. Each fast handler runs the generic one unless `lanes` is FULL
(some lanes inactive: gather and scatter as before). Results are bitwise those of the generic handlers
(tests/ptxsim/test_fast_paths.py runs every form both ways, on all lanes and on part of them).
"""
from __future__ import annotations

import numpy as np

from ptxsim import numerics as nm
from ptxsim.program import IMM, REG
from ptxsim.ptxtypes import SINT, TYPES, UINT
from ptxsim.state import FULL, _imm_value

_INT_KINDS = ("u", "s", "b")
_RAW = frozenset(UINT[b] for b in (16, 32, 64))  # dtypes of the 16/32/64-bit register arrays
_WIDTHS = (16, 32, 64)

# opcode -> (ufunc, modifiers allowed, whether the operation needs the type's signedness)
_INT_BINARY = {
    "add": (np.add, frozenset(), False), "sub": (np.subtract, frozenset(), False),
    "mul": (np.multiply, frozenset({".lo"}), False),
    "and": (np.bitwise_and, frozenset(), False), "or": (np.bitwise_or, frozenset(), False),
    "xor": (np.bitwise_xor, frozenset(), False),
    "min": (np.minimum, frozenset(), True), "max": (np.maximum, frozenset(), True),
}
# setp comparisons whose NumPy ufunc is the PTX one for integers and for floats (NaN compares false = ordered)
_CMP = {".eq": np.equal, ".lt": np.less, ".le": np.less_equal, ".gt": np.greater, ".ge": np.greater_equal}
_INT_CMP = dict(_CMP, **{".ne": np.not_equal, ".lo": np.less, ".ls": np.less_equal, ".hi": np.greater,
                         ".hs": np.greater_equal})
_UNSIGNED_CMP = frozenset({".lo", ".ls", ".hi", ".hs"})


def _fits(op, bits: int) -> bool:
    """A register exactly `bits` wide, or an immediate known at decode (not a dynamic shared variable's address,
    which decode patches after the instruction)."""
    return (op.kind == IMM and op.sym is None) or (op.kind == REG and op.bits == bits)


def _source(op, t, dt):
    """(register index, -1 for an immediate; the immediate as a `dt` scalar with the bits PTX gives it as type t)."""
    if op.kind == REG:
        return op.idx, None
    v = np.asarray(_imm_value(op, t))
    return -1, (v.view(dt) if v.dtype.itemsize == dt.itemsize else v.astype(dt))[()]


def _binary_handler(generic, ufunc, dst, a, b, dt):
    (ia, ca), (ib, cb) = a, b
    if ia < 0 and ib < 0:
        return None
    if dt in _RAW:  # the register arrays' own dtype: no views (unsigned and sign-agnostic integer forms)
        if ia >= 0 and ib >= 0:
            def h(st, ins, lanes):
                if lanes is not FULL:
                    return generic(st, ins, lanes)
                r = st.regs
                ufunc(r[ia], r[ib], out=r[dst])
        elif ia >= 0:
            def h(st, ins, lanes):
                if lanes is not FULL:
                    return generic(st, ins, lanes)
                r = st.regs
                ufunc(r[ia], cb, out=r[dst])
        else:
            def h(st, ins, lanes):
                if lanes is not FULL:
                    return generic(st, ins, lanes)
                r = st.regs
                ufunc(ca, r[ib], out=r[dst])
        return h

    def h(st, ins, lanes):
        if lanes is not FULL:
            return generic(st, ins, lanes)
        r = st.regs
        ufunc(r[ia].view(dt) if ia >= 0 else ca, r[ib].view(dt) if ib >= 0 else cb, out=r[dst].view(dt))
    return h


def _int_binary(ins, generic):
    ufunc, mods, signed = _INT_BINARY[ins.op]
    t = ins.types[0] if len(ins.types) == 1 else None
    if t is None or t.kind not in _INT_KINDS or t.bits not in _WIDTHS or not ins.mods <= mods:
        return None
    d, a, b = ins.ops
    if d.kind != REG or d.bits != t.bits or not (_fits(a, t.bits) and _fits(b, t.bits)):
        return None
    dt = t.dtype if signed else t.uint
    return _binary_handler(generic, ufunc, d.idx, _source(a, t, dt), _source(b, t, dt), dt)


# f32 add / sub / mul in round-to-nearest: the generic handler computes exactly NumPy's f32 operation
_F32_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply}


def _f32_binary(ins, generic):
    t = ins.types[0] if len(ins.types) == 1 else None
    if t is None or t.name != "f32" or not ins.mods <= {".rn"}:
        return None
    d, a, b = ins.ops
    if d.kind != REG or d.bits != 32 or not (_fits(a, 32) and _fits(b, 32)):
        return None
    return _binary_handler(generic, _F32_BINARY[ins.op], d.idx, _source(a, t, t.dtype), _source(b, t, t.dtype),
                           t.dtype)


def _arith(ins, generic):
    if ins.op in _F32_BINARY and len(ins.types) == 1 and ins.types[0].kind == "f":
        return _f32_binary(ins, generic)
    return _int_binary(ins, generic)


def _shift(ins, generic):
    """shl / shr by an immediate smaller than the width (larger ones give 0 or the sign: the generic handler)."""
    t = ins.types[0] if len(ins.types) == 1 else None
    if t is None or t.kind not in _INT_KINDS or t.bits not in _WIDTHS or ins.mods:
        return None
    d, a, n = ins.ops
    if d.kind != REG or d.bits != t.bits or a.kind != REG or a.bits != t.bits or not (n.kind == IMM and _fits(n, 32)):
        return None
    k = int(np.asarray(_imm_value(n, TYPES["u32"])))
    if k >= t.bits:
        return None
    dt = t.dtype if (ins.op == "shr" and t.signed) else t.uint
    ufunc = np.left_shift if ins.op == "shl" else np.right_shift
    return _binary_handler(generic, ufunc, d.idx, (a.idx, None), (-1, dt.type(k)), dt)


def _setp(ins, generic):
    t = ins.types[-1]
    cmp = ins.aux.cmp
    if len(ins.types) != 1 or ins.aux.combine is not None or ins.ops[0].kind != REG or len(ins.ops) != 3:
        return None
    if t.kind in _INT_KINDS and t.bits in _WIDTHS and ins.mods == {cmp} and cmp in _INT_CMP:
        ufunc, dt = _INT_CMP[cmp], (t.uint if cmp in _UNSIGNED_CMP else t.dtype)
    elif t.kind == "f" and t.bits in (32, 64) and ins.mods == {cmp} and cmp in _CMP:
        ufunc, dt = _CMP[cmp], t.dtype
    else:
        return None
    d, a, b = ins.ops
    if d.bits != 1 or not (_fits(a, t.bits) and _fits(b, t.bits)):
        return None
    ia, ca = _source(a, t, dt)
    ib, cb = _source(b, t, dt)
    dst = d.idx
    if ia < 0 and ib < 0:
        return None

    def h(st, ins, lanes):
        if lanes is not FULL:
            return generic(st, ins, lanes)
        r = st.regs
        ufunc(r[ia].view(dt) if ia >= 0 else ca, r[ib].view(dt) if ib >= 0 else cb, out=r[dst])
    return h


def _selp(ins, generic):
    t = ins.types[0]
    if len(ins.types) != 1 or ins.mods or t.bits not in _WIDTHS or t.kind not in _INT_KINDS + ("f",):
        return None
    d, a, b, c = ins.ops
    if d.kind != REG or d.bits != t.bits or not (_fits(a, t.bits) and _fits(b, t.bits)):
        return None
    if c.kind != REG or c.bits != 1:
        return None
    dt = t.uint
    ia, ca = _source(a, t, dt)
    ib, cb = _source(b, t, dt)
    dst, ic = d.idx, c.idx

    if ib < 0 and cb == 0 and t.kind in _INT_KINDS:  # selp d, a, 0, p (Numba's index wraparound): d = p * a
        def h(st, ins, lanes):
            if lanes is not FULL:
                return generic(st, ins, lanes)
            r = st.regs
            np.multiply(r[ic], r[ia] if ia >= 0 else ca, out=r[dst])
        return h

    def h(st, ins, lanes):
        if lanes is not FULL:
            return generic(st, ins, lanes)
        r = st.regs
        np.copyto(r[dst], np.where(r[ic], r[ia] if ia >= 0 else ca, r[ib] if ib >= 0 else cb))
    return h


def _mov(ins, generic):
    t = ins.types[0] if len(ins.types) == 1 else None
    if t is None or ins.mods or t.bits not in _WIDTHS or t.kind not in _INT_KINDS + ("f",):
        return None
    d, s = ins.ops
    if d.kind != REG or d.bits != t.bits or not _fits(s, t.bits):
        return None
    dst, (i, c) = d.idx, _source(s, t, t.uint)

    def h(st, ins, lanes):
        if lanes is not FULL:
            return generic(st, ins, lanes)
        r = st.regs
        np.copyto(r[dst], r[i] if i >= 0 else c)
    return h


def _cvt(ins, generic):
    """Integer -> integer without .sat: truncation, or extension by the source's signedness."""
    d_t, s_t = ins.types
    if ins.mods or ins.aux.packed or d_t.kind not in _INT_KINDS or s_t.kind not in _INT_KINDS:
        return None
    if d_t.bits not in _WIDTHS or s_t.bits not in _WIDTHS:
        return None
    d, s = ins.ops
    if d.kind != REG or d.bits != d_t.bits or s.kind != REG or s.bits != s_t.bits:
        return None
    src_dt = SINT[s_t.bits] if s_t.signed else UINT[s_t.bits]
    dst_dt = SINT[d_t.bits] if s_t.signed else UINT[d_t.bits]
    dst, i = d.idx, s.idx

    def h(st, ins, lanes):
        if lanes is not FULL:
            return generic(st, ins, lanes)
        r = st.regs
        np.copyto(r[dst].view(dst_dt), r[i].view(src_dt), casting="unsafe")
    return h


_F64 = np.dtype(np.float64)
_U64 = np.dtype(np.uint64)


def _fma(ins, generic):
    """fma.rn.f32 / mad.rn.f32: the f64 product is exact; RN64 of the sum then RN32 is the single rounding except on
    f32 ties and below f32's normal range (numerics.fma_f32's reasoning); there, the lanes whose f64 sum was inexact
    or tiny are rounded once from the exact pair (numerics.round_sum_f32), as fma_f32 does.

    NOTE: shaped by a Numba GEMM's inner loop (32768-lane vectors of bf16-valued products into f32 sums; one lane in
    forty is a tie, all of them exact): operands are widened by astype (a ufunc casting its f32 operands itself runs
    a slower buffered loop), the product keeps its own array so the exact test gathers it instead of the operands,
    the tiny mask is skipped when min |sum| >= 2^-126 (no tiny or zero lane: two passes instead of four) and the
    index lists come from ndarray.nonzero (without np.flatnonzero's Python wrapper). 1.3x the previous handler in a
    sampled dsv3-prefill Numba grouped_gemm up launch (67 s -> 52 s over its 458,752 calls, mean of two runs each).
    Bitwise identical to fma_f32 on every input (tests/ptxsim/test_fast_fma.py).
    """
    t = ins.types[0]
    if len(ins.types) != 1 or t.name != "f32" or not ins.mods <= {".rn"}:
        return None
    d, a, b, c = ins.ops
    if d.kind != REG or d.bits != 32 or not all(_fits(o, 32) for o in (a, b, c)):
        return None
    f32 = np.dtype(np.float32)
    srcs = [_source(o, t, f32) for o in (a, b, c)]
    if all(i < 0 for i, _ in srcs):
        return None
    (ia, ca), (ib, cb), (ic, cc) = ((i, None if v is None else np.float64(v)) for i, v in srcs)
    dst, vector_p = d.idx, ia >= 0 or ib >= 0
    below, tie, expo, one, normal_min1, f32_tiny = nm._BELOW_F32, nm._F32_TIE, nm._EXPONENT, np.uint64(1), \
        nm._F32_NORMAL_MIN - np.uint64(1), np.float64(nm.F32_TINY)

    def h(st, ins, lanes):
        if lanes is not FULL:
            return generic(st, ins, lanes)
        r = st.regs
        x = r[ia].view(f32).astype(_F64) if ia >= 0 else ca
        y = r[ib].view(f32).astype(_F64) if ib >= 0 else cb
        z = r[ic].view(f32).astype(_F64) if ic >= 0 else cc
        p = np.multiply(x, y, out=x) if ia >= 0 else np.multiply(y, x, out=y) if ib >= 0 else x * y  # exact
        s = np.add(p, z)
        bits = s.view(_U64)
        k = np.bitwise_and(bits, below)
        risky = np.equal(k, tie)
        tiny = None
        if not np.abs(s, out=k.view(_F64)).min() >= f32_tiny:  # some sum is tiny, zero or NaN
            np.bitwise_and(bits, expo, out=k)
            k -= one  # NOTE: a zero sum (exponent 0, wrapped to the top) is exact (an IEEE sum is 0 only when exact)
            tiny = np.less(k, normal_min1)  # and f32 operands never make an f64-subnormal one: 0 < |s| < 2^-126
            risky |= tiny
        idx = risky.nonzero()[0]
        out = r[dst].view(f32)
        if idx.size:  # ties and tiny sums: exact ones are right already, inexact or tiny ones are rounded once
            ss = s[idx]
            ps = p[idx] if vector_p else p
            cs = z[idx] if ic >= 0 else z
            ok = np.equal(np.subtract(ss, ps), cs)  # as in numerics.fma_f32 (Fast2Sum's test, both orders)
            ok &= np.equal(np.subtract(ss, cs, out=ss), ps)
            bad = (np.logical_not(ok, out=ok) if tiny is None else np.less_equal(ok, tiny[idx], out=ok)).nonzero()[0]
            if bad.size:
                fix = nm.round_sum_f32(ps[bad] if vector_p else ps, cs[bad] if ic >= 0 else cs)
                np.copyto(out, s, casting="same_kind")
                out[idx[bad]] = fix
                return
        np.copyto(out, s, casting="same_kind")
    return h


_TABLE = {"add": _arith, "sub": _arith, "mul": _arith, "and": _int_binary, "or": _int_binary,
          "xor": _int_binary, "min": _int_binary, "max": _int_binary, "shl": _shift, "shr": _shift,
          "setp": _setp, "selp": _selp, "mov": _mov, "cvt": _cvt, "fma": _fma, "mad": _fma}


def specialise(ins):
    """A fast handler for the decoded instruction `ins` (its generic handler already chosen), or None."""
    make = _TABLE.get(ins.op)
    if make is None or ins.control or not ins.types:
        return None
    h = make(ins, ins.handler)
    if h is not None:
        h.generic = ins.handler  # what it runs on part of the lanes (and what the table lists)
    return h

"""Floating-point building blocks: exact sums/products, round-to-odd, directed rounding, ftz, bf16/f16/fp8 packing."""
from __future__ import annotations

import numpy as np

F32_TINY = np.float32(np.finfo(np.float32).tiny)
F64_TINY = np.float64(np.finfo(np.float64).tiny)


def two_sum(a, b):
    """s = RN(a+b) and the exact error e with a + b = s + e (f64)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, np.where(np.isfinite(s), e, 0.0)


def _split(a):
    c = 134217729.0 * a
    hi = c - (c - a)
    return hi, a - hi


def two_prod(a, b):
    """p = RN(a*b) and the exact error e with a*b = p + e (f64, Dekker)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, np.where(np.isfinite(p), e, 0.0)


def round_to_odd64(hi, lo):
    """RO(hi + lo) in f64 where hi = RN(hi+lo): truncate toward zero, then force the last mantissa bit to 1."""
    hi = np.asarray(hi, np.float64)
    lo = np.asarray(lo, np.float64)
    inexact = lo != 0
    if not np.any(inexact):
        return hi
    over = inexact & (np.signbit(lo) != np.signbit(hi)) & (hi != 0)  # RN went away from zero
    t = np.where(over, np.nextafter(hi, np.zeros_like(hi)), hi)
    t = np.where((hi == 0) & inexact, lo, t)  # hi == 0: the value is lo itself (tiny); lo is exact then
    bits = t.view(np.uint64) | np.where(inexact & (hi != 0), np.uint64(1), np.uint64(0))
    return bits.view(np.float64)


def f64_to_f32(hi, lo=None, mode=".rn"):
    """Round the exact value hi + lo (f64 pair) to f32 with the PTX rounding mode (.rn .rz .rm .rp)."""
    hi = np.asarray(hi, np.float64)
    if lo is None:
        lo = np.zeros_like(hi)
    with np.errstate(all="ignore"):
        if mode in (".rn", ".rni", ""):
            return round_to_odd64(hi, lo).astype(np.float32)
        r = hi.astype(np.float32)
        d = (hi - r.astype(np.float64)) + lo  # exact value minus r (sign is exact)
        return _directed(r, d, mode, np.float32)


def _directed(r, d, mode, dt):
    """Step the RN result r one ulp when it lies on the wrong side of the exact value (d = exact - r)."""
    inf = dt(np.inf)
    fin = np.isfinite(r)
    if mode == ".rm":
        out = np.where((d < 0) & fin, np.nextafter(r, -inf), r)
        return np.where(np.isposinf(r) & (d < 0), np.finfo(dt).max, out)
    if mode == ".rp":
        out = np.where((d > 0) & fin, np.nextafter(r, inf), r)
        return np.where(np.isneginf(r) & (d > 0), -np.finfo(dt).max, out)
    if mode == ".rz":
        toward = (d != 0) & (np.signbit(d) != np.signbit(r)) & (r != 0) & fin
        out = np.where(toward, np.nextafter(r, np.zeros_like(r)), r)
        return np.where(np.isinf(r) & (d != 0) & (np.signbit(d) != np.signbit(r)), np.copysign(np.finfo(dt).max, r),
                        out)
    raise ValueError(mode)


def directed64(r, err, mode):
    """Directed rounding of an f64 operation whose RN result is r with exact error err."""
    if mode in (".rn", ""):
        return r
    return _directed(r, err, mode, np.float64)


def ftz32(x):
    """Flush f32 subnormals to sign-preserving zero."""
    x = np.asarray(x, np.float32)
    return np.where(np.abs(x) < F32_TINY, np.copysign(np.float32(0), x), x).astype(np.float32)


def sat01(x):
    """.sat: clamp to [0, 1], NaN -> +0."""
    x = np.asarray(x)
    return np.where(np.isnan(x), x.dtype.type(0), np.clip(x, 0, 1)).astype(x.dtype)


# f64 bits below an f32 mantissa's last place (52 - 23 = 29) and their pattern at an f32 midpoint (a tie); f64
# exponent field of f32's smallest normal (2^-126): below it the f32 ulp is coarser than the tie pattern assumes
_BELOW_F32 = np.uint64((1 << 29) - 1)
_F32_TIE = np.uint64(1 << 28)
_EXPONENT = np.uint64(0x7FF0000000000000)
_F32_NORMAL_MIN = np.uint64((1023 - 126) << 52)


def round_sum_f32(p, c):
    """RN32 of the exact sum of the f64 values p and c (TwoSum, then round-to-odd to f64 and RN to f32)."""
    with np.errstate(all="ignore"):
        return f64_to_f32(*two_sum(p, c))


def fma_f32(a, b, c, mode=".rn"):
    """a*b + c with a single rounding to f32 (the product is exact in f64; TwoSum + round-to-odd for the sum).

    NOTE: round to nearest takes a fast path: RN64(p + c) then RN32 rounds twice, which differs from one rounding
    only when the f64 sum was inexact and landed exactly on an f32 tie, or lies below f32's normal range; only lanes
    that are ties or tiny are tested for exactness (Fast2Sum's test, both orders), and only inexact ones take the
    exact path. 1.6x faster on a Numba GEMM's FMA stream; bitwise identical (tests/ptxsim/test_instructions.py).
    """
    with np.errstate(all="ignore"):
        p = np.asarray(a, np.float32).astype(np.float64) * np.asarray(b, np.float32).astype(np.float64)
        c64 = np.asarray(c, np.float32).astype(np.float64)
        if mode not in (".rn", ""):
            s, e = two_sum(p, c64)
            return f64_to_f32(s, e, mode)
        p, c64 = (np.reshape(x, -1) for x in np.broadcast_arrays(p, c64))
        s = p + c64
        r = s.astype(np.float32)
        bits = s.view(np.uint64)
        risky = ((bits & _BELOW_F32) == _F32_TIE) | ((bits & _EXPONENT) < _F32_NORMAL_MIN)
        if risky.any():
            idx = np.flatnonzero(risky)
            ps, cs, ss = p[idx], c64[idx], s[idx]
            # s - p == c and s - c == p hold both exactly when no rounding happened (one of them is exact anyway)
            # a zero sum is exact too (an IEEE sum rounds to 0 only when it is 0): a GEMM's zero rows stay fast
            exact = (ss - ps == cs) & (ss - cs == ps) & ((np.abs(ss) >= F32_TINY) | (ss == 0))
            idx = idx[~exact]
            if idx.size:
                r[idx] = round_sum_f32(p[idx], c64[idx])
        return r.reshape(np.broadcast_shapes(np.shape(a), np.shape(b), np.shape(c)))


def fma_f64(a, b, c, mode=".rn"):
    """a*b + c with a single rounding in f64 (Boldo-Melquiond: TwoProduct, TwoSum, round-to-odd of the tail)."""
    with np.errstate(all="ignore"):
        a, b, c = (np.asarray(x, np.float64) for x in (a, b, c))
        uh, ul = two_prod(a, b)
        th, tl = two_sum(c, uh)
        vs, ve = two_sum(tl, ul)
        v = round_to_odd64(vs, ve)
        r, err = two_sum(th, v)
        naive = a * b + c
        r = np.where(np.isfinite(uh) & np.isfinite(th), r, naive)
        return directed64(r, np.where(np.isfinite(r), err, 0.0), mode) if mode not in (".rn", "") else r


def f32_to_bf16_bits(x, mode=".rn"):
    """f32 -> bf16 bits (round to nearest even by default; NaN stays a quiet NaN)."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    nan = np.isnan(np.asarray(x, np.float32))
    if mode == ".rz":
        r = u >> np.uint64(16)
    else:
        r = (u + np.uint64(0x7FFF) + ((u >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)
    r = np.where(nan, (u >> np.uint64(16)) | np.uint64(0x40), r)
    return (r & np.uint64(0xFFFF)).astype(np.uint16)


def bf16_bits_to_f32(b):
    return (np.asarray(b).astype(np.uint32) << np.uint32(16)).view(np.float32)


def f64_to_f32_ro(x):
    """Round-to-odd from f64 to f32 (so a later RN to a narrower format rounds once)."""
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        r = x.astype(np.float32)
        d = x - r.astype(np.float64)
        return np.where(d != 0, f64_to_f32(x, None, ".rz").view(np.uint32) | np.uint32(1),
                        r.view(np.uint32)).view(np.float32)


def to_half_bits(x32, kind: str, relu=False, satfinite=False):
    """f32 -> 16-bit float bits of kind 'f16' or 'bf16', RN."""
    x = np.asarray(x32, np.float32)
    if relu:
        x = np.where(np.isnan(x), x, np.maximum(x, np.float32(0)))
    if kind == "bf16":
        if satfinite:
            x = np.where(np.isnan(x), x, np.clip(x, -3.3895314e38, 3.3895314e38)).astype(np.float32)
        return f32_to_bf16_bits(x)
    with np.errstate(all="ignore"):
        h = x.astype(np.float16)
    if satfinite:
        h = np.where(np.isinf(h), np.copysign(np.float16(65504), h), h).astype(np.float16)
    return h.view(np.uint16)


def half_bits_to_f32(bits, kind: str):
    b = np.asarray(bits).astype(np.uint16)
    if kind == "bf16":
        return bf16_bits_to_f32(b)
    return b.view(np.float16).astype(np.float32)


_FP8_MAX = {"e4m3": 448.0, "e5m2": 57344.0}


def to_fp8_bits(x32, kind: str, relu=False):
    """f32 -> e4m3 / e5m2 bits with .rn.satfinite: |x| beyond the max clamps to +-max, NaN stays NaN."""
    import ml_dtypes

    x = np.asarray(x32, np.float32)
    if relu:
        x = np.where(np.isnan(x), x, np.maximum(x, np.float32(0)))
    m = np.float32(_FP8_MAX[kind])
    x = np.where(np.isnan(x), x, np.clip(x, -m, m)).astype(np.float32)
    dt = ml_dtypes.float8_e4m3fn if kind == "e4m3" else ml_dtypes.float8_e5m2
    out = x.astype(dt).view(np.uint8)
    if kind == "e4m3":
        out = np.where(np.isnan(x), np.uint8(0x7F), out)
    else:
        out = np.where(np.isnan(x), np.uint8(0x7F), out)
    return out.astype(np.uint8)


def fp8_bits_to_f32(bits, kind: str):
    import ml_dtypes

    dt = ml_dtypes.float8_e4m3fn if kind == "e4m3" else ml_dtypes.float8_e5m2
    return np.asarray(bits).astype(np.uint8).view(dt).astype(np.float32)

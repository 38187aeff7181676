"""Per-instruction corners from docs/ptx-notes.md, on hand-written PTX, against independent references."""
from fractions import Fraction

import numpy as np
import pytest
from ptxkit import fp8_ref, round_exact, run

import ptxsim

pytestmark = pytest.mark.sim


def _shfl_ref(vals, mode, b, c):
    out, ok = np.zeros(32, np.uint32), np.zeros(32, bool)
    bval, cval, seg = b & 31, c & 31, (c >> 8) & 31
    for lane in range(32):
        max_lane = (lane & seg) | (cval & ~seg)
        min_lane = lane & seg
        j, p = {"up": (lane - bval, lane - bval >= max_lane), "down": (lane + bval, lane + bval <= max_lane),
                "bfly": (lane ^ bval, (lane ^ bval) <= max_lane),
                "idx": (min_lane | (bval & ~seg), (min_lane | (bval & ~seg)) <= max_lane)}[mode]
        out[lane], ok[lane] = (vals[j], True) if p else (vals[lane], False)
    return out, ok


@pytest.mark.parametrize("mode", ["up", "down", "bfly", "idx"])
def test_shfl_clamps_and_segments(mode, rng):
    vals = rng.integers(0, 1 << 32, 32, dtype=np.uint64).astype(np.uint32)
    cases = [(1, 0x1F if mode != "up" else 0), (5, 0x181F if mode != "up" else 0x1800), (3, 0x1C1F),
             (int(rng.integers(0, 32)), int(rng.integers(0, 1 << 13)))]
    for b, c in cases:
        body = f"""ld.global.u32 %r1, [%rd7];
  shfl.sync.{mode}.b32 %r2|%p1, %r1, {b}, {c}, 0xffffffff;
  selp.u32 %r3, 1, 0, %p1;
  st.global.u32 [%rd8], %r2; st.global.u32 [%rd9], %r3;"""
        _, d, p = run(body, vals.copy(), np.zeros(32, np.uint32), np.zeros(32, np.uint32))
        want, ok = _shfl_ref(vals, mode, b, c)
        np.testing.assert_array_equal(d, want, err_msg=f"b={b} c={c:#x}")
        np.testing.assert_array_equal(p.astype(bool), ok, err_msg=f"b={b} c={c:#x}")


def _specials():
    return np.array([0, -0.0, 448, 464, 480, 449, 1e9, -1e9, np.inf, -np.inf, np.nan, 2.0**-9, 2.0**-10, 3 * 2.0**-10,
                     57344, 61440, 65536, 2.0**-16, 2.0**-17, 0.5625, 240, 232, 248], np.float32)


@pytest.mark.parametrize("kind,maxv", [("e4m3", 448.0), ("e5m2", 57344.0)])
def test_cvt_fp8x2_byte_order_and_satfinite(kind, maxv, rng):
    tab = fp8_table_mid(kind)
    x = np.concatenate([_specials(), tab, -tab, (rng.standard_normal(200) * maxv / 8).astype(np.float32)])
    x = x[: len(x) // 2 * 2].astype(np.float32)
    a, b = x[0::2].copy(), x[1::2].copy()
    out = np.zeros(len(a), np.uint32)
    body = f"""ld.global.f32 %f1, [%rd7]; ld.global.f32 %f2, [%rd8];
  cvt.rn.satfinite.{kind}x2.f32 %h1, %f1, %f2;
  cvt.u32.u16 %r1, %h1; st.global.u32 [%rd9], %r1;"""
    run(body, a, b, out)
    np.testing.assert_array_equal(out >> 8, fp8_ref(a, kind))  # a -> the HIGH byte
    np.testing.assert_array_equal(out & 0xFF, fp8_ref(b, kind))
    back = np.zeros(len(a), np.uint32)
    run(f"""ld.global.u32 %r1, [%rd7]; cvt.u16.u32 %h1, %r1; cvt.rn.f16x2.{kind}x2 %r2, %h1;
  st.global.u32 [%rd8], %r2;""", out.copy(), back)
    hi = back >> 16
    fin = ~np.isnan(a)
    want = np.clip(np.abs(a.astype(np.float64)), 0, maxv)
    assert np.all(np.abs(hi.astype(np.uint16).view(np.float16)[fin].astype(np.float64)) <= maxv)
    np.testing.assert_array_equal(np.isnan(hi.astype(np.uint16).view(np.float16)), ~fin)
    _ = want


def fp8_table_mid(kind):
    from ptxkit import fp8_table

    t = fp8_table(kind)
    return np.concatenate([t, (t[1:] + t[:-1]) / 2]).astype(np.float32)  # every value and every tie


def test_cvt_bf16x2_f16x2_high_half_relu(rng):
    a = rng.standard_normal(64).astype(np.float32) * 100
    b = rng.standard_normal(64).astype(np.float32) * 100
    outs = [np.zeros(64, np.uint32) for _ in range(2)]
    run("""ld.global.f32 %f1, [%rd7]; ld.global.f32 %f2, [%rd8];
  cvt.rn.relu.bf16x2.f32 %r1, %f1, %f2; cvt.rn.f16x2.f32 %r2, %f1, %f2;
  st.global.u32 [%rd9], %r1; st.global.u32 [%rd10], %r2;""", a, b, *outs)
    import ml_dtypes
    bf = lambda v: np.maximum(v, 0).astype(ml_dtypes.bfloat16).view(np.uint16)  # noqa: E731
    np.testing.assert_array_equal(outs[0] >> 16, bf(a))
    np.testing.assert_array_equal(outs[0] & 0xFFFF, bf(b))
    np.testing.assert_array_equal(outs[1] >> 16, a.astype(np.float16).view(np.uint16))
    np.testing.assert_array_equal(outs[1] & 0xFFFF, b.astype(np.float16).view(np.uint16))


def _exact_fma(a, b, c, dt, mode):
    return np.array([round_exact(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)), dt, mode)
                     for x, y, z in zip(a, b, c, strict=True)], dt)


@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
def test_fma_f32_single_rounding(mode, rng):
    n = 64
    a = (rng.standard_normal(n) * 2.0 ** rng.integers(-20, 20, n)).astype(np.float32)
    b = (rng.standard_normal(n) * 2.0 ** rng.integers(-20, 20, n)).astype(np.float32)
    c = (-(a.astype(np.float64) * b) * (1 + rng.standard_normal(n) * 1e-7)).astype(np.float32)  # cancellation
    a[0] = b[0] = np.float32(1 + 2.0**-12)
    c[0] = np.float32(2.0**-60)  # the note's double-rounding case
    d = np.zeros(n, np.float32)
    run(f"""ld.global.f32 %f1, [%rd7]; ld.global.f32 %f2, [%rd8]; ld.global.f32 %f3, [%rd9];
  fma.{mode}.f32 %f4, %f1, %f2, %f3; st.global.f32 [%rd10], %f4;""", a, b, c, d)
    np.testing.assert_array_equal(d, _exact_fma(a, b, c, np.float32, mode))
    if mode == "rn":
        naive = np.float32(np.float64(a[0]) * np.float64(b[0]) + np.float64(c[0]))
        assert d[0] != naive  # the double-rounded result differs in the last bit


def test_fma_f32_fast_path_rounds_once_at_ties_and_subnormals(rng):
    """fma.rn.f32 rounds RN64(a*b + c) to f32 unless that f64 sum is an f32 tie or subnormal: each case here lands
    on one of those (or next to one) and must still equal the exactly rounded value."""
    from ptxsim.numerics import fma_f32

    n = 96
    a = (rng.standard_normal(n) * 2.0 ** rng.integers(-10, 10, n)).astype(np.float32)
    b = (rng.standard_normal(n) * 2.0 ** rng.integers(-10, 10, n)).astype(np.float32)
    c = (rng.standard_normal(n) * 2.0 ** rng.integers(-20, 20, n)).astype(np.float32)
    one = np.float32(1 + 2.0**-12)
    a[:8], b[:8] = one, one  # (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24: exactly an f32 tie before c
    c[:8] = np.float32(2.0**-60) * np.array([1, -1, 3, -3, 0.5, -0.5, 2**20, -(2**20)], np.float32)
    a[8:24] = np.float32(2.0**-70)  # products near f32's subnormal range (2^-126 .. 2^-149)
    b[8:24] = (rng.standard_normal(16) * 2.0 ** rng.integers(-70, -55, 16)).astype(np.float32)
    c[8:24] = (rng.standard_normal(16) * 2.0**-140).astype(np.float32)
    want = np.array([round_exact(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)), np.float32, "rn")
                     for x, y, z in zip(a, b, c, strict=True)], np.float32)
    got = fma_f32(a, b, c)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    naive = (a.astype(np.float64) * b + c).astype(np.float32)
    assert np.any(naive[:8] != want[:8])  # the tie cases do double-round without the exact path


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
@pytest.mark.parametrize("mode", ["rz", "rm", "rp"])
def test_directed_rounding_f32(op, mode, rng):
    a = (rng.standard_normal(64) * 2.0 ** rng.integers(-30, 30, 64)).astype(np.float32)
    b = (rng.standard_normal(64) * 2.0 ** rng.integers(-30, 30, 64)).astype(np.float32)
    d = np.zeros(64, np.float32)
    run(f"""ld.global.f32 %f1, [%rd7]; ld.global.f32 %f2, [%rd8]; {op}.{mode}.f32 %f3, %f1, %f2;
  st.global.f32 [%rd9], %f3;""", a, b, d)
    f = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y}[op]
    want = [round_exact(f(Fraction(float(x)), Fraction(float(y))), np.float32, mode)
            for x, y in zip(a, b, strict=True)]
    np.testing.assert_array_equal(d, np.array(want, np.float32))


def test_fma_f64_correctly_rounded(rng):
    n = 64
    a = rng.standard_normal(n) * 2.0 ** rng.integers(-40, 40, n)
    b = rng.standard_normal(n) * 2.0 ** rng.integers(-40, 40, n)
    c = -(a * b) * (1 + rng.standard_normal(n) * 1e-15)
    a[0] = b[0] = 1 + 2.0**-27
    c[0] = 2.0**-106
    d = np.zeros(n)
    run("""ld.global.f64 %fd1, [%rd11]; ld.global.f64 %fd2, [%rd12]; ld.global.f64 %fd3, [%rd13];
  fma.rn.f64 %fd4, %fd1, %fd2, %fd3; st.global.f64 [%rd14], %fd4;""", a, b, c, d)
    np.testing.assert_array_equal(d, _exact_fma(a, b, c, np.float64, "rn"))


def test_atomics_on_one_address_in_lane_order(rng):
    n = 96
    v = rng.integers(1, 1000, n).astype(np.uint32)
    ctr, old = np.full(1, 7, np.uint32), np.zeros(n, np.uint32)
    run("""ld.global.u32 %r1, [%rd7]; atom.global.add.u32 %r2, [%rd2], %r1; st.global.u32 [%rd9], %r2;""",
        v, ctr, old, threads=n)
    np.testing.assert_array_equal(old, 7 + np.concatenate(([0], np.cumsum(v)[:-1])))
    assert ctr[0] == 7 + v.sum()
    f = rng.standard_normal(n).astype(np.float32)
    acc, fold = np.zeros(1, np.float32), np.zeros(n, np.float32)
    run("""ld.global.f32 %f1, [%rd7]; atom.global.add.f32 %f2, [%rd2], %f1; st.global.f32 [%rd9], %f2;""",
        f, acc, fold, threads=n)
    seq = np.zeros(n + 1, np.float32)
    for i in range(n):
        seq[i + 1] = np.float32(seq[i] + f[i])
    np.testing.assert_array_equal(fold, seq[:-1])
    assert acc[0] == seq[-1]
    x, xo = np.full(1, 99, np.uint32), np.zeros(n, np.uint32)
    run("""atom.global.exch.b32 %r2, [%rd2], %r0; st.global.u32 [%rd9], %r2;""", np.zeros(n, np.uint32), x, xo,
        threads=n)
    np.testing.assert_array_equal(xo, np.concatenate(([99], np.arange(n - 1))))
    assert x[0] == n - 1
    w, wo = np.zeros(1, np.uint32), np.zeros(n, np.uint32)
    run("""atom.global.inc.u32 %r2, [%rd2], 4; st.global.u32 [%rd9], %r2;""", np.zeros(n, np.uint32), w, wo,
        threads=n)
    np.testing.assert_array_equal(wo, np.arange(n) % 5)
    cas, co = np.zeros(1, np.uint32), np.zeros(n, np.uint32)  # only the lane whose id matches succeeds, in order
    run("""atom.global.cas.b32 %r2, [%rd2], %r0, 1000; st.global.u32 [%rd9], %r2;""", np.zeros(n, np.uint32), cas, co,
        threads=n)
    assert cas[0] == 1000 and co[0] == 0 and np.all(co[1:] == 1000)


def test_shared_atomics_and_red():
    n = 64
    out = np.zeros(n, np.uint32)
    body = """.shared .align 4 .b32 cnt[4];
  st.shared.u32 [cnt], 0; st.shared.u32 [cnt+4], 0; bar.sync 0;
  and.b32 %r1, %r0, 1; mul.lo.u32 %r1, %r1, 4; mov.u32 %r3, cnt; add.u32 %r3, %r3, %r1;
  atom.shared.add.u32 %r2, [%r3], 1; red.shared.add.u32 [cnt+8], 2; bar.sync 0;
  ld.shared.u32 %r4, [cnt+8]; shl.b32 %r4, %r4, 16; or.b32 %r2, %r2, %r4; st.global.u32 [%rd7], %r2;"""
    body = body.replace(".shared .align 4 .b32 cnt[4];\n", "")
    src = run.__globals__["TEMPLATE"].replace("BODY", body).replace(".visible .entry", ".shared .align 4 .b32 cnt[4];\n"
                                                                      ".visible .entry")
    k = ptxsim.load_ptx(src).kernel("k")
    ptxsim.launch(k, 1, n, [out, out[:1].copy(), out[:1].copy(), out[:1].copy()])
    np.testing.assert_array_equal(out & 0xFFFF, np.arange(n) // 2)
    assert np.all(out >> 16 == 2 * n)


INT_CASES = [
    ("add.sat.s32 %r3, %r1, %r2;", lambda a, b: np.clip(a.astype(np.int64) + b, -2**31, 2**31 - 1), "s32"),
    ("mul.hi.s32 %r3, %r1, %r2;", lambda a, b: (a.astype(np.int64) * b) >> 32, "s32"),
    ("div.s32 %r3, %r1, %r2;", lambda a, b: np.trunc(a.astype(np.float64) / b), "s32"),
    ("rem.s32 %r3, %r1, %r2;", lambda a, b: np.fmod(a.astype(np.int64), b.astype(np.int64)), "s32"),
    ("bfe.s32 %r3, %r1, 5, 9;", lambda a, b: ((a.astype(np.int64) >> 5) & 0x1FF) - (((a >> 13) & 1) << 9), "s32"),
    ("bfe.u32 %r3, %r1, 28, 9;", lambda a, b: (a.view(np.uint32).astype(np.int64) >> 28) & 0xF, "s32"),
    ("bfi.b32 %r3, %r1, %r2, 8, 12;", lambda a, b: (b.view(np.uint32) & ~np.uint32(0xFFF00)) |
     ((a.view(np.uint32) << np.uint32(8)) & np.uint32(0xFFF00)), "u32"),
    ("shr.s32 %r3, %r1, 40;", lambda a, b: np.where(a < 0, -1, 0), "s32"),
    ("shl.b32 %r3, %r1, 33;", lambda a, b: 0 * a, "s32"),
    ("shf.l.clamp.b32 %r3, %r1, %r2, 40;", lambda a, b: a, "s32"),  # n clamps to 32: d = a
    ("clz.b32 %r3, %r1;", lambda a, b: np.array([32 - int(x).bit_length() for x in a.view(np.uint32)]), "s32"),
    ("bfind.u32 %r3, %r1;", lambda a, b: np.array([int(x).bit_length() - 1 if x else -1 for x in a.view(np.uint32)]),
     "s32"),
    ("prmt.b32 %r3, %r1, %r2, 0x8e2d;", None, "u32"),
    ("lop3.b32 %r3, %r1, %r2, %r1, 0x96;", lambda a, b: a ^ b ^ a, "s32"),
]


@pytest.mark.parametrize("text,ref,kind", INT_CASES, ids=[c[0].split()[0] for c in INT_CASES])
def test_integer_corners(text, ref, kind, rng):
    a = rng.integers(-2**31, 2**31, 64).astype(np.int32)
    b = rng.integers(-2**31, 2**31, 64).astype(np.int32)
    a[:6] = [0, -1, -2**31, 2**31 - 1, 7, -7]
    b[:6] = [1, -1, -1, 2**31 - 1, 2, 2]
    if text.startswith(("div", "rem")):
        a[2] = 5  # leave INT_MIN / -1 out: its value is undefined in PTX
    d = np.zeros(64, np.int32)
    run(f"ld.global.u32 %r1, [%rd7]; ld.global.u32 %r2, [%rd8]; {text} st.global.u32 [%rd9], %r3;", a, b, d)
    if ref is None:  # prmt with sign replication: selector nibbles 0xd,0x2,0xe,0x8
        pool = a.view(np.uint32).astype(np.uint64) | (b.view(np.uint32).astype(np.uint64) << np.uint64(32))
        want = np.zeros(64, np.uint64)
        for k, sel in enumerate([0xD, 0x2, 0xE, 0x8]):
            byte = (pool >> np.uint64(8 * (sel & 7))) & np.uint64(0xFF)
            if sel & 8:
                byte = np.where(byte & np.uint64(0x80), np.uint64(0xFF), np.uint64(0))
            want |= byte << np.uint64(8 * k)
        np.testing.assert_array_equal(d.view(np.uint32), want.astype(np.uint32))
        return
    want = np.asarray(ref(a, b)).astype(np.int64) & 0xFFFFFFFF
    np.testing.assert_array_equal(d.view(np.uint32), want.astype(np.uint32))


def test_wide_and_64bit_multiply(rng):
    a = rng.integers(0, 2**64, 32, dtype=np.uint64)
    b = rng.integers(0, 2**64, 32, dtype=np.uint64)
    hi, shi = np.zeros(32, np.uint64), np.zeros(32, np.uint64)
    run("""ld.global.u64 %rd15, [%rd11]; ld.global.u64 %rd16, [%rd12];
  mul.hi.u64 %rd17, %rd15, %rd16; mul.hi.s64 %rd18, %rd15, %rd16;
  st.global.u64 [%rd13], %rd17; st.global.u64 [%rd14], %rd18;""", a, b, hi, shi)
    np.testing.assert_array_equal(hi, [(int(x) * int(y)) >> 64 for x, y in zip(a, b, strict=True)])
    sa, sb = a.view(np.int64), b.view(np.int64)
    np.testing.assert_array_equal(shi, [((int(x) * int(y)) >> 64) & (2**64 - 1)
                                        for x, y in zip(sa, sb, strict=True)])


def test_float_compare_minmax_and_cvt_to_int(rng):
    a = np.array([np.nan, 1.0, -0.0, 2.5, -2.5, 3.5, 1e20, -1e20, np.inf, 0.5], np.float32)
    b = np.array([1.0, np.nan, 0.0, 2.5, 1.0, np.nan, 0.0, 0.0, 1.0, 0.5], np.float32)
    out = np.zeros(10, np.uint32)
    run("""ld.global.f32 %f1, [%rd7]; ld.global.f32 %f2, [%rd8];
  setp.lt.f32 %p1, %f1, %f2; setp.ltu.f32 %p2, %f1, %f2; setp.ne.f32 %p3, %f1, %f2; setp.nan.f32 %p4, %f1, %f2;
  selp.u32 %r1, 1, 0, %p1; selp.u32 %r2, 2, 0, %p2; selp.u32 %r3, 4, 0, %p3; selp.u32 %r4, 8, 0, %p4;
  or.b32 %r1, %r1, %r2; or.b32 %r1, %r1, %r3; or.b32 %r1, %r1, %r4;
  cvt.rni.s32.f32 %r5, %f1; and.b32 %r5, %r5, 0xffff; shl.b32 %r5, %r5, 8; or.b32 %r1, %r1, %r5;
  st.global.u32 [%rd9], %r1;
  min.f32 %f3, %f1, %f2; st.global.f32 [%rd10], %f3;""", a, b, out, mn := np.zeros(10, np.float32))
    un = np.isnan(a) | np.isnan(b)
    with np.errstate(invalid="ignore"):
        flags = (a < b) * 1 + ((a < b) | un) * 2 + ((a != b) & ~un) * 4 + un * 8
        a64 = a.astype(np.float64)
        big = np.nan_to_num(a64, posinf=3e9, neginf=-3e9)
        ri = np.where(np.isnan(a64), 0, np.clip(np.rint(big), -2**31, 2**31 - 1))
    np.testing.assert_array_equal(out & 0xFF, flags)
    np.testing.assert_array_equal(out >> 8, ri.astype(np.int64) & 0xFFFF)
    np.testing.assert_array_equal(mn, np.fmin(a, b))  # min returns the non-NaN operand


@pytest.mark.parametrize("op,fn,ulps", [("ex2.approx.ftz", np.exp2, 2), ("rcp.approx", lambda x: 1 / x, 1),
                                        ("rsqrt.approx", lambda x: 1 / np.sqrt(x), 2), ("lg2.approx", np.log2, 2),
                                        ("sqrt.rn", np.sqrt, 0), ("rcp.rn", lambda x: 1 / x, 0)])
def test_approximate_functions_within_bounds(op, fn, ulps, rng):
    x = rng.uniform(0.01, 20, 128).astype(np.float32)
    if op.startswith("ex2"):
        x = rng.uniform(-125, 120, 128).astype(np.float32)
    d = np.zeros(128, np.float32)
    run(f"ld.global.f32 %f1, [%rd7]; {op}.f32 %f2, %f1; st.global.f32 [%rd8], %f2;", x, d)
    exact = fn(x.astype(np.float64))
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    err = np.abs(d - exact) / ulp
    assert err.max() <= max(ulps, 0.5), err.max()
    if op.startswith("ex2"):  # .ftz: a subnormal result flushes to zero
        z = np.zeros(1, np.float32)
        run("ld.global.f32 %f1, [%rd7]; ex2.approx.ftz.f32 %f2, %f1; st.global.f32 [%rd8], %f2;",
            np.array([-130.0], np.float32), z)
        assert z[0] == 0.0


def test_vector_nc_loads_and_stores(rng):
    x = rng.integers(0, 1 << 32, 4 * 32, dtype=np.uint64).astype(np.uint32)
    y = np.zeros(4 * 32, np.uint32)
    run("""mul.wide.u32 %rd15, %r0, 16; add.s64 %rd16, %rd1, %rd15; add.s64 %rd17, %rd2, %rd15;
  ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%r1, %r2, %r3, %r4}, [%rd16];
  st.global.v4.u32 [%rd17], {%r4, %r3, %r2, %r1};""", x, y, threads=32)
    np.testing.assert_array_equal(y.reshape(32, 4), x.reshape(32, 4)[:, ::-1])
    with pytest.raises(ptxsim.MemoryFault, match="misaligned"):
        run("""mul.wide.u32 %rd15, %r0, 16; add.s64 %rd16, %rd1, %rd15; add.s64 %rd16, %rd16, 4;
  ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd16];""", x, y, threads=16)


def test_cp_async_is_visible_only_after_wait(rng):
    x = rng.integers(1, 1 << 30, 32).astype(np.uint32)
    before, after = np.zeros(32, np.uint32), np.zeros(32, np.uint32)
    src = run.__globals__["TEMPLATE"].replace(".visible", ".shared .align 16 .b32 sbuf[32];\n.visible").replace(
        "BODY", """mov.u32 %r5, sbuf; mul.lo.u32 %r6, %r0, 4; add.u32 %r5, %r5, %r6;
  st.shared.u32 [%r5], 0;
  cp.async.ca.shared.global [%r5], [%rd7], 4;
  cp.async.commit_group;
  ld.shared.u32 %r1, [%r5]; st.global.u32 [%rd8], %r1;
  cp.async.wait_group 0;
  ld.shared.u32 %r2, [%r5]; st.global.u32 [%rd9], %r2;""")
    ptxsim.launch(ptxsim.load_ptx(src).kernel("k"), 1, 32, [x, before, after, np.zeros(1, np.uint32)],
                  strict_async=False)  # plain timing: the old contents until the wait (strict: poison)
    assert np.all(before == 0)
    np.testing.assert_array_equal(after, x)


def test_named_barriers_producer_consumer_and_bar_red():
    # warps 0-1 produce into shared memory and bar.arrive; warps 2-3 bar.sync on barrier 1 with 128 threads
    body = """mov.u32 %r5, sbuf; and.b32 %r6, %r0, 63; mul.lo.u32 %r6, %r6, 4; add.u32 %r5, %r5, %r6;
  setp.lt.u32 %p1, %r0, 64;
  @!%p1 bra CONSUME;
  mul.lo.u32 %r7, %r0, 3; st.shared.u32 [%r5], %r7; bar.arrive 1, 128; bra DONE;
CONSUME:
  bar.sync 1, 128;
  ld.shared.u32 %r7, [%r5]; st.global.u32 [%rd7], %r7;
DONE:
  and.b32 %r8, %r0, 1; setp.eq.u32 %p2, %r8, 1;
  bar.red.popc.u32 %r9, 0, %p2;
  st.global.u32 [%rd8], %r9;"""
    src = run.__globals__["TEMPLATE"].replace(".visible", ".shared .align 4 .b32 sbuf[64];\n.visible").replace(
        "BODY", body)
    out, red = np.zeros(128, np.uint32), np.zeros(128, np.uint32)
    ptxsim.launch(ptxsim.load_ptx(src).kernel("k"), 1, 128, [out, red, out[:1].copy(), out[:1].copy()])
    np.testing.assert_array_equal(out[64:], np.arange(64) * 3)
    assert np.all(red == 64)


def test_exited_threads_do_not_hold_a_barrier():
    out = np.zeros(64, np.uint32)
    run("""setp.ge.u32 %p1, %r0, 40; @%p1 exit; bar.sync 0; st.global.u32 [%rd7], 5;""", out, threads=64)
    assert np.all(out[:40] == 5) and np.all(out[40:] == 0)


def test_redux_and_activemask_on_hand_ptx(rng):
    v = rng.integers(0, 1000, 64).astype(np.uint32)
    s, m = np.zeros(64, np.uint32), np.zeros(64, np.uint32)
    run("""ld.global.u32 %r1, [%rd7]; setp.lt.u32 %p1, %r1, 500; @!%p1 bra SKIP;
  redux.sync.add.u32 %r2, %r1, 0xffffffff; activemask.b32 %r3; st.global.u32 [%rd8], %r2; st.global.u32 [%rd9], %r3;
SKIP:""", v, s, m)
    for w in range(2):
        sl = slice(32 * w, 32 * w + 32)
        act = v[sl] < 500
        mask = sum(1 << int(i) for i in np.flatnonzero(act))
        assert np.all(s[sl][act] == v[sl][act].sum()) and np.all(m[sl][act] == mask)


def test_handlers_straight_from_the_table(rng):
    """Call table handlers directly on a state (py-evm style), lanes given explicitly."""
    from ptxsim.device import Device, Launch
    from ptxsim.ops import table
    from ptxsim.state import ExecState

    k = ptxsim.load_ptx(run.__globals__["TEMPLATE"].replace("BODY", """add.s32 %r3, %r1, %r2; xor.b32 %r4, %r1, %r2;
  fma.rn.f32 %f3, %f1, %f2, %f1;""")).kernel("k")
    prog = k.program
    dev = Device()
    L = Launch((1, 1, 1), (64, 1, 1), 0, dev.gmem, np.zeros(64, np.uint8), {}, [])
    st = ExecState(prog, L, np.array([0]))
    name = {n: i for i, n in enumerate(prog.reg_names)}
    a, b = rng.integers(-100, 100, 64).astype(np.int32), rng.integers(-100, 100, 64).astype(np.int32)
    st.regs[name["%r1"]][:] = a.view(np.uint32)
    st.regs[name["%r2"]][:] = b.view(np.uint32)
    adds = [i for i in prog.instrs if i.op == "add" and i.types[0].name == "s32"]
    lanes = np.arange(0, 64, 3)
    # the decoded instruction carries the table's handler (behind its all-lanes fast path, ptxsim/ops/fast.py)
    assert adds[-1].handler.generic is table()["add"].handler
    adds[-1].handler(st, adds[-1], lanes)
    got = st.regs[name["%r3"]].view(np.int32)
    np.testing.assert_array_equal(got[lanes], (a + b)[lanes])
    assert np.all(got[np.setdiff1d(np.arange(64), lanes)] == 0)  # inactive lanes untouched
    xor = next(i for i in prog.instrs if i.op == "xor")
    table()["xor"].handler(st, xor, slice(None))
    np.testing.assert_array_equal(st.regs[name["%r4"]], (a ^ b).view(np.uint32))

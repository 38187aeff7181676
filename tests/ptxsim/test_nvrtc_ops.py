"""Corner cases of the instructions NVRTC emits for cpp_impl's kernels that the other ptxsim tests leave out:
redux.sync min/max (unsigned and signed, under divergence), cvt.f32.bf16, cvt.rn.bf16x2.f32 (ties, NaN, overflow),
ex2.approx.f32 without .ftz, div.approx.f32 at infinite and huge divisors, and the .cs (evict-first) cache hints
on vector loads and stores. Each compares against an exact NumPy reference."""
import ml_dtypes
import numpy as np
import pytest
from ptxkit import run


@pytest.mark.parametrize("op, ty, dt", [("max", "u32", np.uint32), ("min", "u32", np.uint32),
                                        ("max", "s32", np.int32), ("min", "s32", np.int32)])
def test_redux_min_max_per_warp_over_active_lanes(op, ty, dt, rng):
    """Only the lanes that took the branch take part; signed types compare signed (-5 < 3), unsigned do not."""
    v = rng.integers(-1000, 1000, 64).astype(np.int32).view(dt)
    v[3] = dt(-5 if dt is np.int32 else 0xFFFFFFFB)  # an extreme that only the right signedness ranks right
    take = (np.arange(64) % 3 != 0)
    out = np.zeros(64, dt)
    run(f"""ld.global.{ty} %r1, [%rd7]; rem.u32 %r4, %r0, 3; setp.eq.u32 %p1, %r4, 0; @%p1 bra SKIP;
  redux.sync.{op}.{ty} %r2, %r1, 0xffffffff; st.global.{ty} [%rd8], %r2;
SKIP:""", v, out)
    fn = np.max if op == "max" else np.min
    for w in range(2):
        sl = slice(32 * w, 32 * w + 32)
        want = fn(v[sl][take[sl]])
        assert np.all(out[sl][take[sl]] == want) and np.all(out[sl][~take[sl]] == 0)


def test_redux_min_picks_lowest_lane_of_the_maximum():
    """The gate's tie-break idiom: max of keys, then min of (lane if key == max else 32)."""
    keys = np.array([7, 9, 9, 1] * 8, np.uint32)
    out = np.zeros(32, np.uint32)
    run("""ld.global.u32 %r1, [%rd7]; redux.sync.max.u32 %r2, %r1, 0xffffffff; setp.eq.u32 %p1, %r1, %r2;
  selp.u32 %r3, %r0, 32, %p1; redux.sync.min.u32 %r4, %r3, 0xffffffff; st.global.u32 [%rd8], %r4;""", keys, out)
    assert np.all(out == 1)


@pytest.mark.parametrize("op, fn", [("max", np.max), ("add", np.sum)])
def test_redux_half_warp_membermasks_reduce_separately(op, fn, rng):
    """cooperative_groups' thread_block_tile<16> reduction: both halves run redux.sync at once, each naming its own
    half as membermask (0xffff << (laneid & 16)); each half gets the reduction of its 16 lanes only."""
    v = rng.integers(0, 1 << 20, 64).astype(np.uint32)
    out = np.zeros(64, np.uint32)
    run(f"""ld.global.u32 %r1, [%rd7]; mov.u32 %r2, %laneid; and.b32 %r3, %r2, 16; mov.u32 %r4, 65535;
  shl.b32 %r5, %r4, %r3; redux.sync.{op}.u32 %r6, %r1, %r5; st.global.u32 [%rd8], %r6;""", v, out)
    want = np.repeat([fn(v[16 * h:16 * h + 16]) for h in range(4)], 16).astype(np.uint32)
    np.testing.assert_array_equal(out, want)


def test_cvt_f32_bf16_is_exact_widening():
    bits = np.array([0x0000, 0x8000, 0x3F80, 0xBF80, 0x0001, 0x807F, 0x7F7F, 0x7F80, 0xFF80, 0x7FC0, 0x4049,
                     0xFFFF], np.uint32)
    out = np.zeros(len(bits), np.uint32)
    run("""ld.global.u32 %r1, [%rd7]; cvt.u16.u32 %h1, %r1; cvt.f32.bf16 %f1, %h1; st.global.f32 [%rd8], %f1;""",
        bits, out)
    want = bits << 16  # every bf16 (subnormals and NaN payloads included) is the high half of its f32
    nan = np.isnan((bits << 16).view(np.float32))
    np.testing.assert_array_equal(out[~nan], want[~nan])
    assert np.all(np.isnan(out[nan].view(np.float32)))


def test_cvt_rn_bf16x2_f32_ties_nan_overflow_operand_order():
    one = np.float32(1.0).view(np.uint32)
    bits_a = np.array([one + 0x8000, one + 0x18000, one + 0x7FFF, 0x7F7FFFFF, 0xFF7FFFFF, 0x7FC00001, 0x80000000,
                       0x00011111], np.uint32)  # tie->even down, tie->even up, below tie, overflow, NaN, -0, subnormal
    bits_b = bits_a[::-1].copy()
    out = np.zeros(len(bits_a), np.uint32)
    run("""ld.global.f32 %f1, [%rd7]; ld.global.f32 %f2, [%rd8]; cvt.rn.bf16x2.f32 %r1, %f1, %f2;
  st.global.u32 [%rd9], %r1;""", bits_a.view(np.float32), bits_b.view(np.float32), out)
    for half, src in ((out >> 16, bits_a), (out & 0xFFFF, bits_b)):  # operand a -> high half
        want = src.view(np.float32).astype(ml_dtypes.bfloat16).view(np.uint16).astype(np.uint32)
        nan = np.isnan(src.view(np.float32))
        np.testing.assert_array_equal(half[~nan], want[~nan])
        assert np.all((half[nan] & 0x7F80) == 0x7F80) and np.all(half[nan] & 0x7F)  # still a NaN
    assert out[0] >> 16 == 0x3F80 and out[1] >> 16 == 0x3F82 and out[3] >> 16 == 0x7F80


def test_ex2_approx_without_ftz_keeps_subnormals_and_limits(rng):
    x = np.concatenate([rng.uniform(-149, -126, 16), [-np.inf, np.inf, 0.0, -0.0, -200.0, 128.0]]).astype(np.float32)
    out = np.zeros(len(x), np.float32)
    run("ld.global.f32 %f1, [%rd7]; ex2.approx.f32 %f2, %f1; st.global.f32 [%rd8], %f2;", x, out)
    with np.errstate(over="ignore"):
        exact = np.exp2(x.astype(np.float64)).astype(np.float32)
    assert np.all(out[:16] > 0)  # no flush to zero
    np.testing.assert_allclose(out[:16], exact[:16], rtol=2.0**-7)  # subnormal results carry fewer bits
    np.testing.assert_array_equal(out[16:], [0.0, np.inf, 1.0, 1.0, 0.0, np.inf])


def test_div_approx_infinite_and_huge_divisors():
    """div.approx is x * (1/y): 0 for y = inf, and also 0 for 2^126 < |y| < 2^128 (PTX ISA, div.approx)."""
    x = np.array([3.0, -3.0, 5.0, 1e30, 2.0, 7.0, np.inf], np.float32)
    y = np.array([np.inf, np.inf, 2.0**127, 2.0**126 * 1.5, 4.0, -2.0**127, 2.0**127], np.float32)
    out = np.zeros(len(x), np.float32)
    run("ld.global.f32 %f1, [%rd7]; ld.global.f32 %f2, [%rd8]; div.approx.f32 %f3, %f1, %f2; "
        "st.global.f32 [%rd9], %f3;", x, y, out)
    np.testing.assert_array_equal(out, [0.0, -0.0, 0.0, 0.0, 0.5, -0.0, np.nan])
    assert np.signbit(out[1]) and np.signbit(out[5]) and not np.signbit(out[2])


def test_cs_hinted_vector_load_and_store(rng):
    x = rng.integers(0, 1 << 32, 4 * 32, dtype=np.uint64).astype(np.uint32)
    y = np.zeros(4 * 32, np.uint32)
    z = np.zeros(2 * 32, np.uint32)
    run("""mul.wide.u32 %rd15, %r0, 16; add.s64 %rd16, %rd1, %rd15; add.s64 %rd17, %rd2, %rd15;
  ld.global.cs.v4.u32 {%r1, %r2, %r3, %r4}, [%rd16]; st.global.cs.v4.u32 [%rd17], {%r4, %r3, %r2, %r1};
  add.s64 %rd18, %rd3, %rd6; st.global.cs.v2.u32 [%rd18], {%r1, %r2};""", x, y, z, threads=32)
    np.testing.assert_array_equal(y.reshape(32, 4), x.reshape(32, 4)[:, ::-1])
    np.testing.assert_array_equal(z.reshape(32, 2), x.reshape(32, 4)[:, :2])

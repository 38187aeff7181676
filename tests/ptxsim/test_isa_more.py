"""More ISA coverage on hand-written PTX: mma f16 / e4m3, stmatrix, half arithmetic, .func calls, warp votes,
conversions, generic and local addressing, special registers, tracing."""
import ml_dtypes
import numpy as np
import pytest
from ptxkit import HEADER, TEMPLATE, kernel, run

import ptxsim

pytestmark = pytest.mark.sim

MMA_BODY = """mul.wide.u32 %rd15, %r0, 16; add.s64 %rd16, %rd1, %rd15; add.s64 %rd18, %rd4, %rd15;
  mul.wide.u32 %rd17, %r0, 8; add.s64 %rd17, %rd2, %rd17; add.s64 %rd19, %rd3, %rd15;
  ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd16];
  ld.global.v2.u32 {%r5, %r6}, [%rd17];
  ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd19];
  mma.sync.aligned.SHAPE.row.col.f32.T.T.f32 {%f5, %f6, %f7, %f8}, {%r1, %r2, %r3, %r4}, {%r5, %r6},
      {%f1, %f2, %f3, %f4};
  st.global.v4.f32 [%rd18], {%f5, %f6, %f7, %f8};"""


def _frag_a(A, per, k):
    lane = np.arange(32)
    g, t = lane // 4, lane % 4
    n = 4 * per
    out = np.zeros((32, n), A.dtype)
    for i in range(n):
        if k == 16:
            row, col = g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >= 4)
        else:
            row, col = g + 8 * ((i >> 2) & 1), 4 * t + (i & 3) + 16 * (i >= 8)
        out[:, i] = A[row, col]
    return out


def _frag_b(B, per, k):
    lane = np.arange(32)
    g, t = lane // 4, lane % 4
    out = np.zeros((32, 2 * per), B.dtype)
    for i in range(2 * per):
        row = 2 * t + (i & 1) + 8 * (i >= 2) if k == 16 else 4 * t + (i & 3) + 16 * (i >= 4)
        out[:, i] = B[row, g]
    return out


def _frag_c(C):
    lane = np.arange(32)
    g, t = lane // 4, lane % 4
    return np.stack([C[g + 8 * (i >= 2), 2 * t + (i & 1)] for i in range(4)], axis=1).astype(np.float32)


@pytest.mark.parametrize("typ,shape,dt", [("f16", "m16n8k16", np.float16), ("bf16", "m16n8k16", ml_dtypes.bfloat16),
                                          ("e4m3", "m16n8k32", ml_dtypes.float8_e4m3fn),
                                          ("e5m2", "m16n8k32", ml_dtypes.float8_e5m2)])
def test_mma_fragments(typ, shape, dt, rng):
    k = 16 if shape == "m16n8k16" else 32
    per = 2 if k == 16 else 4
    A = rng.standard_normal((16, k)).astype(dt)
    B = rng.standard_normal((k, 8)).astype(dt)
    C = rng.standard_normal((16, 8)).astype(np.float32)
    fa = np.ascontiguousarray(_frag_a(A, per, k)).view(np.uint32 if per == 2 else np.uint32)
    fb = np.ascontiguousarray(_frag_b(B, per, k)).view(np.uint32)
    fc = _frag_c(C)
    d = np.zeros((32, 4), np.float32)
    run(MMA_BODY.replace("SHAPE", shape).replace("T", typ), fa.reshape(-1), fb.reshape(-1), fc.reshape(-1),
        d.reshape(-1), threads=32)
    ref = A.astype(np.float64) @ B.astype(np.float64) + C
    np.testing.assert_allclose(d, _frag_c(ref), rtol=1e-5, atol=1e-5)


def test_stmatrix_roundtrips_ldmatrix(rng):
    src = TEMPLATE.replace(".visible", ".shared .align 16 .b16 sm[256];\n.visible").replace("BODY", """
  mov.u32 %r9, %laneid; shr.u32 %r10, %r9, 3; shl.b32 %r10, %r10, 7; and.b32 %r11, %r9, 7; shl.b32 %r11, %r11, 4;
  add.u32 %r10, %r10, %r11; mov.u32 %r12, sm; add.u32 %r12, %r12, %r10;
  mul.wide.u32 %rd15, %r0, 16; add.s64 %rd16, %rd1, %rd15; add.s64 %rd17, %rd2, %rd15;
  ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd16];
  stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%r12], {%r1, %r2, %r3, %r4};
  ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%r5, %r6, %r7, %r8}, [%r12];
  st.global.v4.u32 [%rd17], {%r5, %r6, %r7, %r8};""")
    x = rng.integers(0, 1 << 32, 128, dtype=np.uint64).astype(np.uint32)
    y = np.zeros(128, np.uint32)
    ptxsim.launch(ptxsim.load_ptx(src).kernel("k"), 1, 32, [x, y, y[:1].copy(), y[:1].copy()])
    np.testing.assert_array_equal(y, x)


def test_half_and_bf16x2_arithmetic(rng):
    a = rng.standard_normal(64).astype(np.float16)
    b = rng.standard_normal(64).astype(np.float16)
    c = rng.standard_normal(64).astype(np.float16)
    outs = [np.zeros(32, np.uint32) for _ in range(2)]
    run("""ld.global.u32 %r1, [%rd7]; ld.global.u32 %r2, [%rd8]; ld.global.u32 %r3, [%rd9];
  fma.rn.f16x2 %r4, %r1, %r2, %r3; st.global.u32 [%rd10], %r4;""", a.view(np.uint32).copy(),
        b.view(np.uint32).copy(), c.view(np.uint32).copy(), outs[0], threads=32)
    want = (a.astype(np.float64) * b + c).astype(np.float16)  # exact in f64, one rounding
    np.testing.assert_array_equal(outs[0].view(np.float16), want)
    x = rng.standard_normal(64).astype(ml_dtypes.bfloat16)
    y = rng.standard_normal(64).astype(ml_dtypes.bfloat16)
    run("""ld.global.u32 %r1, [%rd7]; ld.global.u32 %r2, [%rd8]; mul.rn.bf16x2 %r4, %r1, %r2;
  st.global.u32 [%rd9], %r4;""", x.view(np.uint32).copy(), y.view(np.uint32).copy(), outs[1], threads=32)
    np.testing.assert_array_equal(outs[1].view(ml_dtypes.bfloat16), (x.astype(np.float64) * y).astype(np.float32)
                                  .astype(ml_dtypes.bfloat16))


FUNC_SRC = HEADER + """
.func (.param .b32 ret) scale(.param .b32 x, .param .b32 s)
{
  .reg .b32 %r<4>;
  ld.param.b32 %r1, [x]; ld.param.b32 %r2, [s];
  mul.lo.s32 %r3, %r1, %r2;
  st.param.b32 [ret], %r3;
  ret;
}
.func (.param .b64 out) twice(.param .b64 v)
{
  .reg .b64 %rd<3>; .reg .b32 %r<4>;
  ld.param.b64 %rd1, [v];
  cvt.u32.u64 %r1, %rd1;
  { .param .b32 a0; .param .b32 a1; .param .b32 r0;
    st.param.b32 [a0], %r1; st.param.b32 [a1], 2;
    call.uni (r0), scale, (a0, a1);
    ld.param.b32 %r2, [r0]; }
  cvt.u64.u32 %rd2, %r2;
  st.param.b64 [out], %rd2;
  ret;
}
.visible .entry k(.param .u64 p)
{
  .reg .b32 %r<4>; .reg .b64 %rd<6>; .reg .pred %p<2>;
  ld.param.u64 %rd1, [p]; mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 8; add.s64 %rd3, %rd1, %rd2;
  setp.lt.u32 %p1, %r1, 5; @%p1 bra SMALL;
  cvt.u64.u32 %rd4, %r1;
  { .param .b64 a0; .param .b64 r0;
    st.param.b64 [a0], %rd4;
    call.uni (r0), twice, (a0);
    ld.param.b64 %rd5, [r0]; }
  st.global.u64 [%rd3], %rd5;
  ret;
SMALL:
  { .param .b32 a0; .param .b32 a1; .param .b32 r0;
    st.param.b32 [a0], %r1; st.param.b32 [a1], 100;
    call.uni (r0), scale, (a0, a1);
    ld.param.b32 %r2, [r0]; }
  cvt.u64.u32 %rd5, %r2;
  st.global.u64 [%rd3], %rd5;
  ret;
}
"""


def test_func_calls_with_params_nested_and_divergent():
    out = np.zeros(40, np.uint64)
    ptxsim.launch(ptxsim.load_ptx(FUNC_SRC).kernel("k"), 1, 40, [out])
    i = np.arange(40)
    np.testing.assert_array_equal(out, np.where(i < 5, i * 100, i * 2))


def test_endless_recursion_is_reported_not_miscomputed():
    src = HEADER + """.func f(.param .b32 x)
{ call.uni f, (x); ret; }
.visible .entry k() { { .param .b32 a; st.param.b32 [a], 1; call.uni f, (a); } ret; }"""
    with pytest.raises(ptxsim.CallDepthExceeded, match="call-depth limit"):
        ptxsim.launch(ptxsim.load_ptx(src).kernel("k"), 1, 1, [])


def test_vote_uni_match_all_bar_red_and_or(rng):
    v = rng.integers(0, 3, 64).astype(np.uint32)
    v[:32] = 7
    o1, o2 = np.zeros(64, np.uint32), np.zeros(64, np.uint32)
    run("""ld.global.u32 %r1, [%rd7]; setp.eq.u32 %p1, %r1, 7;
  vote.sync.uni.pred %p2, %p1, 0xffffffff; match.sync.all.b32 %r2|%p3, %r1, 0xffffffff;
  bar.red.and.pred %p4, 0, %p1; bar.red.or.pred %p5, 0, %p1;
  selp.u32 %r3, 1, 0, %p2; selp.u32 %r4, 2, 0, %p3; selp.u32 %r5, 4, 0, %p4; selp.u32 %r6, 8, 0, %p5;
  or.b32 %r3, %r3, %r4; or.b32 %r3, %r3, %r5; or.b32 %r3, %r3, %r6; st.global.u32 [%rd8], %r3;
  st.global.u32 [%rd9], %r2;""", v, o1, o2)
    w1_same = len(set(v[32:].tolist())) == 1
    w1_uni = np.all(v[32:] == 7) or np.all(v[32:] != 7)
    np.testing.assert_array_equal(o1[:32], 1 | 2 | 0 | 8)
    np.testing.assert_array_equal(o1[32:], int(w1_uni) | 2 * int(w1_same) | 0 | 8)
    assert np.all(o2[:32] == 0xFFFFFFFF)


CVT_CASES = [
    ("cvt.sat.u8.s32 %r2, %r1;", "s32", lambda x: np.clip(x, 0, 255)),
    ("cvt.s8.s32 %r2, %r1;", "s32", lambda x: ((x & 0xFF) ^ 0x80) - 0x80),
    ("cvt.sat.s16.s32 %r2, %r1;", "s32", lambda x: np.clip(x, -32768, 32767)),
    ("cvt.u16.u32 %h1, %r1; cvt.s32.s16 %r2, %h1;", "s32", lambda x: ((x & 0xFFFF) ^ 0x8000) - 0x8000),
]


@pytest.mark.parametrize("text,typ,ref", CVT_CASES, ids=[c[0].split()[0] for c in CVT_CASES])
def test_integer_cvt(text, typ, ref, rng):
    x = rng.integers(-100000, 100000, 64).astype(np.int32)
    d = np.zeros(64, np.int32)
    run(f"ld.global.u32 %r1, [%rd7]; {text} st.global.u32 [%rd8], %r2;", x, d)
    np.testing.assert_array_equal(d, ref(x.astype(np.int64)))


def test_float_cvt_rounding_and_s64(rng):
    from fractions import Fraction

    from ptxkit import round_exact
    v = rng.integers(-2**62, 2**62, 32, dtype=np.int64)
    d64 = rng.standard_normal(32) * 2.0 ** rng.integers(-100, 100, 32)
    o3, o12 = np.zeros(32, np.int64), np.zeros(64, np.float32)
    run("""ld.global.s64 %rd15, [%rd11]; cvt.rn.f32.s64 %f1, %rd15;
  ld.global.f64 %fd1, [%rd12]; cvt.rm.f32.f64 %f2, %fd1; st.global.v2.f32 [%rd14], {%f1, %f2};
  cvt.rzi.s64.f64 %rd16, %fd1; st.global.s64 [%rd13], %rd16;""", v, d64, o3, o12, threads=32)
    o1, o2 = o12[0::2], o12[1::2]
    np.testing.assert_array_equal(o1, [round_exact(Fraction(int(x)), np.float32) for x in v])
    np.testing.assert_array_equal(o2, [round_exact(Fraction(float(x)), np.float32, "rm") for x in d64])
    ri = np.clip(np.trunc(d64), -2.0**63, 2.0**63)
    want = [(-2**63 if r <= -2.0**63 else 2**63 - 1 if r >= 2.0**63 else int(r)) for r in ri]
    np.testing.assert_array_equal(o3, want)


def test_generic_and_local_addressing_and_cvta():
    src = TEMPLATE.replace(".visible", ".shared .align 4 .b32 sh[64];\n.visible").replace("{\n", """{
  .local .align 4 .b8 depot[64];""", 1).replace("BODY", """
  mov.u32 %r9, %tid.x; mov.u64 %rd15, sh; cvta.shared.u64 %rd16, %rd15; mul.wide.u32 %rd17, %r9, 4;
  add.s64 %rd16, %rd16, %rd17; st.u32 [%rd16], %r9;
  mov.u64 %rd18, depot; cvta.local.u64 %rd19, %rd18; st.u32 [%rd19+8], %r9; ld.local.u32 %r10, [depot+8];
  isspacep.shared %p1, %rd16; isspacep.global %p2, %rd7; isspacep.local %p3, %rd19;
  cvta.to.shared.u64 %rd18, %rd16; cvt.u32.u64 %r11, %rd18; ld.shared.u32 %r12, [%r11];
  ld.u32 %r13, [%rd16]; add.u32 %r12, %r12, %r13; add.u32 %r12, %r12, %r10;
  selp.u32 %r14, 1, 0, %p1; selp.u32 %r15, 2, 0, %p2; or.b32 %r14, %r14, %r15; selp.u32 %r15, 4, 0, %p3;
  or.b32 %r14, %r14, %r15; shl.b32 %r14, %r14, 16; or.b32 %r12, %r12, %r14; st.global.u32 [%rd7], %r12;""")
    out = np.zeros(32, np.uint32)
    ptxsim.launch(ptxsim.load_ptx(src).kernel("k"), 1, 32, [out, out[:1].copy(), out[:1].copy(), out[:1].copy()])
    np.testing.assert_array_equal(out, 3 * np.arange(32) | (7 << 16))


def test_special_registers(rng):
    o = [np.zeros(96, np.uint32) for _ in range(4)]
    src = TEMPLATE.replace("BODY", """
  mov.u32 %r1, %laneid; mov.u32 %r2, %warpid; mov.u32 %r3, %lanemask_lt; mov.u32 %r4, %nctaid.x;
  mov.u32 %r5, %ctaid.y; mov.u32 %r6, %tid.y; mad.lo.u32 %r1, %r2, 100, %r1; mad.lo.u32 %r4, %r4, 100, %r5;
  mov.u32 %r7, %tid.x; mov.u32 %r8, %ntid.x; mad.lo.u32 %r9, %r6, %r8, %r7; mov.u32 %r10, %ctaid.x;
  mad.lo.u32 %r11, %r5, 2, %r10; mad.lo.u32 %r9, %r11, 48, %r9; mul.wide.u32 %rd15, %r9, 4;
  add.s64 %rd16, %rd1, %rd15; st.global.u32 [%rd16], %r1; add.s64 %rd16, %rd2, %rd15; st.global.u32 [%rd16], %r3;
  add.s64 %rd16, %rd3, %rd15; st.global.u32 [%rd16], %r4; mov.u64 %rd17, %clock64; add.s64 %rd16, %rd4, %rd15;
  cvt.u32.u64 %r12, %rd17; st.global.u32 [%rd16], %r12;""")
    ptxsim.launch(ptxsim.load_ptx(src).kernel("k"), (2, 1), (16, 3), o)
    t = np.arange(48)
    np.testing.assert_array_equal(o[0], np.tile((t // 32) * 100 + t % 32, 2))
    np.testing.assert_array_equal(o[1], np.tile((1 << (t % 32)) - 1, 2))
    assert np.all(o[2] == 200) and np.all(o[3] > 0)


def test_trace_prints_executed_instructions(monkeypatch, capsys):
    import sys

    from ptxsim.config import Config
    L = sys.modules["ptxsim.launch"]

    monkeypatch.setattr(L, "CONFIG", Config(trace=True, budget=10**9, max_lanes=32768))
    run("add.u32 %r1, %r0, 1;", np.zeros(32, np.uint32))
    err = capsys.readouterr().err
    assert "[ptxsim] k pc=" in err and "add.u32 %r1, %r0, 1" in err and "active=32" in err


def test_unsupported_forms_name_the_instruction():
    with pytest.raises(ptxsim.UnsupportedInstruction, match=r"mma.*m8n8k4"):
        kernel("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {%f1,%f2}, {%r1}, {%r2}, {%f3,%f4};")
    with pytest.raises(ptxsim.UnsupportedInstruction, match="cp-size 12"):
        kernel("cp.async.ca.shared.global [%r1], [%rd1], 12;")
    with pytest.raises(ptxsim.UnsupportedInstruction, match="atom"):
        kernel("atom.global.inc.u64 %rd1, [%rd2], 4;")


def test_elect_and_createpolicy():
    o = np.zeros(64, np.uint32)
    run("""setp.ge.u32 %p3, %r0, 5; @!%p3 bra E; createpolicy.fractional.L2::evict_last.b64 %rd15, 1.0;
  ld.global.L2::cache_hint.u32 %r4, [%rd7], %rd15;
  elect.sync %r1|%p1, 0xffffffff; selp.u32 %r2, 100, 0, %p1; add.u32 %r1, %r1, %r2; st.global.u32 [%rd7], %r1;
E:""", o)
    assert np.all(o[:5] == 0) and o[5] == 105 and np.all(o[6:32] == 5) and o[32] == 100 and np.all(o[33:] == 0)


def test_mma_m16n8k8_bf16(rng):
    A = rng.standard_normal((16, 8)).astype(ml_dtypes.bfloat16)
    B = rng.standard_normal((8, 8)).astype(ml_dtypes.bfloat16)
    C = rng.standard_normal((16, 8)).astype(np.float32)
    lane = np.arange(32)
    g, t = lane // 4, lane % 4
    fa = np.stack([A[g + 8 * (i >= 2), 2 * t + (i & 1)] for i in range(4)], axis=1)
    fb = np.stack([B[2 * t + i, g] for i in range(2)], axis=1)
    d = np.zeros((32, 4), np.float32)
    run("""mul.wide.u32 %rd15, %r0, 8; add.s64 %rd16, %rd1, %rd15; mul.wide.u32 %rd17, %r0, 4;
  add.s64 %rd17, %rd2, %rd17; mul.wide.u32 %rd18, %r0, 16; add.s64 %rd19, %rd3, %rd18; add.s64 %rd18, %rd4, %rd18;
  ld.global.v2.u32 {%r1, %r2}, [%rd16]; ld.global.u32 %r5, [%rd17]; ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd19];
  mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%f5, %f6, %f7, %f8}, {%r1, %r2}, {%r5}, {%f1, %f2, %f3, %f4};
  st.global.v4.f32 [%rd18], {%f5, %f6, %f7, %f8};""", np.ascontiguousarray(fa).view(np.uint32).reshape(-1),
        np.ascontiguousarray(fb).view(np.uint32).reshape(-1), _frag_c(C).reshape(-1), d.reshape(-1), threads=32)
    np.testing.assert_allclose(d, _frag_c(A.astype(np.float64) @ B.astype(np.float64) + C), rtol=1e-5, atol=1e-5)


def test_div_rn_full_approx_and_sin_cos(rng):
    from fractions import Fraction

    from ptxkit import round_exact
    a = (rng.standard_normal(64) * 2.0 ** rng.integers(-20, 20, 64)).astype(np.float32)
    b = (rng.standard_normal(64) * 2.0 ** rng.integers(-20, 20, 64)).astype(np.float32)
    rn, full, approx = np.zeros(64, np.float32), np.zeros(64, np.float32), np.zeros(64, np.float32)
    run("""ld.global.f32 %f1, [%rd7]; ld.global.f32 %f2, [%rd8]; div.rn.f32 %f3, %f1, %f2; st.global.f32 [%rd9], %f3;
  div.full.f32 %f4, %f1, %f2; st.global.f32 [%rd10], %f4;""", a, b, rn, full)
    exact = np.array([round_exact(Fraction(float(x)) / Fraction(float(y)), np.float32)
                      for x, y in zip(a, b, strict=True)])
    np.testing.assert_array_equal(rn, exact)
    assert np.all(np.abs(full - exact) <= 2 * np.spacing(np.abs(exact)))
    run("ld.global.f32 %f1, [%rd7]; ld.global.f32 %f2, [%rd8]; div.approx.f32 %f3, %f1, %f2; "
        "st.global.f32 [%rd9], %f3;", a, b, approx)
    assert np.all(np.abs(approx - exact) <= 2 * np.spacing(np.abs(exact)))
    x = rng.uniform(-np.pi, np.pi, 64).astype(np.float32)
    s, c = np.zeros(64, np.float32), np.zeros(64, np.float32)
    run("ld.global.f32 %f1, [%rd7]; sin.approx.f32 %f2, %f1; cos.approx.ftz.f32 %f3, %f1; st.global.f32 [%rd8], %f2;"
        " st.global.f32 [%rd9], %f3;", x, s, c)
    assert np.abs(s - np.sin(x.astype(np.float64))).max() < 2.0**-20.9  # the documented absolute error bound
    assert np.abs(c - np.cos(x.astype(np.float64))).max() < 2.0**-20.9


def test_atom_dec_wraps_and_red_min_max(rng):
    n = 40
    w, wo = np.full(1, 2, np.uint32), np.zeros(n, np.uint32)
    run("atom.global.dec.u32 %r2, [%rd2], 3; st.global.u32 [%rd9], %r2;", np.zeros(n, np.uint32), w, wo, threads=n)
    seq = [2]
    for _ in range(n):
        v = seq[-1]
        seq.append(3 if v == 0 or v > 3 else v - 1)
    np.testing.assert_array_equal(wo, seq[:-1])
    assert w[0] == seq[-1]
    v = rng.integers(-1000, 1000, n).astype(np.int32)
    mm = np.array([0, 0], np.int32)
    run("ld.global.s32 %r1, [%rd7]; red.global.min.s32 [%rd2], %r1; red.global.max.s32 [%rd2+4], %r1;", v, mm,
        threads=n)
    assert mm[0] == min(0, v.min()) and mm[1] == max(0, v.max())


def test_relu_xorsign_and_satfinite_modifiers_are_applied(rng):
    a = rng.standard_normal(64).astype(np.float32) * 100
    b = rng.standard_normal(64).astype(np.float32)
    r, m, h = np.zeros(64, np.float32), np.zeros(64, np.float32), np.zeros(64, np.uint32)
    a[0] = 1e6
    run("""ld.global.f32 %f1, [%rd7]; ld.global.f32 %f2, [%rd8]; fma.rn.relu.f32 %f3, %f1, %f2, %f2;
  min.xorsign.abs.f32 %f4, %f1, %f2; st.global.f32 [%rd9], %f3; st.global.f32 [%rd10], %f4;""", a, b, r, m)
    np.testing.assert_array_equal(r, np.maximum((a.astype(np.float64) * b + b).astype(np.float32), 0))
    want = np.minimum(np.abs(a), np.abs(b)) * np.where(np.signbit(a) ^ np.signbit(b), -1, 1)
    np.testing.assert_array_equal(m, want.astype(np.float32))
    run("ld.global.f32 %f1, [%rd7]; cvt.rn.satfinite.f16.f32 %h1, %f1; cvt.u32.u16 %r1, %h1; "
        "st.global.u32 [%rd8], %r1;", a, h)
    with np.errstate(over="ignore"):
        want_h = np.clip(a, -65504, 65504).astype(np.float16).view(np.uint16)
    np.testing.assert_array_equal(h, want_h)
    with pytest.raises(ptxsim.UnsupportedInstruction, match=r"\.v2"):
        kernel("atom.global.v2.f32.add {%f1, %f2}, [%rd1], {%f3, %f4};")


@pytest.mark.parametrize("mode", ["rz", "rm", "rp"])
def test_sqrt_rcp_directed_rounding(mode, rng):
    from fractions import Fraction

    from ptxkit import round_exact
    x = (rng.uniform(0.5, 2, 64) * 2.0 ** rng.integers(-30, 30, 64)).astype(np.float32)
    s, r = np.zeros(64, np.float32), np.zeros(64, np.float32)
    run(f"""ld.global.f32 %f1, [%rd7]; sqrt.{mode}.f32 %f2, %f1; rcp.{mode}.f32 %f3, %f1;
  st.global.f32 [%rd8], %f2; st.global.f32 [%rd9], %f3;""", x, s, r)
    np.testing.assert_array_equal(r, [round_exact(1 / Fraction(float(v)), np.float32, mode) for v in x])
    # got is the rounding of sqrt(v) in the mode: check it brackets the exact root
    for v, got in zip(x, s, strict=True):
        lo, hi = Fraction(float(np.nextafter(got, np.float32(-1)))), Fraction(float(np.nextafter(got, np.float32(9e9))))
        g = Fraction(float(got))
        fv = Fraction(float(v))
        if mode == "rp":
            assert g * g >= fv and lo * lo < fv
        else:
            assert g * g <= fv and hi * hi > fv
    with pytest.raises(ptxsim.UnsupportedInstruction, match="approx only"):
        kernel("ex2.rn.f32 %f1, %f2;")
    with pytest.raises(ptxsim.UnsupportedInstruction, match="tf32"):
        kernel("cvt.rna.tf32.f32 %r1, %f1;")

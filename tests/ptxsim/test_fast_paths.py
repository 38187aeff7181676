"""The all-lanes fast handlers (ptxsim/ops/fast.py) against the generic handlers they stand in for: every form is run
both ways on the same registers (random bits, float specials, fma double-rounding traps), on all lanes and on part
of them, and every register must come out bitwise equal."""
import numpy as np
import pytest
from ptxkit import HEADER

import ptxsim
from ptxsim.device import Device, Launch
from ptxsim.state import FULL, ExecState

N = 64
BODY = """
  add.s64 %rd3, %rd1, %rd2; add.s64 %rd4, %rd1, -7; sub.s64 %rd5, %rd1, %rd2; sub.u32 %r3, 5, %r1;
  mul.lo.s64 %rd6, %rd1, %rd2; mul.lo.u32 %r4, %r1, 2654435761; mul.lo.s32 %r5, %r1, -3;
  and.b64 %rd7, %rd1, 4095; or.b32 %r6, %r1, %r2; xor.b32 %r7, %r1, %r2; and.b32 %r1, %r1, %r2;
  min.s32 %r8, %r1, %r2; max.u32 %r9, %r1, %r2; min.s64 %rd8, %rd2, -5; max.u64 %rd9, %rd1, %rd2;
  shl.b64 %rd10, %rd1, 3; shl.b32 %r10, %r2, 31; shr.s64 %rd11, %rd2, 7; shr.u64 %rd12, %rd2, 63;
  shr.s32 %r11, %r2, 1; shr.u32 %r12, %r2, 30; shr.b32 %r13, %r2, 4;
  setp.lt.s64 %p1, %rd1, %rd2; setp.ne.s64 %p2, %rd1, 0; setp.lo.u32 %p3, %r1, %r2; setp.hi.s32 %p4, %r1, -1;
  setp.ge.s32 %p5, %r2, %r1; setp.lt.f32 %p6, %f1, %f2; setp.eq.f32 %p7, %f1, 0f3F800000;
  setp.gt.f64 %p0, %fd1, %fd2;
  selp.b64 %rd13, %rd1, %rd2, %p1; selp.u32 %r14, %r1, 17, %p2; selp.f32 %f3, 0f40000000, %f2, %p6;
  selp.b64 %rd1, %rd1, %rd2, %p3; selp.b64 %rd2, 1056, 0, %p4; selp.u32 %r1, %r1, 0, %p5;
  mov.u64 %rd14, %rd2; mov.u32 %r15, 123; mov.f32 %f4, %f1; mov.b64 %rd15, -1;
  cvt.u32.u64 %r2, %rd2; cvt.s32.s64 %r0, %rd2; cvt.u64.u32 %rd16, %r1; cvt.s64.s32 %rd17, %r1;
  cvt.u64.s32 %rd18, %r1; cvt.s64.u32 %rd19, %r1; cvt.u32.s32 %r2, %r1;
  add.f32 %f5, %f1, %f2; sub.f32 %f6, %f1, 0f3F800000; mul.rn.f32 %f7, %f1, %f2;
  fma.rn.f32 %f8, %f1, %f2, %f3; fma.rn.f32 %f3, %f1, %f2, %f3; fma.rn.f32 %f1, %f1, %f2, %f9;
  fma.rn.f32 %f10, %f1, 0f3F800000, %f9; mad.rn.f32 %f11, 0f40000000, 0f3F800000, %f9;
  fma.rn.f32 %f12, %f13, %f14, %f15; add.u16 %h1, %h2, %h3; mul.lo.s16 %h4, %h1, -2;
"""
# forms that must keep the generic handler (each has a modifier, width or operand the fast paths do not model)
SLOW = """
  add.sat.s32 %r3, %r1, %r2; add.cc.u32 %r4, %r1, %r2; mul.hi.u32 %r5, %r1, %r2; mul.wide.s32 %rd3, %r1, %r2;
  shl.b32 %r6, %r1, 32; shl.b32 %r7, %r1, %r2; setp.ne.f32 %p1, %f1, %f2; setp.lt.and.s32 %p2, %r1, %r2, %p1;
  add.ftz.f32 %f3, %f1, %f2; fma.rz.f32 %f4, %f1, %f2, %f3; fma.rn.ftz.f32 %f5, %f1, %f2, %f3;
  cvt.sat.u32.s64 %r8, %rd1; cvt.rn.f32.s32 %f6, %r1; mov.u32 %r9, %tid.x; add.f64 %fd1, %fd2, %fd3;
  shr.s32 %r10, %r1, 40; mov.pred %p3, %p1;
"""


def _kernel(body):
    decl = (".reg .pred %p<8>; .reg .b16 %h<8>; .reg .b32 %r<16>; .reg .b64 %rd<20>; .reg .f32 %f<16>; "
            ".reg .f64 %fd<8>;")
    text = HEADER + f"\n.visible .entry k()\n{{\n  {decl}\n{body}\n  ret;\n}}\n"
    return ptxsim.load_ptx(text).kernel("k").program


def _fill(st, prog, rng):
    """Random register bits, float specials in every tenth lane, and in lanes 0-2 of %f13-%f15 sums whose f64
    rounding lands on an f32 tie (fma must round once) or below f32's normal range."""
    for i, r in enumerate(st.regs):
        r[:] = rng.integers(0, 2, r.size).astype(bool) if r.dtype == bool else \
            rng.integers(0, np.iinfo(r.dtype).max, r.size, dtype=r.dtype, endpoint=True)
        if prog.reg_names[i].startswith("%f") and not prog.reg_names[i].startswith("%fd"):
            f = r.view(np.float32)
            f[::2] = rng.standard_normal(f[::2].size).astype(np.float32)  # ordinary values, and ties of them
            f[::10] = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-40], np.float32)[
                rng.integers(0, 7, f[::10].size)]
    names = {n: i for i, n in enumerate(prog.reg_names)}
    a, b, c = (st.regs[names[f"%f{k}"]].view(np.float32) for k in (13, 14, 15))
    # 2^-24 (1 + 2^-12) * (1 - 2^-12 + 2^-24) + 1 = 1 + 2^-24 + 2^-60: f64 rounds to the tie 1 + 2^-24, f32 must
    # then round up (the exact value is above the tie)
    a[0], b[0], c[0] = np.float32(2.0**-24 * (1 + 2.0**-12)), np.float32(1 - 2.0**-12 + 2.0**-24), np.float32(1)
    a[1], b[1], c[1] = np.float32(2.0**-70), np.float32(2.0**-60), np.float32(-2.0**-140)  # sum below 2^-126
    a[2], b[2], c[2] = np.float32(0), np.float32(5), np.float32(-0.0)  # zero sum: +0
    a[3], b[3], c[3] = np.float32(1), np.float32(1 + 2.0**-23), np.float32(2.0**-24)  # an exact tie: to even
    return names


def _state(prog):
    dev = Device()
    L = Launch((1, 1, 1), (N, 1, 1), 0, dev.gmem, np.zeros(64, np.uint8), {}, [])
    return ExecState(prog, L, np.array([0]))


@np.errstate(all="ignore")  # as ptxsim.launch runs handlers
def _compare(prog, rng, lanes):
    st = _state(prog)
    _fill(st, prog, rng)
    start = [r.copy() for r in st.regs]
    fast = [i for i in prog.instrs if hasattr(i.handler, "generic")]
    for ins in fast:
        for r, s in zip(st.regs, start, strict=True):
            r[:] = s
        ins.handler(st, ins, lanes)
        got = [r.copy() for r in st.regs]
        for r, s in zip(st.regs, start, strict=True):
            r[:] = s
        ins.handler.generic(st, ins, lanes)
        for k, (g, w) in enumerate(zip(got, st.regs, strict=True)):
            assert g.tobytes() == w.tobytes(), f"`{ins.text}`: register {prog.reg_names[k]} differs"
    return fast


def test_fast_paths_equal_generic_on_all_lanes(rng):
    prog = _kernel(BODY)
    fast = _compare(prog, rng, FULL)
    slow = [i.text for i in prog.instrs if i.op != "ret" and not hasattr(i.handler, "generic")]
    assert slow == [], slow  # every form in BODY is one the fast paths take
    assert len(fast) == len(prog.instrs) - 1


def test_fast_paths_equal_generic_on_part_of_the_lanes(rng):
    prog = _kernel(BODY)
    _compare(prog, rng, np.flatnonzero(rng.random(N) < 0.5))


def test_fma_fast_path_rounds_once():
    """The tie and tiny lanes go through the exact path: 1 + 2^-24 + 2^-60 rounds up to 1 + 2^-23."""
    prog = _kernel(BODY)
    st = _state(prog)
    names = _fill(st, prog, np.random.default_rng(0))
    ins = next(i for i in prog.instrs if i.op == "fma" and i.ops[0].name == "%f12")
    with np.errstate(all="ignore"):
        ins.handler(st, ins, FULL)
    got = st.regs[names["%f12"]].view(np.float32)
    assert got[0] == np.float32(1 + 2.0**-23)
    assert got[1] == np.float32(2.0**-130 - 2.0**-140)  # subnormal in f32: rounded once from the exact value
    assert got[2] == 0 and not np.signbit(got[2])
    assert got[3] == np.float32(1 + 2.0**-22)


def test_slow_forms_keep_the_generic_handler():
    prog = _kernel(SLOW)
    fast = [i.text for i in prog.instrs if hasattr(i.handler, "generic")]
    assert fast == []


@pytest.mark.parametrize("threads", [64, 96])
def test_kernel_results_equal_without_fast_paths(monkeypatch, rng, threads):
    """A loop whose lanes diverge (guarded fma, early exits) gives the same memory either way."""
    body = """
  mov.u32 %r1, %tid.x; cvt.u64.u32 %rd1, %r1; shl.b64 %rd2, %rd1, 2; ld.param.u64 %rd3, [out];
  add.s64 %rd4, %rd3, %rd2; mov.f32 %f1, 0f3F800000; mov.u32 %r2, 0; and.b32 %r3, %r1, 7;
L1:
  setp.lt.u32 %p1, %r2, %r3; @%p1 fma.rn.f32 %f1, %f1, 0f3F8CCCCD, 0f33800000;
  add.s32 %r2, %r2, 1; setp.lt.u32 %p2, %r2, 9; @%p2 bra L1;
  st.global.f32 [%rd4], %f1;
"""
    text = HEADER + (".visible .entry k(.param .u64 out)\n{\n  .reg .pred %p<4>; .reg .b32 %r<8>; .reg .b64 %rd<8>; "
                     f".reg .f32 %f<4>;\n{body}\n  ret;\n}}\n")
    outs = []
    for disable in (False, True):
        if disable:
            monkeypatch.setattr("ptxsim.decode.specialise", lambda ins: None)
        k = ptxsim.load_ptx(text + ("// generic\n" if disable else "")).kernel("k")
        assert any(hasattr(i.handler, "generic") for i in k.program.instrs) != disable
        out = np.zeros(threads, np.float32)
        ptxsim.launch(k, 1, threads, [out])
        outs.append(out)
    assert outs[0].tobytes() == outs[1].tobytes()
    assert len(set(outs[0].tolist())) == 8  # eight loop counts: the lanes really diverged


def test_dynamic_shared_address_immediate():
    """A dynamic shared variable's address is patched into its immediates after the instructions are decoded: a fast
    handler must not have taken the unpatched value."""
    text = HEADER + """
.extern .shared .align 16 .b8 dyn[];
.visible .entry k(.param .u64 out)
{
  .shared .align 4 .b8 fixed[40];
  .reg .b32 %r<4>; .reg .b64 %rd<4>;
  mov.u32 %r1, dyn; add.u32 %r2, %r1, 4; mov.u32 %r3, fixed; add.u32 %r2, %r2, %r3;
  ld.param.u64 %rd1, [out]; st.global.u32 [%rd1], %r2;
  ret;
}
"""
    out = np.zeros(1, np.uint32)
    ptxsim.launch(ptxsim.load_ptx(text).kernel("k"), 1, 32, [out], shared_bytes=16)  # a whole warp: the fast path
    assert int(out[0]) == 48 + 4  # 40 static bytes rounded up to 16, plus 4 (fixed is at 0)

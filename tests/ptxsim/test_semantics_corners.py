"""Semantic corners checked against exact references: integer/float conversions rounded once, f64 -> narrow
overflow/NaN/subnormal cases in every rounding mode, 32-bit address wrap-around."""
from fractions import Fraction

import numpy as np
import pytest
from ptxkit import HEADER, run

import ptxsim
from ptxsim import rounding as rnd

_FMT = {"f64": (53, -1022, 1023), "f32": (24, -126, 127), "f16": (11, -14, 15), "bf16": (8, -126, 127)}
MODES = ("rn", "rz", "rm", "rp")


def ref_round(value, fmt: str, mode: str) -> float:
    """IEEE rounding of an exact value (Fraction, or +-inf / nan float) to fmt, from first principles."""
    if isinstance(value, float):
        if not np.isfinite(value) or value == 0:
            return value  # inf, nan and signed zeros pass through
        value = Fraction(value)
    p, emin, emax = _FMT[fmt]
    top = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax
    neg, a = value < 0, abs(value)
    if a == 0:
        return -0.0 if neg else 0.0
    e = emin
    while a >= Fraction(2) ** (e + 1) and e <= emax:
        e += 1
    q = Fraction(2) ** (e - p + 1)
    lo = (a // q) * q
    hi = lo + q
    if mode == "rn":
        r = lo if a - lo < hi - a or (a - lo == hi - a and (lo / q) % 2 == 0) else hi
    else:
        toward_up = {"rz": False, "rm": neg, "rp": not neg}[mode]
        r = lo if a == lo or not toward_up else hi
    if r > top:
        r = {"rn": float("inf"), "rz": top, "rm": top if not neg else float("inf"),
             "rp": float("inf") if not neg else top}[mode]
    out = float(r)
    return -out if neg else out


def _u64_cases():
    rng = np.random.default_rng(5)
    edges = [2**64 - 1, 2**63, 2**63 + 2**39 + 1, 0xFFFFFF7FFFFFFFFF, 0xFFFFFF8000000000, 0xFFFFFF8000000001,
             (1 << 63) | (1 << 39), (1 << 63) | (1 << 40) | (1 << 39), 2**53 + 1, 2**54 + 3, 2**24 + 1, 0, 1, 7]
    rand = [int(x) for x in rng.integers(0, 2**64, 40, dtype=np.uint64)]
    return np.array(edges + rand, np.uint64)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dst", ["f32", "f64"])
def test_u64_and_s64_to_float_round_once(dst, mode):
    u = _u64_cases()
    s = u.view(np.int64)
    reg = "%f1" if dst == "f32" else "%fd1"
    dt = np.float32 if dst == "f32" else np.float64
    store = "st.global.f32 [%rd8]" if dst == "f32" else "st.global.f64 [%rd12]"
    for src, vals, exact in (("u64", u, [Fraction(int(x)) for x in u]), ("s64", s, [Fraction(int(x)) for x in s])):
        out = np.zeros(len(vals), dt)
        run(f"ld.global.u64 %rd15, [%rd11]; cvt.{mode}.{dst}.{src} {reg}, %rd15; {store}, {reg};", vals, out)
        want = np.array([ref_round(v, dst, mode) for v in exact], dt)
        bad = np.flatnonzero(out != want)
        assert bad.size == 0, f"cvt.{mode}.{dst}.{src}({int(vals[bad[0]])}) = {out[bad[0]]!r}, want {want[bad[0]]!r}"


@pytest.mark.parametrize("dst", ["f16", "bf16"])
def test_u32_and_s32_to_half_round_once(dst):
    vals = np.array([65519, 65520, 65504, 2049, 2051, 0xFFFFFFFF, 0x80000000, 4097, 3, 0x7FFFFFFF, 257, 259, 0x1017F],
                    np.uint32)
    for mode in MODES:
        for src in ("u32", "s32"):
            out = np.zeros(len(vals), np.uint16)
            run(f"ld.global.u32 %r1, [%rd7]; cvt.{mode}.{dst}.{src} %h1, %r1; mul.wide.u32 %rd15, %r0, 2; "
                f"add.s64 %rd15, %rd2, %rd15; st.global.b16 [%rd15], %h1;", vals, out)
            ints = vals.view(np.int32) if src == "s32" else vals
            want = [ref_round(Fraction(int(v)), dst, mode) for v in ints]
            got = (out.view(np.float16).astype(np.float64) if dst == "f16"
                   else (out.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64))
            assert list(got) == want, (mode, src)


_F64_CASES = np.array([1e300, -1e300, 3.5e38, -3.5e38, 3.3961e38, 3.3963e38, np.inf, -np.inf, 1e-300, -1e-300,
                       70000.0, -65520.0, 65519.99, 1e-45, -7e-46, 6e-8, 2.9e-8, 9.2e-41, -1.1e-38, 0.0, -0.0,
                       1 + 2.0**-9, 1 + 2.0**-8 + 2.0**-30, 2.0**-133, 2.0**-134 * 1.5], np.float64)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dst", ["bf16", "f16", "f32"])
def test_f64_to_narrow_overflow_nan_subnormal_every_mode(dst, mode):
    vals = np.concatenate([_F64_CASES, [np.nan]])
    if dst == "f32":
        out = np.zeros(len(vals), np.float32)
        run(f"ld.global.f64 %fd1, [%rd11]; cvt.{mode}.f32.f64 %f1, %fd1; st.global.f32 [%rd8], %f1;", vals, out)
        got = out.astype(np.float64)
    else:
        out = np.zeros(len(vals), np.uint16)
        run(f"ld.global.f64 %fd1, [%rd11]; cvt.{mode}.{dst}.f64 %h1, %fd1; mul.wide.u32 %rd15, %r0, 2; "
            f"add.s64 %rd15, %rd2, %rd15; st.global.b16 [%rd15], %h1;", vals, out)
        got = (out.view(np.float16).astype(np.float64) if dst == "f16"
               else (out.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64))
    assert np.isnan(got[-1])
    for x, g in zip(vals[:-1], got[:-1], strict=True):
        want = ref_round(float(x), dst, mode)
        assert g == want and np.signbit(g) == np.signbit(want), f"cvt.{mode}.{dst}.f64({x!r}) = {g!r}, want {want!r}"


def test_rounding_module_matches_reference_on_random_values():
    rng = np.random.default_rng(11)
    x = np.ldexp(rng.uniform(1, 2, 300), rng.integers(-160, 140, 300)) * rng.choice([-1, 1], 300)
    for fmt in ("f32", "f16", "bf16"):
        for mode in MODES:
            got = rnd.round_float(x, fmt, "." + mode)
            want = [ref_round(Fraction(float(v)), fmt, mode) for v in x]
            assert list(got) == want, (fmt, mode)


def test_32bit_address_register_plus_offset_wraps_modulo_2_32():
    src = HEADER + """
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<8>; .reg .b64 %rd<4>;
  .shared .align 4 .b32 sh[4];
  .local .align 4 .b32 lo[4];
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, sh; add.u32 %r2, %r1, -4; mov.u32 %r3, 77; st.shared.u32 [%r2+8], %r3; ld.shared.u32 %r4, [%r1+4];
  mov.u32 %r5, lo; add.u32 %r5, %r5, -8; st.local.u32 [%r5+12], %r3; ld.local.u32 %r6, [lo+4];
  st.global.u32 [%rd1], %r4; st.global.u32 [%rd1+4], %r6;
  ret;
}
"""
    out = np.zeros(2, np.uint32)
    ptxsim.launch(ptxsim.load_ptx(src).kernel("k"), 1, 1, [out])
    assert list(out) == [77, 77]


def test_64bit_address_does_not_wrap_at_2_32():
    src = HEADER + """
.visible .entry k(.param .u64 out)
{
  .reg .b64 %rd<4>; .reg .b32 %r<2>;
  ld.param.u64 %rd1, [out]; sub.u64 %rd2, %rd1, 4294967296; st.global.u32 [%rd2+4294967296], %r1;
  ld.global.u32 %r1, [%rd2+4294967300];
  ret;
}
"""
    ptxsim.launch(ptxsim.load_ptx(src).kernel("k"), 1, 1, [np.zeros(2, np.uint32)])  # no fault: 64-bit sum


# -- recursion ------------------------------------------------------------------------------------------------
RECURSIVE = HEADER + """
.func (.param .b32 ret) rec(.param .b32 n)
{
  .reg .b32 %r<6>; .reg .pred %p<2>;
  .local .align 4 .b32 buf[2];
  ld.param.b32 %r1, [n];
  st.local.u32 [buf], %r1;
  setp.eq.s32 %p1, %r1, 0;
  @%p1 bra $Ldone;
  sub.s32 %r2, %r1, STEP;
  {
  .param .b32 a0;
  .param .b32 r0;
  st.param.b32 [a0], %r2;
  call.uni (r0), rec, (a0);
  ld.param.b32 %r3, [r0];
  }
  ld.local.u32 %r4, [buf];
  ld.param.b32 %r5, [n];
  mul.lo.s32 %r4, %r4, %r5;
  add.s32 %r3, %r3, %r4;
  add.s32 %r3, %r3, %r1;
  st.param.b32 [ret], %r3;
  ret;
$Ldone:
  mov.u32 %r3, 0;
  st.param.b32 [ret], %r3;
  ret;
}

.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<4>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  rem.u32 %r2, %r1, 9;
  {
  .param .b32 a0;
  .param .b32 r0;
  st.param.b32 [a0], %r2;
  call.uni (r0), rec, (a0);
  ld.param.b32 %r3, [r0];
  }
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd2, %rd1, %rd2;
  st.global.u32 [%rd2], %r3;
  ret;
}
"""


def test_recursive_func_keeps_registers_params_and_local_per_activation():
    """sum over k = n..1 of k*k + k, each activation reading its own n back from a register, .param and .local
    after the nested call; lanes recurse to different depths (n = tid % 9) in one warp."""
    k = ptxsim.load_ptx(RECURSIVE.replace("STEP", "1")).kernel("k")
    assert k.program.recursive == {"rec"}
    out = np.zeros(64, np.int32)
    ptxsim.launch(k, 1, 64, [out])
    want = [sum(j * j + j for j in range(1, t % 9 + 1)) for t in range(64)]
    assert list(out) == want


def test_recursive_cuda_c_compiled_by_nvrtc(cuda_kernel):
    src = r"""
extern "C" __device__ __noinline__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
extern "C" __global__ void k(int* out, const int* in) { out[threadIdx.x] = fib(in[threadIdx.x]); }
"""
    k = cuda_kernel(src, "k")
    assert "fib" in k.program.recursive
    inp = (np.arange(32) % 13).astype(np.int32)
    out = np.zeros(32, np.int32)
    ptxsim.launch(k, 1, 32, [out, inp])
    fib = [0, 1]
    while len(fib) < 13:
        fib.append(fib[-1] + fib[-2])
    assert list(out) == [fib[int(x)] for x in inp]


def test_unbounded_recursion_hits_the_call_depth_limit():
    k = ptxsim.load_ptx(RECURSIVE.replace("STEP", "0")).kernel("k")  # n never reaches 0 (except for tid % 9 == 0)
    with pytest.raises(ptxsim.CallDepthExceeded, match=r"kernel k: `call\.uni.*` at PTX line 18 .* would nest 257 "
                                                       r"calls deep; the call-depth limit is 256"):
        ptxsim.launch(k, 1, 32, [np.zeros(32, np.int32)])

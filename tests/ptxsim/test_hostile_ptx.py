"""Malformed or hostile PTX and launches: rejected like ptxas / the driver would, always with ptxsim's own errors
that say what was asked, where, and what the limit is (never MemoryError, ValueError, IndexError, ...)."""
import time

import numpy as np
import pytest
from ptxkit import HEADER, TEMPLATE, kernel

import ptxsim


def entry(body: str, decls: str = "", head: str = HEADER, directives: str = "") -> str:
    return head + decls + f"""
.visible .entry k(.param .u64 out) {directives}
{{
  .reg .pred %p<4>; .reg .b16 %h<4>; .reg .b32 %r<8>; .reg .u32 %u<4>; .reg .b64 %rd<8>; .reg .f32 %f<4>;
  .reg .f64 %fd<2>;
  ld.param.u64 %rd1, [out];
{body}
  ret;
}}
"""


def load_kernel(body: str, **kw):
    return ptxsim.load_ptx(entry(body, **kw)).kernel("k")


# -- labels, operand types and immediates ---------------------------------------------------------------------
def test_duplicate_label_is_rejected_naming_both_lines():
    with pytest.raises(ptxsim.DecodeError, match=r"label \$L1 is already defined at line 10"):
        load_kernel("$L1:\n  add.s32 %r1, %r1, 1;\n$L1:\n  bra $L1;")


_BAD_OPERANDS = [
    ("add.s32 %r1, %rd2, %r3;", r"%rd2 is a 64-bit .b64 register; the instruction needs 32-bit"),
    ("add.s32 %r1, %p1, 1;", r"%p1 is a .pred register where a .s32 value is expected"),
    ("add.s32 %r1, %f1, %r2;", r"%f1 is a .f32 register; a .s32 instruction takes"),
    ("add.f32 %f1, %u1, %f2;", r"%u1 is a .u32 register; a .f32 instruction takes"),
    ("selp.b32 %r1, %r2, %r3, %r4;", r"%r4 is a .b32 register where a predicate register is expected"),
    ("setp.lt.s32 %r1, %r2, %r3;", r"%r1 is a .b32 register where a predicate register is expected"),
    ("mul.wide.u32 %r1, %r2, %r3;", r"%r1 is a 32-bit .b32 register; the instruction needs 64-bit"),
    ("and.pred %p1, %p2, %r1;", r"%r1 is a .b32 register where a predicate register is expected"),
    ("add.s32 %r1, %r2, 4294967296;", r"immediate 4294967296 does not fit a 32-bit .s32 operand"),
    ("add.u16 %h1, %h2, -32769;", r"immediate -32769 does not fit a 16-bit .u16 operand"),
    ("add.s32 %r1, %r2, 1.5;", r"floating-point immediate 1.5 in a .s32 instruction"),
    ("atom.global.add.u64 %r2, [%rd1], 1;", r"%r2 is a 32-bit .b32 register; the instruction needs 64-bit"),
    ("ld.global.u64 %r1, [%rd1];", r"%r1 is 32-bit .b32 register; a .u64 ld needs data registers of at least 64"),
    ("st.global.u32 [%rd1], %p1;", r"%p1 is a predicate .pred register; a .u32 st needs data registers"),
    ("st.global.f32 [%rd1], %u1;", r"%u1 is a .u32 register; a .f32 instruction takes"),
    ("ld.global.f32 %u1, [%rd1];", r"%u1 is a .u32 register; a .f32 instruction takes"),
    ("cvt.rn.f32.f64 %f1, %f2;", r"%f2 is 32-bit .f32 register; a .f64 cvt needs data registers of at least 64"),
    ("shfl.sync.bfly.b32 %rd2, %r1, 1, 31, -1;", r"%rd2 is a 64-bit .b64 register; the instruction needs 32-bit"),
]


@pytest.mark.parametrize("body, what", _BAD_OPERANDS)
def test_operand_that_does_not_fit_the_instruction_is_rejected(body, what):
    with pytest.raises(ptxsim.DecodeError, match=what.replace(".", r"\.").replace("%", "%")) as e:
        load_kernel(body)
    assert "line 10" in str(e.value)


_IDIOMS = """
  mov.b32 %r1, %f1; mov.b32 %f2, %r1; mov.b64 %rd2, %fd1; mov.b16 %h1, 0x3C00;
  add.s64 %rd2, %rd1, 8; add.u64 %rd3, %rd2, %rd1; shl.b64 %rd4, %rd3, %r1; shr.u32 %r2, %r1, %u1;
  cvt.u64.u32 %rd5, %r1; cvt.rn.f32.u32 %f1, %u1; mul.wide.s32 %rd6, %r1, 4; mad.wide.u32 %rd6, %r1, %u1, %rd6;
  and.b32 %r3, %r2, -16; and.b32 %r3, %r2, 0xFFFFFFFF; add.s32 %r3, %r3, -2147483648; add.u32 %u2, %u1, %r3;
  setp.lt.s32 %p1, %r1, %u1; selp.b32 %r4, %r1, %u1, %p1; and.pred %p2, %p1, %p1; not.pred %p3, %p2;
  setp.ne.and.s32 %p1|%p2, %r1, 0, %p3; mov.u32 %r5, %tid.x; mov.pred %p1, 1; add.f32 %f1, %f2, 0f3F800000;
"""


def test_legal_compiler_idioms_still_load():
    load_kernel(_IDIOMS)


@pytest.mark.parametrize("body, what", [
    ("cvt.b128.f16 %f2, %h1;", r"cvt does not take \.b128"),
    ("cvt.rn.sat.bf16.s32 %h1, %r1;", r"\.sat is not a modifier of cvt to \.bf16"),
    ("shfl.sync.bfly.b128 %r3, %r1, 1, 31, -1;", r"shfl takes only \.b32"),
    ("shfl.sync.bfly %r3, %r1, 1, 31, -1;", r"shfl needs a type modifier"),
    ("and.u32 %r1, %r2, %r3;", r"and takes only \.b16, \.b32, \.b64, \.pred"),
    ("st.global.pred [%rd1], %p1;", r"st takes only"),
])
def test_types_an_opcode_does_not_take_are_rejected(body, what):
    with pytest.raises(ptxsim.DecodeError, match=what):
        load_kernel(body)


def test_barrier_ids_and_counts_out_of_range():
    with pytest.raises(ptxsim.UnsupportedInstruction, match=r"barrier id 1\.5 is not an integer"):
        load_kernel("bar.sync 1.5;")
    k = load_kernel("mov.u32 %r1, %tid.x; add.u32 %r1, %r1, 15; bar.sync %r1;")
    with pytest.raises(ptxsim.PtxSimError, match=r"barrier id 16 \(expected 0\.\.15\) in kernel k at PTX line 10 .* "
                                                 r"thread \(1, 0, 0\)"):
        ptxsim.launch(k, 1, 32, [np.zeros(1, np.uint32)])
    k = load_kernel("mov.u32 %r1, 48; bar.sync 0, %r1;")
    with pytest.raises(ptxsim.PtxSimError, match=r"thread count 48 \(expected a multiple of 32"):
        ptxsim.launch(k, 1, 64, [np.zeros(1, np.uint32)])


def test_fuzzed_programs_raise_only_ptxsim_errors():
    """Single-token mutations of small kernels (the class of the 93 hostile files): every failure is a PtxSimError."""
    import random
    import re

    bodies = ["ld.global.u32 %r1, [%rd1]; add.s32 %r2, %r1, 5; st.global.u32 [%rd1], %r2;",
              "ld.global.f32 %f1, [%rd1]; cvt.rn.f16.f32 %h1, %f1; cvt.f32.f16 %f2, %h1; st.global.f32 [%rd1], %f2;",
              "ld.global.v2.u32 {%r1, %r2}, [%rd1]; shfl.sync.bfly.b32 %r3, %r1, 1, 31, -1; st.global.u32 [%rd1], %r3;",
              "mov.u32 %r1, %tid.x; atom.global.add.u32 %r2, [%rd1], 1; bar.sync 0; st.global.u32 [%rd1], %r2;"]
    swaps = ["%r1", "%rd1", "%p1", "%f1", "%fd1", "%h1", "0", "-1", "4294967296", "0f7F800000", "1.5", "u64", "s8",
             "f16", "b128", "pred", "v4", "shared", "local", "param", "const", "%tid.x", "99999999999999999999", "wide"]
    rng = random.Random(7)
    outcomes = set()
    for _ in range(150):
        parts = re.split(r"(\s+|,|;|\[|\]|\{|\}|\.)", rng.choice(bodies))
        idx = [i for i, p in enumerate(parts) if p.strip() and p not in ",;[]{}."]
        for _ in range(rng.randint(1, 2)):
            parts[rng.choice(idx)] = rng.choice(swaps)
        try:
            k = load_kernel("".join(parts))
            ptxsim.launch(k, 1, 32, [np.zeros(64, np.uint32)], budget=10**5, time_limit=5)
            outcomes.add("ran")
        except ptxsim.PtxSimError as e:
            outcomes.add(type(e).__name__)
    assert {"ran", "DecodeError", "UnsupportedInstruction"} <= outcomes


_DIVERSE_CUDA = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void a1(float* o, const double* d, const long long* l, const unsigned long long* u, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;
  __shared__ float sh[256];
  sh[threadIdx.x] = (float)d[i] + (float)l[i] + (float)u[i] + __ll2float_rd(l[i]) + __ull2float_ru(u[i]);
  __syncthreads();
  float v = sh[(threadIdx.x + 1) % blockDim.x];
  v += __shfl_xor_sync(0xffffffff, v, 1); v = fmaxf(v, __int_as_float(__float_as_int(v) & 0x7fffffff));
  atomicAdd(o, v); atomicMax((int*)o + 1, (int)v); atomicCAS((unsigned long long*)o + 2, 0ull, (unsigned long long)i);
  __half h = __float2half_rn(v); __nv_bfloat16 b = __float2bfloat16_rz(v);
  o[i + 8] = __half2float(h) + __bfloat162float(b) + __double2float_rz(d[i]);
  o[i + 16] = (float)(char)l[i] + (float)(short)u[i] + __saturatef(v) + rsqrtf(v) + __expf(v) + (i << (n & 31))
              + (u[i] >> (n & 63));
  long long x = l[i]; x = x / 3 + x % 7;
  unsigned q = __popc(i) + __clz(i) + __brev(i) + __byte_perm(i, n, 0x3210);
  o[i + 24] = x + q + __umulhi(i, n) + __mul24(i, n);
  double dd = d[i]; dd = fma(dd, 2.0, 1.0) + sqrt(dd) + (double)__float2int_rn(v) + __dsqrt_rn(dd);
  o[i + 32] = (float)dd;
  float loc[8]; for (int j = 0; j < 8; j++) loc[j] = v * j; o[i + 40] = loc[n & 7];
  if (__any_sync(0xffffffff, v > 1.0f)) o[i + 48] = __ballot_sync(0xffffffff, v > 0.f);
}
"""


@pytest.mark.parametrize("arch", ["compute_90", "compute_80"])
def test_diverse_nvrtc_output_passes_validation(cuda_kernel, arch):
    """Conversions of every width, shared/local memory, atomics, shuffles, votes, half/bf16, 64-bit division: what
    NVRTC emits for them must pass every operand check."""
    assert cuda_kernel(_DIVERSE_CUDA, "a1", arch).program.instrs


# -- module directives ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("head, what", [
    (".version 99.9\n.target sm_90\n.address_size 64\n", r"\.version 99\.9 is not a PTX ISA version"),
    (".version 8.8\n.target sm_999\n.address_size 64\n", r"\.target sm_999 is not a target"),
    (".version 7.7\n.target sm_90\n.address_size 64\n", r"\.version 7\.7 does not support \.target sm_90 .* 7\.8"),
    (".version 7.8\n.target sm_90a\n.address_size 64\n", r"\.version 7\.8 does not support \.target sm_90a"),
])
def test_unknown_version_or_target_is_rejected(head, what):
    with pytest.raises(ptxsim.DecodeError, match=what):
        ptxsim.load_ptx(entry("", head=head))


def test_known_targets_load():
    for target in ("sm_90a", "compute_80", "sm_100a, texmode_independent", "sm_120", "sm_90, debug"):
        ptxsim.load_ptx(entry("", head=f".version 8.8\n.target {target}\n.address_size 64\n"))


def test_const_beyond_64k_is_rejected_and_64k_loads():
    ptxsim.load_ptx(entry("", decls=".const .align 4 .b8 c0[32768];\n.const .align 4 .b8 c1[32768];\n"))
    with pytest.raises(ptxsim.DecodeError, match=r"\.const variables take 65537 bytes .* holds 65536 bytes"):
        ptxsim.load_ptx(entry("", decls=".const .align 4 .b8 c0[32768];\n.const .align 4 .b8 c1[32769];\n"))


def test_static_shared_beyond_48k_is_rejected_like_ptxas():
    ok = entry("mov.u32 %r1, big; st.shared.u32 [%r1], %r1;", decls=".shared .align 4 .b8 big[49152];\n")
    ptxsim.load_ptx(ok).kernel("k")
    with pytest.raises(ptxsim.DecodeError, match=r"49156 bytes of static \.shared memory; ptxas allows 49152"):
        ptxsim.load_ptx(ok.replace("49152", "49156")).kernel("k")


def test_parameter_space_beyond_ptxas_limit_is_rejected():
    src = HEADER + ".visible .entry k(.param .align 4 .b8 p[N])\n{\n  ret;\n}\n"
    assert ptxsim.load_ptx(src.replace("N", "32764")).kernel("k").program.param_bytes == 32764
    for n in ("32768", "1000000000000"):
        with pytest.raises(ptxsim.DecodeError, match=rf"declares {n} bytes of parameters; ptxas allows 32764"):
            ptxsim.load_ptx(src.replace("N", n)).kernel("k")


def test_store_to_kernel_param_space_is_rejected():
    with pytest.raises(ptxsim.DecodeError, match=r"stores to the kernel parameter space"):
        load_kernel("st.param.u64 [out], %rd1;")


# -- launches CUDA refuses ------------------------------------------------------------------------------------
@pytest.mark.parametrize("grid, block, what", [
    ((1, 65536), 32, r"grid\.y = 65536 exceeds CUDA's limit of 65535"),
    ((1, 1, 70000), 32, r"grid\.z = 70000 exceeds CUDA's limit of 65535"),
    (2**31, 32, r"grid\.x = 2147483648 exceeds CUDA's limit of 2147483647"),
    (1, (1, 1, 65), r"block\.z = 65 exceeds CUDA's limit of 64"),
    (1, (64, 32), r"2048 threads; at most 1024"),
])
def test_launch_shapes_cuda_refuses(grid, block, what):
    with pytest.raises(ptxsim.LaunchError, match=what):
        ptxsim.launch(load_kernel(""), grid, block, [np.zeros(1, np.uint32)])


def test_maxntid_and_reqntid_are_enforced():
    k = load_kernel("", directives=".maxntid 64, 1, 1")
    ptxsim.launch(k, 1, 64, [np.zeros(1, np.uint32)])
    with pytest.raises(ptxsim.LaunchError, match=r"128 threads; kernel k declares \.maxntid 64, 1, 1"):
        ptxsim.launch(k, 1, 128, [np.zeros(1, np.uint32)])
    k = load_kernel("", directives=".reqntid 32, 2")
    ptxsim.launch(k, 1, (32, 2), [np.zeros(1, np.uint32)])
    with pytest.raises(ptxsim.LaunchError, match=r"differs from kernel k's \.reqntid 32, 2"):
        ptxsim.launch(k, 1, 64, [np.zeros(1, np.uint32)])


# -- resources: never an internal exception -------------------------------------------------------------------
def test_huge_grid_is_not_materialised():
    t0 = time.perf_counter()
    with pytest.raises(ptxsim.InstructionBudgetExceeded, match=r"more than 1000 warp-instructions"):
        ptxsim.launch(load_kernel(""), 2**31 - 1, 32, [np.zeros(1, np.uint32)], budget=1000)
    assert time.perf_counter() - t0 < 5


def test_gigabyte_local_array_is_a_resource_error():
    src = entry("mov.u32 %r1, big;", decls="").replace("ld.param.u64", ".local .align 4 .b8 big[1073741824];\n"
                                                                       "  ld.param.u64")
    with pytest.raises(ptxsim.ResourceLimitError, match=r"1073741824 bytes of \.local memory per thread; the limit "
                                                        r"is 524288"):
        ptxsim.load_ptx(src).kernel("k")


def test_four_gigabyte_global_variable_is_a_resource_error():
    k = load_kernel("mov.u64 %rd2, big;", decls=".global .align 8 .b8 big[4294967296];\n")
    with pytest.raises(ptxsim.ResourceLimitError, match=r"allocating 4294967296 bytes for \.global big .* the limit "
                                                        r"is \d+ bytes \(PTXSIM_MAX_GLOBAL\)"):
        ptxsim.launch(k, 1, 1, [np.zeros(1, np.uint32)])
    with pytest.raises(ptxsim.ResourceLimitError):
        ptxsim.Device().alloc(-1)


@pytest.mark.parametrize("frag, what", [
    ("{%r1, %r2, %r3}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%r1, %r2, %r3, %r4}", "fragment d needs 4 register"),
    ("{%r1, %r2, %r3, %r4}, {%r1, %r2}, {%r5, %r6}, {%r1, %r2, %r3, %r4}", "fragment a needs 4 register"),
    ("{%r1, %r2, %r3, %r4}, {%r1, %r2, %r3, %r4}, {%r5}, {%r1, %r2, %r3, %r4}", "fragment b needs 2 register"),
    ("{%r1, %r2, %r3, %r4}, {%rd1, %r2, %r3, %r4}, {%r5, %r6}, {%r1, %r2, %r3, %r4}", "needs 32-bit registers"),
])
def test_wrong_mma_fragments_are_rejected(frag, what):
    with pytest.raises(ptxsim.UnsupportedInstruction, match=what):
        load_kernel(f"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {frag};")


def test_non_utf8_bytes_and_non_ascii_text_are_syntax_errors():
    raw = entry("add.s32 %r1, %r1, 1; // caf\xe9").encode("latin-1")
    with pytest.raises(ptxsim.PtxSyntaxError, match=r"byte 0xe9 is not UTF-8") as e:
        ptxsim.load_ptx(raw)
    assert e.value.line == 10
    with pytest.raises(ptxsim.PtxSyntaxError, match=r"non-ASCII character") as e:
        ptxsim.load_ptx(entry("add.s32 %r1, %r1, 1 \u2013 2;"))
    assert e.value.line == 10
    with pytest.raises(ptxsim.PtxSyntaxError, match=r"expected PTX text as str or bytes, got int"):
        ptxsim.load_ptx(42)


def test_deep_nesting_is_a_syntax_error_not_a_recursion_error():
    with pytest.raises(ptxsim.PtxSyntaxError, match=r"nested too deeply"):
        ptxsim.load_ptx(entry("not.pred %p1, " + "!" * 100000 + "%p2;"))


def test_messages_quote_at_most_about_200_characters_of_a_line():
    long_line = "add.s32 %r1, %r1, 1; " * 5000 + "add.s32 %r1, %r2 %r3;"
    with pytest.raises(ptxsim.PtxSyntaxError) as e:
        ptxsim.load_ptx(entry(long_line))
    assert len(str(e.value)) < 600 and "%r2" in str(e.value)
    vec = "{" + ", ".join(["%r1"] * 3000) + "}"
    with pytest.raises(ptxsim.PtxSimError) as e:
        load_kernel(f"add.s32 %r1, %p1, {vec};")
    assert len(str(e.value)) < 800


# -- runaway loops --------------------------------------------------------------------------------------------
LOOP = """
  mov.u32 %r1, 0;
$Lloop:
  add.s32 %r1, %r1, 1;
  bra $Lloop;
"""


def test_runaway_loop_stops_on_the_wall_clock_naming_kernel_and_loop_line():
    t0 = time.perf_counter()
    with pytest.raises(ptxsim.TimeLimitExceeded, match=r"kernel k ran longer than its 0\.5 s wall-clock limit "
                                                       r"\(looping at PTX lines 13-14 .*`bra \$Lloop`") as e:
        ptxsim.launch(load_kernel(LOOP), 1, 32, [np.zeros(1, np.uint32)], time_limit=0.5, budget=10**15)
    assert time.perf_counter() - t0 < 5
    assert isinstance(e.value, ptxsim.InstructionBudgetExceeded)  # callers catching the budget catch this too


def test_default_time_limit_is_about_a_minute():
    from ptxsim.config import CONFIG

    assert 10 <= CONFIG.time_limit <= 120


def test_budget_error_names_the_loop():
    with pytest.raises(ptxsim.InstructionBudgetExceeded, match=r"looping at PTX lines 13-14"):
        ptxsim.launch(load_kernel(LOOP), 1, 32, [np.zeros(1, np.uint32)], budget=5000)


def test_template_kernels_still_load():
    assert kernel("add.s32 %r1, %r1, 1;").name == "k" and "BODY" in TEMPLATE


# -- ptxas as a second opinion --------------------------------------------------------------------------------
def _ptxas():
    from ptxsim.ptxas import find_ptxas

    exe = find_ptxas()
    if exe is None:
        pytest.skip("no ptxas in the nvidia-cuda-nvcc-cu12 wheel")
    return exe


def test_validate_reports_ptxas_errors_with_ptx_lines():
    _ptxas()
    good = entry("add.s32 %r1, %r1, 1;")
    assert ptxsim.load_ptx(good, validate=True).ptxas_checked
    bad = good + "\n.visible .entry bad()\n{\n  .reg .b32 %r<2>;\n  add.s32 %r1, %r7, 1;\n  ret;\n}\n"
    ptxsim.load_ptx(bad)  # ptxsim decodes lazily: the broken entry is only found by ptxas
    with pytest.raises(ptxsim.PtxasError, match=r"PTX line 17: .*'%r7'") as e:
        ptxsim.load_ptx(bad, validate=True)
    assert (17, "Unknown symbol '%r7'") in e.value.diagnostics
    big = entry("mov.u32 %r1, big; st.shared.u32 [%r1], %r1;", decls=".shared .align 4 .b8 big[49156];\n")
    with pytest.raises(ptxsim.PtxasError, match=r"uses too much shared data") as e:
        ptxsim.load_ptx(big, validate=True)  # an error without a PTX line is reported too
    assert e.value.diagnostics and e.value.diagnostics[0][0] == 0
    with pytest.raises(ptxsim.PtxasError, match=r"ptxas not found at /nonexistent/ptxas"):
        ptxsim.load_ptx(entry("add.s32 %r2, %r2, 1;"), validate=True, ptxas="/nonexistent/ptxas")


def test_ptxas_agrees_with_the_operand_checks():
    """The operand rules are ptxas's: every snippet ptxsim rejects ptxas rejects, and the idioms it accepts assemble."""
    _ptxas()
    from ptxsim import ptxas

    ptxas.check(entry(_IDIOMS), "sm_90")
    for body, what in _BAD_OPERANDS:
        if what.startswith("immediate"):
            continue  # ptxas silently truncates out-of-range integer immediates; ptxsim refuses them (see validate.py)
        with pytest.raises(ptxsim.PtxasError):
            ptxas.check(entry(body), "sm_90")


@pytest.mark.parametrize("grid, args, kw, error, what", [
    ("abc", None, {}, ptxsim.LaunchError, r"grid must be an int or a tuple of up to 3 ints, got 'abc'"),
    (1.5, None, {}, ptxsim.LaunchError, r"grid must be an int or a tuple"),
    (1, [np.zeros(4, object)], {}, ptxsim.ParamTypeError, r"array of dtype object cannot be copied to the device"),
    (1, None, {"time_limit": "x"}, ptxsim.LaunchError, r"time_limit must be a number of seconds"),
    (1, None, {"sample_ctas": -3}, ptxsim.LaunchError, r"sample_ctas must be a positive integer, got -3"),
    (1, None, {"budget": 0}, ptxsim.LaunchError, r"budget must be a positive integer, got 0"),
])
def test_hostile_launch_arguments_raise_ptxsim_errors(grid, args, kw, error, what):
    with pytest.raises(error, match=what):
        ptxsim.launch(load_kernel(""), grid, 32, args or [np.zeros(1, np.uint32)], **kw)


def test_device_buffer_misuse_raises_ptxsim_errors():
    dev = ptxsim.Device()
    buf = dev.alloc(16)
    with pytest.raises(ptxsim.MemoryFault, match=r"64 bytes do not fit the 16-byte buffer"):
        dev.copy_in(buf, np.zeros(16, np.float32))
    with pytest.raises(ptxsim.ParamTypeError, match=r"expected a DeviceBuffer, got int"):
        dev.copy_in(5, np.zeros(1, np.float32))
    dev.free(buf)
    with pytest.raises(ptxsim.MemoryFault, match=r"not a live allocation"):
        dev.copy_out(buf, np.zeros(4, np.float32))


def test_ptxsim_never_refuses_what_ptxas_accepts():
    """Differential check over random operand/type combinations: a snippet ptxas assembles must load in ptxsim."""
    _ptxas()
    import random

    from ptxsim import ptxas

    rng = random.Random(3)
    regs = ["%r1", "%rd1", "%p1", "%f1", "%fd1", "%h1", "%u1"]
    forms = ["add.{t} {a}, {b}, {c};", "mul.wide.{t} {a}, {b}, {c};", "and.{t} {a}, {b}, {c};", "not.{t} {a}, {b};",
             "mov.{t} {a}, {b};", "setp.lt.{t} {a}, {b}, {c};", "selp.{t} {a}, {b}, {c}, {d};",
             "ld.global.{t} {a}, [%rd1];", "st.global.{t} [%rd1], {a};", "cvt.{t}.{t2} {a}, {b};",
             "cvt.rn.{t}.{t2} {a}, {b};", "atom.global.add.{t} {a}, [%rd1], {b};"]
    types = ["u32", "s32", "b32", "f32", "u64", "s64", "b64", "f64", "u16", "b16", "f16", "pred"]
    fits = {"u32": "%u1", "s32": "%r1", "b32": "%f1", "f32": "%f1", "u64": "%rd1", "s64": "%rd1", "b64": "%fd1",
            "f64": "%fd1", "u16": "%h1", "b16": "%h1", "f16": "%h1", "pred": "%p1"}

    def reg(t, extra=()):  # usually a register that fits, sometimes anything
        return fits[t] if rng.random() < 0.7 else rng.choice(regs + list(extra))

    accepted = 0
    for _ in range(150):
        form, t, t2 = rng.choice(forms), rng.choice(types), rng.choice(types)
        body = form.format(t=t, t2=t2, a=reg(t), b=reg(t2 if form.startswith("cvt") else t, ["3"]), c=reg(t, ["-1"]),
                           d=reg("pred"))
        src = entry(body)
        try:
            ptxas.check(src, "sm_90")
        except ptxsim.PtxasError:
            continue
        accepted += 1
        ptxsim.load_ptx(src).kernel("k")  # raises (and fails the test) if ptxsim is stricter than ptxas
    assert accepted >= 40

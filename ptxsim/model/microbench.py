"""Microbenchmarks that validate (and, on a GPU, calibrate) the timing model: hand-written PTX kernels, each with the
launch that exercises one hardware quantity and the formula that turns a kernel time into that quantity.

Each `Bench` is data: PTX text, entry, grid/block, how to build its arguments, and `quantity(seconds, stats)` that
maps a kernel time (modelled on ptxsim, or measured on a GPU by `ptxmoe calibrate`) to the quantity published
figures are quoted in (GB/s, TFLOP/s, ns per dependent load, clocks per warp-instruction...). Benches with a
`pair` are differential: the quantity comes from two launches that differ only in the work measured (a pointer
chase of n1 and n2 steps), so fixed costs (the first, cold pass; loop set-up) cancel, as on hardware.

    from ptxsim.model.microbench import BENCHES, run_on_sim
    result = run_on_sim(BENCHES["dram_read"], "H100 SXM")     # -> BenchResult(quantity=..., seconds=...)

ptxsim knows no toolchain: the static facts of a bench's PTX (ptxas registers, nvdisasm's SASS histogram) come from
the caller as `static_facts(ptx) -> {"resources": {entry: {"registers": ...}}, "sass_histogram": {...}}` (the
harness passes harness.static.analyse_ptx). Without them a bench runs at 32 registers and charges PTX counts.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from ptxsim.model import hopper_benches as hb

_HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"

# --- PTX ---------------------------------------------------------------------------------------------------------
# Global streaming read: every thread loads 4 x 16 B, grid-strided (the 4 loads are independent: 4 in flight).
_GID = """
  mov.u32 %r1, %ctaid.x; mov.u32 %r2, %ntid.x; mov.u32 %r3, %tid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3;
  mov.u32 %r5, %nctaid.x; mul.lo.s32 %r6, %r5, %r2;
  mul.wide.u32 %rd3, %r4, 16; add.s64 %rd4, %rd1, %rd3; add.s64 %rd9, %rd2, %rd3;
  mul.wide.u32 %rd5, %r6, 16;
  add.s64 %rd6, %rd4, %rd5; add.s64 %rd7, %rd6, %rd5; add.s64 %rd8, %rd7, %rd5;
"""
_LOAD4 = """
  ld.global{hint}.v4.u32 {{%r10, %r11, %r12, %r13}}, [%rd4];
  ld.global{hint}.v4.u32 {{%r14, %r15, %r16, %r17}}, [%rd6];
  ld.global{hint}.v4.u32 {{%r18, %r19, %r20, %r21}}, [%rd7];
  ld.global{hint}.v4.u32 {{%r22, %r23, %r24, %r25}}, [%rd8];
"""
DRAM_READ = _HEAD + """
.visible .entry dram_read(.param .u64 src, .param .u64 dst)
{
  .reg .b32 %r<40>; .reg .b64 %rd<20>; .reg .pred %p<2>;
  ld.param.u64 %rd1, [src]; ld.param.u64 %rd2, [dst];
""" + _GID + _LOAD4.format(hint="") + """
  xor.b32 %r30, %r10, %r14; xor.b32 %r31, %r18, %r22; xor.b32 %r32, %r30, %r31;
  setp.eq.u32 %p1, %r32, 2139062143;
  @%p1 st.global.u32 [%rd2], %r32;
  ret;
}
"""
DRAM_COPY = _HEAD + """
.visible .entry dram_copy(.param .u64 src, .param .u64 dst)
{
  .reg .b32 %r<40>; .reg .b64 %rd<20>; .reg .pred %p<2>;
  ld.param.u64 %rd1, [src]; ld.param.u64 %rd2, [dst];
""" + _GID + _LOAD4.format(hint="") + """
  add.s64 %rd10, %rd9, %rd5; add.s64 %rd11, %rd10, %rd5; add.s64 %rd12, %rd11, %rd5;
  st.global.v4.u32 [%rd9], {%r10, %r11, %r12, %r13};
  st.global.v4.u32 [%rd10], {%r14, %r15, %r16, %r17};
  st.global.v4.u32 [%rd11], {%r18, %r19, %r20, %r21};
  st.global.v4.u32 [%rd12], {%r22, %r23, %r24, %r25};
  ret;
}
"""
# L2 copy: a working set that fits L2, copied `reps` times with .cg (L2 only, as the published __ldcg/__stcg test).
L2_COPY = _HEAD + """
.visible .entry l2_copy(.param .u64 src, .param .u64 dst, .param .u32 reps)
{
  .reg .b32 %r<40>; .reg .b64 %rd<20>; .reg .pred %p<2>;
  ld.param.u64 %rd1, [src]; ld.param.u64 %rd2, [dst]; ld.param.u32 %r9, [reps];
""" + _GID + """
  mov.u32 %r7, 0;
LOOP:
""" + _LOAD4.format(hint=".cg") + """
  add.s64 %rd10, %rd9, %rd5; add.s64 %rd11, %rd10, %rd5; add.s64 %rd12, %rd11, %rd5;
  st.global.cg.v4.u32 [%rd9], {%r10, %r11, %r12, %r13};
  st.global.cg.v4.u32 [%rd10], {%r14, %r15, %r16, %r17};
  st.global.cg.v4.u32 [%rd11], {%r18, %r19, %r20, %r21};
  st.global.cg.v4.u32 [%rd12], {%r22, %r23, %r24, %r25};
  add.s32 %r7, %r7, 1; setp.lt.u32 %p1, %r7, %r9;
  @%p1 bra LOOP;
  ret;
}
"""
# Shared memory: 16 KB per block; each iteration 4 independent 16-byte loads per thread (conflict-free: a quarter
# warp reads 128 contiguous bytes), `stride_words` = 1 -> conflict-free, 32 -> every lane of a phase on one bank.
SHARED = _HEAD + """
.visible .entry shared_bw(.param .u64 dst, .param .u32 iters)
{
  .reg .b32 %r<60>; .reg .b64 %rd<8>; .reg .pred %p<2>;
  .shared .align 16 .b8 buf[16384];
  ld.param.u64 %rd1, [dst]; ld.param.u32 %r9, [iters];
  mov.u32 %r1, %tid.x; shl.b32 %r2, %r1, 4; mov.u32 %r3, buf; add.s32 %r4, %r3, %r2;
  st.shared.v4.u32 [%r4], {%r1, %r1, %r1, %r1};
  bar.sync 0;
  mov.u32 %r7, 0; mov.u32 %r40, 0;
LOOP:
  ld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [%r4];
  ld.shared.v4.u32 {%r14, %r15, %r16, %r17}, [%r4+4096];
  ld.shared.v4.u32 {%r18, %r19, %r20, %r21}, [%r4+8192];
  ld.shared.v4.u32 {%r22, %r23, %r24, %r25}, [%r4+12288];
  xor.b32 %r40, %r40, %r10; xor.b32 %r40, %r40, %r14; xor.b32 %r40, %r40, %r18; xor.b32 %r40, %r40, %r22;
  add.s32 %r7, %r7, 1; setp.lt.u32 %p1, %r7, %r9;
  @%p1 bra LOOP;
  setp.eq.u32 %p1, %r40, 2139062143;
  @%p1 st.global.u32 [%rd1], %r40;
  ret;
}
"""
# Bank-conflicted: lane t reads word 32*t (mod 4096 words): all 32 lanes of a warp hit bank 0 -> 32 wavefronts.
SHARED_CONFLICT = _HEAD + """
.visible .entry shared_conflict(.param .u64 dst, .param .u32 iters)
{
  .reg .b32 %r<60>; .reg .b64 %rd<8>; .reg .pred %p<2>;
  .shared .align 16 .b8 buf[16384];
  ld.param.u64 %rd1, [dst]; ld.param.u32 %r9, [iters];
  mov.u32 %r1, %tid.x; and.b32 %r5, %r1, 31; shl.b32 %r2, %r5, 7; mov.u32 %r3, buf; add.s32 %r4, %r3, %r2;
  st.shared.u32 [%r4], %r1;
  bar.sync 0;
  mov.u32 %r7, 0; mov.u32 %r40, 0;
LOOP:
  ld.shared.u32 %r10, [%r4]; ld.shared.u32 %r11, [%r4+4]; ld.shared.u32 %r12, [%r4+8]; ld.shared.u32 %r13, [%r4+12];
  xor.b32 %r40, %r40, %r10; xor.b32 %r40, %r40, %r11; xor.b32 %r40, %r40, %r12; xor.b32 %r40, %r40, %r13;
  add.s32 %r7, %r7, 1; setp.lt.u32 %p1, %r7, %r9;
  @%p1 bra LOOP;
  setp.eq.u32 %p1, %r40, 2139062143;
  @%p1 st.global.u32 [%rd1], %r40;
  ret;
}
"""


def _chains(op: str, reg: str, n: int, ty: str) -> str:
    """n independent accumulator updates `op` on registers reg0..reg{n-1} (ILP = n)."""
    return "\n".join(f"  {op.format(d=f'{reg}{i}')}" for i in range(n))


def _alu_kernel(name: str, ty: str, reg: str, init: str, op: str, n: int = 16, unroll: int = 1,
                nounroll: bool = False) -> str:
    """`nounroll`: the loop carries `.pragma "nounroll"` (what nvcc emits for `#pragma unroll 1`), so ptxas keeps
    one iteration per pass."""
    body = "\n".join([_chains(op, reg, n, ty)] * unroll)
    pragma = '  .pragma "nounroll";\n' if nounroll else ""
    sums = " ".join(f"add.{ty} {reg}0, {reg}0, {reg}{i};" for i in range(1, n))
    return _HEAD + f"""
.visible .entry {name}(.param .u64 dst, .param .u32 iters)
{{
  .reg .b32 %r<20>; .reg .b64 %rd<4>; .reg .pred %p<2>; .reg .{'f32' if ty == 'f32' else 'b32'} {reg}<{n + 2}>;
  ld.param.u64 %rd1, [dst]; ld.param.u32 %r9, [iters];
  mov.u32 %r1, %tid.x;
{chr(10).join(f'  {init.format(d=f"{reg}{i}")}' for i in range(n + 2))}
  mov.u32 %r7, 0;
LOOP:
{pragma}{body}
  add.s32 %r7, %r7, 1; setp.lt.u32 %p1, %r7, %r9;
  @%p1 bra LOOP;
  {sums}
  st.global.{'f32' if ty == 'f32' else 'u32'} [%rd1], {reg}0;
  ret;
}}
"""


# Throughput kernels are unrolled 4x (64 operations per loop iteration), as the published benchmarks are: ptxas
# would unroll a constant-trip loop the same way, and the loop's 3 control instructions should not dominate.
_UNROLL = 4
# Kernel choices set from a published row (as costs.FITTED_FROM for constants): the 4x unroll was chosen when it
# brought the FP32 FMA row to S4's figure (docs/model-validation.md), so that row is a fit, not a prediction.
FITTED_FROM: dict[str, tuple[tuple[str, str], ...]] = {"_UNROLL": (("fp32_fma", "[S4]"),)}
FP32_FMA = _alu_kernel("fp32_fma", "f32", "%f", "mov.f32 {d}, 0f3F800000;",
                       "fma.rn.f32 {d}, {d}, 0f3F7FFFFF, 0f33800000;", unroll=_UNROLL)
INT32_MAD = _alu_kernel("int32_mad", "s32", "%q", "mov.u32 {d}, %r1;", "mad.lo.s32 {d}, {d}, 1664525, 1013904223;",
                        unroll=_UNROLL)
SFU_SIN = _alu_kernel("sfu_sin", "f32", "%f", "mov.f32 {d}, 0f3F000000;", "sin.approx.f32 {d}, {d};")

# mma.sync m16n8k16 bf16 -> f32: 4 independent accumulators per warp.
MMA_BF16 = _HEAD + """
.visible .entry mma_bf16(.param .u64 dst, .param .u32 iters)
{
  .reg .b32 %r<20>; .reg .b32 %a<4>; .reg .b32 %b<2>; .reg .f32 %c<16>; .reg .b64 %rd<4>; .reg .pred %p<2>;
  ld.param.u64 %rd1, [dst]; ld.param.u32 %r9, [iters];
  mov.b32 %a0, 1065369472; mov.b32 %a1, 1065369472; mov.b32 %a2, 1065369472; mov.b32 %a3, 1065369472;
  mov.b32 %b0, 1065369472; mov.b32 %b1, 1065369472;
  mov.f32 %c0, 0f00000000; mov.f32 %c1, 0f00000000; mov.f32 %c2, 0f00000000; mov.f32 %c3, 0f00000000;
  mov.f32 %c4, 0f00000000; mov.f32 %c5, 0f00000000; mov.f32 %c6, 0f00000000; mov.f32 %c7, 0f00000000;
  mov.f32 %c8, 0f00000000; mov.f32 %c9, 0f00000000; mov.f32 %c10, 0f00000000; mov.f32 %c11, 0f00000000;
  mov.f32 %c12, 0f00000000; mov.f32 %c13, 0f00000000; mov.f32 %c14, 0f00000000; mov.f32 %c15, 0f00000000;
  mov.u32 %r7, 0;
LOOP:
  mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%c0, %c1, %c2, %c3}, {%a0, %a1, %a2, %a3},
      {%b0, %b1}, {%c0, %c1, %c2, %c3};
  mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%c4, %c5, %c6, %c7}, {%a0, %a1, %a2, %a3},
      {%b0, %b1}, {%c4, %c5, %c6, %c7};
  mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%c8, %c9, %c10, %c11}, {%a0, %a1, %a2, %a3},
      {%b0, %b1}, {%c8, %c9, %c10, %c11};
  mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%c12, %c13, %c14, %c15}, {%a0, %a1, %a2, %a3},
      {%b0, %b1}, {%c12, %c13, %c14, %c15};
  add.s32 %r7, %r7, 1; setp.lt.u32 %p1, %r7, %r9;
  @%p1 bra LOOP;
  add.f32 %c0, %c0, %c4; add.f32 %c0, %c0, %c8; add.f32 %c0, %c0, %c12;
  st.global.f32 [%rd1], %c0;
  ret;
}
"""


def _chase(name: str, hint: str) -> str:
    return _HEAD + f"""
.visible .entry {name}(.param .u64 start, .param .u64 dst, .param .u32 steps)
{{
  .reg .b32 %r<8>; .reg .b64 %rd<4>; .reg .pred %p<2>;
  ld.param.u64 %rd1, [start]; ld.param.u64 %rd2, [dst]; ld.param.u32 %r1, [steps];
  mov.u32 %r2, 0;
LOOP:
  ld.global{hint}.u64 %rd1, [%rd1];
  add.s32 %r2, %r2, 1; setp.lt.u32 %p1, %r2, %r1;
  @%p1 bra LOOP;
  st.global.u64 [%rd2], %rd1;
  ret;
}}
"""


CHASE_CA = _chase("chase_ca", ".ca")
CHASE_CG = _chase("chase_cg", ".cg")
EMPTY = _HEAD + ".visible .entry empty()\n{\n  ret;\n}\n"
ATOMIC = _HEAD + """
.visible .entry atomic_add(.param .u64 dst)
{
  .reg .b32 %r<10>; .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [dst];
  mov.u32 %r1, %ctaid.x; mov.u32 %r2, %ntid.x; mov.u32 %r3, %tid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3; and.b32 %r5, %r4, 65535;
  mul.wide.u32 %rd3, %r5, 4; add.s64 %rd4, %rd1, %rd3;
  atom.global.add.u32 %r6, [%rd4], 1;
  ret;
}
"""


# --- launches ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Launch:
    """One launch of a bench: grid, block, dynamic shared bytes, and `args(device) -> list` (buffers allocated on
    the given ptxsim Device, or any object with alloc/to_device of the same shape)."""

    grid: int
    block: int
    args: Callable
    work: float          # units of the bench's quantity numerator (bytes, FLOP, loads...) this launch performs
    sample_ctas: int | None = 16


@dataclass(frozen=True)
class Bench:
    """A microbenchmark: `quantity(t)` from the kernel time(s) of `launches` (one, or two for a differential)."""

    name: str
    what: str
    unit: str
    ptx: str
    entry: str
    launches: tuple[Launch, ...]
    quantity: Callable[[tuple[float, ...], tuple[Launch, ...], float], float]
    notes: str = ""
    meta: Mapping = field(default_factory=dict)


def _rate(times, launches, clock):            # work per second, scaled in the unit (G or T)
    return launches[0].work / times[0]


def _diff_per_unit(times, launches, clock):   # seconds per unit of work, from two launches
    return (times[1] - times[0]) / (launches[1].work - launches[0].work)


def _clocks_per_unit(times, launches, clock):
    return times[0] * clock / launches[0].work


_SMS, _BLOCKS_PER_SM = 132, 8
_STREAM_BLOCKS, _STREAM_THREADS = _SMS * _BLOCKS_PER_SM * 4, 256   # 4 full waves of 8 blocks x 256 threads per SM
_STREAM_BYTES = _STREAM_BLOCKS * _STREAM_THREADS * 64
_ITERS = 64
_WGMMA_ITERS = 8
_WGMMA_WORK = {kind: hb.wgmma_flops(hb.WGMMA_TP_N, kind) * hb.WGMMA_TP_PER_GROUP * _WGMMA_ITERS * 2 * _SMS * 2
               for kind in hb.WGMMA_TYPES}   # FLOP: per group x groups x 2 warpgroups x CTAs
_TMA_CTAS, _TMA_STAGES = _SMS * 4, 4
_TMA_BYTES = _TMA_CTAS * _TMA_STAGES * hb.TMA_STAGE_BYTES


def _bufs(*sizes):
    def make(dev):
        return [dev.alloc(size) for size in sizes]
    return make


def _with_scalar(sizes, value):
    def make(dev):
        return [*(dev.alloc(size) for size in sizes), np.uint32(value)]
    return make


def chase_chain(n: int, stride: int = 128, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """(order, next-offset table) of a random single cycle over n elements `stride` bytes apart (Sattolo)."""
    rng = np.random.default_rng(seed)
    order = np.arange(n)
    for i in range(n - 1, 0, -1):
        j = int(rng.integers(0, i))
        order[i], order[j] = order[j], order[i]
    nxt = np.empty(n, np.int64)
    nxt[order] = np.roll(order, -1)
    return order, nxt * stride


def _chase_args(n: int, steps: int, stride: int = 128):
    def make(dev):
        buf = dev.alloc(n * stride)
        _, offsets = chase_chain(n, stride)
        table = np.zeros(n * stride // 8, np.uint64)
        table[np.arange(n) * (stride // 8)] = np.uint64(buf.addr) + offsets.astype(np.uint64)
        dev.copy_in(buf, table)
        return [np.uint64(buf.addr), dev.alloc(8), np.uint32(steps)]
    return make


def _chase_bench(name, what, ptx, entry, ws, steps1, steps2, notes):
    launches = tuple(Launch(1, 1, _chase_args(ws, s), float(s), None) for s in (steps1, steps2))
    return Bench(name, what, "ns", ptx, entry, launches,
                 lambda t, ls, clk: _diff_per_unit(t, ls, clk) * 1e9, notes)


BENCHES: dict[str, Bench] = {b.name: b for b in (
    Bench("dram_read", "DRAM read bandwidth", "GB/s", DRAM_READ, "dram_read",
          (Launch(_STREAM_BLOCKS, _STREAM_THREADS, _bufs(_STREAM_BYTES, 4), _STREAM_BYTES),),
          lambda t, ls, clk: _rate(t, ls, clk) / 1e9, "4 x 16 B loads per thread, 4 waves"),
    Bench("dram_copy", "DRAM copy bandwidth (read + write bytes)", "GB/s", DRAM_COPY, "dram_copy",
          (Launch(_STREAM_BLOCKS, _STREAM_THREADS, _bufs(_STREAM_BYTES, _STREAM_BYTES), 2.0 * _STREAM_BYTES),),
          lambda t, ls, clk: _rate(t, ls, clk) / 1e9, "copy, 2 x bytes / time"),
    Bench("l2_copy", "L2 copy bandwidth (16 MB working set, .cg)", "GB/s", L2_COPY, "l2_copy",
          (Launch(16 * 2**20 // (64 * 256), 256, _with_scalar((16 * 2**20, 16 * 2**20), 16), 2.0 * 16 * 2**20 * 16),),
          lambda t, ls, clk: _rate(t, ls, clk) / 1e9, "16 MB copied 16 times with ld/st.global.cg"),
    Bench("shared_bw", "shared-memory load bandwidth (conflict-free, 16 B/lane)", "TB/s", SHARED, "shared_bw",
          (Launch(_SMS * _BLOCKS_PER_SM, 256, _with_scalar((4,), _ITERS), 4.0 * 16 * 256 * _ITERS * _SMS * 8),),
          lambda t, ls, clk: _rate(t, ls, clk) / 1e12, "4 x ld.shared.v4 per iteration"),
    Bench("shared_conflict", "shared-memory load bandwidth, 32-way bank conflict", "TB/s", SHARED_CONFLICT,
          "shared_conflict",
          (Launch(_SMS * _BLOCKS_PER_SM, 256, _with_scalar((4,), _ITERS), 4.0 * 4 * 256 * _ITERS * _SMS * 8),),
          lambda t, ls, clk: _rate(t, ls, clk) / 1e12, "lane t reads word 32 t: 32 wavefronts per load"),
    Bench("fp32_fma", "FP32 FMA throughput", "TFLOP/s", FP32_FMA, "fp32_fma",
          (Launch(_SMS * _BLOCKS_PER_SM, 256, _with_scalar((4,), _ITERS),
                  2.0 * 16 * _UNROLL * 256 * _ITERS * _SMS * 8),),
          lambda t, ls, clk: _rate(t, ls, clk) / 1e12, "16 independent FMA chains per thread, unrolled 4x"),
    Bench("int32_mad", "INT32 multiply-add throughput (2 ops per mad)", "TOPS", INT32_MAD, "int32_mad",
          (Launch(_SMS * _BLOCKS_PER_SM, 256, _with_scalar((4,), _ITERS),
                  2.0 * 16 * _UNROLL * 256 * _ITERS * _SMS * 8),),
          lambda t, ls, clk: _rate(t, ls, clk) / 1e12, "16 independent mad.lo.s32 chains per thread, unrolled 4x"),
    Bench("sfu_sin", "SFU sin.approx: clocks per warp-instruction, one warp, ILP 16", "clk", SFU_SIN, "sfu_sin",
          (Launch(1, 32, _with_scalar((4,), _ITERS), 16.0 * _ITERS, None),),
          _clocks_per_unit, "one warp, 16 independent chains"),
    Bench("mma_bf16", "mma.sync m16n8k16 bf16 throughput", "TFLOP/s", MMA_BF16, "mma_bf16",
          (Launch(_SMS * 4, 128, _with_scalar((4,), _ITERS), 4096.0 * 4 * 4 * _ITERS * _SMS * 4),),
          lambda t, ls, clk: _rate(t, ls, clk) / 1e12, "4 independent accumulators per warp, 16 warps/SM"),
    Bench("wgmma_bf16", "wgmma m64n256k16 bf16 throughput (SS)", "TFLOP/s", hb.WGMMA_BF16, "wgmma_bf16",
          (Launch(_SMS * 2, 256, hb.wgmma_args(_WGMMA_ITERS), _WGMMA_WORK["bf16"], 4),),
          lambda t, ls, clk: _rate(t, ls, clk) / 1e12,
          "2 warpgroups per CTA, 4 chained wgmma per commit group, wait_group 1"),
    Bench("wgmma_fp8", "wgmma m64n256k32 e4m3 throughput (SS)", "TFLOP/s", hb.WGMMA_FP8, "wgmma_fp8",
          (Launch(_SMS * 2, 256, hb.wgmma_args(_WGMMA_ITERS), _WGMMA_WORK["e4m3"], 4),),
          lambda t, ls, clk: _rate(t, ls, clk) / 1e12, "as wgmma_bf16 with FP8 (e4m3) inputs, K = 32"),
    Bench("wgmma_latency", "wgmma m64n128k16 bf16 completion latency (wait_group 0 after each)", "clk",
          hb.WGMMA_LATENCY, "wgmma_latency",
          tuple(Launch(1, 128, hb.wgmma_args(n), float(n), None) for n in (16, 48)),
          lambda t, ls, clk: _diff_per_unit(t, ls, clk) * clk,
          "differential: 16 vs 48 dependent wgmma, one warpgroup; clocks at the model's one clock"),
    Bench("tma_read", "TMA (cp.async.bulk.tensor.2d) read bandwidth", "GB/s", hb.TMA_READ, "tma_read",
          (Launch(_TMA_CTAS, 32, hb.tma_args(_TMA_CTAS, _TMA_STAGES), float(_TMA_BYTES), 8),),
          lambda t, ls, clk: _rate(t, ls, clk) / 1e9,
          "one thread per CTA, 4 x 8 KB boxes per mbarrier stage, 4 stages, every byte read once"),
    _chase_bench("chase_l1", "pointer-chase latency, L1 hit (8 KB, .ca)", CHASE_CA, "chase_ca", 64, 128, 640,
                 "differential: 128 vs 640 steps over 64 lines; the extra steps all hit L1"),
    _chase_bench("chase_l2", "pointer-chase latency, L2 hit (128 KB, .cg)", CHASE_CG, "chase_cg", 1024, 2048, 4096,
                 "differential: 2048 vs 4096 steps over 1024 lines; the extra steps all hit L2"),
    _chase_bench("chase_dram", "pointer-chase latency, DRAM (cold lines, .cg)", CHASE_CG, "chase_cg", 4096, 1024,
                 4096, "differential: 1024 vs 4096 steps of one cold pass; every step misses L2"),
    Bench("launch_gap", "launch-to-launch gap (empty kernel)", "us", EMPTY, "empty",
          (Launch(1, 32, lambda dev: [], 1.0, None),), lambda t, ls, clk: t[0] * 1e6,
          "host-issued back-to-back launches; the model's launch term"),
    Bench("atomic_add", "global atomicAdd throughput (64K distinct words)", "Gatom/s", ATOMIC, "atomic_add",
          (Launch(_SMS * _BLOCKS_PER_SM, 256, _bufs(65536 * 4), float(_SMS * _BLOCKS_PER_SM * 256)),),
          lambda t, ls, clk: _rate(t, ls, clk) / 1e9, "one atom.global.add.u32 per thread"),
)}


# --- running on ptxsim --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BenchResult:
    """A bench's quantity and the kernel seconds (and launch seconds) of each of its launches."""

    name: str
    quantity: float
    kernel_seconds: tuple[float, ...]
    launch_seconds: float
    limiters: tuple[str, ...]
    kernel_limiters: tuple[str, ...] = ()   # the largest bound of each launch's kernel time (never "launch")


StaticFacts = Callable[[str], dict]
DEFAULT_REGISTERS = 32  # per thread, when no ptxas report is given


def _registers(ptx: str, entry: str, static_facts: StaticFacts | None) -> int:
    """Registers per thread from the static facts (ptxas -v), or DEFAULT_REGISTERS without them."""
    if static_facts is None:
        return DEFAULT_REGISTERS
    try:
        return int(static_facts(ptx)["resources"][entry]["registers"])
    except (KeyError, TypeError, ValueError):  # ptxas failed: its facts hold no resources for the entry
        return DEFAULT_REGISTERS


_MIX_CACHE: dict[str, dict | None] = {}


def module_sass_mix(ptx: str, facts: dict | None) -> dict[str, float] | None:
    """SASS-per-PTX factors of a PTX module (ptxsim.model.sass.sass_factors) from ptxsim's static class counts of
    every entry and the module's SASS histogram in `facts` (harness.static.analyse_ptx's); None without one.
    Cached per text."""
    histogram = (facts or {}).get("sass_histogram")
    if not histogram:
        return None
    if ptx in _MIX_CACHE:
        return _MIX_CACHE[ptx]
    import ptxsim
    from ptxsim.model.sass import sass_factors

    module = ptxsim.load_ptx(ptx)
    counts: dict[str, int] = {}
    for entry in module.entries:
        for ins in module.kernel(entry).program.instrs:
            counts[ins.klass] = counts.get(ins.klass, 0) + 1
    mix = sass_factors(counts, histogram) or None
    _MIX_CACHE[ptx] = mix
    return mix


# Simulated launches of the benches, so that model v1 and v2 (and several devices) share one functional simulation
# per launch: (bench name, PTX, launch index) -> LaunchStats.
_STATS_CACHE: dict[tuple[str, str, int], object] = {}
MODELS = ("v1", "v2")


def run_on_sim(bench: Bench, device: str = "H100 SXM", constants: Mapping[str, float] | None = None,
               static_facts: StaticFacts | None = None, model: str = "v1",
               clock_hz: float | None = None) -> BenchResult:
    """Simulate each launch of `bench` on ptxsim, estimate its time with the model on `device`, derive the quantity.

    The quantity is computed from kernel time (the model's launch term excluded), except for `launch_gap`, whose
    quantity is the launch term itself. `model`: "v1" (timing.estimate, the analytic bounds) or "v2"
    (cycle.estimate_v2, the per-SM cycle-approximate schedule). `clock_hz`: the SM clock the published experiment
    ran at, when its source states it (every bound and the clock counts at that clock, as a device profile's measured
    clock does); default the device's one under-load clock.
    """
    if model not in MODELS:
        raise ValueError(f"run_on_sim: model {model!r}; expected one of {', '.join(MODELS)}")
    import ptxsim
    from ptxsim.model.devices import get_device
    from ptxsim.model.occupancy import occupancy
    from ptxsim.model.timing import estimate

    spec = get_device(device)
    kernel = ptxsim.load_ptx(bench.ptx).kernel(bench.entry)
    regs = _registers(bench.ptx, bench.entry, static_facts)
    mix = module_sass_mix(bench.ptx, static_facts(bench.ptx) if static_facts else None)
    times, limiters, kernel_limiters, launch_s = [], [], [], 0.0
    for index, launch in enumerate(bench.launches):
        key = (bench.name, bench.ptx, index)
        stats = _STATS_CACHE.get(key)
        if stats is None:
            dev = ptxsim.Device()
            # NOTE: one wave of sample_ctas consecutive CTAs: the benches are uniform streams with no reuse between
            # CTAs, so a device-sized wave (hundreds of CTAs) would cost simulation time and change no counter per CTA.
            stats = dev.launch(kernel, launch.grid, launch.block, launch.args(dev), sample_ctas=launch.sample_ctas,
                               wave_ctas=launch.sample_ctas)
            _STATS_CACHE[key] = stats
        occ = occupancy(spec, launch.block, regs, int(stats.metrics.get("launch__shared_mem_per_block_static", 0)))
        if model == "v2":
            from ptxsim.model.cycle import estimate_v2
            from ptxsim.model.cycle_trace import per_pc_counts

            est = estimate_v2(kernel.program, per_pc_counts(kernel.program, stats.per_line), stats.metrics, spec,
                              occ, clock_hz=clock_hz, constants=constants, sass_mix=mix, by_warp=stats.by_warp,
                              simulated_ctas=stats.simulated_ctas,
                              sass_loops=((static_facts(bench.ptx) if static_facts else None) or {})
                              .get("sass_loops", {}).get(bench.entry),
                              sass_loop_issue=((static_facts(bench.ptx) if static_facts else None) or {})
                              .get("sass_loop_issue", {}).get(bench.entry))
        else:
            est = estimate(stats.metrics, spec, occ, clock_hz=clock_hz, constants=constants, sass_mix=mix)
        times.append(est.kernel_seconds)
        limiters.append(est.limiter)
        kernel_limiters.append(max((name for name in est.components if name not in ("tail", "launch")),
                                   key=lambda name: est.components[name]))
        launch_s = est.components["launch"]
    if bench.name == "launch_gap":
        times = [launch_s]
    # NOTE: clocks are counted at the model's one clock (the under-load clock every bound uses, tensor included) or
    # the source's stated clock; on a GPU, `ptxmoe calibrate` counts them at the SM clock it reads
    clock = spec.under_load_clock_hz if clock_hz is None else float(clock_hz)
    value = bench.quantity(tuple(times), bench.launches, clock)
    return BenchResult(bench.name, float(value), tuple(times), launch_s, tuple(limiters), tuple(kernel_limiters))

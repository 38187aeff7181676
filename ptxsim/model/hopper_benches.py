"""PTX of the Hopper microbenchmarks (microbench.BENCHES registers them): wgmma throughput per input type, wgmma
completion latency, and TMA (cp.async.bulk.tensor) read bandwidth, with the argument builders their launches use.

Operands live in static shared memory in the PTX ISA's no-swizzle K-major layout (core matrices of 8 rows x 16 bytes,
LBO = 128 bytes between the two 16-byte K chunks, SBO = 256 bytes between 8-row groups): A (64 rows) at byte 0, B
(N rows) at byte 2048. The values are whatever shared memory holds (zeros on ptxsim): timing only.
"""
from __future__ import annotations

import numpy as np

_HEAD_90A = ".version 8.0\n.target sm_90a\n.address_size 64\n"
_A_BYTES = 64 * 32                       # A tile: 64 rows x 32 bytes of K
_DESC_LBO_SBO = (128 >> 4) << 16 | (256 >> 4) << 32   # descriptor bits 16-29 (LBO) and 32-45 (SBO), no swizzle
# input type -> (K of one wgmma, operand suffix, trailing immediates: imm-scale-a, imm-scale-b[, trans-a, trans-b])
WGMMA_TYPES = {"bf16": (16, "bf16.bf16", "1, 1, 0, 0"), "e4m3": (32, "e4m3.e4m3", "1, 1")}


def wgmma_flops(n: int, kind: str) -> float:
    """FLOPs of one m64nNkK wgmma of this input type (per warpgroup)."""
    return 2.0 * 64 * n * WGMMA_TYPES[kind][0]


def _wgmma_line(n: int, kind: str) -> str:
    k, types, imms = WGMMA_TYPES[kind]
    regs = ", ".join(f"%d{i}" for i in range(n // 2))
    return f"  wgmma.mma_async.sync.aligned.m64n{n}k{k}.f32.{types} {{{regs}}}, %rd2, %rd3, 1, {imms};"


def _wgmma_kernel(name: str, n: int, kind: str, per_group: int, wait: int, clocks: bool = False) -> str:
    """Each warpgroup loops `iters` times: fence, `per_group` chained wgmma on one accumulator, commit, wait_group
    `wait`; then wait_group 0 and one store (so the accumulator is live). With `clocks`, a third parameter `clocks`
    (u64 [grid][4]) gets thread 0's %clock64 and %globaltimer before the loop and after the last wait, per CTA: the
    SM clock under this load is d(clock64) / d(globaltimer ns) (harness/calibrate_clock.py); the operands are then
    first filled with random-signed bf16 values in [1, 2) (a hash of the word index), because tensor-core power, and
    so the clock the power cap allows, depends on how many operand bits toggle (zeros would draw less)."""
    body = "\n".join([_wgmma_line(n, kind)] * per_group)
    param, regs, start, stop = "", "", "", ""
    if clocks:
        param = ", .param .u64 clocks"
        regs = " .reg .b64 %ck<8>; .reg .pred %pck;"
        start = f"""  mov.u32 %r12, %tid.x; mov.u32 %r13, %ntid.x;
FILL:
  mul.lo.u32 %r14, %r12, -1640531535; and.b32 %r14, %r14, 0x807F807F; or.b32 %r14, %r14, 0x3F803F80;
  shl.b32 %r15, %r12, 2; add.u32 %r15, %r15, %r1; st.shared.u32 [%r15], %r14;
  add.u32 %r12, %r12, %r13; setp.lt.u32 %pck, %r12, {(_A_BYTES + n * 32) // 4};
  @%pck bra FILL;
  fence.proxy.async.shared::cta;
  bar.sync 0;
  mov.u64 %ck0, %clock64; mov.u64 %ck1, %globaltimer;
"""
        stop = """  mov.u64 %ck2, %clock64; mov.u64 %ck3, %globaltimer;
  ld.param.u64 %ck4, [clocks]; mov.u32 %r10, %ctaid.x; mul.wide.u32 %ck5, %r10, 32; add.s64 %ck4, %ck4, %ck5;
  mov.u32 %r11, %tid.x; setp.eq.u32 %pck, %r11, 0;
  @%pck st.global.v2.u64 [%ck4], {%ck0, %ck1};
  @%pck st.global.v2.u64 [%ck4+16], {%ck2, %ck3};
"""
    return _HEAD_90A + f"""
.visible .entry {name}(.param .u64 dst, .param .u32 iters{param})
{{
  .reg .pred %p<2>; .reg .b32 %r<16>; .reg .b64 %rd<8>; .reg .f32 %d<{n // 2}>;{regs}
  .shared .align 1024 .b8 sm[{_A_BYTES + n * 32}];
  ld.param.u64 %rd1, [dst]; ld.param.u32 %r9, [iters];
  mov.u32 %r1, sm; cvt.u64.u32 %rd2, %r1; shr.u64 %rd2, %rd2, 4; mov.b64 %rd4, {_DESC_LBO_SBO};
  or.b64 %rd2, %rd2, %rd4; add.s64 %rd3, %rd2, {_A_BYTES >> 4};
  mov.u32 %r7, 0;
{start}LOOP:
  wgmma.fence.sync.aligned;
{body}
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned {wait};
  add.s32 %r7, %r7, 1; setp.lt.u32 %p1, %r7, %r9;
  @%p1 bra LOOP;
  wgmma.wait_group.sync.aligned 0;
{stop}  st.global.f32 [%rd1], %d0;
  ret;
}}
"""


# Throughput: 4 chained m64n256 wgmma per group, wait_group 1 (one group stays in flight), as published tests issue
# long runs of independent work; latency: one m64n128k16 per group and wait_group 0 (each waits for the previous).
WGMMA_TP_N, WGMMA_TP_PER_GROUP = 256, 4
WGMMA_BF16 = _wgmma_kernel("wgmma_bf16", WGMMA_TP_N, "bf16", WGMMA_TP_PER_GROUP, 1)
WGMMA_FP8 = _wgmma_kernel("wgmma_fp8", WGMMA_TP_N, "e4m3", WGMMA_TP_PER_GROUP, 1)
WGMMA_LAT_N = 128
WGMMA_LATENCY = _wgmma_kernel("wgmma_latency", WGMMA_LAT_N, "bf16", 1, 0)

# TMA read: one thread per CTA loads `stages` x 4 boxes of 64 rows x 128 bytes (8 KB each, 32 KB per stage) of its
# own rows of a [rows, 128] u8 tensor, completing on one mbarrier per stage, and waits for each stage.
TMA_BOX_ROWS, TMA_ROW_BYTES, TMA_BOXES = 64, 128, 4
TMA_STAGE_BYTES = TMA_BOX_ROWS * TMA_ROW_BYTES * TMA_BOXES
_TMA_COPIES = "\n".join(
    f"  add.u32 %r12, %r11, {j * TMA_BOX_ROWS};\n"
    f"  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1+{j * 8192}], "
    f"[tm, {{%r10, %r12}}], [%r2];" for j in range(TMA_BOXES))
TMA_READ = _HEAD_90A + f"""
.visible .entry tma_read(.param .u64 dst, .param .u32 stages, .param .align 64 .b8 tm[128])
{{
  .reg .pred %p<4>; .reg .b32 %r<20>; .reg .b64 %rd<8>;
  .shared .align 1024 .b8 sm[{TMA_STAGE_BYTES}];
  .shared .align 8 .b64 bar;
  ld.param.u64 %rd1, [dst]; ld.param.u32 %r9, [stages];
  mov.u32 %r0, %tid.x; setp.ne.u32 %p1, %r0, 0;
  @%p1 bra END;
  mov.u32 %r1, sm; mov.u32 %r2, bar;
  mbarrier.init.shared::cta.b64 [%r2], 1;
  fence.proxy.async.shared::cta;
  mov.u32 %r3, %ctaid.x; mul.lo.u32 %r11, %r3, %r9; mul.lo.u32 %r11, %r11, {TMA_BOX_ROWS * TMA_BOXES};
  mov.u32 %r10, 0; mov.u32 %r7, 0; mov.u32 %r8, 0;
LOOP:
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r2], {TMA_STAGE_BYTES};
{_TMA_COPIES}
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r2], %r8;
  @!%p2 bra WAIT;
  xor.b32 %r8, %r8, 1; add.u32 %r11, %r11, {TMA_BOX_ROWS * TMA_BOXES};
  add.s32 %r7, %r7, 1; setp.lt.u32 %p3, %r7, %r9;
  @%p3 bra LOOP;
  ld.shared.u32 %r13, [%r1]; setp.eq.u32 %p2, %r13, 2139062143;
  @%p2 st.global.u32 [%rd1], %r13;
END:
  ret;
}}
"""


def wgmma_args(iters: int):
    """Arguments of the wgmma benches: a 4-byte output and the iteration count."""
    def make(dev):
        return [dev.alloc(4), np.uint32(iters)]
    return make


def tma_args(ctas: int, stages: int):
    """Arguments of tma_read: an output word, the stage count and the tensor map of a [rows, 128] u8 tensor
    (rows = ctas x stages x 256: every CTA reads its own rows once)."""
    def make(dev):
        from ptxsim import tensormap

        rows = ctas * stages * TMA_BOX_ROWS * TMA_BOXES
        lazy = getattr(dev, "alloc_lazy", None)   # ptxsim: pages materialise when read; a GPU allocates
        buf = lazy(rows * TMA_ROW_BYTES, 0) if lazy else dev.alloc(rows * TMA_ROW_BYTES)
        tm = tensormap.encode_tiled(0, 2, buf.addr, (TMA_ROW_BYTES, rows), (TMA_ROW_BYTES,),
                                    (TMA_ROW_BYTES, TMA_BOX_ROWS), (1, 1))
        return [dev.alloc(4), np.uint32(stages), tm]
    return make

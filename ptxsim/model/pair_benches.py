"""PTX of the paired validation benches (paired.py sets each pair's modelled ratio beside a published one): the
kernels of the published experiments, written in PTX after the sources' CUDA (docs/model-validation.md, "Paired
rows"), each as a microbench.Bench so run_on_sim runs it like the absolute benches.

- copy_v4: a grid-stride float4 copy unrolled 4x (S1 copy_bw.cu, `copy_kernel<float4, 4>`), 256 MB, 256-thread
  blocks; run at 32, 64, 132 and 528 blocks.
- copy_cg: a grid-stride float copy with ld/st .cg unrolled 8x (S1 l2_bw.cu, `copy_l2<8>`), repeated `reps` times in
  one launch so all passes but the first find a 16 MB working set in L2 (S1 warms the L2 with 20 launches first);
  run at 16, 64, 132 and 528 blocks, and once over 256 MB (S1's "HBM comparison", 528 blocks, one cold pass).
- transpose_basic / transpose_padded: 32 x 32 shared-memory tiles, the first unpadded (32-way bank conflicts on the
  shared reads), the second padded to 33 words per row with float4 global accesses (S1 transpose.cu, `transpose` and
  `transpose_vectorized`); 8192 x 8192 floats (S1: 32768 x 32768; a rate, the same at both sizes for a model whose
  bounds are linear in the bytes), 2-D grid flattened to 1-D.
- ilp_*: one warp, `steps` iterations of ILP independent chains of one operation (S1 inst_lat.cu), differential over
  two step counts so the prologue cancels; the quantity is clocks per warp-instruction. The step loop carries
  `.pragma "nounroll"`, as nvcc emits for S1's `#pragma unroll 1` (ptxas then keeps one step per pass: FFMA, IADD3,
  ISETP, BRA for ILP 1, where it unrolled the loop 4x without it).
- stream_*: BabelStream's Copy, Add, Triad (grid-stride, 8 blocks of 1024 threads per SM) and Dot (grid-stride over
  4 blocks of 1024 per SM, a shared-memory tree reduction per block) over 2^25 doubles per array, as in the fork S5
  builds (gitaumark/BabelStream src/cuda/CUDAStream.cu; BabelStream's default array size). NOTE: its Dot accumulates
  in a shared-memory slot per thread inside the loop; this one accumulates in a register, as ptxas may make it.
"""
from __future__ import annotations

import numpy as np

from ptxsim.model.microbench import Bench, Launch, _alu_kernel

_HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"
_MB = 1 << 20
_SMS = 132


# --- copies ------------------------------------------------------------------------------------------------------
def _copy_kernel(name: str, width: int, unroll: int, hint: str) -> str:
    """Grid-stride copy of n elements of `width` bytes, `unroll` loads then `unroll` stores per iteration, then the
    remainder one at a time; the whole copy repeated `reps` times (param)."""
    vec = {16: (".v4.u32", "{{%r{0}, %r{1}, %r{2}, %r{3}}}", 4), 4: (".u32", "%r{0}", 1)}[width]
    suffix, regs, nregs = vec
    shift = {16: 4, 4: 2}[width]

    def reg(u):
        return regs.format(*range(10 + u * nregs, 10 + (u + 1) * nregs))
    addr = "\n".join(f"  add.s64 %rd{20 + u}, %rd{19 + u}, %rd8;" for u in range(1, unroll))
    daddr = "\n".join(f"  add.s64 %rd{40 + u}, %rd{39 + u}, %rd8;" for u in range(1, unroll))
    loads = "\n".join(f"  ld.global{hint}{suffix} {reg(u)}, [%rd{20 + u}];" for u in range(unroll))
    stores = "\n".join(f"  st.global{hint}{suffix} [%rd{40 + u}], {reg(u)};" for u in range(unroll))
    return _HEAD + f"""
.visible .entry {name}(.param .u64 src, .param .u64 dst, .param .u64 n, .param .u32 reps)
{{
  .reg .b32 %r<80>; .reg .b64 %rd<80>; .reg .pred %p<4>;
  ld.param.u64 %rd1, [src]; ld.param.u64 %rd2, [dst]; ld.param.u64 %rd3, [n]; ld.param.u32 %r9, [reps];
  mov.u32 %r1, %ctaid.x; mov.u32 %r2, %ntid.x; mov.u32 %r3, %tid.x; mov.u32 %r4, %nctaid.x;
  mul.wide.u32 %rd4, %r1, %r2; cvt.u64.u32 %rd5, %r3; add.s64 %rd4, %rd4, %rd5;
  mul.wide.u32 %rd6, %r4, %r2; mul.lo.s64 %rd7, %rd6, {unroll - 1}; shl.b64 %rd8, %rd6, {shift};
  mul.lo.s64 %rd9, %rd6, {unroll};
  mov.u32 %r8, 0;
REP:
  mov.u64 %rd10, %rd4;
LOOP:
  add.s64 %rd11, %rd10, %rd7; setp.ge.u64 %p1, %rd11, %rd3;
  @%p1 bra REM;
  shl.b64 %rd12, %rd10, {shift}; add.s64 %rd20, %rd1, %rd12; add.s64 %rd40, %rd2, %rd12;
{addr}
{loads}
{daddr}
{stores}
  add.s64 %rd10, %rd10, %rd9;
  bra LOOP;
REM:
  setp.ge.u64 %p2, %rd10, %rd3;
  @%p2 bra NEXT;
  shl.b64 %rd12, %rd10, {shift}; add.s64 %rd20, %rd1, %rd12; add.s64 %rd40, %rd2, %rd12;
  ld.global{hint}{suffix} {reg(0)}, [%rd20];
  st.global{hint}{suffix} [%rd40], {reg(0)};
  add.s64 %rd10, %rd10, %rd6;
  bra REM;
NEXT:
  add.s32 %r8, %r8, 1; setp.lt.u32 %p3, %r8, %r9;
  @%p3 bra REP;
  ret;
}}
"""


COPY_V4 = _copy_kernel("copy_v4", 16, 4, "")
COPY_CG = _copy_kernel("copy_cg", 4, 8, ".cg")


def _copy_args(nbytes: int, width: int, reps: int):
    def make(dev):
        lazy = getattr(dev, "alloc_lazy", None)   # ptxsim: pages materialise when touched; a GPU allocates
        src = lazy(nbytes, 1) if lazy else dev.alloc(nbytes)
        dst = lazy(nbytes, 0) if lazy else dev.alloc(nbytes)
        return [src, dst, np.uint64(nbytes // width), np.uint32(reps)]
    return make


def _bandwidth(times, launches, clock):
    return launches[0].work / times[0] / 1e9


def copy_bench(kind: str, blocks: int, nbytes: int, reps: int = 1, sample_ctas: int = 4) -> Bench:
    """A copy bench: kind "v4" (float4, unroll 4) or "cg" (float .cg, unroll 8); GB/s of read + write bytes."""
    ptx, entry, width = (COPY_V4, "copy_v4", 16) if kind == "v4" else (COPY_CG, "copy_cg", 4)
    name = f"copy_{kind}_{blocks}b_{nbytes // _MB}mb" + (f"_x{reps}" if reps > 1 else "")
    what = f"{entry} {nbytes // _MB} MB, {blocks} x 256 threads" + (f", {reps} passes" if reps > 1 else "")
    launch = Launch(blocks, 256, _copy_args(nbytes, width, reps), 2.0 * nbytes * reps, min(sample_ctas, blocks))
    return Bench(name, what, "GB/s", ptx, entry, (launch,), _bandwidth)


# --- transposes ----------------------------------------------------------------------------------------------------
_TRANSPOSE_N = 8192          # floats per side
_TILES = _TRANSPOSE_N // 32

# Basic (S1 `transpose`): block 32 x 8 (tid = ty * 32 + tx), each thread 4 rows; tile[32][32] unpadded: the reads
# tile[tx][ty + j] put the 32 lanes of a warp on one bank.
TRANSPOSE_BASIC = _HEAD + f"""
.visible .entry transpose_basic(.param .u64 out, .param .u64 in)
{{
  .reg .b32 %r<40>; .reg .b64 %rd<20>; .reg .f32 %f<8>;
  .shared .align 16 .b8 tile[4096];
  ld.param.u64 %rd1, [out]; ld.param.u64 %rd2, [in];
  mov.u32 %r1, %ctaid.x; and.b32 %r2, %r1, {_TILES - 1}; shr.u32 %r3, %r1, {_TILES.bit_length() - 1};
  mov.u32 %r4, %tid.x; and.b32 %r5, %r4, 31; shr.u32 %r6, %r4, 5;
  mov.u32 %r7, tile;
  shl.b32 %r8, %r2, 5; add.u32 %r8, %r8, %r5;          // x = bx * 32 + tx
  shl.b32 %r9, %r3, 5; add.u32 %r9, %r9, %r6;          // y = by * 32 + ty
  mad.wide.u32 %rd3, %r9, {_TRANSPOSE_N}, 0; cvt.u64.u32 %rd4, %r8; add.s64 %rd3, %rd3, %rd4;
  shl.b64 %rd3, %rd3, 2; add.s64 %rd5, %rd2, %rd3;
  shl.b32 %r10, %r6, 5; add.u32 %r10, %r10, %r5; shl.b32 %r10, %r10, 2; add.u32 %r10, %r10, %r7;
  ld.global.f32 %f0, [%rd5]; st.shared.f32 [%r10], %f0;
  ld.global.f32 %f1, [%rd5+{8 * _TRANSPOSE_N * 4}]; st.shared.f32 [%r10+1024], %f1;
  ld.global.f32 %f2, [%rd5+{16 * _TRANSPOSE_N * 4}]; st.shared.f32 [%r10+2048], %f2;
  ld.global.f32 %f3, [%rd5+{24 * _TRANSPOSE_N * 4}]; st.shared.f32 [%r10+3072], %f3;
  bar.sync 0;
  shl.b32 %r11, %r3, 5; add.u32 %r11, %r11, %r5;       // x = by * 32 + tx
  shl.b32 %r12, %r2, 5; add.u32 %r12, %r12, %r6;       // y = bx * 32 + ty
  mad.wide.u32 %rd6, %r12, {_TRANSPOSE_N}, 0; cvt.u64.u32 %rd7, %r11; add.s64 %rd6, %rd6, %rd7;
  shl.b64 %rd6, %rd6, 2; add.s64 %rd8, %rd1, %rd6;
  shl.b32 %r13, %r5, 5; add.u32 %r13, %r13, %r6; shl.b32 %r13, %r13, 2; add.u32 %r13, %r13, %r7;
  ld.shared.f32 %f4, [%r13]; st.global.f32 [%rd8], %f4;
  ld.shared.f32 %f5, [%r13+32]; st.global.f32 [%rd8+{8 * _TRANSPOSE_N * 4}], %f5;
  ld.shared.f32 %f6, [%r13+64]; st.global.f32 [%rd8+{16 * _TRANSPOSE_N * 4}], %f6;
  ld.shared.f32 %f7, [%r13+96]; st.global.f32 [%rd8+{24 * _TRANSPOSE_N * 4}], %f7;
  ret;
}}
"""

# Padded (S1 `transpose_vectorized`): block 8 x 32 (tid = ty * 8 + tx), one float4 per thread each way;
# tile[32][33]: row stride 33 words, so both the scalar stores and the column reads are conflict-free.
TRANSPOSE_PADDED = _HEAD + f"""
.visible .entry transpose_padded(.param .u64 out, .param .u64 in)
{{
  .reg .b32 %r<40>; .reg .b64 %rd<20>; .reg .f32 %f<8>;
  .shared .align 16 .b8 tile[4224];
  ld.param.u64 %rd1, [out]; ld.param.u64 %rd2, [in];
  mov.u32 %r1, %ctaid.x; and.b32 %r2, %r1, {_TILES - 1}; shr.u32 %r3, %r1, {_TILES.bit_length() - 1};
  mov.u32 %r4, %tid.x; and.b32 %r5, %r4, 7; shr.u32 %r6, %r4, 3;
  mov.u32 %r7, tile;
  shl.b32 %r8, %r2, 5; shl.b32 %r14, %r5, 2; add.u32 %r8, %r8, %r14;   // x = bx * 32 + tx * 4
  shl.b32 %r9, %r3, 5; add.u32 %r9, %r9, %r6;                           // y = by * 32 + ty
  mad.wide.u32 %rd3, %r9, {_TRANSPOSE_N}, 0; cvt.u64.u32 %rd4, %r8; add.s64 %rd3, %rd3, %rd4;
  shl.b64 %rd3, %rd3, 2; add.s64 %rd5, %rd2, %rd3;
  ld.global.v4.f32 {{%f0, %f1, %f2, %f3}}, [%rd5];
  mul.lo.u32 %r10, %r6, 33; add.u32 %r10, %r10, %r14; shl.b32 %r10, %r10, 2; add.u32 %r10, %r10, %r7;
  st.shared.f32 [%r10], %f0; st.shared.f32 [%r10+4], %f1; st.shared.f32 [%r10+8], %f2;
  st.shared.f32 [%r10+12], %f3;
  bar.sync 0;
  shl.b32 %r11, %r3, 5; add.u32 %r11, %r11, %r14;      // x = by * 32 + tx * 4
  shl.b32 %r12, %r2, 5; add.u32 %r12, %r12, %r6;       // y = bx * 32 + ty
  mad.wide.u32 %rd6, %r12, {_TRANSPOSE_N}, 0; cvt.u64.u32 %rd7, %r11; add.s64 %rd6, %rd6, %rd7;
  shl.b64 %rd6, %rd6, 2; add.s64 %rd8, %rd1, %rd6;
  mul.lo.u32 %r13, %r14, 33; add.u32 %r13, %r13, %r6; shl.b32 %r13, %r13, 2; add.u32 %r13, %r13, %r7;
  ld.shared.f32 %f4, [%r13]; ld.shared.f32 %f5, [%r13+132]; ld.shared.f32 %f6, [%r13+264];
  ld.shared.f32 %f7, [%r13+396];
  st.global.v4.f32 [%rd8], {{%f4, %f5, %f6, %f7}};
  ret;
}}
"""


def _transpose_args(dev):
    nbytes = _TRANSPOSE_N * _TRANSPOSE_N * 4
    lazy = getattr(dev, "alloc_lazy", None)
    return [lazy(nbytes, 0) if lazy else dev.alloc(nbytes), lazy(nbytes, 1) if lazy else dev.alloc(nbytes)]


def transpose_bench(kind: str) -> Bench:
    """transpose_basic or transpose_padded over 8192 x 8192 floats; GB/s of 2 x matrix bytes."""
    ptx, entry = (TRANSPOSE_BASIC, "transpose_basic") if kind == "basic" else (TRANSPOSE_PADDED, "transpose_padded")
    launch = Launch(_TILES * _TILES, 256, _transpose_args, 2.0 * _TRANSPOSE_N * _TRANSPOSE_N * 4, 16)
    return Bench(entry, f"{entry} {_TRANSPOSE_N}^2 floats", "GB/s", ptx, entry, (launch,), _bandwidth)


# --- one-warp ILP sweeps -------------------------------------------------------------------------------------------
# op -> (type, register prefix, init, one step of a chain): S1's FmaOp, IaddOp, ImulOp and SinOp.
ILP_OPS = {
    "fma": ("f32", "%f", "cvt.rn.f32.u32 {d}, %r1;", "fma.rn.f32 {d}, {d}, 0f3F800001, 0f38D1B717;"),
    "iadd": ("s32", "%q", "mov.u32 {d}, %r1;", "add.s32 {d}, {d}, 1;"),
    "imul": ("s32", "%q", "mov.u32 {d}, %r1;", "mul.lo.s32 {d}, {d}, 13;"),
    "sin": ("f32", "%f", "cvt.rn.f32.u32 {d}, %r1;", "sin.approx.f32 {d}, {d};"),
}
_ILP_STEPS = (32, 96)


def _clocks_per_inst(times, launches, clock):
    return (times[1] - times[0]) * clock / (launches[1].work - launches[0].work)


def ilp_bench(op: str, ilp: int) -> Bench:
    """One warp, ILP chains of `op`; clocks per warp-instruction from two step counts."""
    ty, reg, init, step = ILP_OPS[op]
    name = f"ilp_{op}_{ilp}"
    # S1's step loop is `#pragma unroll 1` (nvcc: .pragma "nounroll"): ptxas keeps its one iteration per pass
    ptx = _alu_kernel(name, ty, reg, init, step, n=ilp, unroll=1, nounroll=True)

    def args(steps):
        def make(dev):
            return [dev.alloc(4), np.uint32(steps)]
        return make
    launches = tuple(Launch(1, 32, args(s), float(s * ilp), None) for s in _ILP_STEPS)
    return Bench(name, f"{op}, one warp, ILP {ilp}", "clk", ptx, name, launches, _clocks_per_inst)


# --- BabelStream --------------------------------------------------------------------------------------------------
_STREAM_N = 1 << 25          # doubles per array (BabelStream's default)
_STREAM_TB = 1024            # TBSIZE of the BabelStream fork S5 builds (gitaumark/BabelStream, src/cuda/CUDAStream.h)
_STREAM_BLOCKS = 8 * _SMS    # its num_blocks (8 x SMs) for Copy/Mul/Add/Triad, grid-stride
_DOT_BLOCKS = 4 * _SMS       # its dot_num_blocks


def _stream_elementwise(name: str, body: str, arrays: int) -> str:
    """A BabelStream kernel: for (i = global id; i < n; i += gridDim x blockDim) body(i), doubles."""
    params = ", ".join(f".param .u64 p{i}" for i in range(arrays))
    loads = "\n".join(f"  ld.param.u64 %rd{i + 1}, [p{i}];" for i in range(arrays))
    addrs = "\n".join(f"  add.s64 %rd{i + 11}, %rd{i + 1}, %rd9;" for i in range(arrays))
    return _HEAD + f"""
.visible .entry {name}({params}, .param .u32 n)
{{
  .reg .b32 %r<12>; .reg .b64 %rd<20>; .reg .f64 %fd<4>; .reg .pred %p<2>;
{loads}
  ld.param.u32 %r9, [n];
  mov.u32 %r1, %ctaid.x; mov.u32 %r2, %ntid.x; mov.u32 %r3, %tid.x; mov.u32 %r5, %nctaid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3; mul.lo.s32 %r6, %r5, %r2;
LOOP:
  setp.ge.u32 %p1, %r4, %r9;
  @%p1 bra END;
  mul.wide.u32 %rd9, %r4, 8;
{addrs}
{body}
  add.s32 %r4, %r4, %r6;
  bra LOOP;
END:
  ret;
}}
"""


# a = p0, b = p1, c = p2 as in BabelStream (c = a; c = a + b; a = b + scalar * c; scalar 0.4)
STREAM_COPY = _stream_elementwise("stream_copy", "  ld.global.f64 %fd0, [%rd11]; st.global.f64 [%rd12], %fd0;", 2)
STREAM_ADD = _stream_elementwise("stream_add", "  ld.global.f64 %fd0, [%rd11]; ld.global.f64 %fd1, [%rd12];\n"
                                 "  add.f64 %fd2, %fd0, %fd1; st.global.f64 [%rd13], %fd2;", 3)
STREAM_TRIAD = _stream_elementwise("stream_triad", "  ld.global.f64 %fd0, [%rd12]; ld.global.f64 %fd1, [%rd13];\n"
                                   "  fma.rn.f64 %fd2, %fd1, 0d3FD999999999999A, %fd0; st.global.f64 [%rd11], %fd2;",
                                   3)
STREAM_DOT = _HEAD + f"""
.visible .entry stream_dot(.param .u64 a, .param .u64 b, .param .u64 sums, .param .u32 n)
{{
  .reg .b32 %r<16>; .reg .b64 %rd<16>; .reg .f64 %fd<8>; .reg .pred %p<4>;
  .shared .align 8 .b8 red[{_STREAM_TB * 8}];
  ld.param.u64 %rd1, [a]; ld.param.u64 %rd2, [b]; ld.param.u64 %rd3, [sums]; ld.param.u32 %r9, [n];
  mov.u32 %r1, %ctaid.x; mov.u32 %r2, %ntid.x; mov.u32 %r3, %tid.x; mov.u32 %r5, %nctaid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3; mul.lo.s32 %r6, %r5, %r2;
  mov.f64 %fd0, 0d0000000000000000;
LOOP:
  setp.ge.u32 %p1, %r4, %r9;
  @%p1 bra RED;
  mul.wide.u32 %rd4, %r4, 8; add.s64 %rd5, %rd1, %rd4; add.s64 %rd6, %rd2, %rd4;
  ld.global.f64 %fd1, [%rd5]; ld.global.f64 %fd2, [%rd6];
  fma.rn.f64 %fd0, %fd1, %fd2, %fd0;
  add.s32 %r4, %r4, %r6;
  bra LOOP;
RED:
  mov.u32 %r7, red; shl.b32 %r8, %r3, 3; add.u32 %r8, %r8, %r7;
  st.shared.f64 [%r8], %fd0;
  mov.u32 %r10, {_STREAM_TB // 2};
TREE:
  bar.sync 0;
  setp.ge.u32 %p2, %r3, %r10;
  @%p2 bra SKIP;
  shl.b32 %r11, %r10, 3; add.u32 %r12, %r8, %r11;
  ld.shared.f64 %fd3, [%r8]; ld.shared.f64 %fd4, [%r12]; add.f64 %fd3, %fd3, %fd4; st.shared.f64 [%r8], %fd3;
SKIP:
  shr.u32 %r10, %r10, 1; setp.ne.u32 %p3, %r10, 0;
  @%p3 bra TREE;
  setp.ne.u32 %p2, %r3, 0;
  @%p2 bra END;
  ld.shared.f64 %fd5, [%r7]; mul.wide.u32 %rd7, %r1, 8; add.s64 %rd8, %rd3, %rd7; st.global.f64 [%rd8], %fd5;
END:
  ret;
}}
"""
_STREAM = {"copy": (STREAM_COPY, 2), "add": (STREAM_ADD, 3), "triad": (STREAM_TRIAD, 3), "dot": (STREAM_DOT, 2)}


def _stream_args(arrays: int, dot: bool):
    def make(dev):
        lazy = getattr(dev, "alloc_lazy", None)
        bufs = [lazy(_STREAM_N * 8, 0) if lazy else dev.alloc(_STREAM_N * 8) for _ in range(arrays)]
        return [*bufs, dev.alloc(_DOT_BLOCKS * 8), np.uint32(_STREAM_N)] if dot else [*bufs, np.uint32(_STREAM_N)]
    return make


def stream_bench(kind: str) -> Bench:
    """BabelStream's `kind` kernel over 2^25 doubles per array; GB/s of the arrays' bytes, as BabelStream counts."""
    ptx, arrays = _STREAM[kind]
    dot = kind == "dot"
    grid = _DOT_BLOCKS if dot else _STREAM_BLOCKS
    launch = Launch(grid, _STREAM_TB, _stream_args(arrays, dot), float(arrays * _STREAM_N * 8), 8)
    return Bench(f"stream_{kind}", f"BabelStream {kind.capitalize()}, 2^25 doubles", "GB/s", ptx, f"stream_{kind}",
                 (launch,), _bandwidth)

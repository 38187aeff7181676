"""act_quant (kernels.md §4): FP8 e4m3 per-token-group (1x128) quantization, bitwise as specified, in Numba CUDA.

One warp per (row, 128-column group): each lane reads 4 bf16 as one 8-byte word (the warp reads the group's 256
contiguous bytes in one request), amax is a 5-step `shfl.sync.bfly` max, scale = max(amax, 1e-4) / 448 in fp32
(IEEE division), optionally rounded up to a power of two exactly on the bits (pow2_scale: a non-zero mantissa bumps
the exponent), q = e4m3(a / scale) with IEEE division and integer RNE with +-448 saturation, four bytes packed into
one 4-byte store per lane; lane 0 writes the scale.

What Numba cannot express that the PTX path may use: `cvt.rn.satfinite.e4m3x2.f32` (one instruction per two
values instead of ~10 integer ops each), `redux.sync.max.u32` on the |a| bits (non-negative floats order as
integers), `rcp`-free scaling, 16-byte vector loads and the `.nc.L1::no_allocate` form of the streaming hint.
Numba's own hint is used: a is read once with `ld_stream` (ld.global.cs). No fast math here: the division and the
rounding are specified bit for bit (kernels.md).
"""
from __future__ import annotations

import functools

import numpy as np
from numba import cuda, float32, types, uint32

from cuda_impl.common import Launch, cdiv, check_shape, launch, require, view
from cuda_impl.prims import bf16_hi, bf16_lo, e4m3_rn_sat, f32_bits, f32_from_bits, hi32, ld_stream, lo32, shfl_xor_f32

SIGNATURE = (types.uint64[:, ::1], types.uint32[:, ::1], types.float32[:, ::1], types.int32)
# the fp8 layer's quantisation of swiglu's output: only the rows below total_padded (an i32[1] on the device)
SIGNATURE_ROWS = (*SIGNATURE, types.int32[::1])
GROUP = 128


@functools.lru_cache(maxsize=None)
def make_kernel(GPR: int, WARPS: int, POW2: bool, ROWS: bool = False):
    """GPR = N/128 groups per row, WARPS groups per block, POW2 = pow2_scale, ROWS = bounded by rows[0] (an extra
    i32[1] argument: total_padded) (compile-time constants)."""

    def act_quant_kernel(a, q, scale, n_groups):
        lane = cuda.threadIdx.x % 32
        gid = cuda.blockIdx.x * WARPS + cuda.threadIdx.x // 32
        gg = min(gid, n_groups - 1)  # warps past the end redo the last group (they take part in the shuffles)
        m = gg // GPR
        g = gg - m * GPR
        col = g * 32 + lane
        word = ld_stream(a, (m, col))
        lo = lo32(word)
        hi = hi32(word)
        f0 = bf16_lo(lo)
        f1 = bf16_hi(lo)
        f2 = bf16_lo(hi)
        f3 = bf16_hi(hi)
        amax = max(max(abs(f0), abs(f1)), max(abs(f2), abs(f3)))
        for step in range(5):
            amax = max(amax, shfl_xor_f32(amax, 16 >> step))
        s = max(amax, float32(1e-4)) / float32(448.0)
        if POW2:
            b = f32_bits(s)
            if b & uint32(0x7FFFFF) != uint32(0):
                b = (b & uint32(0x7F800000)) + uint32(0x800000)
            s = f32_from_bits(b)
        packed = (e4m3_rn_sat(f0 / s) | (e4m3_rn_sat(f1 / s) << uint32(8)) | (e4m3_rn_sat(f2 / s) << uint32(16))
                  | (e4m3_rn_sat(f3 / s) << uint32(24)))
        if gid < n_groups:
            q[m, col] = packed
            if lane == 0:
                scale[m, g] = s

    if not ROWS:
        return act_quant_kernel

    def act_quant_rows_kernel(a, q, scale, n_groups, rows):
        # NOTE: act_quant_kernel with n_groups bounded by the rows below rows[0] (a Numba device function would
        # share the body, but compiling one needs a CUDA driver, which ptxsim runs do not have)
        n_groups = min(n_groups, rows[0] * GPR)
        lane = cuda.threadIdx.x % 32
        gid = cuda.blockIdx.x * WARPS + cuda.threadIdx.x // 32
        gg = min(gid, n_groups - 1)  # warps past the end redo the last group (they take part in the shuffles)
        m = gg // GPR
        g = gg - m * GPR
        col = g * 32 + lane
        word = ld_stream(a, (m, col))
        lo = lo32(word)
        hi = hi32(word)
        f0 = bf16_lo(lo)
        f1 = bf16_hi(lo)
        f2 = bf16_lo(hi)
        f3 = bf16_hi(hi)
        amax = max(max(abs(f0), abs(f1)), max(abs(f2), abs(f3)))
        for step in range(5):
            amax = max(amax, shfl_xor_f32(amax, 16 >> step))
        s = max(amax, float32(1e-4)) / float32(448.0)
        if POW2:
            b = f32_bits(s)
            if b & uint32(0x7FFFFF) != uint32(0):
                b = (b & uint32(0x7F800000)) + uint32(0x800000)
            s = f32_from_bits(b)
        packed = (e4m3_rn_sat(f0 / s) | (e4m3_rn_sat(f1 / s) << uint32(8)) | (e4m3_rn_sat(f2 / s) << uint32(16))
                  | (e4m3_rn_sat(f3 / s) << uint32(24)))
        if gid < n_groups:
            q[m, col] = packed
            if lane == 0:
                scale[m, g] = s

    return act_quant_rows_kernel


def launch_config(M: int, N: int) -> Launch:
    """One warp per 128-column group; 8 warps (256 threads) per block, 4 when that leaves fewer than 132 blocks."""
    groups = M * (N // GROUP)
    warps = 8 if groups >= 8 * 132 else 4
    return launch(cdiv(groups, warps), 32 * warps, warps=warps)


def sources_for(M: int, N: int, pow2_scale: bool = False):
    cfg = launch_config(M, N)
    return [(make_kernel(N // GROUP, cfg.knob("warps"), bool(pow2_scale)), SIGNATURE)]


def sources(preset):
    return sources_for(preset.T, preset.H, False) + sources_for(preset.T, preset.H, True)


def run(backend, args, preset, pow2_scale: bool = False, **params):
    if "a" not in args:
        require("act_quant", False, f"argument 'a' missing; got {sorted(args)}")
    M, N = args["a"].shape
    require("act_quant", N % GROUP == 0, f"a has N={N} columns, not a multiple of {GROUP}")
    a = view(args["a"], np.uint64, "act_quant", "a")
    q = view(check_shape("act_quant", args, "q", (M, N)), np.uint32, "act_quant", "q")
    scale = check_shape("act_quant", args, "scale", (M, N // GROUP))
    cfg = launch_config(M, N)
    params = [a, q, scale, np.int32(M * (N // GROUP))]
    if "total_padded" in args:  # the fp8 layer: only the rows below total_padded
        params.append(check_shape("act_quant", args, "total_padded", (1,)))
        kernel, sig = make_kernel(N // GROUP, cfg.knob("warps"), bool(pow2_scale), True), SIGNATURE_ROWS
    else:
        (kernel, sig), = sources_for(M, N, pow2_scale)
    return [backend.launch_numba(kernel, sig, cfg.grid, cfg.block, params, cfg.shared_bytes, tag="act_quant")]

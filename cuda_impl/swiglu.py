"""swiglu (kernels.md §6): a = bf16_rn(g / (1 + exp(-g)) * u) on rows < total_padded, in Numba CUDA.

One thread per 4 outputs: g and u are read as 8-byte words (4 bf16 each) from the two halves of h's row, the four
results are packed back into one 8-byte store. A block covers NT words, i.e. NT / (I/4) rows or part of one row; the
row/word split divides by the compile-time constant I/4. fp32 throughout, with fast math (the check allows 2 bf16
ulps, 2^-8 relative, and the approximations are ~2^-21): `fast_exp` (ex2.approx) and `fast_div` (div.approx), the
same approximations the PTX path writes by hand. h is read once, with streaming loads (`ld_stream`: ld.global.cs).

What Numba cannot express that the PTX path may use: `rcp.approx.ftz.f32` / `.ftz` forms, `cvt.rn.bf16x2.f32`
packing, 16-byte vector loads/stores, the `.nc.L1::no_allocate` form of the streaming hint.
"""
from __future__ import annotations

import functools

import numpy as np
from numba import cuda, float32, types

from cuda_impl.common import Launch, cdiv, check_shape, launch, require, view
from cuda_impl.prims import bf16_hi, bf16_lo, fast_div, fast_exp, hi32, join64, ld_stream, lo32, pack_bf16x2

SIGNATURE = (types.uint64[:, ::1], types.int32[::1], types.uint64[:, ::1])


@functools.lru_cache(maxsize=None)
def make_kernel(WI: int, NT: int):
    """WI = I/4 output words per row, NT threads per block."""

    def silu_mul(g, u):
        return fast_div(g, float32(1.0) + fast_exp(-g)) * u

    silu_mul = cuda.jit(device=True, inline=True)(silu_mul)

    def swiglu_kernel(h, total_padded, a):
        idx = cuda.blockIdx.x * NT + cuda.threadIdx.x
        row = idx // WI
        w = idx - row * WI
        if row >= total_padded[0] or row >= a.shape[0]:
            return
        gw = ld_stream(h, (row, w))
        uw = ld_stream(h, (row, WI + w))
        g0 = lo32(gw)
        g1 = hi32(gw)
        u0 = lo32(uw)
        u1 = hi32(uw)
        r0 = pack_bf16x2(silu_mul(bf16_lo(g0), bf16_lo(u0)), silu_mul(bf16_hi(g0), bf16_hi(u0)))
        r1 = pack_bf16x2(silu_mul(bf16_lo(g1), bf16_lo(u1)), silu_mul(bf16_hi(g1), bf16_hi(u1)))
        a[row, w] = join64(r0, r1)

    return swiglu_kernel


def launch_config(preset) -> Launch:
    """P_max * I/4 words, 256 threads per block (threads past total_padded exit at once)."""
    words = preset.P_max * (preset.I // 4)
    return launch(cdiv(words, 256), 256)


def sources(preset):
    return [(make_kernel(preset.I // 4, launch_config(preset).block[0]), SIGNATURE)]


def run(backend, args, preset, **params):
    P, I2 = preset.P_max, 2 * preset.I
    require("swiglu", preset.I % 4 == 0, f"I={preset.I} is not a multiple of 4 (rows move as 8-byte words)")
    h = view(check_shape("swiglu", args, "h", (P, I2)), np.uint64, "swiglu", "h")
    total = check_shape("swiglu", args, "total_padded", (1,))
    a = view(check_shape("swiglu", args, "a", (P, preset.I)), np.uint64, "swiglu", "a")
    cfg = launch_config(preset)
    (kernel, sig), = sources(preset)
    return [backend.launch_numba(kernel, sig, cfg.grid, cfg.block, [h, total, a], cfg.shared_bytes, tag="swiglu")]

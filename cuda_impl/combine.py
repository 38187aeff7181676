"""combine (kernels.md §7): out[t] = bf16_rn(sum_k topk_w[t,k] * y[inverse[t,k]]), fp32 accumulation, in Numba CUDA.

One block per token. Every thread first loads the token's K weights and K row indices into registers (the same
addresses across the block: broadcast loads, L1 hits), then walks the row in 8-byte words (4 bf16): K gathered
8-byte loads, 4 fp32 FMA chains in k order, one packed 8-byte store.

The once-read y rows come through streaming loads (`ld_stream`: numba-cuda's ld.global.cs).

What Numba cannot express that the PTX path may use: 16-byte vector loads/stores, the `.nc.L1::no_allocate` form of
the hint, `cvt.rn.bf16x2.f32` packing, `prmt` to unpack bf16 pairs.
"""
from __future__ import annotations

import functools

import numpy as np
from numba import cuda, float32, int32, int64, types

from cuda_impl.common import Launch, check_shape, launch, require, view
from cuda_impl.prims import bf16_hi, bf16_lo, hi32, join64, ld_stream, lo32, pack_bf16x2

SIGNATURE = (types.uint64[:, ::1], types.float32[:, ::1], types.int32[:, ::1], types.uint64[:, ::1])


@functools.lru_cache(maxsize=None)
def make_kernel(K: int, NT: int):
    def combine_kernel(y, topk_w, inverse, out):
        t = cuda.blockIdx.x
        wt = cuda.local.array(K, float32)
        rows = cuda.local.array(K, int32)
        for k in range(K):
            wt[k] = topk_w[t, k]
            rows[k] = inverse[t, k]
        for w in range(cuda.threadIdx.x, out.shape[1], NT):
            a0 = float32(0.0)
            a1 = float32(0.0)
            a2 = float32(0.0)
            a3 = float32(0.0)
            for k in range(K):
                v = ld_stream(y, (int64(rows[k]), w))  # the hint's index tuple must be of one integer type
                lo = lo32(v)
                hi = hi32(v)
                a0 += wt[k] * bf16_lo(lo)
                a1 += wt[k] * bf16_hi(lo)
                a2 += wt[k] * bf16_lo(hi)
                a3 += wt[k] * bf16_hi(hi)
            out[t, w] = join64(pack_bf16x2(a0, a1), pack_bf16x2(a2, a3))

    return combine_kernel


def launch_config(preset) -> Launch:
    """One block per token; H/4 words per row, up to 256 threads."""
    words = preset.H // 4
    return launch(preset.T, min(256, max(32, -(-words // 32) * 32)))


def sources(preset):
    return [(make_kernel(preset.K, launch_config(preset).block[0]), SIGNATURE)]


def run(backend, args, preset, **params):
    T, H, K, P = preset.T, preset.H, preset.K, preset.P_max
    require("combine", H % 4 == 0, f"H={H} is not a multiple of 4 (rows move as 8-byte words)")
    y = view(check_shape("combine", args, "y", (P, H)), np.uint64, "combine", "y")
    w = check_shape("combine", args, "topk_w", (T, K))
    inv = check_shape("combine", args, "inverse", (T, K))
    out = view(check_shape("combine", args, "out", (T, H)), np.uint64, "combine", "out")
    cfg = launch_config(preset)
    (kernel, sig), = sources(preset)
    return [backend.launch_numba(kernel, sig, cfg.grid, cfg.block, [y, w, inv, out], cfg.shared_bytes, tag="combine")]

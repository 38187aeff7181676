"""permute (kernels.md §3): the dispatch gather xp[p] = x[sorted_ids[p] // K] (0 for padding), in Numba CUDA.

One block per padded row p; rows p >= total_padded return at once (not written). The row is copied as 8-byte words
(bf16[H] seen as uint64[H/4]): consecutive threads move consecutive words, so every warp request covers 256
contiguous bytes. Padding rows (sorted_ids[p] == T*K) are written with zeros.

The x rows are read with streaming loads (`ld_stream`: numba-cuda's ld.global.cs), the hint Numba offers for
data not reused from L1 (each x row is gathered K times overall, from L2).

What Numba cannot express that the PTX path may use: 16-byte `ld.global.nc.v4.u32` / `st.global.v4` (Numba's widest
scalar is 8 bytes), the `.nc.L1::no_allocate` form of the hint, `cp.async.bulk` (TMA) row copies.
"""
from __future__ import annotations

import functools

import numpy as np
from numba import cuda, types, uint64

from cuda_impl.common import Launch, check_shape, launch, require, view
from cuda_impl.prims import ld_stream

SIGNATURE = (types.uint64[:, ::1], types.int32[::1], types.int32[::1], types.uint64[:, ::1], types.int32)


@functools.lru_cache(maxsize=None)
def make_kernel(NT: int, K: int):
    """NT threads per row, K experts per token (a compile-time constant: the // K is a multiply-shift)."""

    def permute_kernel(x, sorted_ids, total_padded, xp, TK):
        p = cuda.blockIdx.x
        if p >= total_padded[0]:
            return
        sid = sorted_ids[p]
        words = xp.shape[1]
        if sid < TK:
            t = sid // K
            for w in range(cuda.threadIdx.x, words, NT):
                xp[p, w] = ld_stream(x, (t, w))
        else:
            for w in range(cuda.threadIdx.x, words, NT):
                xp[p, w] = uint64(0)

    return permute_kernel


def launch_config(preset) -> Launch:
    """One block per padded row; H/4 words per row, up to 256 threads (64 at tiny, 256 x 7 words at dsv3)."""
    words = preset.H // 4
    return launch(preset.P_max, min(256, max(32, -(-words // 32) * 32)))


def sources(preset):
    return [(make_kernel(launch_config(preset).block[0], preset.K), SIGNATURE)]


def run(backend, args, preset, **params):
    T, H, K, P = preset.T, preset.H, preset.K, preset.P_max
    require(H % 4 == 0, "permute", f"H={H} is not a multiple of 4 (rows are moved as 8-byte words)")
    x = view(check_shape("permute", args, "x", (T, H)), np.uint64, "permute", "x")
    sorted_ids = check_shape("permute", args, "sorted_ids", (P,))
    total = check_shape("permute", args, "total_padded", (1,))
    xp = view(check_shape("permute", args, "xp", (P, H)), np.uint64, "permute", "xp")
    cfg = launch_config(preset)
    (kernel, sig), = sources(preset)
    return [backend.launch_numba(kernel, sig, cfg.grid, cfg.block, [x, sorted_ids, total, xp, np.int32(T * K)],
                                 cfg.shared_bytes, tag="permute")]

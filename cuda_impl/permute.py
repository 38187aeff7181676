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
from numba import cuda, types, uint32, uint64

from contract.errors import InputError
from cuda_impl.common import Launch, check_shape, launch, require, view
from cuda_impl.prims import ld_stream

SIGNATURE = (types.uint64[:, ::1], types.int32[::1], types.int32[::1], types.uint64[:, ::1], types.int32)
# the fp8 layer's scale rows (H/128 fp32) move as 4-byte words
SIGNATURE_WORDS = (types.uint32[:, ::1], types.int32[::1], types.int32[::1], types.uint32[:, ::1], types.int32)


@functools.lru_cache(maxsize=None)
def make_kernel(NT: int, K: int, WORD=uint64):
    """NT threads per row, K experts per token (a compile-time constant: the // K is a multiply-shift); WORD the
    element the rows move as (uint64, or uint32 for the fp8 layer's scale rows)."""

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
                xp[p, w] = WORD(0)

    return permute_kernel


def launch_config(preset, words: int | None = None) -> Launch:
    """One block per padded row; `words` per row (default H/4: bf16 x as 8-byte words), up to 256 threads (64 at
    tiny, 256 x 7 words at dsv3)."""
    words = preset.H // 4 if words is None else words
    return launch(preset.P_max, min(256, max(32, -(-words // 32) * 32)))


def sources(preset):
    return [(make_kernel(launch_config(preset).block[0], preset.K), SIGNATURE)]


def _gather(backend, args, preset, kernel: str, word, signature, tag: str):
    """The gather of args["x"] rows (any dtype, moved as `word`s) into args["xp"]."""
    T, K, P = preset.T, preset.K, preset.P_max
    if "x" not in args:
        raise InputError(f"{kernel}: argument 'x' missing; got {sorted(args)}")
    require(kernel, len(args["x"].shape) == 2, f"x has shape {tuple(args['x'].shape)}; expected a [T, columns] array")
    cols = args["x"].shape[1]
    x = view(check_shape(kernel, args, "x", (T, cols)), word, kernel, "x")
    sorted_ids = check_shape(kernel, args, "sorted_ids", (P,))
    total = check_shape(kernel, args, "total_padded", (1,))
    xp = view(check_shape(kernel, args, "xp", (P, cols)), word, kernel, "xp")
    require(kernel, np.dtype(args["xp"].dtype) == np.dtype(args["x"].dtype),
            f"xp has dtype {np.dtype(args['xp'].dtype)}; expected x's {np.dtype(args['x'].dtype)}")
    cfg = launch_config(preset, x.shape[1])
    fn = make_kernel(cfg.block[0], K, uint64 if word == np.uint64 else uint32)
    return [backend.launch_numba(fn, signature, cfg.grid, cfg.block, [x, sorted_ids, total, xp, np.int32(T * K)],
                                 cfg.shared_bytes, tag=tag)]


def run(backend, args, preset, **params):
    """Gather rows of args["x"] (bf16 [T, H], or the fp8 layer's e4m3 payload seen as bf16) into args["xp"]; rows
    move as 8-byte words."""
    return _gather(backend, args, preset, "permute", np.uint64, SIGNATURE, "permute")


def run_scales(backend, args, preset, **params):
    """The fp8 layer's gather of the 1x128 scales (f32 [T, H/128]) into args["xp"], as 4-byte words."""
    if "x" in args:
        require("permute_scales", np.dtype(args["x"].dtype) == np.float32,
                f"x has dtype {np.dtype(args['x'].dtype)}; expected float32 (the 1x128 scales)")
    return _gather(backend, args, preset, "permute_scales", np.uint32, SIGNATURE_WORDS, "permute_scales")

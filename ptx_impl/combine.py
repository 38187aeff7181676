"""combine: out[t] = sum_k topk_w[t,k] * y[inverse[t,k]] (kernels.md section 7) from kernels/combine.ptx."""
from __future__ import annotations

import ml_dtypes
import numpy as np

from ptx_impl.descriptor import check_array, ptx_entry, reject_params, require, stream_grid

KERNEL = ptx_entry(
    file="combine.ptx",
    entry="ptx_combine",
    params=(("y", ".ptr"), ("topk_w", ".ptr"), ("inverse", ".ptr"), ("out", ".ptr"),
            ("n_chunks", ".u32"), ("chunks_per_row", ".u32"), ("k", ".u32")),
    consts=(("K", 8),),  # the k loop is unrolled K times (all K gathers in flight)
)
MAX_K = 16  # registers: six per unrolled copy
VECTOR = 8  # bf16 per 16-byte chunk


def launch_config(t: int, h: int):
    """(grid, block, shared_bytes) for a [t, h] output."""
    return stream_grid(t * (h // VECTOR))


def run(backend, args, preset, **params):
    """args["out"] = the topk_w-weighted sum of each token's K expert rows of args["y"]."""
    reject_params("combine", params)
    T, K, P = preset.T, preset.K, preset.P_max
    require("combine", "y" in args and len(args["y"].shape) == 2, "y", args.get("y"), "a [P_max, H] array")
    H = args["y"].shape[1]
    require("combine", H % VECTOR == 0 and H > 0, "H (y.shape[1])", H, f"a positive multiple of {VECTOR}")
    require("combine", P * H // VECTOR < 2**32, "P_max*H", P * H, "below 2^35")
    require("combine", 1 <= K <= MAX_K, "K", K, f"1..{MAX_K} (the k loop is unrolled)")
    check_array("combine", args, "y", (P, H), ml_dtypes.bfloat16)
    check_array("combine", args, "topk_w", (T, K), np.float32)
    check_array("combine", args, "inverse", (T, K), np.int32)
    check_array("combine", args, "out", (T, H), ml_dtypes.bfloat16)
    grid, block, smem = launch_config(T, H)
    values = {"y": args["y"], "topk_w": args["topk_w"], "inverse": args["inverse"], "out": args["out"],
              "n_chunks": T * H // VECTOR, "chunks_per_row": H // VECTOR, "k": K}
    return [KERNEL.launch(backend, grid, block, values, smem, constants={"K": K})]

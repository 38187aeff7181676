"""permute: the dispatch gather xp[p] = x[sorted_ids[p] // K] (kernels.md section 3) from kernels/permute.cu."""
from __future__ import annotations

import ml_dtypes
import numpy as np

from cpp_impl.descriptor import check_array, cuda_entry, reject_params, require, stream_grid

KERNEL = cuda_entry(
    file="permute.cu",
    entry="cpp_permute",
    params=(("x", ".ptr"), ("sorted_ids", ".ptr"), ("total_padded", ".ptr"), ("xp", ".ptr"),
            ("chunks_per_row", ".u32"), ("tk", ".u32"), ("k", ".u32")),
)
VECTOR = 8  # bf16 per 16-byte chunk (uint4)


def launch_config(p_max: int, h: int):
    """(grid, block, shared_bytes): sized for P_max rows; the kernel stops at total_padded read on the device."""
    return stream_grid(p_max * (h // VECTOR))


def run(backend, args, preset, **params):
    """Gather rows of args["x"] into args["xp"] in the routed order of args["sorted_ids"]."""
    reject_params("permute", params)
    T, K, P = preset.T, preset.K, preset.P_max
    require("permute", "x" in args and len(args["x"].shape) == 2, "x", args.get("x"), "a [T, H] array")
    H = args["x"].shape[1]
    require("permute", H % VECTOR == 0 and H > 0, "H (x.shape[1])", H, f"a positive multiple of {VECTOR}")
    require("permute", P * H // VECTOR < 2**32, "P_max*H", P * H, "below 2^35")
    check_array("permute", args, "x", (T, H), ml_dtypes.bfloat16)
    check_array("permute", args, "sorted_ids", (P,), np.int32)
    check_array("permute", args, "total_padded", (1,), np.int32)
    check_array("permute", args, "xp", (P, H), ml_dtypes.bfloat16)
    grid, block, smem = launch_config(P, H)
    values = {"x": args["x"], "sorted_ids": args["sorted_ids"], "total_padded": args["total_padded"],
              "xp": args["xp"], "chunks_per_row": H // VECTOR, "tk": T * K, "k": K}
    return [KERNEL.launch(backend, grid, block, values, smem)]


WORDS_KERNEL = cuda_entry(
    file="permute.cu",
    entry="cpp_permute_words",
    params=(("x", ".ptr"), ("sorted_ids", ".ptr"), ("total_padded", ".ptr"), ("xp", ".ptr"),
            ("words_per_row", ".u32"), ("tk", ".u32"), ("k", ".u32")),
)


def run_scales(backend, args, preset, **params):
    """The fp8 layer's gather of the 1x128 scales: f32 rows of args["x"] [T, W] into args["xp"] [P_max, W] in the
    routed order (zeros for padding rows), one 4-byte word per thread and step (cpp_permute_words)."""
    reject_params("permute_scales", params)
    T, K, P = preset.T, preset.K, preset.P_max
    require("permute_scales", "x" in args and len(args["x"].shape) == 2, "x", args.get("x"), "a [T, W] array")
    W = args["x"].shape[1]
    require("permute_scales", W > 0 and P * W < 2**32, "W (x.shape[1])", W, "positive, P_max * W below 2^32")
    check_array("permute_scales", args, "x", (T, W), np.float32)
    check_array("permute_scales", args, "sorted_ids", (P,), np.int32)
    check_array("permute_scales", args, "total_padded", (1,), np.int32)
    check_array("permute_scales", args, "xp", (P, W), np.float32)
    grid, block, smem = stream_grid(P * W)
    values = {"x": args["x"], "sorted_ids": args["sorted_ids"], "total_padded": args["total_padded"],
              "xp": args["xp"], "words_per_row": W, "tk": T * K, "k": K}
    return [WORDS_KERNEL.launch(backend, grid, block, values, smem)]

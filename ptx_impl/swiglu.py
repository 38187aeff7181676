"""swiglu: a = silu(h[:, :I]) * h[:, I:] on rows < total_padded (kernels.md section 6) from kernels/swiglu.ptx."""
from __future__ import annotations

import ml_dtypes
import numpy as np

from ptx_impl.descriptor import check_array, ptx_entry, reject_params, require, stream_grid

KERNEL = ptx_entry(
    file="swiglu.ptx",
    entry="ptx_swiglu",
    params=(("h", ".ptr"), ("total_padded", ".ptr"), ("a", ".ptr"), ("chunks_per_row", ".u32")),
)
VECTOR = 8  # bf16 per 16-byte chunk


def launch_config(p_max: int, i: int):
    """(grid, block, shared_bytes): sized for P_max rows; the kernel stops at total_padded read on the device."""
    return stream_grid(p_max * (i // VECTOR))


def run(backend, args, preset, **params):
    """args["a"] = swiglu(args["h"]) on the rows below total_padded."""
    reject_params("swiglu", params)
    P = preset.P_max
    require("swiglu", "h" in args and len(args["h"].shape) == 2, "h", args.get("h"), "a [P_max, 2I] array")
    two_i = args["h"].shape[1]
    require("swiglu", two_i % (2 * VECTOR) == 0 and two_i > 0, "2I (h.shape[1])", two_i,
            f"a positive multiple of {2 * VECTOR} (I a multiple of {VECTOR})")
    inter = two_i // 2
    require("swiglu", P * two_i // VECTOR < 2**32, "P_max*2I", P * two_i, "below 2^35")
    check_array("swiglu", args, "h", (P, two_i), ml_dtypes.bfloat16)
    check_array("swiglu", args, "total_padded", (1,), np.int32)
    check_array("swiglu", args, "a", (P, inter), ml_dtypes.bfloat16)
    grid, block, smem = launch_config(P, inter)
    values = {"h": args["h"], "total_padded": args["total_padded"], "a": args["a"], "chunks_per_row": inter // VECTOR}
    return [KERNEL.launch(backend, grid, block, values, smem)]

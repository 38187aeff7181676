"""act_quant: FP8 e4m3 1x128 per-token-group quantisation (kernels.md section 4) from kernels/act_quant.ptx."""
from __future__ import annotations

import ml_dtypes
import numpy as np

from ptx_impl.descriptor import ceil_div, check_array, ptx_entry, reject_params, require

KERNEL = ptx_entry(
    file="act_quant.ptx",
    entry="ptx_act_quant",
    params=(("a", ".ptr"), ("q", ".ptr"), ("scale", ".ptr"), ("n_groups", ".u32"), ("pow2", ".u32"),
            ("rows", ".u64"), ("gpr", ".u32")),
)
BLOCK = 256          # threads per CTA; 16 threads (8 bf16 each) per 128-column group
GROUP = 128          # quantisation group width (columns)
THREADS_PER_GROUP = 16


def launch_config(m: int, n: int) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
    """(grid, block, shared_bytes) for an [m, n] input."""
    threads = m * (n // GROUP) * THREADS_PER_GROUP
    return (max(1, ceil_div(threads, BLOCK)), 1, 1), (BLOCK, 1, 1), 0


def run(backend, args, preset=None, pow2_scale: bool = False, **params):
    """Quantise args["a"] into args["q"] (e4m3) and args["scale"] (f32); returns the launch records. With
    args["total_padded"] (i32[1], the fp8 layer) only the rows below it are read and written."""
    reject_params("act_quant", params)
    require("act_quant", "a" in args, "argument", "a", "an input named 'a'")
    a = args["a"]
    require("act_quant", len(a.shape) == 2, "a.ndim", len(a.shape), "2 ([M, N])")
    m, n = a.shape
    require("act_quant", n % GROUP == 0 and n > 0, "N (a.shape[1])", n, f"a positive multiple of {GROUP}")
    require("act_quant", m * n // GROUP * THREADS_PER_GROUP < 2**32, "M*N", m * n, "below 2^32 / 8 * 128")
    check_array("act_quant", args, "a", (m, n), ml_dtypes.bfloat16)
    check_array("act_quant", args, "q", (m, n), ml_dtypes.float8_e4m3fn)
    check_array("act_quant", args, "scale", (m, n // GROUP), np.float32)
    rows = args.get("total_padded")
    if rows is not None:
        check_array("act_quant", args, "total_padded", (1,), np.int32)
    grid, block, smem = launch_config(m, n)
    values = {"a": a, "q": args["q"], "scale": args["scale"], "n_groups": m * n // GROUP, "pow2": int(bool(pow2_scale)),
              "rows": 0 if rows is None else rows.addr, "gpr": n // GROUP}
    return [KERNEL.launch(backend, grid, block, values, smem)]

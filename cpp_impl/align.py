"""align: the deterministic routing map (moe_align_block_size, kernels.md section 2) from kernels/align.cu."""
from __future__ import annotations

import numpy as np

from cpp_impl.descriptor import check_array, cuda_entry, reject_params, require

KERNEL = cuda_entry(
    file="align.cu",
    entry="cpp_align",
    params=(("topk_ids", ".ptr"), ("counts", ".ptr"), ("offsets", ".ptr"), ("total_padded", ".ptr"),
            ("sorted_ids", ".ptr"), ("block_expert", ".ptr"), ("inverse", ".ptr"),
            ("tk", ".u32"), ("e", ".u32"), ("bm", ".u32"), ("p_max", ".u32"), ("n_blocks", ".u32")),
)
BLOCK = 256   # one CTA of 8 warps (__launch_bounds__(256))
WARPS = BLOCK // 32
MAX_SHARED = 48 * 1024  # stay within the default dynamic shared-memory limit (no opt-in attribute needed)


def shared_bytes(e: int) -> int:
    """cnt[E] + off[E+1] + cursor[E] + table[8][E], 32-bit words."""
    return 4 * ((3 + WARPS) * e + 1)


def launch_config(e: int):
    """(grid, block, shared_bytes): a single CTA."""
    return (1, 1, 1), (BLOCK, 1, 1), shared_bytes(e)


def run(backend, args, preset, **params):
    """Build counts, offsets, total_padded, sorted_ids, block_expert and inverse from args["topk_ids"]."""
    reject_params("align", params)
    T, K, E, BM, P = preset.T, preset.K, preset.E, preset.BM, preset.P_max
    require("align", E >= 1 and shared_bytes(E) <= MAX_SHARED, "E", E,
            f"1..{(MAX_SHARED // 4 - 1) // (3 + WARPS)} (shared memory of one CTA)")
    require("align", BM >= 1, "BM", BM, ">= 1")
    require("align", P % BM == 0, "P_max", P, f"a multiple of BM={BM}")
    require("align", T * K < 2**31 - 1 and P < 2**31, "T*K", T * K, "below 2^31 (int32 slot ids)")
    check_array("align", args, "topk_ids", (T, K), np.int32)
    check_array("align", args, "counts", (E,), np.int32)
    check_array("align", args, "offsets", (E + 1,), np.int32)
    check_array("align", args, "total_padded", (1,), np.int32)
    check_array("align", args, "sorted_ids", (P,), np.int32)
    check_array("align", args, "block_expert", (P // BM,), np.int32)
    check_array("align", args, "inverse", (T, K), np.int32)
    grid, block, smem = launch_config(E)
    values = {name: args[name] for name in ("topk_ids", "counts", "offsets", "total_padded", "sorted_ids",
                                            "block_expert", "inverse")}
    values.update(tk=T * K, e=E, bm=BM, p_max=P, n_blocks=P // BM)
    return [KERNEL.launch(backend, grid, block, values, smem)]

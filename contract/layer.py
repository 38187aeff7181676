"""The layer as a composition of the kernels (kernels.md "The layer"), shared by the PTX-text paths.

gate -> align -> permute -> grouped_gemm(W1) -> swiglu -> grouped_gemm(W2) -> combine, plus act_quant(x) as the FP8
dispatch payload. An implementation passes its own stage run functions; the intermediates come from
`backend.workspace` (poisoned, so a kernel that skips an element shows up downstream; kept across the calls of a
timing loop, so nothing is allocated or freed inside its timed window) and are given back afterwards, also when a
launch fails.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from contract.generators import BF16
from contract.launch import check_array, reject_params, require

I32 = np.dtype(np.int32)
F32 = np.dtype(np.float32)
STAGES = ("act_quant", "gate", "align", "permute", "grouped_gemm", "swiglu", "combine")


def intermediate_specs(preset) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Name -> (shape, dtype) of every intermediate array of the layer."""
    T, K, E, H, inter, P = preset.T, preset.K, preset.E, preset.H, preset.I, preset.P_max
    return {
        "topk_ids": ((T, K), I32), "topk_w": ((T, K), F32),
        "counts": ((E,), I32), "offsets": ((E + 1,), I32), "total_padded": ((1,), I32),
        "sorted_ids": ((P,), I32), "block_expert": ((preset.n_blocks,), I32), "inverse": ((T, K), I32),
        "xp": ((P, H), BF16), "h": ((P, 2 * inter), BF16), "a": ((P, inter), BF16), "y": ((P, H), BF16),
    }


def check_layer_args(label: str, args: Mapping, preset, params: Mapping) -> None:
    """args logits, bias, x, W1, W2 in; out, q, scale out (InputError naming `label`, e.g. "ptx layer")."""
    reject_params(label, params)
    T, E, H, inter = preset.T, preset.E, preset.H, preset.I
    check_array(label, args, "logits", (T, E), F32)
    check_array(label, args, "bias", (E,), F32)
    check_array(label, args, "x", (T, H), BF16)
    check_array(label, args, "W1", (E, 2 * inter, H), BF16)
    check_array(label, args, "W2", (E, H, inter), BF16)
    check_array(label, args, "out", (T, H), BF16)
    require(label, "q" in args and "scale" in args, "outputs", sorted(args), "q and scale (act_quant of x)")


def run_layer(backend, args: Mapping, preset, stages: Mapping[str, Callable]) -> list:
    """Run the eight launches with `stages[name](backend, args, preset)` for each name of STAGES; returns every
    launch record in order."""
    tmp = backend.workspace("layer", intermediate_specs(preset))
    try:
        v = {**args, **tmp}
        gemm = stages["grouped_gemm"]
        records = []
        records += stages["act_quant"](backend, {"a": v["x"], "q": v["q"], "scale": v["scale"]}, preset)
        records += stages["gate"](backend, {k: v[k] for k in ("logits", "bias", "topk_ids", "topk_w")}, preset)
        records += stages["align"](backend, {k: v[k] for k in ("topk_ids", "counts", "offsets", "total_padded",
                                                               "sorted_ids", "block_expert", "inverse")}, preset)
        records += stages["permute"](backend, {k: v[k] for k in ("x", "sorted_ids", "total_padded", "xp")}, preset)
        records += gemm(backend, {"a": v["xp"], "w": v["W1"], "block_expert": v["block_expert"],
                                  "total_padded": v["total_padded"], "c": v["h"]}, preset)
        records += stages["swiglu"](backend, {k: v[k] for k in ("h", "total_padded", "a")}, preset)
        records += gemm(backend, {"a": v["a"], "w": v["W2"], "block_expert": v["block_expert"],
                                  "total_padded": v["total_padded"], "c": v["y"]}, preset)
        records += stages["combine"](backend, {k: v[k] for k in ("y", "topk_w", "inverse", "out")}, preset)
        return records
    finally:
        backend.done_with_workspace(tmp)

"""The whole MoE layer on the CUDA C++ kernels (kernels.md "The layer").

gate -> align -> permute -> grouped_gemm(W1) -> swiglu -> grouped_gemm(W2) -> combine, plus act_quant(x) as the
FP8 dispatch payload. The grouped GEMM is cpp_impl.grouped_gemm.run (its own module). Intermediates come from
`backend.workspace` (poisoned, so a kernel that skips an element shows up downstream; kept across the calls of a
timing loop, so nothing is allocated or freed inside its timed window) and are given back afterwards, also when a
launch fails.
"""
from __future__ import annotations

import importlib

import ml_dtypes
import numpy as np

from contract.errors import BuildError
from cpp_impl import act_quant, align, combine, gate, permute, swiglu
from cpp_impl.descriptor import check_array, reject_params, require

BF16 = ml_dtypes.bfloat16
I32 = np.int32


def intermediate_specs(preset) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Name -> (shape, dtype) of every intermediate array of the layer."""
    T, K, E, H, inter, P = preset.T, preset.K, preset.E, preset.H, preset.I, preset.P_max
    return {
        "topk_ids": ((T, K), I32), "topk_w": ((T, K), np.float32),
        "counts": ((E,), I32), "offsets": ((E + 1,), I32), "total_padded": ((1,), I32),
        "sorted_ids": ((P,), I32), "block_expert": ((preset.n_blocks,), I32), "inverse": ((T, K), I32),
        "xp": ((P, H), BF16), "h": ((P, 2 * inter), BF16), "a": ((P, inter), BF16), "y": ((P, H), BF16),
    }


def grouped_gemm_run():
    """cpp_impl.grouped_gemm.run, imported on use (written in its own module).

    Raises:
        BuildError: the module is not there (the C++ grouped GEMM has not landed in this tree).
    """
    try:
        module = importlib.import_module("cpp_impl.grouped_gemm")
    except ModuleNotFoundError as exc:
        if exc.name != "cpp_impl.grouped_gemm":
            raise
        raise BuildError("cpp layer: cpp_impl.grouped_gemm (the C++ grouped GEMM the layer calls twice) is not "
                         "in this tree; expected the module cpp_impl/grouped_gemm.py with run()") from exc
    return module.run


def run(backend, args, preset, **params):
    """Run the layer: args logits, bias, x, W1, W2 in; out, q, scale out. Returns every launch record in order."""
    reject_params("layer", params)
    T, E, H, inter = preset.T, preset.E, preset.H, preset.I
    check_array("layer", args, "logits", (T, E), np.float32)
    check_array("layer", args, "bias", (E,), np.float32)
    check_array("layer", args, "x", (T, H), BF16)
    check_array("layer", args, "W1", (E, 2 * inter, H), BF16)
    check_array("layer", args, "W2", (E, H, inter), BF16)
    check_array("layer", args, "out", (T, H), BF16)
    require("layer", "q" in args and "scale" in args, "outputs", sorted(args), "q and scale (act_quant of x)")
    gemm = grouped_gemm_run()

    tmp = backend.workspace("layer", intermediate_specs(preset))
    try:
        v = {**args, **tmp}
        records = []
        records += act_quant.run(backend, {"a": v["x"], "q": v["q"], "scale": v["scale"]}, preset)
        records += gate.run(backend, {k: v[k] for k in ("logits", "bias", "topk_ids", "topk_w")}, preset)
        records += align.run(backend, {k: v[k] for k in ("topk_ids", "counts", "offsets", "total_padded",
                                                         "sorted_ids", "block_expert", "inverse")}, preset)
        records += permute.run(backend, {k: v[k] for k in ("x", "sorted_ids", "total_padded", "xp")}, preset)
        records += gemm(backend, {"a": v["xp"], "w": v["W1"], "block_expert": v["block_expert"],
                                  "total_padded": v["total_padded"], "c": v["h"]}, preset)
        records += swiglu.run(backend, {k: v[k] for k in ("h", "total_padded", "a")}, preset)
        records += gemm(backend, {"a": v["a"], "w": v["W2"], "block_expert": v["block_expert"],
                                  "total_padded": v["total_padded"], "c": v["y"]}, preset)
        records += combine.run(backend, {k: v[k] for k in ("y", "topk_w", "inverse", "out")}, preset)
        return records
    finally:
        backend.done_with_workspace(tmp)

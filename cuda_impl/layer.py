"""The whole MoE layer on the Numba path (kernels.md "The layer"), intermediates from backend.workspace.

The fp8 variant (W1 / W2 as e4m3 with W1_scale / W2_scale) is contract.layer's composition with this package's
kernels: its GEMMs are cuda_impl.grouped_gemm_fp8 (dequantise into fp32 shared tiles, CUDA-core FMAs).

gate -> align -> permute -> grouped_gemm(W1) -> swiglu -> grouped_gemm(W2) -> combine, plus act_quant(x) (the FP8
dispatch payload). Eight launches. The intermediates come from `backend.workspace` (poisoned; kept across the calls
of a timing loop, so nothing is allocated or freed inside its timed window) and are given back at the end (also on
an error).
"""
from __future__ import annotations

import numpy as np

from contract.layer import check_layer_args, is_fp8, run_layer
from cuda_impl import act_quant, align, combine, gate, grouped_gemm, grouped_gemm_fp8, permute, swiglu
from cuda_impl.common import check_shape


def _bf16():
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16)


def intermediate_specs(preset) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """name -> (shape, dtype) of every intermediate array of the layer."""
    T, H, E, K, inter, P = preset.T, preset.H, preset.E, preset.K, preset.I, preset.P_max
    i32, f32, bf16 = np.dtype(np.int32), np.dtype(np.float32), _bf16()
    return {
        "topk_ids": ((T, K), i32), "topk_w": ((T, K), f32),
        "counts": ((E,), i32), "offsets": ((E + 1,), i32), "total_padded": ((1,), i32),
        "sorted_ids": ((P,), i32), "block_expert": ((preset.n_blocks,), i32), "inverse": ((T, K), i32),
        "xp": ((P, H), bf16), "h": ((P, 2 * inter), bf16), "act": ((P, inter), bf16), "y": ((P, H), bf16),
    }


def run(backend, args, preset, pow2_scale: bool = False, **params):
    """Run the layer; args holds logits, bias, x, W1, W2 (and W1_scale, W2_scale: the fp8 variant) and the outputs
    out (bf16[T,H]) and q, scale (act_quant of x; optional for bf16)."""
    if is_fp8(args):
        return _run_fp8(backend, args, preset, pow2_scale, **params)
    H, E, inter = preset.H, preset.E, preset.I
    check_shape("layer", args, "W1", (E, 2 * inter, H))
    check_shape("layer", args, "W2", (E, H, inter))
    tmp = backend.workspace("layer", intermediate_specs(preset))
    records = []
    try:
        t = {**args, **tmp}
        records += gate.run(backend, {k: t[k] for k in ("logits", "bias", "topk_ids", "topk_w")}, preset)
        records += align.run(backend, {k: t[k] for k in ("topk_ids", "counts", "offsets", "total_padded", "sorted_ids",
                                                         "block_expert", "inverse")}, preset)
        if "q" in args and "scale" in args:
            records += act_quant.run(backend, {"a": t["x"], "q": t["q"], "scale": t["scale"]}, preset,
                                     pow2_scale=pow2_scale)
        records += permute.run(backend, {k: t[k] for k in ("x", "sorted_ids", "total_padded", "xp")}, preset)
        route = {"block_expert": t["block_expert"], "total_padded": t["total_padded"]}
        records += grouped_gemm.run(backend, {"a": t["xp"], "w": t["W1"], "c": t["h"], **route}, preset,
                                    tag="grouped_gemm_up")
        records += swiglu.run(backend, {"h": t["h"], "total_padded": t["total_padded"], "a": t["act"]}, preset)
        records += grouped_gemm.run(backend, {"a": t["act"], "w": t["W2"], "c": t["y"], **route}, preset,
                                    tag="grouped_gemm_down")
        records += combine.run(backend, {"y": t["y"], "topk_w": t["topk_w"], "inverse": t["inverse"],
                                         "out": t["out"]}, preset)
    finally:
        backend.done_with_workspace(tmp)
    return records


def _run_fp8(backend, args, preset, pow2_scale: bool, **params):
    check_layer_args("numba layer", args, preset, params)

    def quant(b, a, p):
        return act_quant.run(b, a, p, pow2_scale=pow2_scale)

    stages = {"act_quant": quant, "gate": gate.run, "align": align.run, "permute": permute.run,
              "permute_scales": permute.run_scales, "grouped_gemm_fp8": grouped_gemm_fp8.run, "swiglu": swiglu.run,
              "combine": combine.run}
    return run_layer(backend, args, preset, stages)

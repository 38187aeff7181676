"""The layer as a composition of the kernels (kernels.md "The layer"), shared by the implementations.

bf16 variant: act_quant(x) (the FP8 dispatch payload, an output) and gate -> align -> permute -> grouped_gemm(W1) ->
swiglu -> grouped_gemm(W2) -> combine, eight launches.
fp8 variant (DeepSeek-V3): gate -> align -> act_quant(x) -> permute of the e4m3 payload and of its 1x128 scales ->
grouped_gemm_fp8(W1, W1_scale) -> swiglu -> act_quant of swiglu's rows -> grouped_gemm_fp8(W2, W2_scale) -> combine,
ten launches. The variant is read off the arguments: W1 as e4m3 with a W1_scale is the fp8 layer.

An implementation passes its own stage run functions; the intermediates come from `backend.workspace` (poisoned, so
a kernel that skips an element shows up downstream; kept across the calls of a timing loop, so nothing is allocated
or freed inside its timed window) and are given back afterwards, also when a launch fails.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

import numpy as np

from contract.generators import BF16, E4M3
from contract.launch import check_array, reject_params, require

I32 = np.dtype(np.int32)
F32 = np.dtype(np.float32)
GROUP = 128  # act_quant's 1x128 groups and the weights' 128x128 blocks
STAGES = ("act_quant", "gate", "align", "permute", "grouped_gemm", "swiglu", "combine")
# permute gathers 16-byte chunks (the e4m3 payload, seen as bf16); permute_scales gathers the scales' fp32 rows
FP8_STAGES = ("act_quant", "gate", "align", "permute", "permute_scales", "grouped_gemm_fp8", "swiglu", "combine")


def is_fp8(args: Mapping) -> bool:
    """True when the arguments are the fp8 layer's (W1_scale given)."""
    return "W1_scale" in args


def _routing_specs(preset) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    T, K, E, P = preset.T, preset.K, preset.E, preset.P_max
    return {"topk_ids": ((T, K), I32), "topk_w": ((T, K), F32),
            "counts": ((E,), I32), "offsets": ((E + 1,), I32), "total_padded": ((1,), I32),
            "sorted_ids": ((P,), I32), "block_expert": ((preset.n_blocks,), I32), "inverse": ((T, K), I32)}


def intermediate_specs(preset, variant: str = "bf16") -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Name -> (shape, dtype) of every intermediate array of the layer's `variant` ("bf16" or "fp8")."""
    H, inter, P = preset.H, preset.I, preset.P_max
    tail = {"h": ((P, 2 * inter), BF16), "a": ((P, inter), BF16), "y": ((P, H), BF16)}
    if variant == "fp8":
        return {**_routing_specs(preset), "xq": ((P, H), E4M3), "xs": ((P, H // GROUP), F32), **tail,
                "aq": ((P, inter), E4M3), "as": ((P, inter // GROUP), F32)}
    return {**_routing_specs(preset), "xp": ((P, H), BF16), **tail}


def check_layer_args(label: str, args: Mapping, preset, params: Mapping) -> None:
    """args logits, bias, x, W1, W2 (and W1_scale, W2_scale: fp8) in; out, q, scale out (InputError naming `label`,
    e.g. "ptx layer")."""
    reject_params(label, params)
    T, E, H, inter = preset.T, preset.E, preset.H, preset.I
    check_array(label, args, "logits", (T, E), F32)
    check_array(label, args, "bias", (E,), F32)
    check_array(label, args, "x", (T, H), BF16)
    if is_fp8(args):
        require(label, H % GROUP == 0 and inter % GROUP == 0, "(H, I)", (H, inter),
                f"multiples of {GROUP} (the fp8 layer's scale groups and blocks)")
        check_array(label, args, "W1", (E, 2 * inter, H), E4M3)
        check_array(label, args, "W1_scale", (E, 2 * inter // GROUP, H // GROUP), F32)
        check_array(label, args, "W2", (E, H, inter), E4M3)
        check_array(label, args, "W2_scale", (E, H // GROUP, inter // GROUP), F32)
    else:
        check_array(label, args, "W1", (E, 2 * inter, H), BF16)
        check_array(label, args, "W2", (E, H, inter), BF16)
    check_array(label, args, "out", (T, H), BF16)
    require(label, "q" in args and "scale" in args, "outputs", sorted(args), "q and scale (act_quant of x)")


def as_dtype(array, dtype):
    """The same device bytes seen with another element type, the last dimension rescaled (e4m3[T, H] as bf16[T, H/2]).
    The caller makes sure the row's bytes divide."""
    dtype = np.dtype(dtype)
    row = array.shape[-1] * np.dtype(array.dtype).itemsize
    return dataclasses.replace(array, shape=(*array.shape[:-1], row // dtype.itemsize), dtype=dtype)


def run_layer(backend, args: Mapping, preset, stages: Mapping[str, Callable]) -> list:
    """Run the layer's launches with `stages[name](backend, args, preset)` for each name of STAGES (bf16) or
    FP8_STAGES (fp8, chosen by the arguments); returns every launch record in order."""
    fp8 = is_fp8(args)
    tmp = backend.workspace("layer_fp8" if fp8 else "layer", intermediate_specs(preset, "fp8" if fp8 else "bf16"))
    try:
        return (_launch_fp8 if fp8 else _launch_bf16)(backend, {**args, **tmp}, preset, stages)
    finally:
        backend.done_with_workspace(tmp)


def _pick(v: Mapping, *names: str) -> dict:
    return {k: v[k] for k in names}


def _routing(backend, v: Mapping, preset, stages: Mapping[str, Callable]) -> list:
    records = stages["gate"](backend, _pick(v, "logits", "bias", "topk_ids", "topk_w"), preset)
    records += stages["align"](backend, _pick(v, "topk_ids", "counts", "offsets", "total_padded", "sorted_ids",
                                              "block_expert", "inverse"), preset)
    return records


def _launch_bf16(backend, v: Mapping, preset, stages: Mapping[str, Callable]) -> list:
    gemm = stages["grouped_gemm"]
    records = stages["act_quant"](backend, {"a": v["x"], "q": v["q"], "scale": v["scale"]}, preset)
    records += _routing(backend, v, preset, stages)
    records += stages["permute"](backend, _pick(v, "x", "sorted_ids", "total_padded", "xp"), preset)
    route = _pick(v, "block_expert", "total_padded")
    records += gemm(backend, {"a": v["xp"], "w": v["W1"], **route, "c": v["h"]}, preset)
    records += stages["swiglu"](backend, _pick(v, "h", "total_padded", "a"), preset)
    records += gemm(backend, {"a": v["a"], "w": v["W2"], **route, "c": v["y"]}, preset)
    records += stages["combine"](backend, _pick(v, "y", "topk_w", "inverse", "out"), preset)
    return records


def _launch_fp8(backend, v: Mapping, preset, stages: Mapping[str, Callable]) -> list:
    gemm, quant = stages["grouped_gemm_fp8"], stages["act_quant"]
    records = _routing(backend, v, preset, stages)
    records += quant(backend, {"a": v["x"], "q": v["q"], "scale": v["scale"]}, preset)
    # NOTE: permute moves bytes: the e4m3 rows travel as bf16 pairs (padding rows become zeros, scales included)
    records += stages["permute"](backend, {"x": as_dtype(v["q"], BF16), "sorted_ids": v["sorted_ids"],
                                           "total_padded": v["total_padded"], "xp": as_dtype(v["xq"], BF16)}, preset)
    records += stages["permute_scales"](backend, {"x": v["scale"], "sorted_ids": v["sorted_ids"],
                                                  "total_padded": v["total_padded"], "xp": v["xs"]}, preset)
    route = _pick(v, "block_expert", "total_padded")
    records += gemm(backend, {"a": v["xq"], "a_scale": v["xs"], "w": v["W1"], "w_scale": v["W1_scale"], **route,
                              "c": v["h"]}, preset)
    records += stages["swiglu"](backend, _pick(v, "h", "total_padded", "a"), preset)
    # NOTE: the launch is sized for P_max rows on the host; total_padded (on the device) bounds the rows quantised,
    # as swiglu left the rows past it unwritten
    records += quant(backend, {"a": v["a"], "q": v["aq"], "scale": v["as"], "total_padded": v["total_padded"]}, preset)
    records += gemm(backend, {"a": v["aq"], "a_scale": v["as"], "w": v["W2"], "w_scale": v["W2_scale"], **route,
                              "c": v["y"]}, preset)
    records += stages["combine"](backend, _pick(v, "y", "topk_w", "inverse", "out"), preset)
    return records

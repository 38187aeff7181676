"""gate: sigmoid scores, group-limited top-k routing (kernels.md section 1) from kernels/gate.ptx."""
from __future__ import annotations

import numpy as np

from ptx_impl.descriptor import ceil_div, check_array, ptx_entry, reject_params, require

KERNEL = ptx_entry(
    file="gate.ptx",
    entry="ptx_gate",
    params=(("logits", ".ptr"), ("bias", ".ptr"), ("topk_ids", ".ptr"), ("topk_w", ".ptr"),
            ("t", ".u32"), ("e", ".u32"), ("k", ".u32"), ("g", ".u32"), ("tg", ".u32"), ("gs", ".u32"),
            ("route_scale", ".f32")),
    consts=(("NJ", 8),),  # register blocks of 32 experts per lane: ceil(E / 32)
)
TOKENS_PER_CTA = 4   # one warp per token, .reqntid 128
MAX_EXPERTS = 256    # eight experts per lane
MAX_LANES = 32       # K and G are held one per lane


def launch_config(t: int):
    """(grid, block, shared_bytes) for t tokens."""
    return (max(1, ceil_div(t, TOKENS_PER_CTA)), 1, 1), (32 * TOKENS_PER_CTA, 1, 1), 0


def check_routing(preset) -> None:
    """The routing shape assumptions of the warp-per-token kernel."""
    E, G, K, TG = preset.E, preset.G, preset.K, preset.TG
    require("gate", 1 <= E <= MAX_EXPERTS, "E", E, f"1..{MAX_EXPERTS} (eight experts per lane)")
    require("gate", 1 <= G <= MAX_LANES and E % G == 0, "G", G, f"1..{MAX_LANES} dividing E={E}")
    require("gate", E // G >= 2, "E/G", E // G, ">= 2 (a group score sums two experts)")
    require("gate", 1 <= TG <= G, "TG", TG, f"1..G={G}")
    require("gate", 1 <= K <= min(MAX_LANES, TG * (E // G)), "K", K,
            f"1..{min(MAX_LANES, TG * (E // G))} (one per lane, at most the kept experts)")


def run(backend, args, preset, **params):
    """Route every token of args["logits"]: args["topk_ids"], args["topk_w"]."""
    reject_params("gate", params)
    check_routing(preset)
    T, E, K = preset.T, preset.E, preset.K
    check_array("gate", args, "logits", (T, E), np.float32)
    check_array("gate", args, "bias", (E,), np.float32)
    check_array("gate", args, "topk_ids", (T, K), np.int32)
    check_array("gate", args, "topk_w", (T, K), np.float32)
    grid, block, smem = launch_config(T)
    values = {"logits": args["logits"], "bias": args["bias"], "topk_ids": args["topk_ids"], "topk_w": args["topk_w"],
              "t": T, "e": E, "k": K, "g": preset.G, "tg": preset.TG, "gs": E // preset.G,
              "route_scale": float(preset.route_scale)}
    return [KERNEL.launch(backend, grid, block, values, smem, constants={"NJ": ceil_div(E, 32)})]

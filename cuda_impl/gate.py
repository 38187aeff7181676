"""gate (kernels.md §1): sigmoid scores, group-limited top-k, in Numba CUDA.

One warp per token. Lane l owns experts e = 32*j + l (j < E/32; lanes >= E idle when E < 32), so the logits row is
read with coalesced 4-byte loads. The group score (sum of the two largest sb in a group of E/G consecutive experts)
is a top-2 butterfly over segments of E/G lanes (`shfl.sync.bfly`); the TG kept groups and then the K experts are
chosen by K warp-wide arg-max butterflies on (value, index) with lower index winning ties, so every lane ends with
the same winner and no shared memory or barrier is needed. Lane k keeps the k-th winner and writes topk_ids[t, k] and
topk_w[t, k]; the normaliser is a warp butterfly sum. All arithmetic is fp32; the sigmoid and the normalising
division use fast math (`fast_exp`: ex2.approx, `fast_div`: div.approx, as the PTX path does): their ~1e-7 relative
error is far inside the weights' 1e-5 tolerance and the generators' 1e-3 selection margins, and every comparison
stays exact.

What Numba cannot express that the PTX path may use: `rcp.approx` / `.ftz` forms, `redux.sync` (integer only
anyway), packing the (value, index) pair into one 64-bit shuffle, `ld.global.nc` for the logits (Numba has no
read-only-path load; its cache hints are ld.global.ca/cg/cs/lu/cv).
"""
from __future__ import annotations

import functools
import math

from numba import cuda, float32, int32, types

from cuda_impl.common import Launch, cdiv, check_shape, launch, require
from cuda_impl.prims import fast_div, fast_exp, shfl_xor_f32, shfl_xor_i32

SIGNATURE = (types.float32[:, ::1], types.float32[::1], types.int32[:, ::1], types.float32[:, ::1], types.int32,
             types.float32)


def _log2(n: int) -> int:
    return int(n).bit_length() - 1


@functools.lru_cache(maxsize=None)
def make_kernel(E: int, K: int, EPG: int, TG: int, WARPS: int):
    """The gate kernel specialised (as compile-time constants) for E experts, top-K, E/G = EPG, TG groups kept."""
    EPL = max(1, E // 32)  # experts per lane
    LOG_EPG = _log2(EPG)
    NEG_INF = float32(-math.inf)
    BIG = 1 << 30

    def gate_kernel(logits, bias, topk_ids, topk_w, T, route_scale):
        lane = cuda.threadIdx.x % 32
        t = cuda.blockIdx.x * WARPS + cuda.threadIdx.x // 32
        tt = min(t, T - 1)  # warps past the last token compute a copy of it (they take part in the shuffles)
        s = cuda.local.array(EPL, float32)
        sb = cuda.local.array(EPL, float32)
        gs = cuda.local.array(EPL, float32)
        for j in range(EPL):
            e = 32 * j + lane
            if e < E:
                sig = fast_div(float32(1.0), float32(1.0) + fast_exp(-logits[tt, e]))
                s[j] = sig
                sb[j] = sig + bias[e]
            else:
                s[j] = float32(0.0)
                sb[j] = NEG_INF
        # group score: top-2 sum inside each segment of EPG lanes
        for j in range(EPL):
            m1 = sb[j]
            m2 = NEG_INF
            for step in range(LOG_EPG):
                o1 = shfl_xor_f32(m1, 1 << step)
                o2 = shfl_xor_f32(m2, 1 << step)
                m2 = max(min(m1, o1), max(m2, o2))
                m1 = max(m1, o1)
            gs[j] = m1 + m2
        # keep the TG best groups (ties: lower group index)
        kept = int32(0)
        for _ in range(TG):
            bv = NEG_INF
            bi = int32(BIG)
            for j in range(EPL):
                if (kept >> j) & 1 == 0 and (gs[j] > bv or bi == BIG):
                    bv = gs[j]
                    bi = int32((32 * j + lane) // EPG)
            for step in range(5):
                ov = shfl_xor_f32(bv, 16 >> step)
                oi = shfl_xor_i32(bi, 16 >> step)
                if ov > bv or (ov == bv and oi < bi):
                    bv = ov
                    bi = oi
            for j in range(EPL):
                if (32 * j + lane) // EPG == bi:
                    kept |= int32(1 << j)
        # the K best experts of the kept groups (ties: lower expert id), in descending sb order
        chosen = int32(0)
        my_id = int32(0)
        my_s = float32(0.0)
        for r in range(K):
            bv = NEG_INF
            bi = int32(BIG)
            bs = float32(0.0)
            for j in range(EPL):
                e = 32 * j + lane
                if e < E and ((kept & ~chosen) >> j) & 1 == 1 and (sb[j] > bv or bi == BIG):
                    bv = sb[j]
                    bi = int32(e)
                    bs = s[j]
            for step in range(5):
                ov = shfl_xor_f32(bv, 16 >> step)
                oi = shfl_xor_i32(bi, 16 >> step)
                os_ = shfl_xor_f32(bs, 16 >> step)
                if ov > bv or (ov == bv and oi < bi):
                    bv = ov
                    bi = oi
                    bs = os_
            if lane == r:
                my_id = bi
                my_s = bs
            for j in range(EPL):
                if 32 * j + lane == bi:
                    chosen |= int32(1 << j)
        total = my_s if lane < K else float32(0.0)
        for step in range(5):
            total += shfl_xor_f32(total, 16 >> step)
        if t < T and lane < K:
            topk_ids[t, lane] = my_id
            topk_w[t, lane] = fast_div(my_s, total) * route_scale

    return gate_kernel


def launch_config(preset) -> Launch:
    """One warp per token; 4 warps per block, 2 when that leaves fewer than ~128 blocks (decode-sized T)."""
    warps = 4 if preset.T >= 512 else 2
    return launch(cdiv(preset.T, warps), 32 * warps, warps=warps)


def validate(preset) -> None:
    E, G, K, TG = preset.E, preset.G, preset.K, preset.TG
    require("gate", E % G == 0, f"E={E} is not a multiple of G={G}")
    epg = E // G
    require("gate", 2 <= epg <= 32 and epg & (epg - 1) == 0, f"E/G={epg}; expected a power of two in [2, 32] "
            f"(a group must fit a warp segment)")
    require("gate", E <= 32 or E % 32 == 0, f"E={E}; expected E <= 32 or a multiple of 32")
    require("gate", E <= 32 * 32, f"E={E}; expected at most 1024 experts (one bit per expert slot of a lane)")
    require("gate", 1 <= K <= 32 and K <= TG * epg, f"K={K}; expected 1 <= K <= min(32, TG*E/G={TG * epg})")
    require("gate", 1 <= TG <= G, f"TG={TG}; expected 1 <= TG <= G={G}")


def sources(preset):
    cfg = launch_config(preset)
    return [(make_kernel(preset.E, preset.K, preset.experts_per_group, preset.TG, cfg.knob("warps")), SIGNATURE)]


def run(backend, args, preset, **params):
    validate(preset)
    T, E, K = preset.T, preset.E, preset.K
    logits = check_shape("gate", args, "logits", (T, E))
    bias = check_shape("gate", args, "bias", (E,))
    ids = check_shape("gate", args, "topk_ids", (T, K))
    w = check_shape("gate", args, "topk_w", (T, K))
    cfg = launch_config(preset)
    (kernel, sig), = sources(preset)
    import numpy as np

    return [backend.launch_numba(kernel, sig, cfg.grid, cfg.block,
                                 [logits, bias, ids, w, np.int32(T), np.float32(preset.route_scale)],
                                 cfg.shared_bytes, tag="gate")]

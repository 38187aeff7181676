"""Seeded input generators (kernels.md: routing skews, near-tie avoidance for gate, never all-zero data)."""
from __future__ import annotations

import ml_dtypes
import numpy as np

from contract.errors import InputError
from contract.presets import Preset, check_skew

BF16 = np.dtype(ml_dtypes.bfloat16)
E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)

# kernels.md: K-th vs (K+1)-th candidate and TG-th vs (TG+1)-th group score at least 1e-3 apart.
SELECTION_GAP = 1e-3
# NOTE: beyond kernels.md, neighbours inside the top-K are kept 1e-5 apart too: ids are written in descending sb order,
# and two fp32 sigmoids (ex2.approx vs expf) may differ by a few ulps, which must not swap the output order.
ORDER_GAP = 1e-5
_MAX_RESAMPLES = 200


def random_bf16(rng: np.random.Generator, shape, std: float = 1.0) -> np.ndarray:
    """Normal bf16 values (chunked, so GPU-sized weights do not need a float64 copy)."""
    out = np.empty(shape, dtype=BF16)
    flat = out.reshape(-1)
    chunk = 1 << 24
    for start in range(0, flat.size, chunk):
        stop = min(start + chunk, flat.size)
        flat[start:stop] = (rng.standard_normal(stop - start, dtype=np.float32) * np.float32(std)).astype(BF16)
    return out


def routing_bias(preset: Preset, skew: str, rng: np.random.Generator) -> np.ndarray:
    """e_score_correction_bias for a skew; 'extreme' boosts K experts two per group in the first K/2 groups."""
    check_skew(skew)
    E = preset.E
    if skew == "balanced":
        return rng.normal(0.0, 0.1, E).astype(np.float32)
    if skew == "imbalanced":
        zipf = 0.5 / np.power(np.arange(1, E + 1, dtype=np.float64), 0.6)
        return (zipf + rng.normal(0.0, 0.02, E)).astype(np.float32)
    bias = rng.normal(0.0, 0.1, E)
    per_group = preset.experts_per_group
    if preset.K % 2 or preset.K // 2 > preset.TG or per_group < 2:
        raise InputError(f"extreme skew needs K even and K/2 <= TG with >= 2 experts per group (preset {preset.name})")
    favoured = [g * per_group + j for g in range(preset.K // 2) for j in (0, 1)]
    bias[favoured] += 2.0
    return bias.astype(np.float32)


def selection_margins(logits: np.ndarray, bias: np.ndarray, preset: Preset) -> np.ndarray:
    """Per token, True where the gate's selection is safely away from ties (see SELECTION_GAP/ORDER_GAP)."""
    s = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
    sb = s + bias.astype(np.float64)
    T = sb.shape[0]
    grouped = np.sort(sb.reshape(T, preset.G, preset.experts_per_group), axis=2)
    group_score = grouped[:, :, -1] + grouped[:, :, -2]
    gs = -np.sort(-group_score, axis=1)
    ok = gs[:, preset.TG - 1] - gs[:, preset.TG] >= SELECTION_GAP if preset.TG < preset.G else np.ones(T, bool)
    kept = np.argsort(-group_score, axis=1, kind="stable")[:, : preset.TG]
    mask = np.zeros((T, preset.G), bool)
    np.put_along_axis(mask, kept, True, axis=1)
    cand = np.where(np.repeat(mask, preset.experts_per_group, axis=1), sb, -np.inf)
    top = -np.sort(-cand, axis=1)[:, : preset.K + 1]
    ok &= top[:, preset.K - 1] - top[:, preset.K] >= SELECTION_GAP
    ok &= np.all(top[:, : preset.K - 1] - top[:, 1 : preset.K] >= ORDER_GAP, axis=1)
    return ok


def gate_inputs(preset: Preset, skew: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Router logits ~ N(0,1) and a skew's bias, resampling tokens whose selection is near a tie."""
    bias = routing_bias(preset, skew, rng)
    logits = rng.standard_normal((preset.T, preset.E), dtype=np.float32)
    for _ in range(_MAX_RESAMPLES):
        bad = ~selection_margins(logits, bias, preset)
        if not bad.any():
            return {"logits": logits, "bias": bias}
        logits[bad] = rng.standard_normal((int(bad.sum()), preset.E), dtype=np.float32)
    raise InputError(f"could not draw tie-free gate inputs for preset {preset.name}, skew {skew}")

"""float64 NumPy references for every kernel of kernels.md.

act_quant is an exact fp32 emulation, as its rounding is defined.
"""
from __future__ import annotations

import numpy as np

from contract.generators import BF16, E4M3
from contract.presets import Preset

E4M3_MAX = 448.0
QUANT_GROUP = 128


def take_rows(x, rows) -> np.ndarray:
    """x[rows] for an ndarray or a lazy tensor (KeyedNormal: only those rows are produced). rows: None = all."""
    if rows is None:
        return np.asarray(x)
    rows = np.asarray(rows, np.int64).reshape(-1)
    if isinstance(x, np.ndarray):
        return x[rows]
    if rows.size == 0:
        return np.empty((0, *x.shape[1:]), x.dtype)
    uniq, back = np.unique(rows, return_inverse=True)
    runs = np.split(uniq, np.flatnonzero(np.diff(uniq) != 1) + 1)  # produce consecutive rows together
    return np.concatenate([x[int(run[0]): int(run[-1]) + 1] for run in runs])[back]


def sigmoid64(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x.astype(np.float64)))


def gate(logits: np.ndarray, bias: np.ndarray, preset: Preset, tokens=None) -> dict[str, np.ndarray]:
    """Sigmoid scores, group-limited top-k (kernels.md §1). Ties: lower group / expert index wins.
    tokens: only these rows (in that order)."""
    logits = take_rows(logits, tokens)
    T = logits.shape[0]
    s = sigmoid64(logits)
    sb = s + bias.astype(np.float64)
    per_group = preset.experts_per_group
    grouped = np.sort(sb.reshape(T, preset.G, per_group), axis=2)
    group_score = grouped[:, :, -1] + grouped[:, :, -2]
    kept = np.argsort(-group_score, axis=1, kind="stable")[:, : preset.TG]
    mask = np.zeros((T, preset.G), bool)
    np.put_along_axis(mask, kept, True, axis=1)
    cand = np.where(np.repeat(mask, per_group, axis=1), sb, -np.inf)
    ids = np.argsort(-cand, axis=1, kind="stable")[:, : preset.K]
    chosen = np.take_along_axis(s, ids, axis=1)
    weights = chosen / chosen.sum(axis=1, keepdims=True) * preset.route_scale
    return {"topk_ids": ids.astype(np.int32), "topk_w": weights}


def align(topk_ids: np.ndarray, preset: Preset) -> dict[str, np.ndarray]:
    """Deterministic moe_align_block_size (kernels.md §2): stable slot order per expert, padding to BM."""
    E, BM, sentinel = preset.E, preset.BM, preset.slots
    flat = topk_ids.reshape(-1).astype(np.int64)
    counts = np.bincount(flat, minlength=E).astype(np.int32)
    padded = -(-counts // BM) * BM
    offsets = np.concatenate([[0], np.cumsum(padded)]).astype(np.int32)
    total = int(offsets[-1])
    sorted_ids = np.full(preset.P_max, sentinel, np.int32)
    inverse = np.empty(flat.size, np.int32)
    order = np.argsort(flat, kind="stable")  # slot ids grouped by expert, ascending within each
    for e in range(E):
        slots = order[np.searchsorted(flat[order], e, "left"): np.searchsorted(flat[order], e, "right")]
        positions = offsets[e] + np.arange(slots.size)
        sorted_ids[positions] = slots
        inverse[slots] = positions
    block_expert = np.full(preset.n_blocks, -1, np.int32)
    for e in range(E):
        block_expert[offsets[e] // BM: offsets[e + 1] // BM] = e
    return {
        "counts": counts,
        "offsets": offsets,
        "total_padded": np.array([total], np.int32),
        "sorted_ids": sorted_ids,
        "block_expert": block_expert,
        "inverse": inverse.reshape(topk_ids.shape),
    }


def permute(x: np.ndarray, sorted_ids: np.ndarray, total_padded: np.ndarray, preset: Preset,
            rows=None) -> np.ndarray:
    """Rows < total_padded of xp (kernels.md §3), or just `rows` of them; the caller compares only those rows (the
    rest stay untouched)."""
    total = int(total_padded[0])
    ids = sorted_ids[:total] if rows is None else sorted_ids[np.asarray(rows, np.int64)]
    out = np.zeros((ids.size, x.shape[1]), dtype=x.dtype)
    real = ids < preset.slots
    out[real] = take_rows(x, ids[real] // preset.K)
    return out


def pow2_ceil_f32(scale: np.ndarray) -> np.ndarray:
    """2^ceil(log2(scale)) exactly, for positive normal fp32 values."""
    mantissa, exponent = np.frexp(scale.astype(np.float32))  # scale = mantissa * 2^exponent, mantissa in [0.5, 1)
    exponent = np.where(mantissa == 0.5, exponent - 1, exponent)
    return np.ldexp(np.float32(1.0), exponent).astype(np.float32)


def act_quant(a: np.ndarray, pow2_scale: bool = False, rows=None) -> dict[str, np.ndarray]:
    """FP8 e4m3 per-token-group quantization (kernels.md §4), bit-exact: fp32 IEEE ops, RNE, saturation to +-448.
    rows: only these rows."""
    a = take_rows(a, rows)
    M, N = a.shape
    groups = a.astype(np.float32).reshape(M, N // QUANT_GROUP, QUANT_GROUP)
    amax = np.abs(groups).max(axis=2)
    scale = (np.maximum(amax, np.float32(1e-4)) / np.float32(E4M3_MAX)).astype(np.float32)
    if pow2_scale:
        scale = pow2_ceil_f32(scale)
    scaled = (groups / scale[:, :, None]).astype(np.float32)
    # NOTE: ml_dtypes turns values above 464 into NaN instead of saturating, so clip first (kernels.md §4).
    q = np.clip(scaled, -E4M3_MAX, E4M3_MAX).astype(E4M3)
    return {"q": q.reshape(M, N), "scale": scale}


def _gemm_blocks(block_expert: np.ndarray, blocks, preset: Preset, width: int, cols, expert_weights, product
                 ) -> dict[int, np.ndarray]:
    """The block loop of both grouped GEMM references: {block b: product(rows of b, expert_weights(e)[keep])}.

    e = block_expert[b]; a -1 block is zeros. expert_weights(e) runs once per run of blocks of one expert (blocks come
    grouped by expert, so each expert's weights are produced once). cols: {block: bool or index array} keeps only
    those of the `width` output columns of a block (keep)."""
    BM = preset.BM
    out = {}
    cached, weights = None, None
    for b in blocks:
        b = int(b)
        e = int(block_expert[b])
        keep = slice(None) if cols is None or b not in cols else cols[b]
        if e < 0:
            out[b] = np.zeros((BM, np.zeros(width)[keep].size), np.float64)
            continue
        if e != cached:
            cached, weights = e, expert_weights(e)
        out[b] = product(slice(b * BM, (b + 1) * BM), weights[keep])
    return out


def _gemm_rows(blocks_of, width: int, block_expert: np.ndarray, total_padded: np.ndarray, preset: Preset
               ) -> np.ndarray:
    """float64 c rows < total_padded from blocks_of(used blocks) -> {block: rows}; rows of -1 blocks are 0."""
    total = int(total_padded[0])
    BM = preset.BM
    out = np.zeros((total, width), np.float64)
    used = [b for b in range(total // BM) if block_expert[b] >= 0]
    for b, block in blocks_of(used).items():
        out[b * BM: (b + 1) * BM] = block
    return out


def grouped_gemm_blocks(a, w, block_expert: np.ndarray, blocks, preset: Preset, cols=None) -> dict[int, np.ndarray]:
    """float64 c of just the row blocks `blocks` (kernels.md §5).

    Block b = a[b*BM:(b+1)*BM] @ w[block_expert[b]].T, zero for -1 blocks. cols: {block: bool or index array}
    restricts a block to those output columns. Lazy a / w produce only the rows and the experts used."""
    def product(rows: slice, weights: np.ndarray) -> np.ndarray:
        return np.asarray(a[rows]).astype(np.float64) @ weights.astype(np.float64).T

    return _gemm_blocks(block_expert, blocks, preset, w.shape[1], cols, lambda e: np.asarray(w[e]), product)


def grouped_gemm(a: np.ndarray, w: np.ndarray, block_expert: np.ndarray, total_padded: np.ndarray,
                 preset: Preset) -> np.ndarray:
    """float64 c rows < total_padded (kernels.md §5).

    Block b multiplies by w[block_expert[b]].T; rows of -1 blocks are 0."""
    return _gemm_rows(lambda used: grouped_gemm_blocks(a, w, block_expert, used, preset), w.shape[1], block_expert,
                      total_padded, preset)


W_BLOCK = 128  # weights are quantised in 128 x 128 blocks (DeepSeek-V3 technical report, section 3.3)


def weight_quant(w: np.ndarray) -> dict[str, np.ndarray]:
    """e4m3 weights with one fp32 scale per 128 x 128 block of each expert: w[E, N, Kd] -> q, scale[E, N/128, Kd/128].

    Same rounding as act_quant (fp32 IEEE ops, RNE, saturation to +-448), over blocks instead of 1x128 groups.
    """
    E, N, Kd = w.shape
    blocks = w.astype(np.float32).reshape(E, N // W_BLOCK, W_BLOCK, Kd // W_BLOCK, W_BLOCK)
    amax = np.abs(blocks).max(axis=(2, 4))
    scale = (np.maximum(amax, np.float32(1e-4)) / np.float32(E4M3_MAX)).astype(np.float32)
    scaled = (blocks / scale[:, :, None, :, None]).astype(np.float32)
    q = np.clip(scaled, -E4M3_MAX, E4M3_MAX).astype(E4M3)
    return {"q": q.reshape(E, N, Kd), "scale": scale}


def dequant_rows(q: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """float64 values of 1x128-quantised rows: q[M, Kd] * scale[M, Kd/128] (exact: e4m3 x fp32 fits in float64)."""
    return q.astype(np.float64) * np.repeat(scale.astype(np.float64), QUANT_GROUP, axis=-1)


def dequant_blocks(q: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """float64 values of 128x128-block-quantised weights: q[E, N, Kd] * scale[E, N/128, Kd/128] (exact)."""
    # NOTE: scaled in place through a blocked view, not by a repeated scale array: at dsv3 an expert's up weights are
    # 235 MB in float64, and the repeats and the product took two more of that in the fp8 layer's stage check
    out = q.astype(np.float64)
    *lead, n, kd = out.shape
    blocked = out.reshape(*lead, n // W_BLOCK, W_BLOCK, kd // W_BLOCK, W_BLOCK)
    blocked *= scale.astype(np.float64)[..., :, None, :, None]
    return out


def grouped_gemm_fp8_blocks(a, a_scale: np.ndarray, w, w_scale: np.ndarray, block_expert: np.ndarray, blocks,
                            preset: Preset, cols=None) -> dict[int, np.ndarray]:
    """float64 c of just the row blocks `blocks` of grouped_gemm_fp8: grouped_gemm_blocks on the dequantised inputs.

    cols: {block: bool or index array} restricts a block to those output columns. Lazy a / w (KeyedE4M3) produce
    only the rows and the experts used."""
    def product(rows: slice, weights: np.ndarray) -> np.ndarray:
        return dequant_rows(np.asarray(a[rows]), a_scale[rows]) @ weights.T

    return _gemm_blocks(block_expert, blocks, preset, w.shape[1], cols,
                        lambda e: dequant_blocks(np.asarray(w[e]), w_scale[e]), product)


def grouped_gemm_fp8(a: np.ndarray, a_scale: np.ndarray, w: np.ndarray, w_scale: np.ndarray, block_expert: np.ndarray,
                     total_padded: np.ndarray, preset: Preset) -> np.ndarray:
    """float64 c rows < total_padded (kernels.md "grouped_gemm_fp8"): grouped_gemm on the dequantised inputs."""
    return _gemm_rows(lambda used: grouped_gemm_fp8_blocks(a, a_scale, w, w_scale, block_expert, used, preset),
                      w.shape[1], block_expert, total_padded, preset)


def swiglu(h: np.ndarray, total_padded: np.ndarray, rows=None) -> np.ndarray:
    """float64 a rows < total_padded (kernels.md §6), or just `rows`: silu(gate half) * up half."""
    total = int(total_padded[0])
    half = h.shape[1] // 2
    hv = (np.asarray(h[:total]) if rows is None else take_rows(h, rows)).astype(np.float64)
    g, u = hv[:, :half], hv[:, half:]
    return g / (1.0 + np.exp(-g)) * u


def combine(y: np.ndarray, topk_w: np.ndarray, inverse: np.ndarray, tokens=None) -> np.ndarray:
    """float64 out[t] = sum_k topk_w[t,k] * y[inverse[t,k]] (kernels.md §7), for all tokens or just `tokens`."""
    if tokens is not None:
        tokens = np.asarray(tokens, np.int64)
        topk_w, inverse = topk_w[tokens], inverse[tokens]
    rows = take_rows(y, inverse.reshape(-1)).reshape(*inverse.shape, y.shape[1]).astype(np.float64)  # [T, K, H]
    return np.einsum("tk,tkh->th", topk_w.astype(np.float64), rows)


def layer(logits, bias, x, W1, W2, preset: Preset) -> dict[str, np.ndarray]:
    """The whole MoE layer in float64, no intermediate rounding (kernels.md "The layer")."""
    g = gate(logits, bias, preset)
    al = align(g["topk_ids"], preset)
    total = al["total_padded"]
    xp = np.zeros((preset.P_max, x.shape[1]), np.float64)
    xp[: int(total[0])] = permute(x, al["sorted_ids"], total, preset).astype(np.float64)
    h = grouped_gemm(xp, W1, al["block_expert"], total, preset)
    act = swiglu(h, total)
    y = np.zeros((preset.P_max, W2.shape[1]), np.float64)
    y[: int(total[0])] = grouped_gemm(act, W2, al["block_expert"], total, preset)
    out = combine(y, g["topk_w"], al["inverse"])
    return {"out": out, **act_quant(x)}


def layer_fp8(logits, bias, x, W1, W1_scale, W2, W2_scale, preset: Preset) -> dict[str, np.ndarray]:
    """The fp8 layer as DeepSeek-V3 runs it (kernels.md "The layer"), in float64 on the dequantised operands,
    re-quantising where the kernels do: act_quant(x) (exact) is dispatched, the up GEMM's output is rounded to bf16
    as the kernels store h, swiglu's output is rounded to bf16 and quantised 1x128 (exact) for the down GEMM; the
    down GEMM's output and combine stay in float64. Padding rows dispatch zeros.

    W1 / W2 may be lazy (KeyedE4M3): only the experts used are produced."""
    g = gate(logits, bias, preset)
    al = align(g["topk_ids"], preset)
    total, sorted_ids, be = al["total_padded"], al["sorted_ids"], al["block_expert"]
    aq = act_quant(x)
    xq = permute(aq["q"], sorted_ids, total, preset)  # e4m3 rows; padding rows zero
    xs = permute(aq["scale"], sorted_ids, total, preset)
    h = grouped_gemm_fp8(xq, xs, W1, W1_scale, be, total, preset)
    act = bf16_round(swiglu(bf16_round(h), total))
    hq = act_quant(act)
    y = np.zeros((preset.P_max, W2.shape[1]), np.float64)
    y[: int(total[0])] = grouped_gemm_fp8(hq["q"], hq["scale"], W2, W2_scale, be, total, preset)
    return {"out": combine(y, g["topk_w"], al["inverse"]), **aq}


def bf16_round(values: np.ndarray) -> np.ndarray:
    """Round float values to bf16 (nearest even) via fp32."""
    return values.astype(np.float32).astype(BF16)

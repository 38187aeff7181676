"""grouped_gemm_fp8 in hand-written PTX, rung 4 (kernels.md "grouped_gemm_fp8"): warp-specialised and persistent.

Rung 4 of issue #16's ladder, DeepGEMM's structure: a producer warpgroup whose one thread issues TMA
(cp.async.bulk.tensor, 128B swizzle) into a 4-stage mbarrier ring, two consumer warpgroups on
`wgmma.mma_async ... e4m3.e4m3` straight from shared memory, `setmaxnreg` moving registers from the producer (40) to
the consumers (232), and a persistent grid: one CTA per SM in use, looping over (token tile, N tile) items.

Tiling, and why ("swap AB"): wgmma's M is 64 rows per warpgroup, but one expert's routing block is BM = 16 rows at
tiny and dsv3-decode, 32 at small and 64 at dsv3-prefill, so a 64-token M tile would straddle experts. The weight rows
are wgmma's M instead (128 per CTA: one 128 x 128 weight-scale block, so one w_scale a stage) and the tokens its N
(m64nTk32, legal for T = 16, 32, 64). T is the largest of those that divides BM (gemm_fp8_ws_template.token_tile):
16 at tiny and decode, 32 at small, 64 at prefill; a tile never straddles two experts, and each weight tile loaded
serves as many tokens as the routing block allows. Promotion to fp32 registers with both scales applied happens every
128 of K (one stage = one scale group), as in rung 1.

The kernels are ptx_impl/kernels/grouped_gemm_fp8_ws_m{16,32,64}n128.ptx, written by gemm_fp8_ws_template.py (its
header has the protocol); this module is their descriptor, the tensor maps and `run`. Tensor maps come from
`backend.tensor_map` (the driver's cuTensorMapEncodeTiled on a GPU, ptxsim's helper with the same parameters in
simulation).

Kernel parameters, in order:
    tm_w (tensor map over w viewed as (E*N, Kd), box 128 x 128), tm_a (over a (P_max, Kd), box T x 128),
    a_scale (u64), w_scale (u64), block_expert (u64), total_padded (u64), c (u64), Kd (u32), N (u32), BM (u32),
    rtiles (u32, P_max / T), item_begin and item_end (u32: the items this launch runs, a contract.device.WorkItems
    the backend flattens: 0 and the item count on a GPU and in a whole simulation, a window of routing blocks in a
    sampled one, harness.sampling)
"""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from contract.device import LiveRows, WorkItems
from contract.errors import InputError
from contract.launch import check_gemm_arrays, gemm_sizes, require
from ptx_impl import gemm_fp8_ws_template as template

KERNEL = "grouped_gemm_fp8"
CLUSTER = False
COLS = 128  # output columns of a CTA tile (wgmma M, two warpgroups); its tokens (wgmma N) come from BM
GROUP = 128  # K per scale (one stage); N per weight block
SMS = 132  # persistent grid where the backend cannot say (sim): the SMs of an H100 / H200 SXM (params: sms=...)
PARAMS: tuple[tuple[str, str], ...] = (
    ("tm_w", "b8[128]"), ("tm_a", "b8[128]"), ("a_scale", "u64"), ("w_scale", "u64"), ("block_expert", "u64"),
    ("total_padded", "u64"), ("c", "u64"), ("Kd", "u32"), ("N", "u32"), ("BM", "u32"), ("rtiles", "u32"),
    ("item_begin", "u32"), ("item_end", "u32"),
)


def path(tokens: int, cluster: bool = CLUSTER) -> Path:
    return template.path(cluster, tokens)


@functools.cache
def ptx_source(tokens: int, cluster: bool = CLUSTER, wait_bound: int = 0) -> str:
    """The PTX module text of the `tokens`-row tile: the checked-in file, or with wait_bound > 0 the variant whose
    mbarrier waits trap after that many failed tries (gemm_fp8_ws_template.render)."""
    if wait_bound:
        return template.render(cluster, tokens, wait_bound)
    return path(tokens, cluster).read_text(encoding="utf-8")


def ptx_modules() -> dict[str, str]:
    """{module name: PTX text} of every token tile, for static analysis."""
    return {path(t).stem: ptx_source(t) for t in template.TOKEN_TILES}


def check_args(args: dict, preset, rung: int) -> tuple[int, int, int, int, int]:
    """(P_max, Kd, N, BM, E) after checking every argument's presence, dtype and shape and the tileable sizes."""
    name = f"ptx {KERNEL} rung {rung}"
    P_max, Kd, N, E, BM = gemm_sizes(name, args, preset)
    require(name, BM > 0 and template.token_tile(BM) > 0, "BM", BM,
            f"a positive multiple of {template.TOKEN_TILES[0]} (the smallest token tile)")
    require(name, P_max % BM == 0, "a.shape[0] (P_max)", P_max, f"a multiple of BM={BM}")
    require(name, Kd > 0 and Kd % GROUP == 0, "Kd", Kd, f"a positive multiple of {GROUP} (the scale groups)")
    require(name, N > 0 and N % GROUP == 0, "N", N, f"a positive multiple of {GROUP} (the weight blocks)")
    require(name, E * N < 2**31 and P_max < 2**31, "E*N", E * N, "< 2^31 (signed 32-bit TMA row coordinates)")
    # NOTE: the weights are read by TMA (row coordinates, checked above) and the scales by mul.wide offsets: only c's
    # 32-bit element index bounds the size (DeepSeek-V3's 7.5 GB of up-projection weights are fine)
    require(name, P_max * N < 2**32, "P_max*N", P_max * N, "< 2^32 (32-bit output indices)")
    check_gemm_arrays(name, args, P_max, Kd, N, E, BM, fp8=True)
    return P_max, Kd, N, BM, E


def take_params(params: dict, rung: int) -> int | None:
    """The SMs to use (`sms`; None: default_sms decides) after checking `variant`; InputError on anything else."""
    name = f"ptx {KERNEL} rung {rung}"
    variant = params.pop("variant", "up")
    require(name, variant in ("up", "down"), "variant", variant, "'up' or 'down'")
    sms = params.pop("sms", None)
    valid = isinstance(sms, (int, np.integer)) and not isinstance(sms, bool) and 1 <= sms <= 1024
    require(name, sms is None or valid, "sms", sms, "an int in 1..1024 (the persistent grid: SMs in use)")
    if params:
        raise InputError(f"{name}: unknown parameter(s) {sorted(params)}; expected only 'variant' and 'sms'")
    return None if sms is None else int(sms)


def default_sms(backend, tokens: int, cluster: bool) -> int:
    """The persistent grid when `sms` is not given: what the device holds at once (GpuBackend.persistent_ctas: its
    SM count, or cuOccupancyMaxActiveClusters x 2 for rung 5's clusters), else SMS (the sim's modelled H200)."""
    ask = getattr(backend, "persistent_ctas", None)
    if ask is None:
        return SMS
    return int(ask(ptx_source(tokens, cluster), template.entry(cluster, tokens), (template.THREADS, 1, 1),
                   template.shared_bytes(tokens), 2 if cluster else 1))


def work_items(sizes, cluster: bool) -> WorkItems:
    """The launch's items (item_begin, item_end) and how they map to routing blocks: rung 4's item is (token tile,
    N tile), BM / T tiles a block; rung 5's is a pair of token tiles, so when BM / T is odd a group of whole items is
    two blocks (DeepSeek-V3's BM = T: a pair item covers blocks 2p and 2p + 1)."""
    import math

    P_max, _, N, BM, _ = sizes
    tiles, per_block, nt = P_max // template.token_tile(BM), BM // template.token_tile(BM), N // COLS
    if not cluster:
        return WorkItems(tiles * nt, P_max // BM, 1, per_block * nt, P_max // BM * nt)
    group = 2 // math.gcd(2, per_block)  # blocks whose tiles are whole pairs
    return WorkItems(-(-tiles // 2) * nt, P_max // BM, group, group * per_block // 2 * nt, P_max // BM * nt)


def launch(backend, args: dict, sizes, grid: int, cluster: bool, weight_rows: int) -> list:
    """Make the two tensor maps and launch rung 4's or 5's kernel for this BM on `grid` CTAs."""
    P_max, Kd, N, BM, E = sizes
    tokens = template.token_tile(BM)
    tm_w = backend.tensor_map(args["w"], box=(weight_rows, GROUP), swizzle=128, shape=(E * N, Kd))
    tm_a = backend.tensor_map(args["a"], box=(tokens, GROUP), swizzle=128)
    values = [tm_w, tm_a] + [args[n] for n, _ in PARAMS[2:7]] + [
        np.uint32(Kd), np.uint32(N), np.uint32(BM), np.uint32(P_max // tokens), work_items(sizes, cluster)]
    values[5] = LiveRows.of(args["total_padded"], BM, args["block_expert"])  # sampled by experts on sim
    ptx = ptx_source(tokens, cluster, getattr(backend, "wait_bound", 0))
    record = backend.launch_ptx(ptx, template.entry(cluster, tokens), (grid, 1, 1),
                                (template.THREADS, 1, 1), values, shared_bytes=template.shared_bytes(tokens),
                                tag=f"{KERNEL}[{N}x{Kd}]")
    return [record]


def run(backend, args: dict, preset, **params) -> list:
    """Launch rung 4: c[rows of b] = bf16(dequant(a)[rows] @ dequant(w[e]).T) for blocks with e >= 0.

    Args:
        backend: a harness Backend (sim or gpu) with tensor_map.
        args: DeviceArrays a, a_scale, w, w_scale, block_expert, total_padded and c (left untouched past
            total_padded and on blocks of expert -1).
        preset: supplies BM; every other size comes from the array shapes.
        params: `variant` ('up' or 'down', checked) and `sms` (the persistent grid, default default_sms).
    Returns:
        [LaunchRecord] of the single launch, on min(sms, items) CTAs.
    Raises:
        InputError: on a missing argument, a wrong dtype or shape, an unknown parameter, or sizes it cannot tile.
    """
    sms = take_params(params, 4)
    sizes = check_args(args, preset, 4)
    P_max, _, N, BM, _ = sizes
    sms = sms if sms is not None else default_sms(backend, template.token_tile(BM), CLUSTER)
    items = (P_max // template.token_tile(BM)) * (N // COLS)
    return launch(backend, args, sizes, min(sms, items), CLUSTER, COLS)

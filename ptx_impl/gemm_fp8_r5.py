"""grouped_gemm_fp8 in hand-written PTX, rung 5 (kernels.md "grouped_gemm_fp8"): rung 4 + 2-CTA clusters with the
weight tile multicast by TMA.

Rung 5 of issue #16's ladder, as DeepGEMM does for its grouped contiguous layout: CTAs run in clusters of two
(`.reqnctapercluster 2, 1, 1` in the PTX, which cuLaunchKernel honours, so both backends launch it as any other
kernel). A cluster's item is a pair of adjacent token tiles (rank 0 the even one) at one 128-column N tile. When both
tiles are live and belong to the same expert they need the same 128 x 128 weight tile: each CTA's producer loads half
of it (64 rows) with `cp.async.bulk.tensor ... .multicast::cluster` into both CTAs, halving the weight traffic from L2;
otherwise (different experts, or one tile dead) each CTA loads what it needs itself. Everything else (warp
specialisation, setmaxnreg, the persistent schedule, the "swap AB" m64n16k32 tiling, promotion to fp32 registers with
the scales every 128 of K) is rung 4's; so are the argument checks and tensor maps (gemm_fp8_r4), except that the
weight map's box is 64 rows.

The kernels are ptx_impl/kernels/grouped_gemm_fp8_mc_m{16,32,64}n128.ptx, one per token tile as in rung 4
(gemm_fp8_ws_template.py; their header has the cluster protocol: consumers release a stage on both CTAs' empty
barriers, so no multicast lands in a stage the peer still reads). Parameters as rung 4's.
"""
from __future__ import annotations

from pathlib import Path

from ptx_impl import gemm_fp8_r4 as r4
from ptx_impl import gemm_fp8_ws_template as template

KERNEL = r4.KERNEL
CLUSTER = True
CLUSTER_CTAS = 2
PARAMS = r4.PARAMS


def path(tokens: int) -> Path:
    return r4.path(tokens, CLUSTER)


def ptx_source(tokens: int) -> str:
    """The PTX module text of the `tokens`-row tile."""
    return r4.ptx_source(tokens, CLUSTER)


def ptx_modules() -> dict[str, str]:
    """{module name: PTX text} of every token tile, for static analysis."""
    return {path(t).stem: ptx_source(t) for t in template.TOKEN_TILES}


def run(backend, args: dict, preset, **params) -> list:
    """Launch rung 5: c[rows of b] = bf16(dequant(a)[rows] @ dequant(w[e]).T) for blocks with e >= 0.

    Args:
        backend: a harness Backend (sim or gpu) with tensor_map.
        args: as rung 4 (gemm_fp8_r4.run).
        preset: supplies BM; every other size comes from the array shapes.
        params: `variant` ('up' or 'down', checked) and `sms` (the persistent grid, default r4.default_sms; rounded down
            to whole clusters, at least one).
    Returns:
        [LaunchRecord] of the single launch, on 2 * min(sms // 2, pair items) CTAs.
    Raises:
        InputError: on a missing argument, a wrong dtype or shape, an unknown parameter, or sizes it cannot tile.
    """
    sms = r4.take_params(params, 5)
    sizes = r4.check_args(args, preset, 5)
    P_max, _, N, BM, _ = sizes
    sms = sms if sms is not None else r4.default_sms(backend, template.token_tile(BM), CLUSTER)
    pairs = -(-(P_max // template.token_tile(BM)) // CLUSTER_CTAS) * (N // r4.COLS)
    clusters = max(1, min(sms // CLUSTER_CTAS, pairs))
    return r4.launch(backend, args, sizes, CLUSTER_CTAS * clusters, CLUSTER, r4.COLS // CLUSTER_CTAS)

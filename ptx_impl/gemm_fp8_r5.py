"""grouped_gemm_fp8 in hand-written PTX, rung 5 (kernels.md "grouped_gemm_fp8"): rung 4 + 2-CTA clusters with the
weight tile multicast by TMA.

Rung 5 of issue #16's ladder, as DeepGEMM does for its grouped contiguous layout: CTAs run in clusters of two
(`.reqnctapercluster 2, 1, 1` in the PTX, which cuLaunchKernel honours, so both backends launch it as any other
kernel). A cluster's item is a pair of adjacent 16-token tiles (rank 0 the even one) at one 128-column N tile. When both
tiles are live and belong to the same expert they need the same 128 x 128 weight tile: each CTA's producer loads half
of it (64 rows) with `cp.async.bulk.tensor ... .multicast::cluster` into both CTAs, halving the weight traffic from L2;
otherwise (different experts, or one tile dead) each CTA loads what it needs itself. Everything else (warp
specialisation, setmaxnreg, the persistent schedule, the "swap AB" m64n16k32 tiling, promotion to fp32 registers with
the scales every 128 of K) is rung 4's; so are the argument checks and tensor maps (gemm_fp8_r4), except that the
weight map's box is 64 rows.

The kernel is ptx_impl/kernels/grouped_gemm_fp8_mc_m16n128.ptx (gemm_fp8_ws_template.py; its header has the cluster
protocol: consumers release a stage on both CTAs' empty barriers, so no multicast lands in a stage the peer still
reads). Parameters as rung 4's.
"""
from __future__ import annotations

import functools

from ptx_impl import gemm_fp8_r4 as r4

KERNEL = r4.KERNEL
CLUSTER = True
CLUSTER_CTAS = 2
ENTRY = r4.entry(CLUSTER)
PATH = r4.path(CLUSTER)
PARAMS = r4.PARAMS


@functools.cache
def ptx_source() -> str:
    """The PTX module text."""
    return r4.ptx_source(CLUSTER)


def ptx_modules() -> dict[str, str]:
    """{module name: PTX text}, for static analysis."""
    return {PATH.stem: ptx_source()}


def run(backend, args: dict, preset, **params) -> list:
    """Launch rung 5: c[rows of b] = bf16(dequant(a)[rows] @ dequant(w[e]).T) for blocks with e >= 0.

    Args:
        backend: a harness Backend (sim or gpu) with tensor_map.
        args: as rung 4 (gemm_fp8_r4.run).
        preset: supplies BM; every other size comes from the array shapes.
        params: `variant` ('up' or 'down', checked) and `sms` (the persistent grid, default r4.SMS; rounded down
            to whole clusters, at least one).
    Returns:
        [LaunchRecord] of the single launch, on 2 * min(sms // 2, pair items) CTAs.
    Raises:
        InputError: on a missing argument, a wrong dtype or shape, an unknown parameter, or sizes it cannot tile.
    """
    sms = r4.take_params(params, 5)
    sizes = r4.check_args(args, preset, 5)
    P_max, _, N, _, _ = sizes
    pairs = -(-(P_max // r4.TOKENS) // CLUSTER_CTAS) * (N // r4.COLS)
    clusters = max(1, min(sms // CLUSTER_CTAS, pairs))
    return r4.launch(backend, args, sizes, CLUSTER_CTAS * clusters, CLUSTER, r4.COLS // CLUSTER_CTAS)

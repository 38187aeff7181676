"""grouped_gemm_fp8 in hand-written PTX, rung 2 (kernels.md "grouped_gemm_fp8"): wgmma.mma_async fed by cp.async.

Rung 2 of issue #16's ladder: Hopper's warpgroup MMA (`wgmma.mma_async.sync.aligned.m64nNk32.f32.e4m3.e4m3`, both
operands read from 128B-swizzled shared memory through matrix descriptors) replaces rung 1's per-warp mma.sync;
slabs still arrive by cp.async (a 4-stage ring), and the partial sums are still promoted to fp32 registers with the
scales applied every 128 of K.

Tiling (why): wgmma's M is 64 rows per warpgroup, but a routing block holds one expert for only BM = 16 (tiny,
dsv3-decode), 32 (small) or 64 (dsv3-prefill) token rows, so a 64-token M would straddle experts. The kernel swaps A
and B, as production FP8 kernels do for small M: each CTA computes C^T = W_e x A^T with 128 weight rows as M (two
warpgroups of 64; 128 is one w_scale block, so one weight scale per CTA and slab) and TT token rows as wgmma's N,
where TT is the largest of 64, 32, 16 that divides BM (n16 / n32 / n64 are legal wgmma shapes): every preset's BM
works, and prefill gets the widest tile. A wgmma shape is fixed in the instruction, so the module has one entry per
TT (ptx_impl/kernels/grouped_gemm_fp8_wgmma.ptx, written by gemm_fp8_wgmma_template.py; its header explains the
algorithm). e4m3 wgmma needs both operands K-major in shared memory: a [P_max, Kd] and w [E, N, Kd] are both K-major.

Kernel parameters, in order:
    a (u64, e4m3[P_max, Kd]), a_scale (u64, f32[P_max, Kd/128]), w (u64, e4m3[E, N, Kd]),
    w_scale (u64, f32[E, N/128, Kd/128]), block_expert (u64, i32[P_max/BM]), total_padded (u64, i32[1]),
    c (u64, bf16[P_max, N]), Kd (u32), N (u32), BM (u32)
"""
from __future__ import annotations

import numpy as np

from contract.device import LiveRows
from contract.errors import InputError
from contract.launch import require
from ptx_impl import gemm_fp8_r1 as r1
from ptx_impl import gemm_fp8_wgmma_template as tpl
from ptx_impl.descriptor import checked_in

KERNEL = "grouped_gemm_fp8"
RUNG = 2
PATH = tpl.FILES[RUNG]
ENTRIES = {tt: tpl.entry_name(RUNG, tt) for tt in tpl.TOKEN_TILES}
NTHREADS = tpl.NTHREADS
PARAMS = r1.PARAMS  # rung 1's parameters, in order


ptx_source, ptx_modules = checked_in(PATH)  # ptx_impl.descriptor


def token_tile(bm: int) -> int:
    """The token rows per CTA (wgmma N) for routing blocks of `bm` rows: the largest of 64, 32, 16 dividing it."""
    for tt in sorted(tpl.TOKEN_TILES, reverse=True):
        if bm % tt == 0:
            return tt
    raise InputError(f"ptx {KERNEL} rung {RUNG}: BM={bm}; expected a positive multiple of 16 (a wgmma N that "
                     f"divides the routing block)")


def check_params(params: dict, rung: int) -> None:
    """Accept `variant` ('up' or 'down', checked) and nothing else; raise InputError naming the rest."""
    variant = params.pop("variant", "up")
    require(f"ptx {KERNEL}", variant in ("up", "down"), "variant", variant, "'up' or 'down'")
    if params:
        raise InputError(f"ptx {KERNEL} rung {rung}: unknown parameter(s) {sorted(params)}; expected only 'variant'")


def check_args(args: dict, preset) -> tuple[int, int, int, int, int]:
    """Check the arguments (as rung 1 does) and the wgmma tiling; return P_max, Kd, N, BM and the token tile."""
    P_max, Kd, N, BM = r1._check_args(args, preset)
    return P_max, Kd, N, BM, token_tile(BM)


def run(backend, args: dict, preset, **params) -> list:
    """Launch the FP8 grouped GEMM: c[rows of b] = bf16(dequant(a)[rows] @ dequant(w[e]).T) for blocks with e >= 0.

    Args:
        backend: a harness Backend (sim or gpu).
        args: DeviceArrays a, a_scale, w, w_scale, block_expert, total_padded and c (left untouched past
            total_padded and on blocks of expert -1).
        preset: supplies BM; every other size comes from the array shapes.
        params: `variant` ('up' or 'down') is accepted and checked; nothing else.
    Returns:
        [LaunchRecord] of the single launch.
    Raises:
        InputError: on a missing argument, a wrong dtype or shape, an unknown parameter, or sizes it cannot tile.
    """
    check_params(params, RUNG)
    P_max, Kd, N, BM, tt = check_args(args, preset)
    values = [args[n] for n, _ in PARAMS[:7]] + [np.uint32(Kd), np.uint32(N), np.uint32(BM)]
    values[5] = LiveRows.of(args["total_padded"], tt, args["block_expert"])  # sampled by experts on sim
    record = backend.launch_ptx(ptx_source(), ENTRIES[tt], (N // tpl.WROWS, P_max // tt, 1), (NTHREADS, 1, 1),
                                values, shared_bytes=tpl.shared_bytes(RUNG, tt), tag=f"{KERNEL}[{N}x{Kd}]")
    return [record]

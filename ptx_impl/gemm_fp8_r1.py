"""grouped_gemm_fp8 in hand-written PTX, rung 1 (kernels.md "grouped_gemm_fp8"): e4m3 tensor cores via mma.sync.

Rung 1 of issue #16's ladder: `mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32` (sm_89+, so also sm_90a) fed by
a 2-stage cp.async ring, promoting to fp32 registers with the scales applied every 128 of K (one slab = one scale
group). This is what CUDA C++ cannot say without inline PTX: its wmma has no e4m3 fragments, so cpp_impl dequantises
to bf16 in shared memory; Numba has no tensor cores at all. Later rungs (wgmma, TMA, mbarrier, clusters) build on it.

The kernel is ptx_impl/kernels/grouped_gemm_fp8_m16n64.ptx (written out by gemm_fp8_template.py; its header explains
the algorithm): a 16 x 64 CTA tile, which divides every preset's BM and the 128-column weight blocks. This module is
its descriptor and `run`.

Kernel parameters, in order:
    a (u64, e4m3[P_max, Kd]), a_scale (u64, f32[P_max, Kd/128]), w (u64, e4m3[E, N, Kd]),
    w_scale (u64, f32[E, N/128, Kd/128]), block_expert (u64, i32[P_max/BM]), total_padded (u64, i32[1]),
    c (u64, bf16[P_max, N]), Kd (u32), N (u32), BM (u32)
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from contract.device import LiveRows
from contract.errors import InputError
from contract.launch import check_gemm_arrays, gemm_sizes, require
from ptx_impl.descriptor import checked_in

KERNEL = "grouped_gemm_fp8"
PATH = Path(__file__).parent / "kernels" / "grouped_gemm_fp8_m16n64.ptx"
ENTRY = "grouped_gemm_fp8_m16n64"
TM, TN = 16, 64  # CTA tile
GROUP = 128  # K per scale (one slab); N per weight block
NTHREADS = 128
MAX_GRID_Y = 65535
PARAMS: tuple[tuple[str, str], ...] = (
    ("a", "u64"), ("a_scale", "u64"), ("w", "u64"), ("w_scale", "u64"), ("block_expert", "u64"),
    ("total_padded", "u64"), ("c", "u64"), ("Kd", "u32"), ("N", "u32"), ("BM", "u32"),
)


ptx_source, ptx_modules = checked_in(PATH)  # ptx_impl.descriptor


def _check_args(args: dict, preset) -> tuple[int, int, int, int]:
    name = f"ptx {KERNEL}"
    P_max, Kd, N, E, BM = gemm_sizes(name, args, preset)
    require(name, BM > 0 and BM % TM == 0, "BM", BM, f"a positive multiple of {TM} (the CTA's rows)")
    require(name, P_max % BM == 0, "a.shape[0] (P_max)", P_max, f"a multiple of BM={BM}")
    require(name, Kd > 0 and Kd % GROUP == 0, "Kd", Kd, f"a positive multiple of {GROUP} (the scale groups)")
    require(name, N > 0 and N % GROUP == 0, "N", N, f"a positive multiple of {GROUP} (the weight blocks)")
    require(name, P_max // TM <= MAX_GRID_Y, "P_max", P_max, f"at most {MAX_GRID_Y} row tiles of {TM}")
    # NOTE: row indices (e*N + n, token rows) are 32-bit; byte offsets are row x Kd by mul.wide.u32 (64-bit), so the
    # 7.5 GB of e4m3 weights of DeepSeek-V3's up projection are addressable (rungs 2-3 share this check)
    require(name, E * N < 2**32 and P_max * max(Kd, N) < 2**32, "E*N", E * N,
            "< 2^32 (32-bit row indices) with P_max*max(Kd, N) < 2^32")
    check_gemm_arrays(name, args, P_max, Kd, N, E, BM, fp8=True)
    return P_max, Kd, N, BM


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
    variant = params.pop("variant", "up")
    require(f"ptx {KERNEL}", variant in ("up", "down"), "variant", variant, "'up' or 'down'")
    if params:
        raise InputError(f"ptx {KERNEL}: unknown parameter(s) {sorted(params)}; expected only 'variant'")
    P_max, Kd, N, BM = _check_args(args, preset)
    values = [args[n] for n, _ in PARAMS[:7]] + [np.uint32(Kd), np.uint32(N), np.uint32(BM)]
    values[5] = LiveRows.of(args["total_padded"], TM, args["block_expert"])  # sampled by experts on sim
    record = backend.launch_ptx(ptx_source(), ENTRY, (N // TN, P_max // TM, 1), (NTHREADS, 1, 1), values,
                                shared_bytes=0, tag=f"{KERNEL}[{N}x{Kd}]")
    return [record]

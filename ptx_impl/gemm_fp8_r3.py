"""grouped_gemm_fp8 in hand-written PTX, rung 3 (kernels.md "grouped_gemm_fp8"): wgmma fed by TMA through mbarriers.

Rung 3 of issue #16's ladder: rung 2's tiling, shared-memory image, wgmma k-steps, promotion and epilogue, with the
slabs brought in by the Tensor Memory Accelerator (`cp.async.bulk.tensor.2d` into 128B-swizzled shared memory, the
exact image wgmma's descriptors read) and the pipeline synchronised by mbarriers instead of cp.async groups and
bar.sync: a full barrier per stage (one arrival with the stage's bytes as tx-count) and an empty one (one arrival per
math warp once its own wgmma.wait_group retired the slab's reads). One thread issues all copies, lane 0 of a ninth
warp that does no math, so the 256 math threads no longer spend issue slots and registers on addresses and never
stall on an empty barrier (a producer inside a math warp would hold its warpgroup's next wgmma until the refill);
register reallocation (setmaxnreg) and a persistent grid are rung 4's.

Tiling: as rung 2 (swap AB; see ptx_impl.gemm_fp8_r2): 128 weight rows as wgmma M over two warpgroups, TT = 16 /
32 / 64 token rows as wgmma N, the largest dividing BM, one entry each in ptx_impl/kernels/grouped_gemm_fp8_tma.ptx
(written by gemm_fp8_wgmma_template.py; its header explains the algorithm).

Tensor maps: on a GPU from the driver (cuTensorMapEncodeTiled via cuda-python), in ptxsim from its host helper with
the same parameters; both through `backend.tensor_map` (NumPy order): w viewed as (E*N, Kd) with box (128, 128), a
as (P_max, Kd) with box (TT, 128), both with the 128-byte swizzle.

Kernel parameters, in order:
    tmap_a (CUtensorMap by value, .param .align 64 .b8[128]), a_scale (u64, f32[P_max, Kd/128]), tmap_w (CUtensorMap),
    w_scale (u64, f32[E, N/128, Kd/128]), block_expert (u64, i32[P_max/BM]), total_padded (u64, i32[1]),
    c (u64, bf16[P_max, N]), Kd (u32), N (u32), BM (u32)
"""
from __future__ import annotations

import numpy as np

from contract.device import LiveRows
from ptx_impl import gemm_fp8_r2 as r2
from ptx_impl import gemm_fp8_wgmma_template as tpl
from ptx_impl.descriptor import checked_in

KERNEL = "grouped_gemm_fp8"
RUNG = 3
PATH = tpl.FILES[RUNG]
ENTRIES = {tt: tpl.entry_name(RUNG, tt) for tt in tpl.TOKEN_TILES}
NTHREADS = tpl.threads(RUNG)  # 2 math warpgroups + the producer warp
SWIZZLE = 128
PARAMS: tuple[tuple[str, str], ...] = (
    ("tmap_a", "tmap"), ("a_scale", "u64"), ("tmap_w", "tmap"), ("w_scale", "u64"), ("block_expert", "u64"),
    ("total_padded", "u64"), ("c", "u64"), ("Kd", "u32"), ("N", "u32"), ("BM", "u32"),
)


ptx_source, ptx_modules = checked_in(PATH)  # ptx_impl.descriptor


def tensor_maps(backend, args: dict, tt: int) -> tuple:
    """(map of a, map of w): the boxes one stage copies (TT token rows, 128 weight rows; 128 bytes of K each)."""
    P_max, Kd = (int(x) for x in args["a"].shape)
    E, N = int(args["w"].shape[0]), int(args["w"].shape[1])
    tmap_a = backend.tensor_map(args["a"], box=(tt, tpl.SLAB), swizzle=SWIZZLE)
    tmap_w = backend.tensor_map(args["w"], box=(tpl.WROWS, tpl.SLAB), swizzle=SWIZZLE, shape=(E * N, Kd))
    return tmap_a, tmap_w


def run(backend, args: dict, preset, **params) -> list:
    """Launch the FP8 grouped GEMM: c[rows of b] = bf16(dequant(a)[rows] @ dequant(w[e]).T) for blocks with e >= 0.

    Args:
        backend: a harness Backend (sim or gpu) with `tensor_map`.
        args: DeviceArrays a, a_scale, w, w_scale, block_expert, total_padded and c (left untouched past
            total_padded and on blocks of expert -1).
        preset: supplies BM; every other size comes from the array shapes.
        params: `variant` ('up' or 'down') is accepted and checked; nothing else.
    Returns:
        [LaunchRecord] of the single launch.
    Raises:
        InputError: on a missing argument, a wrong dtype or shape, an unknown parameter, or sizes it cannot tile.
    """
    r2.check_params(params, RUNG)
    P_max, Kd, N, BM, tt = r2.check_args(args, preset)
    tmap_a, tmap_w = tensor_maps(backend, args, tt)
    values = [tmap_a, args["a_scale"], tmap_w] + [args[n] for n, _ in PARAMS[3:7]] + \
        [np.uint32(Kd), np.uint32(N), np.uint32(BM)]
    values[5] = LiveRows.of(args["total_padded"], tt, args["block_expert"])  # sampled by experts on sim
    record = backend.launch_ptx(ptx_source(), ENTRIES[tt], (N // tpl.WROWS, P_max // tt, 1), (NTHREADS, 1, 1),
                                values, shared_bytes=tpl.shared_bytes(RUNG, tt), tag=f"{KERNEL}[{N}x{Kd}]")
    return [record]

"""grouped_gemm_fp8 in CUDA C++ (kernels.md "grouped_gemm_fp8"): dequantise e4m3 tiles to bf16, multiply with wmma.

CUDA C++ has no FP8 tensor-core API without inline PTX (nvcuda::wmma offers no e4m3 fragments; mma.sync e4m3 and
wgmma exist only as PTX), so this path stages the raw e4m3 tiles with cp.async, dequantises them to bf16 in shared
memory (exactly: every e4m3 value is a bf16) and multiplies with bf16 wmma, promoting the fp32 accumulators into
per-thread registers with the scales applied every 128 of K. It is the honest best CUDA C++ can do, and the reason
the PTX path exists (mma.sync on e4m3 operands, twice the bf16 rate and half the shared-memory traffic).

The kernel is cpp_impl/kernels/grouped_gemm_fp8.cu (its header explains the algorithm), compiled by NVRTC per CTA
tile. Kernel parameters, in order:
    a (e4m3[P_max, Kd]), a_scale (f32[P_max, Kd/128]), w (e4m3[E, N, Kd]), w_scale (f32[E, N/128, Kd/128]),
    block_expert (i32[P_max/BM]), total_padded (i32[1]), c (bf16[P_max, N]), Kd (u32), N (u32), BM (u32)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contract.device import LiveRows
from contract.errors import InputError
from contract.launch import check_gemm_arrays, gemm_sizes
from cpp_impl.descriptor import cuda_entry, require

KERNEL = "grouped_gemm_fp8"
NTHREADS = 128
BK = 32  # K depth of one staged slab (divides the 128-deep scale group)
GROUP = 128  # K per scale; N per weight block
MAX_GRID_Y = 65535
DESCRIPTOR = cuda_entry(
    file="grouped_gemm_fp8.cu",
    entry=KERNEL,
    params=(("a", ".ptr"), ("a_scale", ".ptr"), ("w", ".ptr"), ("w_scale", ".ptr"), ("block_expert", ".ptr"),
            ("total_padded", ".ptr"), ("c", ".ptr"), ("Kd", ".u32"), ("N", ".u32"), ("BM", ".u32")),
    defines=(("TM", 16), ("TN", 64), ("BK", BK), ("STAGES", 4)),
)


@dataclass(frozen=True)
class Fp8Tile:
    """A tm x tn CTA tile (tn = 64 divides the 128-column weight blocks) with a ring of `stages` raw e4m3 slabs."""

    tm: int
    tn: int = 64
    stages: int = 4

    @property
    def defines(self) -> dict[str, int]:
        return {"TM": self.tm, "TN": self.tn, "BK": BK, "STAGES": self.stages}

    @property
    def tag(self) -> str:
        return f"m{self.tm}n{self.tn}"


TILES: dict[int, Fp8Tile] = {tm: Fp8Tile(tm) for tm in (16, 32, 64)}


def tile_for(BM: int) -> Fp8Tile:
    """Rows: the largest of 64, 32, 16 dividing BM, so no CTA straddles two routing blocks (two experts)."""
    if not isinstance(BM, (int, np.integer)) or BM <= 0 or BM % 16:
        raise InputError(f"cpp {KERNEL}: BM={BM!r} is not supported; expected a positive multiple of 16 "
                         f"(wmma fragments are 16 rows)")
    return TILES[next(tm for tm in (64, 32, 16) if BM % tm == 0)]


def _check_args(args: dict, preset) -> tuple[int, int, int, int, Fp8Tile]:
    P_max, Kd, N, E, BM = gemm_sizes(f"cpp {KERNEL}", args, preset)
    tile = tile_for(BM)
    require(KERNEL, P_max % BM == 0, "a.shape[0] (P_max)", P_max, f"a multiple of BM={BM}")
    require(KERNEL, Kd > 0 and Kd % GROUP == 0, "Kd", Kd, f"a positive multiple of {GROUP} (the scale groups)")
    require(KERNEL, N > 0 and N % GROUP == 0, "N", N, f"a positive multiple of {GROUP} (the weight blocks)")
    require(KERNEL, P_max // tile.tm <= MAX_GRID_Y, "P_max", P_max, f"at most {MAX_GRID_Y} row tiles of {tile.tm}")
    check_gemm_arrays(f"cpp {KERNEL}", args, P_max, Kd, N, E, BM, fp8=True)
    return P_max, Kd, N, BM, tile


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
    require(KERNEL, variant in ("up", "down"), "variant", variant, "'up' or 'down'")
    if params:
        raise InputError(f"cpp {KERNEL}: unknown parameter(s) {sorted(params)}; expected only 'variant'")
    P_max, Kd, N, BM, tile = _check_args(args, preset)
    values = {name: args[name] for name in ("a", "a_scale", "w", "w_scale", "block_expert", "total_padded", "c")}
    values.update(Kd=Kd, N=N, BM=BM)
    # total_padded marked: the sim backend samples the launch by experts
    values["total_padded"] = LiveRows.of(args["total_padded"], tile.tm, args["block_expert"])
    grid = (N // tile.tn, P_max // tile.tm, 1)
    return [DESCRIPTOR.launch(backend, grid, (NTHREADS, 1, 1), values, tag=f"{KERNEL}[{N}x{Kd}]",
                              constants=tile.defines)]


def ptx_modules() -> dict[str, str]:
    """{module name: PTX text} of every tile build, for static analysis."""
    return {f"{KERNEL}_{t.tag}": DESCRIPTOR.source(**t.defines) for t in TILES.values()}

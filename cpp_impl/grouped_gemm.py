"""grouped_gemm in CUDA C++ (kernels.md section 5): nvcuda::wmma bf16 tensor-core GEMM over aligned row blocks.

The kernel is cpp_impl/kernels/grouped_gemm.cu (its header explains the algorithm), compiled by NVRTC once per CTA
tile with the tile constants as -D defines. This module is its descriptor: which tile a shape needs (the same tile
rule as the PTX path, so the comparison is like for like), grid / block as functions of the shapes, the kernel's
assumptions (checked with InputError), and `run`.

Kernel parameters, in order:
    a (bf16[P_max, Kd]), w (bf16[E, N, Kd]), block_expert (i32[P_max/BM]), total_padded (i32[1]), c (bf16[P_max, N]),
    Kd (u32), N (u32), BM (u32)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contract.device import LiveRows
from contract.errors import InputError
from contract.launch import check_gemm_arrays, gemm_sizes
from cpp_impl.descriptor import cuda_entry, require

KERNEL = "grouped_gemm"
ENTRY = "grouped_gemm_bf16"
NTHREADS = 128  # 4 warps per CTA
BK = 32  # K depth of one staged slab
SKEW = 8  # bf16 of padding per shared slab row (the .cu's LDS = BK + SKEW)
MAX_GRID_Y = 65535  # CUDA's limit on gridDim.y (row tiles run along y)
STATIC_SHARED_LIMIT = 48 * 1024  # static __shared__ per block
DESCRIPTOR = cuda_entry(
    file="grouped_gemm.cu",
    entry=ENTRY,
    params=(("a", ".ptr"), ("w", ".ptr"), ("block_expert", ".ptr"), ("total_padded", ".ptr"), ("c", ".ptr"),
            ("Kd", ".u32"), ("N", ".u32"), ("BM", ".u32")),
    defines=(("TM", 16), ("TN", 64), ("BK", BK), ("STAGES", 4)),
)


@dataclass(frozen=True)
class CppTile:
    """Compile-time constants of one build of grouped_gemm.cu: a tm x tn CTA tile, a ring of `stages` slabs."""

    tm: int
    tn: int
    stages: int

    @property
    def defines(self) -> dict[str, int]:
        return {"TM": self.tm, "TN": self.tn, "BK": BK, "STAGES": self.stages}

    @property
    def tag(self) -> str:
        return f"m{self.tm}n{self.tn}"

    @property
    def smem_bytes(self) -> int:
        """Static shared memory: the slab ring, which the epilogue reuses as the fp32 staging tile."""
        ring = self.stages * (self.tm + self.tn) * (BK + SKEW) * 2
        return max(ring, self.tm * (self.tn + 8) * 4)


# NOTE: the same tiles as ptx_impl (rows: the largest of 64/32/16 dividing BM; 128 columns for 64-row tiles when N
# allows). The ring is 4 slabs deep except for 64x128, where 4 skewed slabs (60 KiB) would exceed 48 KiB of static
# shared memory; 3 slabs (45 KiB) still keep two K-slabs in flight behind the one being multiplied.
TILES: dict[str, CppTile] = {t.tag: t for t in (CppTile(16, 64, 4), CppTile(32, 64, 4), CppTile(64, 64, 4),
                                                 CppTile(64, 128, 3))}


@dataclass(frozen=True)
class GemmShapes:
    """The sizes a launch depends on: rows P_max, depth Kd, output width N, experts E, routing block BM."""

    P_max: int
    Kd: int
    N: int
    E: int
    BM: int


@dataclass(frozen=True)
class LaunchConfig:
    """What a launch needs besides the parameters."""

    tile: CppTile
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int  # dynamic shared memory: 0, the kernel declares its ring statically


def tile_for(BM: int, N: int = 64) -> CppTile:
    """The CTA tile for routing block BM and output width N (the PTX path's rule)."""
    if not isinstance(BM, (int, np.integer)) or BM <= 0 or BM % 16:
        raise InputError(f"cpp {KERNEL}: BM={BM!r} is not supported; expected a positive multiple of 16 "
                         f"(wmma fragments are 16 rows)")
    tm = next(tm for tm in (64, 32, 16) if BM % tm == 0)
    tn = 128 if tm == 64 and N % 128 == 0 else 64
    return TILES[f"m{tm}n{tn}"]


def shapes_of(preset, variant: str = "up") -> GemmShapes:
    """The up (Kd=H, N=2I) or down (Kd=I, N=H) GEMM of a preset (name or Preset)."""
    from contract.presets import get_preset

    p = get_preset(preset)
    require(KERNEL, variant in ("up", "down"), "variant", variant, "'up' or 'down'")
    Kd, N = (p.H, 2 * p.I) if variant == "up" else (p.I, p.H)
    return GemmShapes(p.P_max, Kd, N, p.E, p.BM)


def validate(s: GemmShapes) -> CppTile:
    """Check the kernel's assumptions on the sizes; returns the tile that will run.

    Raises:
        InputError: naming the kernel, the offending value and what was expected.
    """
    tile = tile_for(s.BM, s.N)
    name = f"cpp {KERNEL}"
    if s.P_max <= 0 or s.P_max % s.BM:
        raise InputError(f"{name}: P_max={s.P_max} rows is not a positive multiple of BM={s.BM}")
    if s.Kd <= 0 or s.Kd % BK:
        raise InputError(f"{name}: Kd={s.Kd} is not a positive multiple of {BK} (the K-slab depth)")
    if s.N <= 0 or s.N % tile.tn:
        raise InputError(f"{name}: N={s.N} is not a positive multiple of {tile.tn} (the N-tile width)")
    if s.E <= 0:
        raise InputError(f"{name}: E={s.E} experts; expected at least 1")
    if s.E * s.N >= 2**32 or s.P_max >= 2**31:
        raise InputError(f"{name}: E*N={s.E * s.N} or P_max={s.P_max} too large for 32-bit row indices")
    if s.P_max // tile.tm > MAX_GRID_Y:
        raise InputError(f"{name}: P_max={s.P_max} needs {s.P_max // tile.tm} row tiles of {tile.tm}; "
                         f"the grid's y dimension allows at most {MAX_GRID_Y}")
    return tile


def launch_config(preset_or_shapes, variant: str = "up") -> LaunchConfig:
    """Grid (N-tiles, row-tiles, 1), 128 threads, no dynamic shared memory, for a preset (+variant) or shapes."""
    s = preset_or_shapes if isinstance(preset_or_shapes, GemmShapes) else shapes_of(preset_or_shapes, variant)
    t = validate(s)
    return LaunchConfig(t, (s.N // t.tn, s.P_max // t.tm, 1), (NTHREADS, 1, 1), 0)


def ptx_source(preset_or_shapes, variant: str = "up") -> str:
    """The PTX NVRTC makes for the tile a preset (name or Preset, plus variant) or GemmShapes launches."""
    return DESCRIPTOR.source(**launch_config(preset_or_shapes, variant).tile.defines)


def ptx_modules() -> dict[str, str]:
    """{module name: PTX text} of every tile build (e.g. "grouped_gemm_m64n128"), for static analysis."""
    return {f"{KERNEL}_{t.tag}": DESCRIPTOR.source(**t.defines) for t in TILES.values()}


def _check_args(args: dict, preset) -> GemmShapes:
    P_max, Kd, N, E, BM = gemm_sizes(f"cpp {KERNEL}", args, preset)
    require(KERNEL, BM > 0 and P_max % BM == 0, "a.shape[0] (P_max)", P_max, f"a positive multiple of BM={BM}")
    check_gemm_arrays(f"cpp {KERNEL}", args, P_max, Kd, N, E, BM, fp8=False)
    return GemmShapes(P_max, Kd, N, E, BM)


def run(backend, args: dict, preset, **params) -> list:
    """Launch the grouped GEMM: c[rows of block b] = bf16(a[rows] @ w[block_expert[b]].T) for blocks with e >= 0.

    Args:
        backend: a harness Backend (sim or gpu).
        args: DeviceArrays a, w, block_expert, total_padded (inputs) and c (output, left untouched past total_padded
            and on blocks of expert -1).
        preset: supplies BM (the routing block); every other size comes from the array shapes.
        params: `variant` ('up' or 'down') is accepted and checked (the shapes already say which); nothing else.
    Returns:
        [LaunchRecord] of the single launch.
    Raises:
        InputError: on a missing argument, a wrong dtype or shape, an unknown parameter, or sizes the kernel cannot
            tile.
    """
    variant = params.pop("variant", "up")
    require(KERNEL, variant in ("up", "down"), "variant", variant, "'up' or 'down'")
    if params:
        raise InputError(f"cpp {KERNEL}: unknown parameter(s) {sorted(params)}; expected only 'variant'")
    s = _check_args(args, preset)
    cfg = launch_config(s)
    values = {name: args[name] for name in ("a", "w", "block_expert", "total_padded", "c")}
    values.update(Kd=s.Kd, N=s.N, BM=s.BM)
    # total_padded marked: the sim backend samples the launch by experts
    values["total_padded"] = LiveRows.of(args["total_padded"], s.P_max // cfg.grid[1],
                                           args["block_expert"])
    record = DESCRIPTOR.launch(backend, cfg.grid, cfg.block, values, shared_bytes=cfg.shared_bytes,
                               tag=f"{KERNEL}[{s.N}x{s.Kd}]", constants=cfg.tile.defines)
    return [record]

"""grouped_gemm in hand-written PTX (kernels.md section 5): tensor-core expert GEMM over aligned row blocks.

The kernels live in ptx_impl/kernels/grouped_gemm_m<rows>n<cols>.ptx (generated from ptx_impl/gemm_template.py, see
its header for the algorithm); this module is their descriptor: which file and entry a shape needs, the parameter order,
grid / block / shared memory as functions of the shapes, the assumptions (checked with InputError), and `run`.

Kernel parameters, in order:
    a (u64 pointer, bf16[P_max, Kd]), w (u64, bf16[E, N, Kd]), block_expert (u64, i32[P_max/BM]),
    total_padded (u64, i32[1]), c (u64, bf16[P_max, N]), Kd (u32), N (u32), BM (u32)
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from contract.device import LiveRows
from contract.errors import InputError
from ptx_impl.gemm_template import KERNEL_DIR, NTHREADS, TILES, GemmTile

KERNEL = "grouped_gemm"
MAX_GRID_Y = 65535  # CUDA's limit on gridDim.y (row tiles run along y)
PARAMS: tuple[tuple[str, str], ...] = (
    ("a", "u64"), ("w", "u64"), ("block_expert", "u64"), ("total_padded", "u64"), ("c", "u64"),
    ("Kd", "u32"), ("N", "u32"), ("BM", "u32"),
)


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
    """Everything backend.launch_ptx needs besides the parameters."""

    tile: GemmTile
    path: str
    entry: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int  # dynamic shared memory: 0, the kernel declares its ring statically
    static_shared_bytes: int


def tile_for(BM: int, N: int = 64) -> GemmTile:
    """The CTA tile for routing block BM and output width N.

    Rows: the largest of 64, 32, 16 dividing BM, so no CTA straddles two routing blocks (and two experts).
    Columns: 128 for 64-row tiles when N is a multiple of 128, else 64.
    """
    if not isinstance(BM, (int, np.integer)) or BM <= 0 or BM % 16:
        raise InputError(f"{KERNEL}: BM={BM!r} is not supported; expected a positive multiple of 16 "
                         f"(tensor-core fragments are 16 rows)")
    tm = next(tm for tm in (64, 32, 16) if BM % tm == 0)
    tn = 128 if tm == 64 and N % 128 == 0 else 64
    return TILES[f"{tm}n{tn}"]


def _shapes_of(preset_or_shapes, variant: str = "up") -> GemmShapes:
    if isinstance(preset_or_shapes, GemmShapes):
        return preset_or_shapes
    p = preset_or_shapes
    if isinstance(p, str):
        from contract.presets import get_preset

        p = get_preset(p)
    if variant not in ("up", "down"):
        raise InputError(f"{KERNEL}: variant {variant!r}; expected 'up' or 'down'")
    Kd, N = (p.H, 2 * p.I) if variant == "up" else (p.I, p.H)
    return GemmShapes(p.P_max, Kd, N, p.E, p.BM)


def validate(s: GemmShapes) -> GemmTile:
    """Check the kernel's assumptions on the sizes; returns the tile that will run.

    Raises:
        InputError: naming the kernel, the offending value and what was expected.
    """
    tile = tile_for(s.BM, s.N)
    if s.P_max <= 0 or s.P_max % s.BM:
        raise InputError(f"{KERNEL}: P_max={s.P_max} rows is not a positive multiple of BM={s.BM}")
    if s.Kd <= 0 or s.Kd % tile.bk:
        raise InputError(f"{KERNEL}: Kd={s.Kd} is not a positive multiple of {tile.bk} (the K-tile depth)")
    if s.N <= 0 or s.N % tile.tn:
        raise InputError(f"{KERNEL}: N={s.N} is not a positive multiple of {tile.tn} (the N-tile width)")
    if s.E <= 0:
        raise InputError(f"{KERNEL}: E={s.E} experts; expected at least 1")
    if s.E * s.N >= 2**32 or s.P_max >= 2**32 // 2:
        raise InputError(f"{KERNEL}: E*N={s.E * s.N} or P_max={s.P_max} too large for 32-bit row indices")
    if s.P_max // tile.tm > MAX_GRID_Y:
        raise InputError(f"{KERNEL}: P_max={s.P_max} needs {s.P_max // tile.tm} row tiles of {tile.tm}; "
                         f"the grid's y dimension allows at most {MAX_GRID_Y}")
    return tile


def launch_config(preset_or_shapes, variant: str = "up") -> LaunchConfig:
    """Grid (N-tiles, row-tiles, 1), 128 threads, shared memory, file and entry for a preset (+variant) or shapes."""
    s = _shapes_of(preset_or_shapes, variant)
    t = validate(s)
    return LaunchConfig(t, str(KERNEL_DIR / t.filename), t.entry, (s.N // t.tn, s.P_max // t.tm, 1),
                        (NTHREADS, 1, 1), 0, t.smem_bytes)


@functools.lru_cache(maxsize=None)
def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def ptx_source(preset_or_shapes, variant: str = "up") -> str:
    """The PTX module text a preset (name or Preset, plus variant) or GemmShapes launches."""
    return _read(launch_config(preset_or_shapes, variant).path)


def ptx_modules() -> dict[str, str]:
    """{module name: PTX text} of every grouped_gemm tile module (e.g. "grouped_gemm_m64n128"), for static analysis."""
    return {t.filename.removesuffix(".ptx"): _read(str(KERNEL_DIR / t.filename)) for t in TILES.values()}


_ARG_DTYPES = {"a": "bf16", "w": "bf16", "block_expert": "int32", "total_padded": "int32", "c": "bf16"}


def _check_args(args: dict, preset) -> GemmShapes:
    from contract.generators import BF16

    missing = [name for name in _ARG_DTYPES if name not in args]
    if missing:
        raise InputError(f"{KERNEL}: missing argument(s) {', '.join(missing)}; expected {', '.join(_ARG_DTYPES)}")
    want = {"bf16": BF16, "int32": np.dtype(np.int32)}
    for name, kind in _ARG_DTYPES.items():
        if np.dtype(args[name].dtype) != want[kind]:
            raise InputError(f"{KERNEL}: argument {name} has dtype {np.dtype(args[name].dtype)}; expected {kind}")
    a, w, be, tp, c = (args[n].shape for n in ("a", "w", "block_expert", "total_padded", "c"))
    if len(a) != 2 or len(w) != 3 or len(c) != 2:
        raise InputError(f"{KERNEL}: shapes a{a}, w{w}, c{c}; expected a[P_max, Kd], w[E, N, Kd], c[P_max, N]")
    P_max, Kd = a
    E, N, Kd_w = w
    BM = int(preset.BM)
    if Kd_w != Kd:
        raise InputError(f"{KERNEL}: w has depth {Kd_w} but a has Kd={Kd}; expected w[E, N, {Kd}]")
    if tuple(c) != (P_max, N):
        raise InputError(f"{KERNEL}: c has shape {tuple(c)}; expected ({P_max}, {N})")
    if tuple(tp) != (1,):
        raise InputError(f"{KERNEL}: total_padded has shape {tuple(tp)}; expected (1,)")
    if BM <= 0 or P_max % BM or tuple(be) != (P_max // BM,):
        raise InputError(f"{KERNEL}: block_expert has shape {tuple(be)}; expected ({P_max} // BM={BM},)")
    return GemmShapes(int(P_max), int(Kd), int(N), int(E), BM)


def run(backend, args: dict, preset, **params) -> list:
    """Launch the grouped GEMM: c[rows of block b] = bf16(a[rows] @ w[block_expert[b]].T) for blocks with e >= 0.

    Args:
        backend: a harness Backend (sim or gpu).
        args: DeviceArrays a, w, block_expert, total_padded (inputs) and c (output, left untouched past total_padded).
        preset: supplies BM (the routing block); all other sizes come from the array shapes.
        params: accepted and ignored (e.g. variant: the shapes already say up or down).
    Returns:
        [LaunchRecord] of the single launch.
    Raises:
        InputError: on a missing argument, a wrong dtype or shape, or sizes the kernel cannot tile.
    """
    s = _check_args(args, preset)
    cfg = launch_config(s)
    live = LiveRows.of(args["total_padded"], s.P_max // cfg.grid[1], args["block_expert"])  # sampled by experts on sim
    launch_params = [args["a"], args["w"], args["block_expert"], live, args["c"],
                     np.uint32(s.Kd), np.uint32(s.N), np.uint32(s.BM)]
    record = backend.launch_ptx(_read(cfg.path), cfg.entry, cfg.grid, cfg.block, launch_params,
                                shared_bytes=cfg.shared_bytes, tag=f"{KERNEL}[{s.N}x{s.Kd}]")
    return [record]

"""grouped_gemm_fp8 through Triton (kernels.md "grouped_gemm_fp8"): the block-FP8 (w8a8, 1x128 / 128x128 scales)
expert GEMM written as vLLM's fused-MoE Triton kernel does it (kernels/grouped_gemm_fp8_src.py), compiled by Triton
for sm_90a without a GPU (triton_impl.generate) into the committed kernels/grouped_gemm_fp8_m<TM>n128.ptx, launched
like every PTX path (ptxsim on sim, the driver's JIT on a GPU).

Kernel parameters, in order (Triton's ABI: the signature's non-constexpr arguments, then two scratch pointers Triton
3.x appends, global and profile scratch, both unused by this kernel (scratch sizes 0) and passed as null):
    a (u64, e4m3[P_max, Kd]), a_scale (u64, f32[P_max, Kd/128]), w (u64, e4m3[E, N, Kd]),
    w_scale (u64, f32[E, N/128, Kd/128]), block_expert (u64, i32[P_max/BM]), total_padded (u64, i32[1]),
    c (u64, bf16[P_max, N]), N (i32), Kd (i32), BM (i32), global_scratch (u64, 0), profile_scratch (u64, 0)
Grid (N/128, P_max/TM, 1), 128 threads (4 warps), dynamic shared memory as Triton's metadata says.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass

import numpy as np

from contract.device import LiveRows
from contract.errors import InputError

KERNEL = "grouped_gemm_fp8"
MAX_GRID_Y = 65535


@dataclass(frozen=True)
class TritonTile:
    tm: int  # rows per program (CTA)
    bn: int
    bk: int
    entry: str
    threads: int
    shared_bytes: int
    filename: str


@functools.lru_cache(maxsize=1)
def _meta() -> dict:
    from triton_impl.generate import META

    return json.loads(META.read_text())


def tiles() -> dict[int, TritonTile]:
    """{rows per program: tile} of the committed PTX (kernels/grouped_gemm_fp8.json)."""
    from triton_impl.generate import ptx_path

    meta = _meta()
    return {int(tm): TritonTile(int(tm), meta["BN"], meta["BK"], t["entry"], t["threads"], t["shared_bytes"],
                                ptx_path(int(tm)).name) for tm, t in meta["tiles"].items()}


def tile_for(BM: int) -> TritonTile:  # noqa: N803 - the contract's name
    """The largest compiled row tile dividing the routing block BM (a program never straddles two experts)."""
    for tm in sorted(tiles(), reverse=True):
        if isinstance(BM, (int, np.integer)) and BM > 0 and BM % tm == 0:
            return tiles()[tm]
    raise InputError(f"triton {KERNEL}: BM={BM!r}; expected a positive multiple of one of the compiled row tiles "
                     f"{sorted(tiles())}")


@functools.lru_cache(maxsize=None)
def _read(filename: str) -> str:
    from triton_impl.generate import KERNEL_DIR

    return (KERNEL_DIR / filename).read_text()


def ptx_modules() -> dict[str, str]:
    """{module name: PTX text} of every compiled tile, for static analysis."""
    return {t.filename.removesuffix(".ptx"): _read(t.filename) for t in tiles().values()}


def _check_args(args: dict, preset) -> tuple[int, int, int, int, int]:
    need = ("a", "a_scale", "w", "w_scale", "block_expert", "total_padded", "c")
    missing = [n for n in need if n not in args]
    if missing:
        raise InputError(f"triton {KERNEL}: missing arguments {missing}; expected {list(need)}")
    P_max, Kd = (int(d) for d in args["a"].shape)  # noqa: N806
    E, N, Kw = (int(d) for d in args["w"].shape)  # noqa: N806
    BM = int(preset.BM)  # noqa: N806
    tile = tile_for(BM)
    if Kw != Kd or Kd % tile.bk or Kd <= 0:
        raise InputError(f"triton {KERNEL}: a is [{P_max}, {Kd}] and w [{E}, {N}, {Kw}]; expected the same depth, "
                         f"a positive multiple of {tile.bk} (one scale group per k step)")
    if N <= 0 or N % tile.bn:
        raise InputError(f"triton {KERNEL}: N={N} is not a positive multiple of {tile.bn} (the N tile)")
    if P_max % BM or P_max // tile.tm > MAX_GRID_Y:
        raise InputError(f"triton {KERNEL}: P_max={P_max} rows; expected a multiple of BM={BM} with at most "
                         f"{MAX_GRID_Y} row tiles of {tile.tm}")
    if tuple(args["block_expert"].shape) != (P_max // BM,):
        raise InputError(f"triton {KERNEL}: block_expert has shape {tuple(args['block_expert'].shape)}; expected "
                         f"({P_max // BM},)")
    return P_max, Kd, N, E, BM


def run(backend, args: dict, preset, **params) -> list:
    """Launch the Triton-compiled kernel: c[rows of block b] = bf16(sum over k groups of (a @ w[e].T)_k x a_scale x
    w_scale) for the blocks with an expert; rows past total_padded and blocks of expert -1 untouched.

    params (`variant`) are accepted and ignored: the array shapes say up or down."""
    P_max, Kd, N, E, BM = _check_args(args, preset)  # noqa: N806
    tile = tile_for(BM)
    grid = (N // tile.bn, P_max // tile.tm, 1)
    live = LiveRows.of(args["total_padded"], tile.tm, args["block_expert"])  # sampled by experts on sim
    launch_params = [args["a"], args["a_scale"], args["w"], args["w_scale"], args["block_expert"], live, args["c"],
                     np.int32(N), np.int32(Kd), np.int32(BM), np.uint64(0), np.uint64(0)]
    record = backend.launch_ptx(_read(tile.filename), tile.entry, grid, (tile.threads, 1, 1), launch_params,
                                shared_bytes=tile.shared_bytes, tag=f"{KERNEL}[{N}x{Kd}]")
    return [record]

"""grouped_gemm_fp8 (kernels.md "grouped_gemm_fp8") in Numba CUDA: c = bf16_rn(dequant(a) @ dequant(w[e]).T) per
row block.

Numba has no FP8 type and no tensor-core API (no mma/wmma/wgmma), so this path dequantises and uses CUDA cores: it is
the honest best Numba can do, and the reason the PTX path exists (mma.sync e4m3 on the tensor cores; see
ptx_impl/grouped_gemm_fp8.py). a is e4m3 [P_max, Kd] with fp32 scales per 1x128 group of a row, w is e4m3 [E, N, Kd]
with fp32 scales per 128x128 block.

A shared-memory tiled SIMT GEMM, one block per (BN-column tile, BM-row block of the aligned layout); blocks whose
block_expert is -1 return at once (rows >= total_padded are never written). Per BK-wide K chunk (BK divides 128, so a
chunk lies inside one scale group, and BN divides 128, so a column tile lies inside one weight block row):

- each thread loads 4-byte words (4 e4m3) of the a and w[e] tiles, decodes each byte to fp32 exactly (bit
  manipulation, `prims.e4m3_to_f32`), multiplies by its scale (one fp32 rounding: e4m3 x fp32 needs 28 bits) and
  stores it K-major in shared memory;
- each thread accumulates a TM x TN micro-tile (rows ty + i*NTY, columns tx + j*NTX) with fp32 FMAs.

The scales are applied at dequantisation and the accumulation is fp32 from the start, so there is no low-precision
accumulator to promote every 128 of K (the promotion the tensor-core paths need). The epilogue rounds to bf16 (RNE)
and stores one bf16 per thread and column (consecutive threads write consecutive columns).
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np
from numba import cuda, float32, types, uint32

from contract.device import LiveRows
from cuda_impl.common import Launch, cdiv, check_shape, launch, require, view
from cuda_impl.prims import SHARED_ALIGN, bf16_rn, e4m3_to_f32

KERNEL = "grouped_gemm_fp8"
SCALE_GROUP = 128  # K elements per scale (1x128 for a, 128x128 for w); also the w block's N extent
SIGNATURE = (types.uint32[:, ::1], types.float32[:, ::1], types.uint32[:, :, ::1], types.float32[:, :, ::1],
             types.int32[::1], types.int32[::1], types.uint16[:, ::1])
PAD = 1  # float of padding per shared row: the transposing stores hit distinct banks


@dataclasses.dataclass(frozen=True)
class Tile:
    BN: int  # output columns per block (divides 128)
    BK: int  # K chunk in shared memory (a multiple of 4 dividing 128)
    TM: int  # micro-tile rows per thread
    TN: int  # micro-tile columns per thread


# Keyed by the preset's BM: tiny 16 (64 threads), small 32 (128), dsv3-decode 64 (256), dsv3-prefill 128 (256).
TILES = {16: Tile(64, 32, 4, 4), 32: Tile(64, 32, 4, 4), 64: Tile(64, 32, 4, 4), 128: Tile(128, 32, 8, 8)}


@functools.cache
def make_kernel(BM: int, BN: int, BK: int, TM: int, TN: int):
    """The FP8 grouped GEMM kernel for one tile shape (all compile-time constants)."""
    NTX = BN // TN
    NTY = BM // TM
    NT = NTX * NTY
    QPR = BK // 4  # 4-byte words per tile row per K chunk
    LA = BM * QPR // NT  # words of the a tile each thread loads
    LB = BN * QPR // NT
    SA = BM + PAD
    SB = BN + PAD
    CHUNKS_PER_GROUP = SCALE_GROUP // BK
    A_ELEMS = BK * SA
    B_ELEMS = BK * SB

    def grouped_gemm_fp8_kernel(a, a_scale, w, w_scale, block_expert, total_padded, c):
        b = cuda.blockIdx.y
        e = block_expert[b]
        row0 = b * BM
        if e < 0 or row0 >= total_padded[0]:
            return
        col0 = cuda.blockIdx.x * BN
        wrow = col0 // SCALE_GROUP  # the weight block row of this column tile
        tid = cuda.threadIdx.x
        tx = tid % NTX
        ty = tid // NTX
        As = cuda.shared.array(A_ELEMS, float32, alignment=SHARED_ALIGN)
        Bs = cuda.shared.array(B_ELEMS, float32, alignment=SHARED_ALIGN)
        acc = cuda.local.array((TM, TN), float32)
        for i in range(TM):
            for j in range(TN):
                acc[i, j] = float32(0.0)
        for kc in range(a.shape[1] // QPR):
            g = kc // CHUNKS_PER_GROUP
            ws = w_scale[e, wrow, g]
            for li in range(LA):
                idx = tid + li * NT
                r = idx // QPR
                q = idx % QPR
                word = a[row0 + r, kc * QPR + q]
                s = a_scale[row0 + r, g]
                for j in range(4):
                    As[(q * 4 + j) * SA + r] = e4m3_to_f32(word >> uint32(8 * j)) * s
            for li in range(LB):
                idx = tid + li * NT
                n = idx // QPR
                q = idx % QPR
                word = w[e, col0 + n, kc * QPR + q]
                for j in range(4):
                    Bs[(q * 4 + j) * SB + n] = e4m3_to_f32(word >> uint32(8 * j)) * ws
            cuda.syncthreads()
            for k in range(BK):
                av = cuda.local.array(TM, float32)
                bv = cuda.local.array(TN, float32)
                for i in range(TM):
                    av[i] = As[k * SA + ty + i * NTY]
                for j in range(TN):
                    bv[j] = Bs[k * SB + tx + j * NTX]
                for i in range(TM):
                    for j in range(TN):
                        acc[i, j] += av[i] * bv[j]
            cuda.syncthreads()
        for i in range(TM):
            for j in range(TN):
                c[row0 + ty + i * NTY, col0 + tx + j * NTX] = bf16_rn(acc[i, j])

    return grouped_gemm_fp8_kernel


def tile_for(preset, tile: Tile | None = None) -> Tile:
    """The tile for `preset` (TILES[BM]) unless an explicit `tile` is given."""
    if tile is not None:
        return tile
    require(KERNEL, preset.BM in TILES, f"no tile shape for BM={preset.BM}; known BMs: {sorted(TILES)}")
    return TILES[preset.BM]


def launch_config(preset, N: int, tile: Tile | None = None) -> Launch:
    """Grid (N/BN, P_max/BM), (BM/TM)*(BN/TN) threads."""
    t = tile_for(preset, tile)
    threads = (preset.BM // t.TM) * (t.BN // t.TN)
    cfg = launch(cdiv(N, t.BN), threads, BN=t.BN, BK=t.BK, TM=t.TM, TN=t.TN)
    return dataclasses.replace(cfg, grid=(cfg.grid[0], preset.n_blocks, 1))


def sources(preset, tile: Tile | None = None):
    t = tile_for(preset, tile)
    return [(make_kernel(preset.BM, t.BN, t.BK, t.TM, t.TN), SIGNATURE)]


def validate(preset, Kd: int, N: int, tile: Tile | None = None) -> None:
    """Check the sizes against the kernel's assumptions (InputError naming the value and what was expected)."""
    t = tile_for(preset, tile)
    BM = preset.BM
    require(KERNEL, BM % t.TM == 0 and t.BN % t.TN == 0, f"tile {t} does not divide BM={BM} x BN={t.BN}")
    require(KERNEL, SCALE_GROUP % t.BN == 0 and SCALE_GROUP % t.BK == 0 and t.BK % 4 == 0,
            f"tile {t}: BN and BK must divide {SCALE_GROUP} (one scale per chunk and column tile), BK a multiple of 4")
    threads = (BM // t.TM) * (t.BN // t.TN)
    require(KERNEL, threads <= 1024, f"tile {t} with BM={BM} needs {threads} threads; expected <= 1024")
    require(KERNEL, Kd % SCALE_GROUP == 0 and N % SCALE_GROUP == 0,
            f"Kd={Kd}, N={N}; expected multiples of {SCALE_GROUP} (the scale groups)")
    q = t.BK // 4
    require(KERNEL, (BM * q) % threads == 0 and (t.BN * q) % threads == 0,
            f"tile {t} with BM={BM}: {BM * q} + {t.BN * q} tile words do not split evenly over {threads} threads")


def run(backend, args, preset, **params):
    """c = FP8 grouped GEMM of (a, a_scale) with (w, w_scale) per block_expert. params: tag, tile (a Tile)."""
    P = preset.P_max
    for name in ("a", "w"):
        require(KERNEL, name in args, f"argument {name!r} missing; got {sorted(args)}")
    Kd = args["a"].shape[1]
    E, N, Kw = args["w"].shape
    require(KERNEL, Kw == Kd and E == preset.E, f"w has shape {args['w'].shape}; expected ({preset.E}, N, {Kd})")
    tile = params.get("tile")
    validate(preset, Kd, N, tile)
    for name in ("a", "w"):
        require(KERNEL, np.dtype(args[name].dtype).itemsize == 1,
                f"{name} has dtype {np.dtype(args[name].dtype)}; expected float8_e4m3fn")
    a = view(check_shape(KERNEL, args, "a", (P, Kd)), np.uint32, KERNEL, "a")
    a_scale = check_shape(KERNEL, args, "a_scale", (P, Kd // SCALE_GROUP))
    w = view(args["w"], np.uint32, KERNEL, "w")
    w_scale = check_shape(KERNEL, args, "w_scale", (E, N // SCALE_GROUP, Kd // SCALE_GROUP))
    be = check_shape(KERNEL, args, "block_expert", (preset.n_blocks,))
    total = check_shape(KERNEL, args, "total_padded", (1,))
    c = view(check_shape(KERNEL, args, "c", (P, N)), np.uint16, KERNEL, "c")
    cfg = launch_config(preset, N, tile)
    (kernel, sig), = sources(preset, tile)
    live = LiveRows.of(total, preset.BM, be)  # sampled by experts on sim
    return [backend.launch_numba(kernel, sig, cfg.grid, cfg.block, [a, a_scale, w, w_scale, be, live, c],
                                 cfg.shared_bytes, tag=params.get("tag", KERNEL))]

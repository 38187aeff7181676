"""grouped_gemm (kernels.md §5): c[rows of b] = bf16_rn(a[rows of b] @ w[block_expert[b]].T), in Numba CUDA.

Numba exposes no tensor-core API (no mma/wmma/wgmma, no ldmatrix; numba-cuda 0.30's bf16 type lowers to shim calls),
so this is the best CUDA-core GEMM Numba can write, not a tensor-core one: the comparison with the CUDA C++ (wmma) and
PTX (mma.sync) GEMMs is a comparison with the programming model's ceiling, and its roofline point sits under the
fp32 roof. Fast math would add nothing here: NVVM already contracts the multiply-adds into fma.rn.f32 (the default),
and there is no division or transcendental; the a and w tiles are reused from shared memory, so no load is a
read-once streaming load either.

Classic shared-memory tiled SIMT GEMM, one block per (BN-column tile, BM-row block of the aligned layout): the row
block's expert comes from block_expert (blocks with -1 return at once, so rows >= total_padded are never written).
Both operands are K-contiguous ("NT" GEMM). Per BK-wide K chunk the block:

- loads the BM x BK tile of a and the BN x BK tile of w[e] as 8-byte words (4 bf16; consecutive threads read
  consecutive words of a row, so every 32-byte sector is used whole), converts them to fp32 once and stores them
  K-major in shared memory (rows padded by 4 floats: 16-byte aligned, transposing stores at most 2-way conflicted);
- while it computes on that chunk, the next chunk's words are already loading into registers (register double
  buffering: the global latency hides behind BK x TM x TN FMAs per thread);
- each thread accumulates a TM x TN micro-tile in registers, owned as 4 x 4 groups strided by the thread grid
  (rows 4*(ty + i*BM/TM) + 0..3, columns likewise): the 4 floats of a group are 16-byte aligned and consecutive, so
  NVVM merges them into one `ld.shared.v4.f32` (A reads are warp broadcasts, B reads are conflict-free per
  quarter-warp), and fp32 FMA accumulates.

The epilogue rounds to bf16 (RNE) and stores each 4-column group as one 8-byte word (a warp writes 128 contiguous
bytes per row). Tile shapes per preset are in TILES (`run(..., tile=Tile(...))` overrides them for sweeps).

What Numba cannot express that the PTX path may use: tensor cores (`mma.sync.aligned.m16n8k16.row.col.f32.bf16`,
`ldmatrix`, or wgmma on sm_90), `cp.async` / TMA (`cp.async.bulk.tensor`) global->shared copies with `mbarrier`
pipelines, 16-byte `ld.global.nc.v4` loads (Numba's widest is 8 bytes; the shared v4 reads above are NVVM's doing, not
expressible directly), keeping the tiles in bf16 in shared memory, `cvt.rn.bf16x2.f32` packing, `.maxnreg` /
launch bounds (the 8 x 8 prefill tile takes ~150 registers, so one 256-thread block per SM).
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np
from numba import cuda, float32, types, uint64

from contract.device import LiveRows
from cuda_impl.common import Launch, cdiv, check_shape, launch, require, view
from cuda_impl.prims import SHARED_ALIGN, bf16_hi, bf16_lo, hi32, join64, lo32, pack_bf16x2

SIGNATURE = (types.uint64[:, ::1], types.uint64[:, :, ::1], types.int32[::1], types.int32[::1], types.uint64[:, ::1])
PAD = 4  # floats of padding per shared row: keeps rows 16-byte aligned (ld.shared.v4) and the stores <= 2-way


@dataclasses.dataclass(frozen=True)
class Tile:
    BN: int  # output columns per block
    BK: int  # K chunk in shared memory
    TM: int  # micro-tile rows per thread
    TN: int  # micro-tile columns per thread (a multiple of 4, like TM: 4 x 4 groups, 16-byte shared reads)


# Keyed by the routing block BM (align pads to it): tiny 16, small 32, dsv3-decode 16, dsv3-prefill 64
# (contract/presets.py);
# 128 stays for a user preset with large blocks.
TILES = {16: Tile(64, 16, 4, 4), 32: Tile(64, 16, 4, 4), 64: Tile(64, 16, 4, 4), 128: Tile(128, 16, 8, 8)}


@functools.lru_cache(maxsize=None)
def make_kernel(BM: int, BN: int, BK: int, TM: int, TN: int):
    """The grouped GEMM kernel for one tile shape (all compile-time constants)."""
    NTX = BN // TN
    NTY = BM // TM
    NT = NTX * NTY
    TM4 = TM // 4  # the micro-tile is (TM/4 x TN/4) groups of 4 x 4: rows 4*(ty + ig*NTY) + ii, likewise columns
    TN4 = TN // 4
    QPR = BK // 4  # 8-byte words per tile row per K chunk
    LA = BM * QPR // NT  # words of the a tile each thread loads
    LB = BN * QPR // NT
    SA = BM + PAD
    SB = BN + PAD
    A_ELEMS = BK * SA
    B_ELEMS = BK * SB
    BN4 = BN // 4

    U = np.uint64  # NOTE: unsigned (uint64) indices skip Numba's negative-index wraparound selects on every access
    SA_U, SB_U, NTY4_U, NTX4_U, BN4_U = U(SA), U(SB), U(4 * NTY), U(4 * NTX), U(BN4)
    QPR_U = U(QPR)

    def grouped_gemm_kernel(a, w, block_expert, total_padded, c):
        b = cuda.blockIdx.y
        e = block_expert[b]
        row0 = b * BM
        if e < 0 or row0 >= total_padded[0]:
            return
        eu = uint64(e)
        col0 = cuda.blockIdx.x * BN
        tid = cuda.threadIdx.x
        tx = tid % NTX
        ty = tid // NTX
        As = cuda.shared.array(A_ELEMS, float32, alignment=SHARED_ALIGN)
        Bs = cuda.shared.array(B_ELEMS, float32, alignment=SHARED_ALIGN)
        acc = cuda.local.array((TM, TN), float32)
        for i in range(TM):
            for j in range(TN):
                acc[i, j] = float32(0.0)
        # per-thread tile-load coordinates (loop invariant): global row, word in chunk, shared offset
        ra = cuda.local.array(LA, uint64)
        ga = cuda.local.array(LA, uint64)
        qa = cuda.local.array(LA, uint64)
        sa = cuda.local.array(LA, uint64)
        for li in range(LA):
            idx = tid + li * NT
            ga[li] = uint64(row0 + idx // QPR)
            qa[li] = uint64(idx % QPR)
            sa[li] = uint64((idx % QPR) * 4 * SA + idx // QPR)
            ra[li] = a[ga[li], qa[li]]
        rb = cuda.local.array(LB, uint64)
        gb = cuda.local.array(LB, uint64)
        qb = cuda.local.array(LB, uint64)
        sb = cuda.local.array(LB, uint64)
        for li in range(LB):
            idx = tid + li * NT
            gb[li] = uint64(col0 + idx // QPR)
            qb[li] = uint64(idx % QPR)
            sb[li] = uint64((idx % QPR) * 4 * SB + idx // QPR)
            rb[li] = w[eu, gb[li], qb[li]]
        a_off = uint64(4 * ty)
        b_off = uint64(4 * tx)
        chunks = a.shape[1] // QPR
        for kc in range(chunks):
            for li in range(LA):
                lo = lo32(ra[li])
                hi = hi32(ra[li])
                As[sa[li]] = bf16_lo(lo)
                As[sa[li] + SA_U] = bf16_hi(lo)
                As[sa[li] + 2 * SA_U] = bf16_lo(hi)
                As[sa[li] + 3 * SA_U] = bf16_hi(hi)
            for li in range(LB):
                lo = lo32(rb[li])
                hi = hi32(rb[li])
                Bs[sb[li]] = bf16_lo(lo)
                Bs[sb[li] + SB_U] = bf16_hi(lo)
                Bs[sb[li] + 2 * SB_U] = bf16_lo(hi)
                Bs[sb[li] + 3 * SB_U] = bf16_hi(hi)
            cuda.syncthreads()
            if kc + 1 < chunks:  # prefetch the next chunk into registers while this one is computed
                q0 = uint64(kc + 1) * QPR_U
                for li in range(LA):
                    ra[li] = a[ga[li], q0 + qa[li]]
                for li in range(LB):
                    rb[li] = w[eu, gb[li], q0 + qb[li]]
            for k in range(BK):
                ka = uint64(k) * SA_U + a_off
                kb = uint64(k) * SB_U + b_off
                av = cuda.local.array(TM, float32)
                bv = cuda.local.array(TN, float32)
                for ig in range(TM4):  # 4 consecutive 16-byte-aligned floats: NVVM emits one ld.shared.v4.f32
                    base = ka + uint64(ig) * NTY4_U
                    for ii in range(4):
                        av[4 * ig + ii] = As[base + uint64(ii)]
                for jg in range(TN4):
                    base = kb + uint64(jg) * NTX4_U
                    for jj in range(4):
                        bv[4 * jg + jj] = Bs[base + uint64(jj)]
                for i in range(TM):
                    for j in range(TN):
                        acc[i, j] += av[i] * bv[j]
            cuda.syncthreads()
        quad0 = uint64(cuda.blockIdx.x) * BN4_U + uint64(tx)
        for ig in range(TM4):
            for ii in range(4):
                i = 4 * ig + ii
                row = uint64(row0 + 4 * (ty + ig * NTY) + ii)
                for jg in range(TN4):
                    j = 4 * jg
                    c[row, quad0 + uint64(jg) * U(NTX)] = join64(pack_bf16x2(acc[i, j], acc[i, j + 1]),
                                                               pack_bf16x2(acc[i, j + 2], acc[i, j + 3]))

    return grouped_gemm_kernel


def tile_for(preset, tile: Tile | None = None) -> Tile:
    """The tile for `preset` (TILES[BM]) unless an explicit `tile` is given (for tuning sweeps on a GPU)."""
    if tile is not None:
        return tile
    if preset.BM not in TILES:
        require("grouped_gemm", False, f"no tile shape for BM={preset.BM}; known BMs: {sorted(TILES)}")
    return TILES[preset.BM]


def launch_config(preset, N: int, tile: Tile | None = None) -> Launch:
    """Grid (N/BN, P_max/BM), (BM/TM)*(BN/TN) threads: 64 at tiny, 128 small, 256 dsv3-decode and dsv3-prefill."""
    t = tile_for(preset, tile)
    threads = (preset.BM // t.TM) * (t.BN // t.TN)
    cfg = launch(cdiv(N, t.BN), threads, BN=t.BN, BK=t.BK, TM=t.TM, TN=t.TN)
    return dataclasses.replace(cfg, grid=(cfg.grid[0], preset.n_blocks, 1))


def sources(preset, tile: Tile | None = None):
    t = tile_for(preset, tile)
    return [(make_kernel(preset.BM, t.BN, t.BK, t.TM, t.TN), SIGNATURE)]


def validate(preset, Kd: int, N: int, tile: Tile | None = None) -> None:
    t = tile_for(preset, tile)
    BM = preset.BM
    require("grouped_gemm", BM % t.TM == 0 and t.BN % t.TN == 0 and t.TM % 4 == 0 and t.TN % 4 == 0 and t.BK % 4 == 0,
            f"tile {t} does not divide BM={BM} x BN={t.BN} into TM x TN micro-tiles with TM, TN, BK multiples of 4")
    threads = (BM // t.TM) * (t.BN // t.TN)
    require("grouped_gemm", threads <= 1024, f"tile {t} with BM={BM} needs {threads} threads; expected <= 1024")
    require("grouped_gemm", Kd % t.BK == 0, f"Kd={Kd} is not a multiple of the K chunk BK={t.BK}")
    require("grouped_gemm", N % t.BN == 0, f"N={N} is not a multiple of the column tile BN={t.BN}")
    q = t.BK // 4
    require("grouped_gemm", (BM * q) % threads == 0 and (t.BN * q) % threads == 0,
            f"tile {t} with BM={BM}: {BM * q} + {t.BN * q} tile words do not split evenly over {threads} threads")


def run(backend, args, preset, **params):
    """c = grouped GEMM of a with w per block_expert. params: tag (launch tag), tile (a Tile overriding TILES)."""
    P = preset.P_max
    for name in ("a", "w"):
        if name not in args:
            require("grouped_gemm", False, f"argument {name!r} missing; got {sorted(args)}")
    Kd = args["a"].shape[1]
    E, N, Kw = args["w"].shape
    require("grouped_gemm", Kw == Kd and E == preset.E,
            f"w has shape {args['w'].shape}; expected ({preset.E}, N, {Kd})")
    tile = params.get("tile")
    validate(preset, Kd, N, tile)
    a = view(check_shape("grouped_gemm", args, "a", (P, Kd)), np.uint64, "grouped_gemm", "a")
    w = view(args["w"], np.uint64, "grouped_gemm", "w")
    be = check_shape("grouped_gemm", args, "block_expert", (preset.n_blocks,))
    total = check_shape("grouped_gemm", args, "total_padded", (1,))
    c = view(check_shape("grouped_gemm", args, "c", (P, N)), np.uint64, "grouped_gemm", "c")
    cfg = launch_config(preset, N, tile)
    (kernel, sig), = sources(preset, tile)
    return [backend.launch_numba(kernel, sig, cfg.grid, cfg.block, [a, w, be, LiveRows.of(total, preset.BM, be), c],
                                 cfg.shared_bytes, tag=params.get("tag", "grouped_gemm"))]

"""align (kernels.md §2): the deterministic routing map (moe_align_block_size with a stable order), in Numba CUDA.

One block of up to 1024 threads does it all, in shared memory:

1. histogram of the T*K expert ids with shared-memory atomics (`atom.shared.add`: order-free, so deterministic);
2. exclusive scan of the BM-padded counts by one warp (`shfl.sync.up` Kogge-Stone over E/32 experts per lane);
3. counts / offsets / total_padded / block_expert (binary search of the owning expert) and the sentinel padding;
4. the stable scatter: slots are taken in chunks of blockDim in ascending order; inside a warp, lanes with the same
   expert find each other with `match.sync.any` and rank themselves by `popc(peers & %lanemask_lt)`; the per-warp
   per-expert counts are turned into exclusive prefixes across warps in shared memory and added to a running base
   per expert, so slot ids land in ascending order (what atomics-ordered implementations cannot promise).

What Numba cannot express that the PTX path may use: `redux.sync` / `bar.red.popc` for the counts, `atom.shared`
with a 64-bit packed (count, base) update, `ld.global.nc` for the ids, `st.global.v4` for the sentinel fill.
"""
from __future__ import annotations

import functools

import numpy as np
from numba import cuda, int32, types

from cuda_impl.common import Launch, check_shape, launch, require
from cuda_impl.prims import lanemask_lt, match_any_i32, shfl_up_i32

I32, I32_2D = types.int32[::1], types.int32[:, ::1]
SIGNATURE = (I32_2D, I32, I32, I32, I32, I32, I32_2D, types.int32, types.int32)


@functools.lru_cache(maxsize=None)
def make_kernel(E: int, K: int, BM: int, NT: int):
    """The align kernel for E experts, top-K, row block BM, NT threads per block (compile-time constants)."""
    NW = NT // 32
    EPL = (E + 31) // 32  # experts per lane in the scan
    E1 = E + 1

    def align_kernel(ids, counts, offsets, total_padded, sorted_ids, block_expert, inverse, TK, P):
        s_cnt = cuda.shared.array(E, int32)
        s_off = cuda.shared.array(E1, int32)
        s_base = cuda.shared.array(E, int32)
        s_wc = cuda.shared.array((NW, E), int32)
        tid = cuda.threadIdx.x
        lane = tid % 32
        warp = tid // 32
        for e in range(tid, E, NT):
            s_cnt[e] = 0
            s_base[e] = 0
        cuda.syncthreads()
        for i in range(tid, TK, NT):
            e = ids[i // K, i % K]
            if e >= 0 and e < E:
                cuda.atomic.add(s_cnt, e, 1)
        cuda.syncthreads()
        # exclusive scan of the padded counts: lane l of every warp sums experts [l*EPL, (l+1)*EPL); warp 0 writes
        local = int32(0)
        for j in range(EPL):
            e = lane * EPL + j
            if e < E:
                local += (s_cnt[e] + (BM - 1)) // BM * BM
        incl = local
        for step in range(5):
            up = shfl_up_i32(incl, 1 << step)
            if lane >= (1 << step):
                incl += up
        if warp == 0:
            run = incl - local
            for j in range(EPL):
                e = lane * EPL + j
                if e < E:
                    s_off[e] = run
                    run += (s_cnt[e] + (BM - 1)) // BM * BM
            if lane == 31:
                s_off[E] = incl
        cuda.syncthreads()
        total = s_off[E]
        for e in range(tid, E, NT):
            counts[e] = s_cnt[e]
            offsets[e] = s_off[e]
        if tid == 0:
            offsets[E] = total
            total_padded[0] = total
        # block_expert and the sentinel padding: the owner of row p is the last expert whose offset is <= p
        for b in range(tid, P // BM, NT):
            row = b * BM
            owner = int32(-1)
            if row < total:
                lo = int32(0)
                hi = int32(E)
                while hi - lo > 1:  # s_off[lo] <= row < s_off[hi]
                    mid = (lo + hi) // 2
                    if s_off[mid] <= row:
                        lo = mid
                    else:
                        hi = mid
                owner = lo
            block_expert[b] = owner
        for p in range(tid, P, NT):
            pad = p >= total
            if not pad:
                lo = int32(0)
                hi = int32(E)
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    if s_off[mid] <= p:
                        lo = mid
                    else:
                        hi = mid
                pad = p - s_off[lo] >= s_cnt[lo]
            if pad:
                sorted_ids[p] = TK
        # stable scatter, NT slots at a time
        for c0 in range(0, TK, NT):
            i = c0 + tid
            e = ids[i // K, i % K] if i < TK else int32(-1)
            valid = i < TK and e >= 0 and e < E
            if not valid:
                e = int32(-1)
            for k in range(tid, NW * E, NT):
                s_wc[k // E, k % E] = 0
            peers = match_any_i32(e)
            below = peers & lanemask_lt()
            rank = cuda.popc(below)
            cuda.syncthreads()
            if valid and below == 0:
                s_wc[warp, e] = cuda.popc(peers)
            cuda.syncthreads()
            for e2 in range(tid, E, NT):
                run = s_base[e2]
                for w in range(NW):
                    c = s_wc[w, e2]
                    s_wc[w, e2] = run
                    run += c
                s_base[e2] = run
            cuda.syncthreads()
            if valid:
                pos = s_off[e] + s_wc[warp, e] + rank
                sorted_ids[pos] = i
                inverse[i // K, i % K] = pos
            cuda.syncthreads()

    return align_kernel


def launch_config(preset) -> Launch:
    """One block; one thread per slot up to 1024 (T*K=256 at tiny, 32768 at dsv3-prefill: 32 chunks)."""
    slots = preset.T * preset.K
    return launch(1, min(1024, max(32, -(-slots // 32) * 32)))


def sources(preset):
    cfg = launch_config(preset)
    return [(make_kernel(preset.E, preset.K, preset.BM, cfg.block[0]), SIGNATURE)]


def run(backend, args, preset, **params):
    T, K, E, P = preset.T, preset.K, preset.E, preset.P_max
    require("align", E <= 1024, f"E={E}; expected at most 1024 experts")
    require("align", P % preset.BM == 0, f"P_max={P} is not a multiple of BM={preset.BM}")
    ids = check_shape("align", args, "topk_ids", (T, K))
    inverse = check_shape("align", args, "inverse", (T, K))
    outs = [check_shape("align", args, name, shape) for name, shape in (
        ("counts", (E,)), ("offsets", (E + 1,)), ("total_padded", (1,)), ("sorted_ids", (P,)),
        ("block_expert", (P // preset.BM,)))]
    cfg = launch_config(preset)
    (kernel, sig), = sources(preset)
    return [backend.launch_numba(kernel, sig, cfg.grid, cfg.block, [ids, *outs, inverse, np.int32(T * K), np.int32(P)],
                                 cfg.shared_bytes, tag="align")]

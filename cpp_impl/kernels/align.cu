// align -- the deterministic routing map, moe_align_block_size (kernels.md section 2), CUDA C++.
//
//   counts[e]; offsets[e+1] = offsets[e] + ceil(counts[e] / BM) * BM; total_padded = offsets[E]
//   sorted_ids: expert e's slots (slot = t*K + k) ascending at offsets[e].., the sentinel T*K in its padding and
//               at every position >= total_padded;  block_expert[b]: owner of rows [b BM, (b+1) BM) or -1;
//   inverse[slot]: the slot's position in sorted_ids.
//
// Work split: ONE CTA of 256 threads (8 warps). The map is a prefix over experts and a stable order over slots;
// one CTA keeps both in shared memory with __syncthreads() as the only ordering, so the result is deterministic
// by construction (an atomics-ordered scatter is not) and needs no second launch and no global atomics.
//
// Shared memory (dynamic, 4 * (11 E + 1) bytes): cnt[E], off[E+1] (off[E] = total_padded), cursor[E],
// table[8][E] (per-warp, per-expert slot counts of one chunk).
//
// Phases
//   0. zero     cnt and table.
//   1. count    warp-aggregated: __match_any_sync groups a warp's lanes by expert and the lowest lane of each
//               group adds the group's __popc to cnt[e] (one shared atomic per distinct expert per warp).
//   2. scan     warp 0, 32 experts per step: padded count, inclusive __shfl_up_sync scan plus the carry of earlier
//               steps; off/cursor in shared memory, counts/offsets/total_padded to global memory.
//   3. fill     thread e writes block_expert for e's blocks and the sentinel in e's padding; all threads write -1 /
//               the sentinel past total_padded. Disjoint from what phase 4 writes, so no ordering needed.
//   4. scatter  256 slots per chunk in slot order. __match_any_sync on the expert gives the same-expert lanes;
//               __popc(peers & lanemask_lt) is a lane's rank among them and the group's lowest lane stores the
//               warp's count in table[warp][e]. After a barrier a slot's position is cursor[e] + the counts of
//               earlier warps + its rank (a stable counting sort); then thread e advances cursor[e] by the chunk's
//               total and clears the column. Three barriers per 256 slots, no sort network.

#define BLOCK 256u
#define WARPS 8u
#define FULL_MASK 0xffffffffu

extern "C" __global__ void __launch_bounds__(256)
cpp_align(const int* __restrict__ topk_ids, int* __restrict__ counts, int* __restrict__ offsets,
          int* __restrict__ total_padded, int* __restrict__ sorted_ids, int* __restrict__ block_expert,
          int* __restrict__ inverse, unsigned tk, unsigned e_count, unsigned bm, unsigned p_max, unsigned n_blocks)
{
    extern __shared__ unsigned smem[];
    unsigned* cnt = smem;
    unsigned* off = cnt + e_count;
    unsigned* cursor = off + e_count + 1;
    unsigned* table = cursor + e_count;  // [WARPS][E]

    const unsigned me = threadIdx.x, lane = me & 31u, warp = me >> 5;
    const unsigned lanes_below = (1u << lane) - 1u;

    // ---- 0. zero
    for (unsigned i = me; i < e_count; i += BLOCK) cnt[i] = 0;
    for (unsigned i = me; i < WARPS * e_count; i += BLOCK) table[i] = 0;
    __syncthreads();

    // ---- 1. count (the loop is uniform per warp: every lane runs every step, out-of-range lanes match only
    // each other and add nothing)
    for (unsigned base = 0; base < tk; base += BLOCK) {
        const unsigned slot = base + me;
        const bool valid = slot < tk;
        const unsigned e = valid ? static_cast<unsigned>(__ldg(topk_ids + slot)) : FULL_MASK;
        const unsigned peers = __match_any_sync(FULL_MASK, e);
        if (valid && (peers & lanes_below) == 0) atomicAdd(cnt + e, __popc(peers));
    }
    __syncthreads();

    // ---- 2. scan
    if (warp == 0) {
        unsigned carry = 0;
        for (unsigned base = 0; base < e_count; base += 32u) {
            const unsigned e = base + lane;
            const bool valid = e < e_count;
            const unsigned n = valid ? cnt[e] : 0u;
            const unsigned pad = (n + bm - 1u) / bm * bm;
            unsigned incl = pad;
#pragma unroll
            for (unsigned d = 1; d < 32u; d <<= 1) {
                const unsigned up = __shfl_up_sync(FULL_MASK, incl, d);
                if (lane >= d) incl += up;
            }
            const unsigned excl = incl - pad + carry;
            if (valid) {
                off[e] = excl;
                cursor[e] = excl;
                counts[e] = static_cast<int>(n);
                offsets[e] = static_cast<int>(excl);
            }
            carry += __shfl_sync(FULL_MASK, incl, 31);
        }
        if (lane == 0) {
            off[e_count] = carry;
            offsets[e_count] = static_cast<int>(carry);
            *total_padded = static_cast<int>(carry);
        }
    }
    __syncthreads();

    // ---- 3. fill
    for (unsigned e = me; e < e_count; e += BLOCK) {
        const unsigned start = off[e], end = off[e + 1];
        for (unsigned b = start / bm; b < end / bm; ++b) block_expert[b] = static_cast<int>(e);
        for (unsigned p = start + cnt[e]; p < end; ++p) sorted_ids[p] = static_cast<int>(tk);
    }
    const unsigned total = off[e_count];
    for (unsigned b = total / bm + me; b < n_blocks; b += BLOCK) block_expert[b] = -1;
    for (unsigned p = total + me; p < p_max; p += BLOCK) sorted_ids[p] = static_cast<int>(tk);

    // ---- 4. stable scatter (uniform loop: every thread runs every chunk and reaches every barrier)
    for (unsigned base = 0; base < tk; base += BLOCK) {
        const unsigned slot = base + me;
        const bool valid = slot < tk;
        const unsigned e = valid ? static_cast<unsigned>(__ldg(topk_ids + slot)) : FULL_MASK;
        const unsigned peers = __match_any_sync(FULL_MASK, e);
        const unsigned rank = __popc(peers & lanes_below);
        if (valid && rank == 0) table[warp * e_count + e] = __popc(peers);
        __syncthreads();
        if (valid) {
            unsigned pos = cursor[e] + rank;
            for (unsigned w = 0; w < warp; ++w) pos += table[w * e_count + e];
            sorted_ids[pos] = static_cast<int>(slot);
            inverse[slot] = static_cast<int>(pos);
        }
        __syncthreads();
        for (unsigned x = me; x < e_count; x += BLOCK) {
            unsigned chunk = 0;
#pragma unroll
            for (unsigned w = 0; w < WARPS; ++w) {
                chunk += table[w * e_count + x];
                table[w * e_count + x] = 0;
            }
            cursor[x] += chunk;
        }
        __syncthreads();
    }
}

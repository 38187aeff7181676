// gate -- sigmoid scores and group-limited top-k routing (kernels.md section 1), CUDA C++.
//
//   s = sigmoid(logits[t]);  sb = s + bias (selection only);  group score = sum of the two largest sb of a group
//   keep the TG best groups (ties: lower group), the K best sb among their experts (ties: lower id), descending;
//   topk_w = s[ids] / sum(s[ids]) * route_scale
//
// Work split: one warp per token, four tokens per 128-thread CTA. Lane l holds experts e = 32 j + l for
// j < NJ = ceil(E / 32) (-DNJ, so the per-lane arrays live in registers): every logits load is one coalesced
// 128-byte warp access. Experts >= E are inert (sb = -inf, key 0).
//
// Phases
//   1. scores   s = 1 / (1 + __expf(-x)): ex2.approx, a few ulps (~1e-7 relative, far inside the 1e-5 weight
//               tolerance; the generators keep selection boundaries 1e-3 apart).
//   2. groups   per group g: each lane folds its experts of g into (first, second); five __shfl_xor_sync rounds
//               merge the pairs across the warp; lane g keeps first + second.
//   3. top TG   order-preserving float -> unsigned keys (key 0 is below every real score), then TG rounds of
//               __reduce_max_sync (best key) and __reduce_min_sync over the lanes holding it (lowest group wins
//               ties): two single-instruction redux.sync reductions per round.
//   4. top K    K rounds: each lane takes its best key (strict > in ascending j: its lowest id wins ties),
//               __reduce_max_sync of those, __reduce_min_sync of the ids holding the maximum (lowest id wins),
//               __shfl_sync fetches the winner's s, the owner clears that key, lane r keeps round r.
//   5. weights  fp32 sum of the K chosen s by xor shuffles; lanes r < K write id and weight.
#include <math_constants.h>  // CUDART_INF_F

#ifndef NJ
#error "compile with -DNJ=ceil(E/32)"
#endif

#define FULL_MASK 0xffffffffu
#define TOKENS_PER_CTA 4u

// float -> unsigned with the same order; real scores map above 0 (finite or -inf), 0 is "no candidate".
__device__ __forceinline__ unsigned order_key(float f)
{
    const unsigned b = __float_as_uint(f);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

__device__ __forceinline__ void merge_top2(float& first, float& second, float f2, float s2)
{
    const float hi = fmaxf(first, f2), lo = fminf(first, f2);
    second = fmaxf(lo, fmaxf(second, s2));
    first = hi;
}

extern "C" __global__ void __launch_bounds__(128)
cpp_gate(const float* __restrict__ logits, const float* __restrict__ bias, int* __restrict__ topk_ids,
         float* __restrict__ topk_w, unsigned t_count, unsigned e_count, unsigned k_count, unsigned g_count,
         unsigned tg_count, unsigned gs, float route_scale)
{
    const unsigned lane = threadIdx.x & 31u;
    const unsigned tok = blockIdx.x * TOKENS_PER_CTA + (threadIdx.x >> 5);
    if (tok >= t_count) return;  // whole warps leave together: the collectives below stay full-warp
    const float* row = logits + static_cast<size_t>(tok) * e_count;

    // ---- 1. scores
    float s[NJ], sb[NJ];
    unsigned grp[NJ];
#pragma unroll
    for (int j = 0; j < NJ; ++j) {
        const unsigned e = 32u * j + lane;
        if (e < e_count) {
            s[j] = 1.0f / (1.0f + __expf(-__ldg(row + e)));
            sb[j] = s[j] + __ldg(bias + e);
            grp[j] = e / gs;
        } else {
            s[j] = 0.0f;
            sb[j] = -CUDART_INF_F;
            grp[j] = ~0u;
        }
    }

    // ---- 2. group scores: lane g keeps the key of group g
    unsigned gkey = 0;
    for (unsigned g = 0; g < g_count; ++g) {
        float first = -CUDART_INF_F, second = -CUDART_INF_F;
#pragma unroll
        for (int j = 0; j < NJ; ++j)
            if (grp[j] == g) merge_top2(first, second, sb[j], -CUDART_INF_F);
#pragma unroll
        for (int off = 16; off >= 1; off >>= 1)
            merge_top2(first, second, __shfl_xor_sync(FULL_MASK, first, off), __shfl_xor_sync(FULL_MASK, second, off));
        if (lane == g) gkey = order_key(first + second);
    }

    // ---- 3. keep the TG best groups
    unsigned kept = 0;  // bit g: group g kept
    for (unsigned r = 0; r < tg_count; ++r) {
        const unsigned best = __reduce_max_sync(FULL_MASK, gkey);
        const unsigned win = __reduce_min_sync(FULL_MASK, gkey == best ? lane : 32u);
        kept |= 1u << win;
        if (lane == win) gkey = 0;
    }

    // ---- 4. top K experts of the kept groups, descending
    unsigned key[NJ];
#pragma unroll
    for (int j = 0; j < NJ; ++j)
        key[j] = (grp[j] != ~0u && ((kept >> grp[j]) & 1u)) ? order_key(sb[j]) : 0u;
    int my_id = 0;
    float my_s = 0.0f;
    for (unsigned r = 0; r < k_count; ++r) {
        unsigned lane_best = 0, lane_id = 0;
        float lane_s = 0.0f;
#pragma unroll
        for (int j = 0; j < NJ; ++j)
            if (key[j] > lane_best) { lane_best = key[j]; lane_id = 32u * j + lane; lane_s = s[j]; }
        const unsigned best = __reduce_max_sync(FULL_MASK, lane_best);
        const unsigned win = __reduce_min_sync(FULL_MASK, lane_best == best ? lane_id : ~0u);
        const float win_s = __shfl_sync(FULL_MASK, lane_s, win & 31u);
#pragma unroll
        for (int j = 0; j < NJ; ++j)
            if (32u * j + lane == win) key[j] = 0;
        if (lane == r) { my_id = static_cast<int>(win); my_s = win_s; }
    }

    // ---- 5. weights
    float sum = my_s;  // lanes >= K hold 0
#pragma unroll
    for (int off = 16; off >= 1; off >>= 1)
        sum += __shfl_xor_sync(FULL_MASK, sum, off);
    if (lane < k_count) {
        topk_ids[tok * k_count + lane] = my_id;
        topk_w[tok * k_count + lane] = my_s / sum * route_scale;
    }
}

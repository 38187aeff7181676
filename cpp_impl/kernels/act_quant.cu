// act_quant -- FP8 e4m3 per-token-group quantisation with 1x128 tiles (kernels.md section 4), CUDA C++.
//
//   per row and group of 128 columns:  amax = max |a| (fp32);  scale = max(amax, 1e-4) / 448  (IEEE division)
//   pow2: scale = 2^ceil(log2(scale));  q = e4m3_rn_satfinite(a / scale)  (IEEE division)
//
// Work split: N is a multiple of 128 and rows are contiguous, so group g is elements [128 g, 128 g + 128) of the
// flattened array. Sixteen threads (a half-warp) own a group, eight bf16 (one uint4) each: thread gid reads bytes
// [16 gid, 16 gid + 16) of a and writes bytes [8 gid, 8 gid + 8) of q; the half-warp's first lane writes the scale.
// amax: for non-negative floats the bit patterns order like the values, so |x| is reduced as unsigned bits by one
// __reduce_max_sync (redux.sync.max.u32) whose membermask is the thread's half-warp: both halves reduce their own
// group at once, one instruction instead of four shuffle + max steps. Out-of-range threads (only in the last CTA,
// whole half-warps) join the reduction with zeros but never store.
// Conversion: __nv_cvt_float2_to_fp8x2(..., __NV_SATFINITE, __NV_E4M3) is one cvt.rn.satfinite.e4m3x2.f32 for two
// values. Plain '/' is IEEE div.rn (no fast-math), so q and scale are bitwise equal to the reference.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

__device__ __forceinline__ float2 unpack2(unsigned w)
{
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&w));
}

__device__ __forceinline__ unsigned quant4(float2 lo, float2 hi, float scale)
{
    const __nv_fp8x2_storage_t a = __nv_cvt_float2_to_fp8x2(make_float2(lo.x / scale, lo.y / scale),
                                                            __NV_SATFINITE, __NV_E4M3);
    const __nv_fp8x2_storage_t b = __nv_cvt_float2_to_fp8x2(make_float2(hi.x / scale, hi.y / scale),
                                                            __NV_SATFINITE, __NV_E4M3);
    return static_cast<unsigned>(a) | (static_cast<unsigned>(b) << 16);
}

extern "C" __global__ void __launch_bounds__(256)
cpp_act_quant(const uint4* __restrict__ a, uint2* __restrict__ q, float* __restrict__ scale, unsigned n_groups,
              unsigned pow2, const int* __restrict__ rows, unsigned groups_per_row)
{
    // rows (the fp8 layer's total_padded, known on the device only): quantise just the rows below it; null: all M
    if (rows != nullptr) n_groups = min(n_groups, static_cast<unsigned>(__ldg(rows)) * groups_per_row);
    const unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
    const bool valid = gid < 16u * n_groups;
    const uint4 w = valid ? __ldcs(a + gid) : make_uint4(0u, 0u, 0u, 0u);   // streamed once: evict-first
    const float2 x[4] = {unpack2(w.x), unpack2(w.y), unpack2(w.z), unpack2(w.w)};

    unsigned m = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j)
        m = max(m, max(__float_as_uint(fabsf(x[j].x)), __float_as_uint(fabsf(x[j].y))));
    m = __reduce_max_sync(0xffffu << (threadIdx.x & 16u), m);  // this half-warp's group: one redux.sync

    float s = fmaxf(__uint_as_float(m), 1e-4f) / 448.0f;
    if (pow2)  // s is a positive normal float: round its exponent up unless the mantissa is already zero
        s = __uint_as_float((__float_as_uint(s) + 0x7fffffu) & 0xff800000u);
    if (!valid) return;
    __stcs(q + gid, make_uint2(quant4(x[0], x[1], s), quant4(x[2], x[3], s)));
    if ((threadIdx.x & 15u) == 0) scale[gid >> 4] = s;
}

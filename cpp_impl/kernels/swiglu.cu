// swiglu -- the gated activation between the two expert GEMMs (kernels.md section 6), CUDA C++.
//
//   g = h[p, :I], u = h[p, I:] (fp32);   a[p] = bf16_rn(g / (1 + exp(-g)) * u)   for p < total_padded
//
// Work split: like permute, a[:total_padded] is cut into 16-byte chunks (8 bf16; I is a multiple of 8) walked by
// a grid-stride loop with (row, column chunk) stepped without division. Chunk (row, col) reads the gate chunk
// h[row, 8 col] and the up chunk I columns further on (two __ldg of a uint4) and writes one uint4 of a.
// Math: __expf (ex2.approx) and __fdividef (div.approx): a few fp32 ulps each, far inside the 2-bf16-ulp
// tolerance. For g << 0, exp(-g) = inf (or > 2^126) and __fdividef(g, .) = -0, so a = -0 * u: no NaN path, even
// where g * u itself would overflow.
// Packing: __floats2bfloat162_rn rounds two floats to nearest even in one cvt.rn.bf16x2.f32.
#include <cuda_bf16.h>

__device__ __forceinline__ float silu_mul(float g, float u)
{
    return __fdividef(g, 1.0f + __expf(-g)) * u;  // silu first, as kernels.md: no inf * 0 when |g u| overflows
}

__device__ __forceinline__ unsigned swiglu2(unsigned gw, unsigned uw)
{
    const float2 g = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&gw));
    const float2 u = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&uw));
    const __nv_bfloat162 r = __floats2bfloat162_rn(silu_mul(g.x, u.x), silu_mul(g.y, u.y));
    return *reinterpret_cast<const unsigned*>(&r);
}

extern "C" __global__ void __launch_bounds__(256)
cpp_swiglu(const uint4* __restrict__ h, const int* __restrict__ total_padded, uint4* __restrict__ a,
           unsigned chunks_per_row)
{
    const unsigned n_chunks = static_cast<unsigned>(__ldg(total_padded)) * chunks_per_row;
    const unsigned stride = gridDim.x * blockDim.x;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_chunks) return;
    unsigned row = i / chunks_per_row, col = i - row * chunks_per_row;
    const unsigned srow = stride / chunks_per_row, scol = stride - srow * chunks_per_row;
    for (; i < n_chunks; i += stride) {
        const uint4* hrow = h + 2 * row * chunks_per_row;   // h row: I/8 gate chunks, then I/8 up chunks
        const uint4 g = __ldg(hrow + col);
        const uint4 u = __ldg(hrow + chunks_per_row + col);
        __stcs(a + i, make_uint4(swiglu2(g.x, u.x), swiglu2(g.y, u.y), swiglu2(g.z, u.z), swiglu2(g.w, u.w)));
        row += srow;
        col += scol;
        if (col >= chunks_per_row) { col -= chunks_per_row; ++row; }
    }
}

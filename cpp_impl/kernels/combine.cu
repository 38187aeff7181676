// combine -- the weighted un-permute (kernels.md section 7), CUDA C++.
//
//   out[t] = bf16_rn( sum_{k<K} topk_w[t,k] * y[inverse[t,k]] )      fp32 accumulation, k in order
//
// Work split: out [T, H] is cut into 16-byte chunks (8 bf16) walked by a grid-stride loop; chunk (t, col) gathers
// the K chunks y[inverse[t,k], 8 col]: consecutive threads read consecutive chunks of the same y row, so every
// gather is a coalesced 512-byte warp access although the rows are scattered. Each output is written once (no
// atomics: deterministic). K is a compile-time constant (-DK=...) so the k loops unroll and all K gathers are in
// flight before the first add (K latencies overlap instead of adding up).
#include <cuda_bf16.h>

#ifndef K
#error "compile with -DK=<experts per token>"
#endif

__device__ __forceinline__ void fma2(float2& acc, float w, unsigned packed)
{
    const float2 v = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&packed));
    acc.x = fmaf(w, v.x, acc.x);
    acc.y = fmaf(w, v.y, acc.y);
}

__device__ __forceinline__ unsigned pack2(float2 v)
{
    const __nv_bfloat162 r = __float22bfloat162_rn(v);
    return *reinterpret_cast<const unsigned*>(&r);
}

extern "C" __global__ void __launch_bounds__(256)
cpp_combine(const uint4* __restrict__ y, const float* __restrict__ topk_w, const int* __restrict__ inverse,
            uint4* __restrict__ out, unsigned n_chunks, unsigned chunks_per_row)
{
    const unsigned stride = gridDim.x * blockDim.x;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_chunks) return;
    unsigned tok = i / chunks_per_row, col = i - tok * chunks_per_row;
    const unsigned stok = stride / chunks_per_row, scol = stride - stok * chunks_per_row;
    for (; i < n_chunks; i += stride) {
        float w[K];
        uint4 v[K];
#pragma unroll
        for (int j = 0; j < K; ++j) {
            w[j] = __ldg(topk_w + tok * K + j);
            v[j] = __ldg(y + static_cast<unsigned>(__ldg(inverse + tok * K + j)) * chunks_per_row + col);
        }
        float2 acc[4] = {{0.f, 0.f}, {0.f, 0.f}, {0.f, 0.f}, {0.f, 0.f}};
#pragma unroll
        for (int j = 0; j < K; ++j) {
            fma2(acc[0], w[j], v[j].x);
            fma2(acc[1], w[j], v[j].y);
            fma2(acc[2], w[j], v[j].z);
            fma2(acc[3], w[j], v[j].w);
        }
        __stcs(out + i, make_uint4(pack2(acc[0]), pack2(acc[1]), pack2(acc[2]), pack2(acc[3])));
        tok += stok;
        col += scol;
        if (col >= chunks_per_row) { col -= chunks_per_row; ++tok; }
    }
}

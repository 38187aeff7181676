// grouped_gemm_fp8 (docs/kernels.md "grouped_gemm_fp8") in CUDA C++: FP8 e4m3 expert GEMM with DeepSeek-V3's
// fine-grained scales, written the way a CUDA C++ programmer must without inline PTX.
//
// Contract:
//   a e4m3[P_max, Kd] with a_scale f32[P_max, Kd/128] (1x128 groups), w e4m3[E, N, Kd] with w_scale
//   f32[E, N/128, Kd/128] (128x128 blocks), block_expert i32[P_max/BM], total_padded i32[1] -> c bf16[P_max, N]:
//   c[rows of b] = bf16_rn(dequant(a)[rows] @ dequant(w[e]).T) for blocks with e = block_expert[b] >= 0; rows >=
//   total_padded are never written.
//
// CUDA C++ has no FP8 tensor-core API (nvcuda::wmma has no e4m3 fragments; mma.sync e4m3 and wgmma are reachable
// only through inline PTX), so the tiles are dequantised to bf16 in shared memory and multiplied with bf16 wmma.
// Every e4m3 value is exactly a bf16 (3 mantissa bits fit in 7), so the conversion loses nothing; the scales are not
// folded in there (a * scale would round to bf16) but applied at promotion.
//
// Promotion every 128 of K (DeepSeek-V3 technical report, section 3.3): the wmma accumulators hold one 128-deep
// scale group; at its end they go through a shared fp32 staging tile (wmma's fragment layout is opaque, and a_scale
// is per row), and each thread adds staged * a_scale[row][g] * w_scale[e][col0/128][g] into its own fp32 registers.
//
// Tile constants come from the host (cpp_impl/grouped_gemm_fp8.py) as -D defines: TM x TN per CTA (TM divides BM,
// TN divides 128, so a CTA sees one expert and one weight block row), BK-deep K slabs (BK divides 128), a ring of
// STAGES raw e4m3 slabs filled with __pipeline_memcpy_async (16-byte cp.async), 128 threads = 4 warps.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_pipeline_primitives.h>
#include <mma.h>

#ifndef TM
#define TM 16
#endif
#ifndef TN
#define TN 64
#endif
#ifndef BK
#define BK 32
#endif
#ifndef STAGES
#define STAGES 4
#endif

namespace {

using namespace nvcuda;
typedef __nv_bfloat16 bf16;

constexpr int GROUP = 128;  // K per scale, and N per weight block
constexpr int NTHREADS = 128;
constexpr int WARPS = NTHREADS / 32;
constexpr int WM = TM >= 32 ? 2 : 1;
constexpr int WN = WARPS / WM;
constexpr int WARP_M = TM / WM;
constexpr int WARP_N = TN / WN;
constexpr int FM = WARP_M / 16;
constexpr int FN = WARP_N / 16;
constexpr int LDQ = BK + 16;  // bytes per raw e4m3 slab row (16-byte skew, rows stay 16-byte aligned)
constexpr int LDS = BK + 8;   // bf16 per dequantised slab row (16-byte skew)
constexpr int LDC = TN + 4;   // floats per staging row
constexpr int CHUNK = 16;     // e4m3 per 16-byte copy
constexpr int OWN = TM * TN / NTHREADS;  // outputs each thread promotes and writes

static_assert(TM % (16 * WM) == 0 && TN % (16 * WN) == 0, "warp tile must be whole 16x16 fragments");
static_assert(BK % 16 == 0 && GROUP % BK == 0 && GROUP % TN == 0 && STAGES >= 2, "BK, TN divide 128");
static_assert(TN % OWN == 0 && OWN % 2 == 0, "each thread owns an even run of one row");

struct RawSlab {
    unsigned char a[TM][LDQ];
    unsigned char b[TN][LDQ];
};

struct Bf16Slab {
    bf16 a[TM][LDS];
    bf16 b[TN][LDS];
};

union Work {  // the dequantised slab and the staging tile are never live at once
    Bf16Slab s;
    float c[TM][LDC];
};

__device__ __forceinline__ void stage_slab(RawSlab& s, const unsigned char* __restrict__ a_tile,
                                           const unsigned char* __restrict__ w_tile, unsigned Kd, unsigned k0,
                                           int tid) {
    constexpr int PER_ROW = BK / CHUNK;
    for (int i = tid; i < (TM + TN) * PER_ROW; i += NTHREADS) {
        const int r = i / PER_ROW, ch = i % PER_ROW;
        if (r < TM)
            __pipeline_memcpy_async(&s.a[r][ch * CHUNK], a_tile + (size_t)r * Kd + k0 + ch * CHUNK, 16);
        else
            __pipeline_memcpy_async(&s.b[r - TM][ch * CHUNK], w_tile + (size_t)(r - TM) * Kd + k0 + ch * CHUNK, 16);
    }
}

// e4m3 -> bf16, two at a time, exactly (cuda_fp8.h's conversion goes through half, which holds every e4m3 value).
__device__ __forceinline__ __nv_bfloat162 e4m3x2_to_bf16x2(unsigned short two) {
    const __half2 h = __half2(__nv_cvt_fp8x2_to_halfraw2(two, __NV_E4M3));
    return __floats2bfloat162_rn(__low2float(h), __high2float(h));
}

__device__ __forceinline__ void dequantise(Bf16Slab& d, const RawSlab& s, int tid) {
    constexpr int PAIRS = BK / 2;
    for (int i = tid; i < (TM + TN) * PAIRS; i += NTHREADS) {
        const int r = i / PAIRS, p = i % PAIRS;
        const unsigned char* src = r < TM ? &s.a[r][2 * p] : &s.b[r - TM][2 * p];
        bf16* dst = r < TM ? &d.a[r][2 * p] : &d.b[r - TM][2 * p];
        *reinterpret_cast<__nv_bfloat162*>(dst) = e4m3x2_to_bf16x2(*reinterpret_cast<const unsigned short*>(src));
    }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(NTHREADS)
grouped_gemm_fp8(const unsigned char* __restrict__ a, const float* __restrict__ a_scale,
                 const unsigned char* __restrict__ w, const float* __restrict__ w_scale,
                 const int* __restrict__ block_expert, const int* __restrict__ total_padded, bf16* __restrict__ c,
                 unsigned Kd, unsigned N, unsigned BM) {
    __shared__ __align__(128) RawSlab ring[STAGES];
    __shared__ __align__(128) Work work;

    const unsigned row0 = blockIdx.y * TM;
    const unsigned col0 = blockIdx.x * TN;
    if ((long long)row0 >= (long long)__ldg(total_padded)) return;
    const int e = __ldg(block_expert + row0 / BM);
    if (e < 0) return;

    const int tid = threadIdx.x;
    const int warp = tid / 32;
    const int wr = warp / WN, wc = warp % WN;
    const unsigned char* a_tile = a + (size_t)row0 * Kd;
    const unsigned char* w_tile = w + ((size_t)e * N + col0) * Kd;
    const unsigned k_slabs = Kd / BK;
    const unsigned groups = Kd / GROUP;
    const int orow = tid / (TN / OWN), ocol = tid % (TN / OWN) * OWN;  // the run of outputs this thread owns
    const float* a_sc = a_scale + (size_t)(row0 + orow) * groups;
    const float* w_sc = w_scale + ((size_t)e * (N / GROUP) + col0 / GROUP) * groups;

    float total[OWN];
#pragma unroll
    for (int i = 0; i < OWN; ++i) total[i] = 0.0f;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < k_slabs) stage_slab(ring[s], a_tile, w_tile, Kd, s * BK, tid);
        __pipeline_commit();
    }

    for (unsigned kt = 0; kt < k_slabs; ++kt) {
        if (kt % (GROUP / BK) == 0) {
#pragma unroll
            for (int i = 0; i < FM; ++i)
#pragma unroll
                for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
        }
        __pipeline_wait_prior(STAGES - 2);
        __syncthreads();  // slab kt landed for everyone; the previous dequantised slab is no longer read
        const unsigned next = kt + STAGES - 1;
        if (next < k_slabs) stage_slab(ring[next % STAGES], a_tile, w_tile, Kd, next * BK, tid);
        __pipeline_commit();
        dequantise(work.s, ring[kt % STAGES], tid);
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> fa[FM];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> fb[FN];
#pragma unroll
            for (int i = 0; i < FM; ++i) wmma::load_matrix_sync(fa[i], &work.s.a[wr * WARP_M + i * 16][kk], LDS);
#pragma unroll
            for (int j = 0; j < FN; ++j) wmma::load_matrix_sync(fb[j], &work.s.b[wc * WARP_N + j * 16][kk], LDS);
#pragma unroll
            for (int i = 0; i < FM; ++i)
#pragma unroll
                for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
        if ((kt + 1) % (GROUP / BK) == 0) {  // promotion: the scale group is complete
            const unsigned g = kt / (GROUP / BK);
            __syncthreads();  // every warp is done with the dequantised slab before the staging tile overwrites it
#pragma unroll
            for (int i = 0; i < FM; ++i)
#pragma unroll
                for (int j = 0; j < FN; ++j)
                    wmma::store_matrix_sync(&work.c[wr * WARP_M + i * 16][wc * WARP_N + j * 16], acc[i][j], LDC,
                                            wmma::mem_row_major);
            __syncthreads();
            const float s = __ldg(a_sc + g) * __ldg(w_sc + g);
#pragma unroll
            for (int i = 0; i < OWN; ++i) total[i] = fmaf(work.c[orow][ocol + i], s, total[i]);
        }
    }
    __pipeline_wait_prior(0);

    unsigned out[OWN / 2];
#pragma unroll
    for (int i = 0; i < OWN / 2; ++i) {
        __nv_bfloat162 v = __floats2bfloat162_rn(total[2 * i], total[2 * i + 1]);
        out[i] = *reinterpret_cast<unsigned*>(&v);
    }
    unsigned* dst = reinterpret_cast<unsigned*>(c + (size_t)(row0 + orow) * N + col0 + ocol);
#pragma unroll
    for (int i = 0; i < OWN / 2; ++i) dst[i] = out[i];
}

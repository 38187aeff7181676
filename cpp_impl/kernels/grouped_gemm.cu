// grouped_gemm (docs/kernels.md section 5) in CUDA C++: per-expert GEMM over aligned row blocks, bf16 in, fp32
// accumulate, bf16 out, written the way a CUDA C++ programmer would without inline PTX.
//
// Contract:
//   a bf16[P_max, Kd], w bf16[E, N, Kd], block_expert i32[P_max/BM], total_padded i32[1] -> c bf16[P_max, N]
//   for every routing block b with e = block_expert[b] >= 0:  c[rows of b] = bf16_rn(a[rows of b] @ w[e].T)
//   rows >= total_padded are never written.
//
// Tile constants come from the host (cpp_impl/grouped_gemm.py) as -D defines, one compile per tile:
//   TM x TN output tile per CTA (TM divides BM, so a CTA never straddles two experts), BK-deep K slabs, a ring of
//   STAGES slabs. grid = (N / TN, P_max / TM), 128 threads = 4 warps in a WM x WN grid, each warp owning
//   FM x FN wmma m16n16k16 accumulator fragments.
//
// Phases:
//   0. Which tile, which expert: CTAs past total_padded or on a block with expert -1 exit at once.
//   1. Prologue: stage K-slabs 0..STAGES-2 of A (TM x BK activations) and B (TN x BK weights of expert e) into
//      shared memory with __pipeline_memcpy_async (16-byte cp.async, no register round trip), one commit per slab.
//   2. Main loop: wait until slab kt has landed (__pipeline_wait_prior(STAGES-2)), barrier, issue slab
//      kt+STAGES-1 into the ring slot everyone just finished reading, then BK/16 steps of wmma load_matrix_sync +
//      mma_sync on slab kt while the copies of later slabs are in flight.
//   3. Epilogue: accumulators go to a float staging tile in shared memory (reusing the ring), then each thread
//      converts 8 consecutive outputs to bf16 (round to nearest) and writes them as one 16-byte store.
//
// Bank conflicts: slab rows are BK + 8 bf16 (80 bytes); the 16-byte skew puts the 8 rows a wmma fragment load
// touches in distinct bank groups, and row starts stay 16-byte aligned for the async copies. (A swizzle would need
// per-element addressing that load_matrix_sync's strided layout cannot express; the price of padding is 2-way
// conflicts on the slab fills.) Staging rows are TN + 8 floats, so the accumulator stores of a half-warp (4 rows
// x 8 floats) cover 32 distinct banks; the epilogue reads are reordered the same way (see below).
#include <cuda_bf16.h>
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

constexpr int NTHREADS = 128;
constexpr int WARPS = NTHREADS / 32;
constexpr int WM = TM >= 32 ? 2 : 1;  // warps along rows
constexpr int WN = WARPS / WM;        // warps along columns
constexpr int WARP_M = TM / WM;
constexpr int WARP_N = TN / WN;
constexpr int FM = WARP_M / 16;  // m16 fragments per warp
constexpr int FN = WARP_N / 16;  // n16 fragments per warp
constexpr int LDS = BK + 8;      // bf16 per shared slab row (16-byte skew)
constexpr int LDC = TN + 8;      // floats per staging row (32-byte skew)
constexpr int CHUNK = 8;         // bf16 per 16-byte copy / store

static_assert(TM % (16 * WM) == 0 && TN % (16 * WN) == 0, "warp tile must be whole 16x16 fragments");
static_assert(BK % 16 == 0 && STAGES >= 2, "BK a multiple of 16, at least double buffering");
static_assert((TN * BK / CHUNK) % NTHREADS == 0, "weight slab copies spread evenly over the threads");
static_assert((TM * TN / CHUNK) % NTHREADS == 0, "output chunks spread evenly over the threads");

struct Slab {
    bf16 a[TM][LDS];
    bf16 b[TN][LDS];
};

union Smem {
    Slab ring[STAGES];
    float c[TM][LDC];
};

// Issue the async copies of one BK-deep slab of A (rows of this tile) and B (rows of expert e's weights).
__device__ __forceinline__ void stage_slab(Slab& s, const bf16* __restrict__ a_tile, const bf16* __restrict__ w_tile,
                                           unsigned Kd, unsigned k0, int tid) {
    constexpr int PER_ROW = BK / CHUNK;
    constexpr int A_CHUNKS = TM * PER_ROW;
#pragma unroll
    for (int j = 0; j < (A_CHUNKS + NTHREADS - 1) / NTHREADS; ++j) {
        const int i = j * NTHREADS + tid;
        if (A_CHUNKS % NTHREADS == 0 || i < A_CHUNKS) {
            const int r = i / PER_ROW, ch = i % PER_ROW;
            __pipeline_memcpy_async(&s.a[r][ch * CHUNK], a_tile + (size_t)r * Kd + k0 + ch * CHUNK, 16);
        }
    }
#pragma unroll
    for (int j = 0; j < TN * PER_ROW / NTHREADS; ++j) {
        const int i = j * NTHREADS + tid;
        const int r = i / PER_ROW, ch = i % PER_ROW;
        __pipeline_memcpy_async(&s.b[r][ch * CHUNK], w_tile + (size_t)r * Kd + k0 + ch * CHUNK, 16);
    }
}

__device__ __forceinline__ unsigned pack_bf16x2(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<unsigned*>(&v);
}

}  // namespace

extern "C" __global__ void __launch_bounds__(NTHREADS)
grouped_gemm_bf16(const bf16* __restrict__ a, const bf16* __restrict__ w, const int* __restrict__ block_expert,
                  const int* __restrict__ total_padded, bf16* __restrict__ c, unsigned Kd, unsigned N, unsigned BM) {
    __shared__ __align__(128) Smem smem;

    // 0. which tile, which expert
    const unsigned row0 = blockIdx.y * TM;
    const unsigned col0 = blockIdx.x * TN;
    if ((long long)row0 >= (long long)__ldg(total_padded)) return;
    const int e = __ldg(block_expert + row0 / BM);
    if (e < 0) return;

    const int tid = threadIdx.x;
    const int warp = tid / 32;
    const int wr = warp / WN, wc = warp % WN;
    const bf16* a_tile = a + (size_t)row0 * Kd;
    const bf16* w_tile = w + ((size_t)e * N + col0) * Kd;
    const unsigned k_slabs = Kd / BK;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    // 1. prologue: slabs 0..STAGES-2 in flight
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < k_slabs) stage_slab(smem.ring[s], a_tile, w_tile, Kd, s * BK, tid);
        __pipeline_commit();
    }

    // 2. main loop
    for (unsigned kt = 0; kt < k_slabs; ++kt) {
        __pipeline_wait_prior(STAGES - 2);  // slab kt has landed (for this thread's copies) ...
        __syncthreads();                    // ... for everyone's; and slot (kt-1) % STAGES is no longer read
        const unsigned next = kt + STAGES - 1;
        if (next < k_slabs) stage_slab(smem.ring[next % STAGES], a_tile, w_tile, Kd, next * BK, tid);
        __pipeline_commit();

        const Slab& s = smem.ring[kt % STAGES];
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> fa[FM];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> fb[FN];
#pragma unroll
            for (int i = 0; i < FM; ++i) wmma::load_matrix_sync(fa[i], &s.a[wr * WARP_M + i * 16][kk], LDS);
#pragma unroll
            for (int j = 0; j < FN; ++j) wmma::load_matrix_sync(fb[j], &s.b[wc * WARP_N + j * 16][kk], LDS);
#pragma unroll
            for (int i = 0; i < FM; ++i)
#pragma unroll
                for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
    }

    // 3. epilogue: stage fp32 through shared memory, then 16-byte bf16 stores
    __pipeline_wait_prior(0);
    __syncthreads();  // every warp is done with the ring before it is reused as the staging tile
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j)
            wmma::store_matrix_sync(&smem.c[wr * WARP_M + i * 16][wc * WARP_N + j * 16], acc[i][j], LDC,
                                    wmma::mem_row_major);
    __syncthreads();

    constexpr int PER_ROW = TN / CHUNK;
#pragma unroll
    for (int j = 0; j < TM * PER_ROW / NTHREADS; ++j) {
        const int i = j * NTHREADS + tid;
        const int r = i / PER_ROW, ch = i % PER_ROW;
        // Chunks 4..7 of each group of 8 read their upper half first, so each 8-lane phase of the 16-byte
        // shared loads covers all 32 banks once instead of half of them twice.
        const int first = ch & 4;
        const float4 x = *reinterpret_cast<const float4*>(&smem.c[r][ch * CHUNK + first]);
        const float4 y = *reinterpret_cast<const float4*>(&smem.c[r][ch * CHUNK + 4 - first]);
        const float4 lo = first ? y : x, hi = first ? x : y;
        const uint4 out = make_uint4(pack_bf16x2(lo.x, lo.y), pack_bf16x2(lo.z, lo.w), pack_bf16x2(hi.x, hi.y),
                                     pack_bf16x2(hi.z, hi.w));
        *reinterpret_cast<uint4*>(c + (size_t)(row0 + r) * N + col0 + ch * CHUNK) = out;
    }
}

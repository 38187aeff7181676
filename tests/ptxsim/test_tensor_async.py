"""mma.sync, ldmatrix and cp.async through inline PTX in NVRTC kernels, against NumPy."""
import ml_dtypes
import numpy as np
import pytest

import ptxsim

pytestmark = pytest.mark.sim

SRC = r"""
#include <cuda_bf16.h>
// one warp computes D[16x8] = A[16x16] (row) * B[16x8] (col) + C with mma.sync m16n8k16 bf16
extern "C" __global__ void mma_bf16(const unsigned short* A, const unsigned short* Bt, const float* C, float* D) {
  int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  const unsigned short* a = A + blockIdx.x * 256;
  unsigned ra[4], rb[2];
  for (int i = 0; i < 4; i++) {
    int row = g + 8 * (i & 1), col = 2 * t + 8 * (i >> 1);
    ra[i] = a[row * 16 + col] | ((unsigned)a[row * 16 + col + 1] << 16);
  }
  for (int i = 0; i < 2; i++) {  // Bt is B transposed: [8 cols][16 k]
    int k = 2 * t + 8 * i;
    const unsigned short* bt = Bt + blockIdx.x * 128;
    rb[i] = bt[g * 16 + k] | ((unsigned)bt[g * 16 + k + 1] << 16);
  }
  float c[4], d[4];
  for (int i = 0; i < 4; i++) c[i] = C[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)];
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%10,%11,%12,%13};"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]),
                 "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
  float* o = D + blockIdx.x * 128;
  for (int i = 0; i < 4; i++) o[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)] = d[i];
}
// ldmatrix x4 (and .trans) of four 8x8 b16 matrices stored row-major in shared memory
extern "C" __global__ void ldm(const unsigned short* M, unsigned* out, unsigned* out_t) {
  __shared__ __align__(16) unsigned short s[4 * 64];
  int lane = threadIdx.x;
  for (int i = lane; i < 256; i += 32) s[i] = M[i];
  __syncthreads();
  unsigned addr = (unsigned)__cvta_generic_to_shared(&s[(lane >> 3) * 64 + (lane & 7) * 8]);
  unsigned r0, r1, r2, r3;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
  out[lane * 4] = r0; out[lane * 4 + 1] = r1; out[lane * 4 + 2] = r2; out[lane * 4 + 3] = r3;
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(addr));
  out_t[lane * 2] = r0; out_t[lane * 2 + 1] = r1;
}
// a 3-stage cp.async pipeline: tile i+2 is in flight while tile i is summed; the tail uses src-size zero fill
extern "C" __global__ void pipeline(const float* x, float* out, int n, int tail_valid) {
  __shared__ __align__(16) float buf[3][128];
  int t = threadIdx.x;  // 32 threads, each copies 16 bytes (4 floats) per stage
  int ntiles = n / 128;
  float acc = 0.f;
  for (int s = 0; s < 2; s++) {
    unsigned dst = (unsigned)__cvta_generic_to_shared(&buf[s][t * 4]);
    int valid = (s == ntiles - 1) ? tail_valid : 16;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(x + s * 128 + t * 4), "r"(valid));
    asm volatile("cp.async.commit_group;");
  }
  for (int i = 0; i < ntiles; i++) {
    if (i + 2 < ntiles) {
      unsigned dst = (unsigned)__cvta_generic_to_shared(&buf[(i + 2) % 3][t * 4]);
      int valid = (i + 2 == ntiles - 1) ? tail_valid : 16;
      asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(x + (i + 2) * 128 + t * 4),
                   "r"(valid));
    }
    asm volatile("cp.async.commit_group;");
    asm volatile("cp.async.wait_group 2;");
    __syncwarp();
    for (int k = 0; k < 4; k++) acc += buf[i % 3][t * 4 + k];
    __syncwarp();
  }
  out[t] = acc;
}
"""


@pytest.fixture(scope="module")
def mod(cuda_ptx):
    return ptxsim.load_ptx(cuda_ptx(SRC))


def test_mma_m16n8k16_bf16(mod, rng):
    nw = 3
    A = rng.standard_normal((nw, 16, 16)).astype(ml_dtypes.bfloat16)
    B = rng.standard_normal((nw, 16, 8)).astype(ml_dtypes.bfloat16)
    C = rng.standard_normal((16, 8)).astype(np.float32)
    D = np.zeros((nw, 16, 8), np.float32)
    Bt = np.ascontiguousarray(np.swapaxes(B, 1, 2))
    ptxsim.launch(mod.kernel("mma_bf16"), nw, 32, [A.view(np.uint16), Bt.view(np.uint16), C, D])
    ref = A.astype(np.float64) @ B.astype(np.float64) + C
    np.testing.assert_allclose(D, ref, rtol=1e-5, atol=1e-5)


def test_mma_needs_a_converged_warp(mod):
    A = np.zeros(256, np.uint16)
    with pytest.raises(ptxsim.PtxSimError, match="32 lanes"):
        ptxsim.launch(mod.kernel("mma_bf16"), 1, 16,
                      [A, A[:128].copy(), np.zeros(128, np.float32), np.zeros(128, np.float32)])


def test_ldmatrix_x4_and_trans(mod, rng):
    M = rng.integers(0, 1 << 16, 256).astype(np.uint16)
    out, out_t = np.zeros(128, np.uint32), np.zeros(64, np.uint32)
    ptxsim.launch(mod.kernel("ldm"), 1, 32, [M, out, out_t])
    mats = M.reshape(4, 8, 8).astype(np.uint32)
    lane = np.arange(32)
    g, t = lane // 4, lane % 4
    for q in range(4):
        want = mats[q, g, 2 * t] | (mats[q, g, 2 * t + 1] << 16)
        np.testing.assert_array_equal(out.reshape(32, 4)[:, q], want)
    for q in range(2):
        mt = mats[q].T
        want = mt[g, 2 * t] | (mt[g, 2 * t + 1] << 16)
        np.testing.assert_array_equal(out_t.reshape(32, 2)[:, q], want)


def test_cp_async_pipeline_with_zero_fill(mod, rng):
    ntiles, tail_valid = 6, 8  # the last tile copies only 8 of each 16 bytes, the rest is zero-filled
    x = rng.standard_normal(ntiles * 128).astype(np.float32)
    out = np.zeros(32, np.float32)
    ptxsim.launch(mod.kernel("pipeline"), 1, 32, [x, out, np.int32(ntiles * 128), np.int32(tail_valid)])
    tiles = x.reshape(ntiles, 32, 4).copy()
    tiles[-1, :, 2:] = 0
    np.testing.assert_allclose(out, tiles.sum(axis=(0, 2), dtype=np.float64), rtol=1e-5, atol=1e-5)

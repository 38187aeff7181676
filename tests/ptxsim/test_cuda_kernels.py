"""PTX from NVRTC (small CUDA C kernels) run through ptxsim and checked against NumPy."""
import ml_dtypes
import numpy as np
import pytest

import ptxsim

pytestmark = pytest.mark.sim

SRC = r"""
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_fp16.h>
extern "C" __global__ void block_sum(const float* x, float* out, int n) {
  __shared__ float s[256];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  s[t] = i < n ? x[i] : 0.f;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) { if (t < k) s[t] += s[t + k]; __syncthreads(); }
  if (t == 0) out[blockIdx.x] = s[0];
}
extern "C" __global__ void warp_ops(const int* x, int* xor_sum, int* up_scan, int* seg_idx, int* down8) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = x[i], s = v;
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
  xor_sum[i] = s;
  int c = v;
  for (int o = 1; o < 32; o <<= 1) { int u = __shfl_up_sync(0xffffffff, c, o); if ((threadIdx.x & 31) >= o) c += u; }
  up_scan[i] = c;
  seg_idx[i] = __shfl_sync(0xffffffff, v, 3, 8);      // lane 3 of each 8-lane segment
  down8[i] = __shfl_down_sync(0xffffffff, v, 5, 16);  // clamps within 16-lane segments
}
extern "C" __global__ void atomics(const int* x, int* hist, int* ticket, int* tickets, int* mx, unsigned* wrap,
                                   int* exch, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  atomicAdd(&hist[x[i] & 7], 1);
  tickets[i] = atomicAdd(ticket, 1);
  atomicMax(mx, x[i]);
  atomicInc(wrap, 9u);
  atomicExch(exch, i);
}
extern "C" __global__ void cas_max(const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int* addr = (int*)out; int old = *addr, assumed;
  do { assumed = old; if (__int_as_float(assumed) >= x[i]) break;
       old = atomicCAS(addr, assumed, __float_as_int(x[i])); } while (assumed != old);
}
extern "C" __global__ void scan(const int* x, int* y) {
  __shared__ int s[256];
  int t = threadIdx.x; s[t] = x[blockIdx.x * 256 + t]; __syncthreads();
  for (int o = 1; o < 256; o <<= 1) { int v = t >= o ? s[t - o] : 0; __syncthreads(); s[t] += v; __syncthreads(); }
  y[blockIdx.x * 256 + t] = s[t];
}
extern "C" __global__ void transpose(const float* a, float* b, int n) {
  __shared__ float tile[32][33];
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) tile[threadIdx.y + j][threadIdx.x] = a[(y + j) * n + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x; y = blockIdx.x * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) b[(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}
extern "C" __global__ void gemm(const float* A, const float* B, float* C, int M, int N, int K) {
  __shared__ float As[16][16], Bs[16][16];
  int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += 16) {
    As[threadIdx.y][threadIdx.x] = A[r * K + k0 + threadIdx.x];
    Bs[threadIdx.y][threadIdx.x] = B[(k0 + threadIdx.y) * N + c];
    __syncthreads();
    for (int k = 0; k < 16; k++) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  C[r * N + c] = acc;
}
extern "C" __global__ void bitonic(float* x) {
  __shared__ float s[512];
  int t = threadIdx.x, base = blockIdx.x * 512;
  s[t] = x[base + t]; s[t + 256] = x[base + t + 256];
  __syncthreads();
  for (int k = 2; k <= 512; k <<= 1)
    for (int j = k >> 1; j > 0; j >>= 1) {
      for (int i = t; i < 512; i += 256) {
        int p = i ^ j;
        if (p > i) { bool up = (i & k) == 0; float a = s[i], b = s[p];
                     if ((a > b) == up) { s[i] = b; s[p] = a; } }
      }
      __syncthreads();
    }
  x[base + t] = s[t]; x[base + t + 256] = s[t + 256];
}
extern "C" __global__ void softmax(const float* x, float* y, int cols) {
  int row = blockIdx.x, lane = threadIdx.x;
  const float* xr = x + row * cols;
  float m = -__int_as_float(0x7f800000);
  for (int c = lane; c < cols; c += 32) m = fmaxf(m, xr[c]);
  for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
  float s = 0.f;
  for (int c = lane; c < cols; c += 32) s += __expf(xr[c] - m);
  for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
  for (int c = lane; c < cols; c += 32) y[row * cols + c] = __expf(xr[c] - m) / s;
}
extern "C" __global__ void intrinsics(const unsigned* a, const unsigned* b, unsigned* out) {
  int i = threadIdx.x; unsigned x = a[i], y = b[i];
  unsigned* o = out + i * 12;
  o[0] = __popc(x); o[1] = __clz(x); o[2] = __brev(x); o[3] = __byte_perm(x, y, 0x5140);
  o[4] = __funnelshift_l(x, y, y & 63); o[5] = __funnelshift_r(x, y, y & 63); o[6] = __umulhi(x, y);
  o[7] = (unsigned)__mulhi((int)x, (int)y); o[8] = __ffs(x); o[9] = __sad((int)x, (int)y, 7u);
  o[10] = (unsigned)__dp4a((int)x, (int)y, 3); o[11] = (unsigned)((int)x >> (y & 31)) ^ (x / (y | 1u)) ^ (x % (y | 1u));
}
extern "C" __global__ void convert(const float* x, unsigned* bf, unsigned short* e4, unsigned short* e5,
                                   unsigned* h2, int* ri, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;
  float a = x[2 * i], b = x[2 * i + 1];
  __nv_bfloat162 v = __floats2bfloat162_rn(a, b); bf[i] = *(unsigned*)&v;
  e4[i] = __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3);
  e5[i] = __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E5M2);
  __half2 h = __floats2half2_rn(a, b); h2[i] = *(unsigned*)&h;
  ri[i] = __float2int_rn(a);
}
__device__ __noinline__ float axpb(float a, int b, float* scratch) { scratch[b & 3] += a; return a * b + 1.0f; }
extern "C" __global__ void calls_local(const float* x, float* y, int* idx) {
  int i = threadIdx.x; float loc[16]; float scratch[4] = {0, 0, 0, 0};
  for (int k = 0; k < 16; k++) loc[k] = x[(i + k) % 64];
  int j = idx[i] & 15;
  y[i] = axpb(loc[j], i, scratch) + scratch[i & 3];
}
extern "C" __global__ void doubles(const double* x, double* y) {
  int i = threadIdx.x; double v = x[i];
  y[4 * i] = sqrt(v); y[4 * i + 1] = v / 3.0; y[4 * i + 2] = fma(v, v, -1.0); y[4 * i + 3] = (double)(float)v * v;
}
extern "C" __global__ void dyn_smem_3d(int* out) {
  extern __shared__ int buf[];
  int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  int nt = blockDim.x * blockDim.y * blockDim.z;
  int cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  buf[t] = t * 3 + cta;
  __syncthreads();
  out[cta * nt + t] = buf[nt - 1 - t];
}
extern "C" __global__ void votes(const int* x, unsigned* ballot, int* anyall, unsigned* match, int* red) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; int v = x[i];
  if (v >= 0) {
    ballot[i] = __ballot_sync(__activemask(), v & 1);
    anyall[i] = __any_sync(__activemask(), v > 50) * 2 + __all_sync(__activemask(), v > 5);
    match[i] = __match_any_sync(__activemask(), v % 4);
    red[i] = __reduce_add_sync(__activemask(), v) ^ __reduce_max_sync(__activemask(), (unsigned)v);
  }
}
"""

K = {}


@pytest.fixture(scope="module")
def mod(cuda_ptx):
    return ptxsim.load_ptx(cuda_ptx(SRC))


def test_block_sum(mod, rng):
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(4, np.float32)
    ptxsim.launch(mod.kernel("block_sum"), 4, 256, [x, out, np.int32(n)])
    ref = np.pad(x, (0, 24)).reshape(4, 256).astype(np.float64).sum(axis=1)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_warp_shuffles(mod, rng):
    x = rng.integers(-1000, 1000, 128).astype(np.int32)
    outs = [np.zeros(128, np.int32) for _ in range(4)]
    ptxsim.launch(mod.kernel("warp_ops"), 2, 64, [x] + outs)
    w = x.reshape(-1, 32)
    np.testing.assert_array_equal(outs[0], np.repeat(w.sum(axis=1), 32))
    np.testing.assert_array_equal(outs[1], np.cumsum(w, axis=1).reshape(-1))
    np.testing.assert_array_equal(outs[2], np.repeat(x.reshape(-1, 8)[:, 3], 8))
    lane = np.arange(128) % 16
    src = np.where(lane + 5 < 16, np.arange(128) + 5, np.arange(128))
    np.testing.assert_array_equal(outs[3], x[src])


def test_atomics_with_collisions(mod, rng):
    n = 1000
    x = rng.integers(0, 1 << 20, n).astype(np.int32)
    hist, ticket, tickets = np.zeros(8, np.int32), np.zeros(1, np.int32), np.zeros(n, np.int32)
    mx, wrap, exch = np.full(1, -1, np.int32), np.zeros(1, np.uint32), np.full(1, -1, np.int32)
    ptxsim.launch(mod.kernel("atomics"), 4, 256, [x, hist, ticket, tickets, mx, wrap, exch, np.int32(n)])
    np.testing.assert_array_equal(hist, np.bincount(x & 7, minlength=8))
    assert ticket[0] == n
    np.testing.assert_array_equal(np.sort(tickets), np.arange(n))  # every lane saw a distinct old value
    assert mx[0] == x.max()
    assert wrap[0] == n % 10  # atomicInc wraps within [0, 9]
    assert 0 <= exch[0] < n


def test_cas_loop_max(mod, rng):
    x = rng.standard_normal(700).astype(np.float32)
    out = np.full(1, -np.inf, np.float32)
    ptxsim.launch(mod.kernel("cas_max"), 3, 256, [x, out, np.int32(700)])
    assert out[0] == x.max()


def test_scan_and_transpose(mod, rng):
    x = rng.integers(-50, 50, 512).astype(np.int32)
    y = np.zeros(512, np.int32)
    ptxsim.launch(mod.kernel("scan"), 2, 256, [x, y])
    np.testing.assert_array_equal(y, np.cumsum(x.reshape(2, 256), axis=1).reshape(-1))
    n = 64
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = np.zeros_like(a)
    ptxsim.launch(mod.kernel("transpose"), (2, 2), (32, 8), [a, b, np.int32(n)])
    np.testing.assert_array_equal(b, a.T)


def test_tiled_gemm(mod, rng):
    M, N, K_ = 32, 48, 64
    A = rng.standard_normal((M, K_)).astype(np.float32)
    B = rng.standard_normal((K_, N)).astype(np.float32)
    C = np.zeros((M, N), np.float32)
    ptxsim.launch(mod.kernel("gemm"), (N // 16, M // 16), (16, 16), [A, B, C, np.int32(M), np.int32(N), np.int32(K_)])
    np.testing.assert_allclose(C, A.astype(np.float64) @ B.astype(np.float64), rtol=1e-4, atol=1e-4)


def test_bitonic_sort(mod, rng):
    x = rng.standard_normal(1024).astype(np.float32)
    ref = np.sort(x.reshape(2, 512), axis=1).reshape(-1)
    ptxsim.launch(mod.kernel("bitonic"), 2, 256, [x])
    np.testing.assert_array_equal(x, ref)


def test_softmax(mod, rng):
    rows, cols = 5, 200
    x = (rng.standard_normal((rows, cols)) * 3).astype(np.float32)
    y = np.zeros_like(x)
    ptxsim.launch(mod.kernel("softmax"), rows, 32, [x, y, np.int32(cols)])
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=2e-5, atol=1e-7)


def _ref_intrinsics(a, b):
    a64, b64 = a.astype(np.uint64), b.astype(np.uint64)
    out = np.zeros((len(a), 12), np.uint64)
    out[:, 0] = [bin(int(v)).count("1") for v in a]
    out[:, 1] = [32 - int(v).bit_length() for v in a]
    out[:, 2] = [int(f"{int(v):032b}"[::-1], 2) for v in a]
    pool = a64 | (b64 << np.uint64(32))
    sel = [0, 4, 1, 5]
    out[:, 3] = sum(((pool >> np.uint64(8 * s)) & np.uint64(0xFF)) << np.uint64(8 * k) for k, s in enumerate(sel))
    sh = (b64 & np.uint64(63)).astype(np.int64)
    v = [(int(hi) << 32) | int(lo) for lo, hi in zip(a, b, strict=True)]
    out[:, 4] = [((x << (int(s) & 31)) >> 32) & 0xFFFFFFFF for x, s in zip(v, sh, strict=True)]  # wrap mode
    out[:, 5] = [(x >> (int(s) & 31)) & 0xFFFFFFFF for x, s in zip(v, sh, strict=True)]
    out[:, 6] = (a64 * b64) >> np.uint64(32)
    out[:, 7] = [((int(x) * int(y)) >> 32) & 0xFFFFFFFF
                 for x, y in zip(a.view(np.int32), b.view(np.int32), strict=True)]
    out[:, 8] = [(int(v) & -int(v)).bit_length() for v in a]
    out[:, 9] = (np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32).astype(np.int64)) + 7) & 0xFFFFFFFF
    ab = a.view(np.int8).reshape(-1, 4).astype(np.int64) * b.view(np.int8).reshape(-1, 4).astype(np.int64)
    out[:, 10] = (ab.sum(axis=1) + 3) & 0xFFFFFFFF
    sra = (a.view(np.int32) >> (b & 31).astype(np.int32)).view(np.uint32).astype(np.uint64)
    out[:, 11] = sra ^ (a64 // (b64 | np.uint64(1))) ^ (a64 % (b64 | np.uint64(1)))
    return out.astype(np.uint32)


def test_integer_intrinsics(mod, rng):
    a = rng.integers(0, 1 << 32, 64, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 1 << 32, 64, dtype=np.uint64).astype(np.uint32)
    a[:4] = [0, 1, 0x80000000, 0xFFFFFFFF]
    out = np.zeros(64 * 12, np.uint32)
    ptxsim.launch(mod.kernel("intrinsics"), 1, 64, [a, b, out])
    np.testing.assert_array_equal(out.reshape(64, 12), _ref_intrinsics(a, b))


def test_bf16_fp8_f16_conversions(mod, rng):
    n = 256
    x = (rng.standard_normal(2 * n) * rng.choice([1e-3, 1.0, 100.0, 1e5], 2 * n)).astype(np.float32)
    x[:8] = [np.nan, np.inf, -np.inf, 448.0, 464.0, -1e9, 57344.0 * 2, 2.0**-12]
    bf, e4, e5 = np.zeros(n, np.uint32), np.zeros(n, np.uint16), np.zeros(n, np.uint16)
    h2, ri = np.zeros(n, np.uint32), np.zeros(n, np.int32)
    ptxsim.launch(mod.kernel("convert"), 2, 128, [x, bf, e4, e5, h2, ri, np.int32(n)])
    a, b = x[0::2], x[1::2]

    def bfbits(v):
        return v.astype(ml_dtypes.bfloat16).view(np.uint16)
    np.testing.assert_array_equal(bf >> 16, bfbits(b))  # the second float goes to the high half
    np.testing.assert_array_equal(bf & 0xFFFF, bfbits(a))

    def f8(v, dt, m):
        q = np.where(np.isnan(v), v, np.clip(v, -m, m)).astype(dt).view(np.uint8)
        return np.where(np.isnan(v), 0x7F, q)
    np.testing.assert_array_equal(e4 >> 8, f8(b, ml_dtypes.float8_e4m3fn, 448))
    np.testing.assert_array_equal(e4 & 0xFF, f8(a, ml_dtypes.float8_e4m3fn, 448))
    np.testing.assert_array_equal(e5 >> 8, f8(b, ml_dtypes.float8_e5m2, 57344))
    np.testing.assert_array_equal(e5 & 0xFF, f8(a, ml_dtypes.float8_e5m2, 57344))
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(h2 & 0xFFFF, a.astype(np.float16).view(np.uint16))
        np.testing.assert_array_equal(h2 >> 16, b.astype(np.float16).view(np.uint16))
        fin = np.isfinite(a)
        want = np.where(np.isnan(a), 0, np.clip(np.rint(np.where(fin, a, 0)), -2**31, 2**31 - 1))
        want = np.where(np.isposinf(a), 2**31 - 1, np.where(np.isneginf(a), -2**31, want))
    np.testing.assert_array_equal(ri, want.astype(np.int64))


def test_device_function_call_and_local_arrays(mod, rng):
    x = rng.uniform(0, 8, 64).astype(np.float32)
    idx = rng.integers(0, 1000, 64).astype(np.int32)
    y = np.zeros(64, np.float32)
    ptxsim.launch(mod.kernel("calls_local"), 1, 64, [x, y, idx])
    i = np.arange(64)
    loc = x[(i + (idx & 15)) % 64].astype(np.float64)
    ref = (loc * i + 1).astype(np.float32) + loc.astype(np.float32)  # fma rounds once
    np.testing.assert_array_equal(y, ref)


def test_doubles(mod, rng):
    x = rng.uniform(0.1, 100, 32)
    y = np.zeros(128)
    ptxsim.launch(mod.kernel("doubles"), 1, 32, [x, y])
    y = y.reshape(32, 4)
    np.testing.assert_array_equal(y[:, 0], np.sqrt(x))
    np.testing.assert_array_equal(y[:, 1], x / 3.0)
    from fractions import Fraction
    exact = [float(Fraction(v) * Fraction(v) - 1) for v in x]  # correctly rounded fma
    np.testing.assert_array_equal(y[:, 2], exact)
    np.testing.assert_array_equal(y[:, 3], x.astype(np.float32).astype(np.float64) * x)


def test_dynamic_shared_and_3d_ids(mod):
    grid, block = (2, 3, 2), (4, 2, 3)
    nt, nc = 24, 12
    out = np.zeros(nt * nc, np.int32)
    ptxsim.launch(mod.kernel("dyn_smem_3d"), grid, block, [out], shared_bytes=nt * 4)
    t, c = np.meshgrid(np.arange(nt), np.arange(nc))
    np.testing.assert_array_equal(out, ((nt - 1 - t) * 3 + c).reshape(-1))


def test_votes_match_redux_with_divergence(mod, rng):
    x = rng.integers(-20, 100, 64).astype(np.int32)
    outs = [np.zeros(64, np.uint32), np.zeros(64, np.int32), np.zeros(64, np.uint32), np.zeros(64, np.int32)]
    ptxsim.launch(mod.kernel("votes"), 1, 64, [x] + outs)
    for w in range(2):
        sl = slice(32 * w, 32 * w + 32)
        v = x[sl]
        act = v >= 0
        lanes = np.flatnonzero(act)
        ballot = sum(1 << int(lane) for lane in lanes if v[lane] & 1)
        assert np.all(outs[0][sl][act] == ballot)
        want = int(np.any(v[act] > 50)) * 2 + int(np.all(v[act] > 5))
        assert np.all(outs[1][sl][act] == want)
        for lane in lanes:
            m = sum(1 << int(k) for k in lanes if v[k] % 4 == v[lane] % 4)
            assert outs[2][sl][lane] == m
        assert np.all(outs[3][sl][act] == (int(v[act].sum()) ^ int(v[act].max())))
        assert np.all(outs[0][sl][~act] == 0)  # inactive lanes wrote nothing


def test_cta_batches_with_a_remainder_give_the_same_results_and_counts(mod, rng):
    x = rng.integers(-50, 50, 5 * 256).astype(np.int32)
    y1, y2 = np.zeros_like(x), np.zeros_like(x)
    one = ptxsim.launch(mod.kernel("scan"), 5, 256, [x, y1], max_lanes=1 << 15)  # all 5 CTAs in one lane vector
    split = ptxsim.launch(mod.kernel("scan"), 5, 256, [x, y2], max_lanes=512)  # batches of 2, 2 and 1 CTAs
    np.testing.assert_array_equal(y1, np.cumsum(x.reshape(5, 256), axis=1).reshape(-1))
    np.testing.assert_array_equal(y2, y1)
    for key in ("smsp__inst_executed.sum", "smsp__thread_inst_executed.sum",
                "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"):
        assert one.metrics[key] == split.metrics[key], key

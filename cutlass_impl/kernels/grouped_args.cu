// The cutlass layer's argument builder (cutlass_impl/device_args.py): turns the routing align made on the device
// (block_expert, total_padded) into the arguments CUTLASS's grouped (pointer-array) GEMM reads from device memory,
// so no host reads the routing inside a layer call. One group per routing block b (G = n_blocks, fixed on the host):
// group b is the run of consecutive live blocks of one expert e >= 0 that starts at block b (b = 0 or block b - 1 of
// another expert), M = its rows, A = a + its first row, B = w[e], D = c + its first row, and for FP8 SFA = a_scale
// at its first row (K-major: the contract's rows), SFB = w_scale[e]; every other group is empty (M = 0, pointers at
// the tensors' bases, never read: the scheduler gives an empty group no tile). These are cutlass_impl.grouped_gemm's
// expert_runs exactly, each at the index of its first block. A block of an expert outside [0, E) is treated as
// empty, as -1 is (its rows keep the poison: the check fails, as the host plan would have refused it).
// shapes: G x (M, N, K) int32, CUTLASS's GroupProblemShape<Shape<int, int, int>> layout (the shim checks 12 bytes).
// The stride arrays depend on N and K only and are written once by the host (CUTLASS's own code, the shim).

extern "C" __global__ void __launch_bounds__(256) cutlass_group_args(
    const int* __restrict__ block_expert, const int* __restrict__ total_padded, int* __restrict__ shapes,
    unsigned long long* __restrict__ ptr_a, unsigned long long* __restrict__ ptr_b,
    unsigned long long* __restrict__ ptr_d, unsigned long long* __restrict__ ptr_sfa,
    unsigned long long* __restrict__ ptr_sfb, unsigned long long a, unsigned long long w, unsigned long long c,
    unsigned long long a_scale, unsigned long long w_scale, unsigned n_blocks, unsigned bm, unsigned n,
    unsigned kd, unsigned a_bytes, unsigned n_experts, unsigned with_scales) {
  const int tp = total_padded[0];
  const unsigned live = tp <= 0 ? 0u : min(unsigned(tp) / bm, n_blocks);
  const unsigned long long kb = kd / 128u;  // FP8: one scale per 128 of K (the host checks kd % 128 == 0)
  for (unsigned b = blockIdx.x * blockDim.x + threadIdx.x; b < n_blocks; b += gridDim.x * blockDim.x) {
    const int e = b < live ? block_expert[b] : -1;
    const bool real = e >= 0 && unsigned(e) < n_experts;
    const bool starts = real && (b == 0 || block_expert[b - 1] != e);
    unsigned end = b + 1;
    if (starts) {
      while (end < live && block_expert[end] == e) ++end;
    }
    const unsigned long long row0 = (unsigned long long)b * bm;
    const unsigned long long ex = real ? (unsigned long long)e : 0ull;
    shapes[3 * b] = starts ? int((end - b) * bm) : 0;
    shapes[3 * b + 1] = int(n);
    shapes[3 * b + 2] = int(kd);
    ptr_a[b] = a + row0 * kd * a_bytes;
    ptr_b[b] = w + ex * n * kd * a_bytes;
    ptr_d[b] = c + row0 * n * 2ull;  // bf16 D (C is the same array: beta 0, never read)
    if (with_scales) {
      ptr_sfa[b] = a_scale + row0 * kb * 4ull;
      ptr_sfb[b] = w_scale + ex * (n / 128u) * kb * 4ull;
    }
  }
}

// The grouped (pointer-array) kernels' instantiation, included by their device translation units after the kernel
// header (which defines ptxmoe_cutlass::GemmKernel): cutlass::device_kernel, or with a cluster of more than one CTA
// the same kernel with the cluster shape fixed at compile time.
#pragma once
#if PTXMOE_CLUSTER_M * PTXMOE_CLUSTER_N > 1
namespace ptxmoe_cutlass {
// cutlass::device_kernel (cutlass/device_kernel.h) with the cluster shape fixed at compile time (__cluster_dims__:
// .reqnctapercluster in the PTX, which cuLaunchKernel and ptxsim honour, so the harness launches it as any grid;
// CUTLASS's own launcher passes the same cluster shape at launch time instead)
template <class Operator>
__global__ void __launch_bounds__(Operator::MaxThreadsPerBlock, Operator::MinBlocksPerMultiprocessor)
    __cluster_dims__(PTXMOE_CLUSTER_M, PTXMOE_CLUSTER_N, 1)
    cluster_kernel(__grid_constant__ typename Operator::Params const params) {
  extern __shared__ char smem[];
  Operator op;
  op(params, smem);
}
}  // namespace ptxmoe_cutlass
template __global__ void ptxmoe_cutlass::cluster_kernel<ptxmoe_cutlass::GemmKernel>(
    __grid_constant__ typename ptxmoe_cutlass::GemmKernel::Params const);
#else
template __global__ void cutlass::device_kernel<ptxmoe_cutlass::GemmKernel>(
    __grid_constant__ typename ptxmoe_cutlass::GemmKernel::Params const);
#endif

// Device translation unit for NVRTC (cutlass_impl/build.py): CUTLASS's kernel, instantiated as declared.
#include <cuda/std/type_traits>
// NOTE: two std:: names CUTLASS's epilogue headers use that NVRTC's libcu++ has only under cuda::std
namespace std { using cuda::std::is_pointer_v; using cuda::std::void_t; }
#include "cutlass/cutlass.h"
#include "cute/tensor.hpp"
#include "cutlass/device_kernel.h"
#include "gemm_fp8_blockwise_grouped_sm90.h"
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

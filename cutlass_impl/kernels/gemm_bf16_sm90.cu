// Device translation unit for NVRTC (cutlass_impl/build.py): CUTLASS's kernel, instantiated as declared.
#include "nvrtc_unit.h"
#include "gemm_bf16_sm90.h"
template __global__ void cutlass::device_kernel<ptxmoe_cutlass::GemmKernel>(
    __grid_constant__ typename ptxmoe_cutlass::GemmKernel::Params const);

// Device translation unit for NVRTC (cutlass_impl/build.py): CUTLASS's kernel, instantiated as declared.
#include <cuda/std/type_traits>
// NOTE: two std:: names CUTLASS's epilogue headers use that NVRTC's libcu++ has only under cuda::std
namespace std { using cuda::std::is_pointer_v; using cuda::std::void_t; }
#include "cutlass/cutlass.h"
#include "cute/tensor.hpp"
#include "cutlass/device_kernel.h"
#include "gemm_bf16_grouped_sm90.h"
template __global__ void cutlass::device_kernel<ptxmoe_cutlass::GemmKernel>(
    __grid_constant__ typename ptxmoe_cutlass::GemmKernel::Params const);

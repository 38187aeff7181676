// What every device translation unit here (gemm_*_sm90.cu) includes before its kernel header, for NVRTC
// (cutlass_impl/build.py): libcu++'s type traits, the two std:: names below, CUTLASS, CuTe and cutlass::device_kernel.
#pragma once
#include <cuda/std/type_traits>
// NOTE: two std:: names CUTLASS's epilogue headers use that NVRTC's libcu++ has only under cuda::std
namespace std { using cuda::std::is_pointer_v; using cuda::std::void_t; }
#include "cutlass/cutlass.h"
#include "cute/tensor.hpp"
#include "cutlass/device_kernel.h"

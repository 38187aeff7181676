// What CUTLASS's host code needs from nvcc when g++ compiles it (cutlass_impl/build.py builds the host shims so):
// the device built-ins its device-only code names, declared (never called host-side), and the toolkit version its
// TMA-descriptor code checks before it encodes. cuTensorMapEncodeTiled is the shim's own recorder, called directly.
#pragma once
#include <cuda.h>
#include <vector_types.h>
static uint3 threadIdx, blockIdx, blockDim, gridDim;
inline void __syncthreads() {}
inline void __syncwarp(unsigned = 0xffffffffu) {}
#define CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL
#include "cutlass/cutlass.h"
#include "cutlass/arch/arch.h"
namespace cutlass { namespace arch { inline int SmId() { return 0; } inline int LaneId() { return 0; } } }
#include "cutlass/arch/wmma.h"  // first, while no toolkit version is set: g++ has no nvcuda::wmma
#define __CUDACC_VER_MAJOR__ 12
#define __CUDACC_VER_MINOR__ 9
#include "cute/tensor.hpp"

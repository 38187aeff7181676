// Device translation unit for NVRTC (cutlass_impl/build.py): CUTLASS's kernel, instantiated as declared.
#include "nvrtc_unit.h"
#include "gemm_fp8_blockwise_grouped_sm90.h"
#include "grouped_instance.h"

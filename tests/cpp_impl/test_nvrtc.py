"""cpp_impl.nvrtc: CUDA C++ -> PTX from the wheel, cached by digest; errors carry NVRTC's file:line log."""
import pytest

from contract.errors import BuildError
from cpp_impl import nvrtc

SRC = r'''
#include <cuda_bf16.h>
extern "C" __global__ void scale(const __nv_bfloat16* __restrict__ x, float* __restrict__ y, float a, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * __bfloat162float(__ldg(x + i)) * SCALE;
}
'''


def test_compiles_with_wheel_headers_and_defines():
    ptx = nvrtc.compile_source(SRC, "scale.cu", options=("-DSCALE=3",))
    assert ".visible .entry scale(" in ptx  # extern "C": unmangled entry
    assert ".target sm_90" in ptx
    assert "ld.global.nc" in ptx  # __ldg
    assert nvrtc.compile_source(SRC, "scale.cu", options=("-DSCALE=3",)) is ptx  # cached per digest


def test_error_names_file_and_line():
    bad = SRC.replace("unsigned i =", "unsigned i = undefined_name +")
    with pytest.raises(BuildError, match=r"bad\.cu\(4\): error: identifier \"undefined_name\" is undefined"):
        nvrtc.compile_source(bad, "bad.cu", options=("-DSCALE=3",))


def test_missing_kernel_file_is_named():
    with pytest.raises(BuildError, match="no kernel source .*nope.cu"):
        nvrtc.compile_file("nope.cu")

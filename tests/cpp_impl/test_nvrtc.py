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


CG_SRC = r'''
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
extern "C" __global__ void __launch_bounds__(64) tile_max(const unsigned* __restrict__ a, unsigned* __restrict__ b) {
    auto tile = cg::tiled_partition<16>(cg::this_thread_block());
    b[threadIdx.x] = cg::reduce(tile, a[threadIdx.x], cg::greater<unsigned>());
}
'''


def test_cooperative_groups_compile_and_run_on_ptxsim():
    """cooperative_groups needs <nv/target> (the cccl wheel); its 16-lane tile reduction is one redux.sync per half
    warp with that half's membermask, which ptxsim reduces per mask."""
    import numpy as np

    import ptxsim

    ptx = nvrtc.compile_source(CG_SRC, "cg.cu")
    assert "redux.sync.max.u32" in ptx
    a = np.random.default_rng(5).integers(0, 1 << 30, 64).astype(np.uint32)
    b = np.zeros(64, np.uint32)
    ptxsim.launch(ptxsim.load_ptx(ptx).kernel("tile_max"), 1, 64, [a, b])
    np.testing.assert_array_equal(b, np.repeat(a.reshape(4, 16).max(axis=1), 16))

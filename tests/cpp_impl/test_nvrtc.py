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


WMMA_SRC = r'''
#include <mma.h>
using namespace nvcuda;
extern "C" __global__ void wmma_one(const half* a, const half* b, float* c) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
'''


@pytest.fixture
def only_site(monkeypatch, tmp_path):
    """cuda.pathfinder searching `tmp_path/site` as the only site-packages and $CUDA_HOME (a missing folder), nvrtc's
    caches cleared."""
    from cuda.pathfinder._headers import find_nvidia_headers
    from cuda.pathfinder._utils.find_sub_dirs import find_sub_dirs_no_cache

    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.setattr(find_nvidia_headers, "find_sub_dirs_all_sitepackages",
                        lambda sub_dirs: find_sub_dirs_no_cache([str(site)], sub_dirs))
    # NOTE: only the wheel and $CUDA_HOME steps: no probe of a system CUDA (this machine may have one)
    monkeypatch.setattr(find_nvidia_headers, "FIND_STEPS", (find_nvidia_headers.find_in_site_packages,
                                                            find_nvidia_headers.find_in_cuda_path))
    for var in ("CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "no-cuda-here"))
    monkeypatch.setattr(nvrtc, "_CACHE", {})
    find_nvidia_headers.locate_nvidia_header_directory.cache_clear()
    nvrtc.include_dirs.cache_clear()
    yield site
    find_nvidia_headers.locate_nvidia_header_directory.cache_clear()
    nvrtc.include_dirs.cache_clear()


def _wheel_dirs():
    """The CUDA 12 wheels' header folders this environment has (runtime, crt, cccl)."""
    from pathlib import Path

    import nvidia.cuda_cccl
    import nvidia.cuda_nvcc
    import nvidia.cuda_runtime

    return tuple(Path(next(iter(m.__path__))) / "include" for m in (nvidia.cuda_runtime, nvidia.cuda_nvcc,
                                                                     nvidia.cuda_cccl))


def test_cuda13_wheel_layout_alone_compiles_cooperative_groups_and_wmma(only_site):
    """CUDA 13 wheels: one nvidia/cu13/include with crt/ in it and CCCL under include/cccl, no cuda_runtime or
    cuda_nvcc packages (built here from the CUDA 12 wheels' files by links)."""
    runtime, crt, cccl = _wheel_dirs()
    inc = only_site / "nvidia" / "cu13" / "include"
    inc.mkdir(parents=True)
    for entry in runtime.iterdir():
        (inc / entry.name).symlink_to(entry)
    (inc / "crt").symlink_to(crt / "crt")
    (inc / "cccl").mkdir()  # a folder of links: pathfinder resolves links, a linked folder would name the wheel's
    for entry in cccl.iterdir():
        (inc / "cccl" / entry.name).symlink_to(entry)
    assert nvrtc.include_dirs() == (str(inc), str(inc / "cccl"))
    assert "redux.sync.max.u32" in nvrtc.compile_source(CG_SRC, "cg.cu")
    assert "wmma.mma.sync" in nvrtc.compile_source(WMMA_SRC, "wmma.cu")


def test_crt_is_optional_and_cuda_home_is_the_fallback(only_site, monkeypatch, tmp_path):
    runtime, _, cccl = _wheel_dirs()
    home = tmp_path / "cuda"
    (home / "include").mkdir(parents=True)
    for entry in runtime.iterdir():
        (home / "include" / entry.name).symlink_to(entry)
    (home / "include" / "cccl").mkdir()
    for entry in cccl.iterdir():
        (home / "include" / "cccl" / entry.name).symlink_to(entry)
    monkeypatch.setenv("CUDA_HOME", str(home))
    assert nvrtc.include_dirs() == (str(home / "include"), str(home / "include" / "cccl"))  # no crt/: not asked for
    assert ".visible .entry scale(" in nvrtc.compile_source(SRC, "scale.cu", options=("-DSCALE=2",))
    with pytest.raises(BuildError, match="crt/mma.h"):  # only a wmma kernel misses it, with NVRTC's own message
        nvrtc.compile_source(WMMA_SRC, "wmma.cu")


def test_no_headers_anywhere_says_where_it_looked(only_site, tmp_path):
    with pytest.raises(BuildError, match=r"no cuda_runtime.h from cuda.pathfinder .*nvidia/cu13/include.* nor in "
                                         rf"{tmp_path / 'no-cuda-here' / 'include'}"):
        nvrtc.compile_source(SRC, "scale.cu", options=("-DSCALE=1",))

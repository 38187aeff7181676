"""Fixtures for the ptxsim tests: cached NVRTC / Numba compilation to PTX."""
import functools

import pytest


@functools.lru_cache(maxsize=None)
def _nvrtc(src: str, arch: str) -> str:
    import os

    import nvidia.cuda_runtime

    from harness.toolchain import compile_cuda_to_ptx

    inc = os.path.join(list(nvidia.cuda_runtime.__path__)[0], "include")  # cuda_bf16.h, cuda_fp8.h
    return compile_cuda_to_ptx(src, "test.cu", arch=arch, options=(f"-I{inc}",))


@pytest.fixture(scope="session")
def cuda_ptx():
    """cuda_ptx(src, arch="compute_90") -> PTX text from NVRTC (cached per session)."""
    def compile_(src: str, arch: str = "compute_90") -> str:
        return _nvrtc(src, arch)
    return compile_


@pytest.fixture(scope="session")
def cuda_kernel(cuda_ptx):
    """cuda_kernel(src, name) -> ptxsim.Kernel of an extern "C" __global__ function."""
    import ptxsim

    def get(src: str, name: str, arch: str = "compute_90"):
        return ptxsim.load_ptx(cuda_ptx(src, arch)).kernel(name)
    return get

"""Module loads and shared memory as the real driver takes them (fake driver): an arch-specific `.target sm_90a` only
with CU_JIT_TARGET = CU_TARGET_COMPUTE_90A, a `.version` above the driver's refused (and then assembled by ptxas
into a cubin), the JIT's info log kept, static shared memory counted against the opt-in, and the sticky-error names
real CUresult names."""
import numpy as np
import pytest

from harness.backends import cuda_api
from harness.errors import InputError
from tests.harness.fakegpu.fakes import CUjit_option, CUjit_target, CUresult

A_MODULE = """.version 8.4
.target sm_90a
.address_size 64
.visible .entry grow(.param .u64 p)
{
    setmaxnreg.inc.sync.aligned.u32 232;
    ret;
}
"""


def _raw_load(gpu, ptx: str, target=None):
    """cuModuleLoadDataEx as the code before the fix called it: an error log, and a JIT target only when given."""
    log = bytearray(512)
    opts = [CUjit_option.CU_JIT_ERROR_LOG_BUFFER, CUjit_option.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES]
    values = [log, len(log)]
    if target is not None:
        opts.append(CUjit_option.CU_JIT_TARGET)
        values.append(target)
    err, _ = gpu.driver.cuModuleLoadDataEx(ptx.encode() + b"\x00", len(opts), opts, values)
    return err, bytes(log).split(b"\x00")[0].decode()


def test_fake_driver_refuses_an_sm_90a_module_without_an_explicit_jit_target(fake_gpu):
    err, log = _raw_load(fake_gpu, A_MODULE)
    assert err == CUresult.CUDA_ERROR_INVALID_PTX and "cannot be compiled for architecture 'sm_90'" in log
    assert _raw_load(fake_gpu, A_MODULE, CUjit_target.CU_TARGET_COMPUTE_90A)[0] == CUresult.CUDA_SUCCESS
    assert _raw_load(fake_gpu, A_MODULE.replace("sm_90a", "sm_90"))[0] == CUresult.CUDA_SUCCESS


def test_backend_loads_sm_90a_with_the_arch_specific_target_and_keeps_the_info_log(fake_gpu):
    from harness.backends.gpu import GpuBackend

    backend = GpuBackend()
    backend.launch_ptx(A_MODULE, "grow", 1, 128, [np.uint64(0)])
    assert fake_gpu.errors == [] and [x["name"] for x in fake_gpu.launches] == ["grow"]
    assert fake_gpu.module_loads == [{"via": "jit", "target": CUjit_target.CU_TARGET_COMPUTE_90A,
                                      "result": "CUDA_SUCCESS"}]
    (logs,) = backend.module_logs.values()
    assert logs["via"] == "jit" and logs["jit_target"] == "CU_TARGET_COMPUTE_90A"
    assert "Function properties for grow" in logs["info_log"]


def test_a_ptx_version_above_the_drivers_is_assembled_by_ptxas_instead(fake_gpu):
    from harness.backends.gpu import GpuBackend

    fake_gpu.driver_ptx_version = (8, 3)  # a driver older than the PTX's ISA 8.4 (ptxas 12.9 here takes it)
    backend = GpuBackend()
    backend.launch_ptx(A_MODULE, "grow", 1, 128, [np.uint64(0)])
    assert [x["via"] for x in fake_gpu.module_loads] == ["jit", "cubin"]
    assert fake_gpu.module_loads[0]["result"] == "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"
    assert fake_gpu.errors == [] and [x["name"] for x in fake_gpu.launches] == ["grow"]
    assert next(iter(backend.module_logs.values()))["via"] == "cubin"


def test_a_ptx_version_nobody_here_takes_names_both_refusals(fake_gpu):
    from harness.backends.gpu import GpuBackend

    too_new = A_MODULE.replace(".version 8.4", ".version 9.9")
    with pytest.raises(cuda_api.GpuError) as caught:
        GpuBackend().launch_ptx(too_new, "grow", 1, 128, [np.uint64(0)])
    text = str(caught.value)
    assert caught.value.code == "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"
    assert "Unsupported .version 9.9; current version is '9.0'" in text and "ptxas -arch=sm_90a" in text
    with pytest.raises(cuda_api.GpuError, match="Unsupported .version 9.9"):
        cuda_api.load_ptx_module(too_new, "jit only", via="jit")


STATIC_200K = """.version 8.0
.target sm_90
.address_size 64
.shared .align 16 .b8 big[204800];
.extern .shared .align 16 .b8 dyn[];
.visible .entry fat()
{
    ret;
}
"""


def test_static_shared_memory_counts_against_the_opt_in(fake_gpu):
    from harness.backends.gpu import GpuBackend

    backend = GpuBackend()
    with pytest.raises(InputError, match=r"61440 bytes of dynamic shared memory plus 204800 static exceed the "
                                         r"device's per-block opt-in of 232448 bytes \(at most 27648 dynamic"):
        backend.launch_ptx(STATIC_200K, "fat", 1, 32, [], shared_bytes=60 * 1024)
    backend.launch_ptx(STATIC_200K, "fat", 1, 32, [], shared_bytes=27648)
    assert fake_gpu.errors == [] and [x["shared"] for x in fake_gpu.launches] == [27648]


def test_fake_driver_refuses_the_opt_in_past_the_static_shared_memory(fake_gpu):
    drv = fake_gpu.driver
    err, module = drv.cuModuleLoadDataEx(STATIC_200K.encode() + b"\x00", 0, [], [])
    _, func = drv.cuModuleGetFunction(module, b"fat")
    attr = drv.CUfunction_attribute
    assert drv.cuFuncGetAttribute(attr.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, func) == (CUresult.CUDA_SUCCESS, 204800)
    assert drv.cuFuncSetAttribute(func, attr.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 60 * 1024) == \
        (CUresult.CUDA_ERROR_INVALID_VALUE,)
    assert drv.cuFuncSetAttribute(func, attr.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 27648) == \
        (CUresult.CUDA_SUCCESS,)


def test_sticky_errors_are_real_curesult_names_and_include_unknown():
    from cuda.bindings import driver

    real = {name for name in dir(driver.CUresult) if name.startswith("CUDA_ERROR")}
    assert cuda_api.STICKY_ERRORS <= real, sorted(cuda_api.STICKY_ERRORS - real)
    assert "CUDA_ERROR_UNKNOWN" in cuda_api.STICKY_ERRORS  # how a TMA fault surfaces


def test_ptx_target_and_version_read_the_directives():
    assert cuda_api.ptx_target(A_MODULE) == "sm_90a" and cuda_api.ptx_isa_version(A_MODULE) == (8, 4)
    assert cuda_api.ptx_target("// .target sm_90a\n.target sm_89\n") == "sm_89"
    assert cuda_api.ptx_target(".version 8.0\n") == "" and cuda_api.ptx_isa_version("") is None

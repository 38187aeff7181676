"""Every cuda-python driver call the GPU code makes, passed through the real `cuda.bindings.driver` argument
conversion (a wrong argument type or order fails there, before the missing libcuda is noticed), then done by the
fake. Skipped where a CUDA driver is present: there the gpu tier runs the real thing."""
import ml_dtypes
import numpy as np
import pytest

from tests.harness.fakegpu.fakes import MarshalCheckedDriver, install

pytestmark = pytest.mark.skipif(not MarshalCheckedDriver.usable(),
                                reason="a CUDA driver is present: fake handles must not reach it")


def test_backend_timing_and_partition_calls_marshal(monkeypatch):
    from harness.backends.cuda_api import GpuError
    from harness.backends.gpu import GpuBackend
    from harness.partition.measure import reserve_bytes
    from harness.timing.gpu import GpuTimingSettings, time_gpu
    from ptx_impl.align import KERNEL

    gpu = install(monkeypatch, real_marshalling=True)
    backend = GpuBackend()
    args = {name: backend.empty(shape, np.int32) for name, shape in
            (("topk_ids", (4, 2)), ("counts", (4,)), ("offsets", (5,)), ("total_padded", (1,)), ("sorted_ids", (64,)),
             ("block_expert", (4,)), ("inverse", (4, 2)))}
    values = {**args, "tk": 8, "e": 4, "bm": 16, "p_max": 64, "n_blocks": 4}
    settings = GpuTimingSettings(warmup_runs=1, warmup_s=0.0, min_samples=2, max_samples=2, host_samples=1)
    time_gpu(backend, lambda a: KERNEL.launch(backend, (1, 1, 1), (256, 1, 1), values, 60 * 1024), [args],
             1 << 20, settings, clock_reader=lambda: {"sm_clock_mhz": "1980"})
    assert reserve_bytes(backend) == 227 * 1024
    x = backend.empty((2, 64), ml_dtypes.bfloat16)
    assert x.addr
    gpu.jit_error = "line 1: syntax error"
    with pytest.raises(GpuError, match="syntax error"):
        backend.launch_ptx(".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry z()\n{\n    ret;\n}\n",
                           "z", 1, 1, [])
    made = set(gpu.driver.calls)
    assert {"cuModuleLoadDataEx", "cuModuleGetFunction", "cuFuncSetAttribute", "cuLaunchKernel", "cuMemsetD8Async",
            "cuDeviceGetAttribute"} <= made
    assert gpu.errors == []


def test_numba_shared_memory_attribute_marshals(monkeypatch):
    import importlib

    from harness.backends.gpu import GpuBackend
    from harness.implementations import IMPLS
    from harness.partition.problem import CommShapes, dispatch_inputs

    numba_impl = next(name for name in IMPLS if name != "ptx")
    comm = importlib.import_module(f"{IMPLS[numba_impl]}.comm")
    gpu = install(monkeypatch, real_marshalling=True)
    backend = GpuBackend()
    shapes = CommShapes(64, 512, 4, spare=5)
    args = {k: backend.to_device(v) for k, v in dispatch_inputs(shapes, np.random.default_rng(0)).items()}
    args["recv"] = backend.empty((shapes.S, shapes.H), ml_dtypes.bfloat16)
    comm.dispatch(backend, args, 4, shared_bytes=227 * 1024)
    assert "cuKernelSetAttribute" in gpu.driver.calls and gpu.errors == []


def test_arch_specific_jit_target_cubin_and_static_shared_calls_marshal(monkeypatch):
    from harness.backends.gpu import GpuBackend
    from tests.harness.fakegpu.test_module_loads import A_MODULE, STATIC_200K

    gpu = install(monkeypatch, real_marshalling=True)
    backend = GpuBackend()
    backend.launch_ptx(A_MODULE, "grow", 1, 128, [np.uint64(0)])  # CU_JIT_TARGET with a real CUjit_target value
    static_100k = STATIC_200K.replace("204800", "102400")  # above 48 KB of dynamic: cuFuncGetAttribute, then set
    backend.launch_ptx(static_100k, "fat", 1, 32, [], shared_bytes=100 * 1024)
    gpu.driver_ptx_version = (8, 3)
    backend.launch_ptx(A_MODULE.replace("grow", "grow2"), "grow2", 1, 128, [np.uint64(0)])  # JIT refused: a cubin
    assert {"cuModuleLoadDataEx", "cuModuleLoadData", "cuFuncGetAttribute"} <= set(gpu.driver.calls)
    assert gpu.errors == [] and [x["via"] for x in gpu.module_loads] == ["jit", "jit", "jit", "cubin"]


def test_cluster_occupancy_query_marshals(monkeypatch):
    from harness.backends.gpu import GpuBackend
    from ptx_impl import gemm_fp8_r4
    from ptx_impl import gemm_fp8_ws_template as template

    gpu = install(monkeypatch, real_marshalling=True)
    gpu.max_active_clusters = 60
    ctas = gemm_fp8_r4.default_sms(GpuBackend(), 16, cluster=True)  # a real CUlaunchConfig with a cluster attribute
    assert ctas == 120 and "cuOccupancyMaxActiveClusters" in gpu.driver.calls
    assert gpu.occupancy_queries == [(2, template.THREADS, template.shared_bytes(16))] and gpu.errors == []

"""The cutlass layer's GPU path on the fake driver (docs/cutlass.md "The layer"): CUTLASS's grouped GEMMs get their
groups from a device kernel, so no call reads the device (not even the first), and the timed calls hold only the
call's launches (no copy, allocation or synchronisation), each GEMM with the same Params struct every call."""
import ctypes

import pytest

from contract.kernels import get_kernel
from contract.presets import get_preset

pytestmark = pytest.mark.skipif(
    __import__("shutil").which("g++") is None or __import__("importlib").util.find_spec("cutlass_library") is None,
    reason="needs g++ and the nvidia-cutlass wheel (make install) to build CUTLASS's host shim")


@pytest.mark.parametrize("variant", ["bf16", "fp8"])
def test_the_layer_never_reads_the_device_and_its_timed_calls_only_launch(fake_gpu, variant):
    from cutlass_impl import IMPLEMENTATION
    from harness.backends.gpu import GpuBackend
    from harness.contract_row import alloc
    from harness.timing.gpu import GpuTimingSettings, time_gpu
    from tests.harness.fakegpu.test_timing import _windows

    preset = get_preset("tiny")
    spec = get_kernel("layer")
    backend = GpuBackend()
    args, _ = alloc(backend, spec, spec.make_inputs(preset, "imbalanced", 3, variant=variant), preset)
    backend.to_host = None  # any read of the device fails the test: the routing stays on the device
    run = IMPLEMENTATION.kernels["layer"]
    records = run(backend, args, preset)
    backend.synchronize()
    assert fake_gpu.errors == []
    gemm = "grouped_gemm_fp8" if variant == "fp8" else "grouped_gemm"
    names = [r.name for r in records]
    assert sum(n.startswith("cutlass group args") for n in names) == 2
    assert sum(n.startswith(f"{gemm}[") for n in names) == 2
    structs = [v for launch in fake_gpu.launches for v in launch["values"] if isinstance(v, ctypes.Structure)]
    assert len(structs) == 2  # the two GEMMs' Params, by value
    first = [bytes(s) for s in structs]

    backend.to_device = None  # and no copy to it either inside the timed calls
    quick = GpuTimingSettings(warmup_runs=2, warmup_s=0.0, min_samples=4, max_samples=4, budget_s=5.0,
                              host_samples=2, clock_every_s=0.0)
    before = len(fake_gpu.launches)
    time_gpu(backend, lambda a: run(backend, a, preset), [args], 50 << 20, quick,
             clock_reader=lambda: {"sm_clock_mhz": "1980"})
    assert fake_gpu.errors == []
    windows = _windows(fake_gpu.timeline, backend.stream.handle.value)
    assert len(windows) == 4
    for *_, inside in windows:
        assert {e[0] for e in inside} == {"launch"} and len(inside) == len(records)
    later = [bytes(v) for launch in fake_gpu.launches[before:] for v in launch["values"]
             if isinstance(v, ctypes.Structure)]
    assert len(later) >= 8 and set(later) == set(first)  # the same two Params every call


def test_compare_on_the_gpu_backend_has_a_cutlass_layer_row_for_both_variants(fake_gpu, tmp_path):
    """The runner's gpu branch (ptxmoe compare --backend gpu --kernels layer): each variant's cutlass row launched and
    timed (the fake's memory reads back zeros, so its answer is not what is checked here: the sim tests check it)."""
    import io

    from harness import runner
    from harness.backends.gpu import GpuBackend
    from harness.results import RunFile
    from harness.timing.gpu import GpuTimingSettings

    timing = GpuTimingSettings(warmup_runs=1, warmup_s=0.0, min_samples=2, max_samples=2, budget_s=1.0,
                               host_samples=1, flush_l2=False)
    settings = runner.CompareSettings(backend="gpu", presets=("tiny",), skews=("balanced",), kernels=("layer",),
                                      impls=("cutlass",), seed=5, static=False, timing=timing, model_estimate=False)
    rf = RunFile.create(tmp_path, "fake", settings.as_dict(), {"backend": "gpu", "gpu": {"name": "NVIDIA H200"}},
                        command=[])
    runner.run_sweep(GpuBackend(), settings, rf, progress=io.StringIO())
    assert fake_gpu.errors == []
    doc = RunFile.load(rf.run_dir).doc
    rows = doc["rows"] if isinstance(doc["rows"], list) else list(doc["rows"].values())
    assert sorted((r["impl"], r["variant"]) for r in rows) == [("cutlass", "bf16"), ("cutlass", "fp8")]
    for r in rows:
        assert r["timing"]["blocked"] and r["timing"]["device"]["n"] == 2, r["key"]
        names = [launch["name"] for launch in r["launches"]]
        assert sum("cutlass group args" in n for n in names) == 2 and any(n.startswith("cpp_") for n in names)

"""The cutlass path's GPU code on the fake driver: the same committed PTX loaded through the driver, one launch per
expert run (bf16: one launch of the grouped kernel), each passing CUTLASS's Params as one by-value struct whose
tensor maps are the driver's encoding of the calls CUTLASS's host code recorded (the fake driver encodes with
ptxsim's encoder, so each slot must equal what the sim backend writes there)."""
import ctypes

import numpy as np
import pytest

from contract.kernels import get_kernel
from contract.presets import get_preset

pytestmark = pytest.mark.skipif(
    __import__("shutil").which("g++") is None or __import__("importlib").util.find_spec("cutlass_library") is None,
    reason="needs g++ and the nvidia-cutlass wheel (make install) to build CUTLASS's host shim")


def _run(fake_gpu, kernel: str, preset_name: str = "tiny"):
    from cutlass_impl import IMPLEMENTATION
    from harness.backends.gpu import GpuBackend
    from harness.contract_row import alloc

    preset = get_preset(preset_name)
    spec = get_kernel(kernel)
    inputs = spec.make_inputs(preset, "imbalanced", 3)
    backend = GpuBackend()
    args, _ = alloc(backend, spec, inputs, preset)
    # the fake's memory reads back zeros: the routing the host reads before it plans its launches comes from the inputs
    host = {id(args[name]): np.asarray(inputs[name]) for name in ("block_expert", "total_padded", "a_scale")
            if name in args}
    real_to_host = backend.to_host
    backend.to_host = lambda array: host[id(array)] if id(array) in host else real_to_host(array)
    records = IMPLEMENTATION.kernels[kernel](backend, args, preset)
    backend.synchronize()
    return backend, records, inputs, preset, args


@pytest.mark.parametrize("kernel", ["grouped_gemm", "grouped_gemm_fp8"])
def test_one_grouped_struct_launch_with_driver_encoded_maps(fake_gpu, kernel):
    from cutlass_impl.grouped_gemm import expert_runs
    from harness.backends.sim import struct_bytes

    backend, records, inputs, preset, _ = _run(fake_gpu, kernel)
    runs = expert_runs(np.asarray(inputs["block_expert"]), int(np.asarray(inputs["total_padded"])[0]), preset.BM)
    assert fake_gpu.errors == []
    from cutlass_impl.grouped_gemm import GROUPED

    # CUTLASS's grouped kernel, one launch for every run
    assert kernel in GROUPED and len(runs) > 1 and len(records) == len(fake_gpu.launches) == 1
    for launch in fake_gpu.launches:
        (struct,) = launch["values"]
        assert isinstance(struct, ctypes.Structure)
        sent = bytes(struct)
        # the StructArg the launch was made from: the backend keeps each with its encoded struct
        (arg,) = [a for a, s in backend._structs.items() if s is struct]
        assert len(sent) == len(arg.raw) and len(arg.tensor_maps) >= 3  # A, B, D (and C, SFA by TMA)
        assert sent == struct_bytes(arg, 0)  # the driver's maps (fake: ptxsim's encoder) where the markers were
        for offset, _ in arg.tensor_maps:
            assert sent[offset:offset + 8] != arg.raw[offset:offset + 8]  # the marker was replaced


def test_a_struct_of_the_wrong_size_is_refused_before_the_driver(fake_gpu):
    from contract.device import StructArg
    from contract.errors import InputError
    from cutlass_impl import build
    from cutlass_impl.grouped_gemm import entry_of
    from harness.backends.gpu import GpuBackend

    name = "gemm_bf16_sm90"
    with pytest.raises(InputError, match=r"b8\["):
        GpuBackend().launch_ptx(build.load_ptx(name), entry_of(name), (1, 1, 1), (384, 1, 1), [StructArg(bytes(64))])


@pytest.mark.parametrize("kernel", ["grouped_gemm", "grouped_gemm_fp8"])
def test_timed_calls_only_launch_the_plan_made_before_them(fake_gpu, kernel):
    """The routing is read (a device-to-host copy and a synchronisation) on the first, unblocked call only: inside a
    timed window, where the stream is held by the blocker, a read would wait forever on a GPU."""
    from cutlass_impl import IMPLEMENTATION
    from harness.timing.gpu import GpuTimingSettings, time_gpu
    from tests.harness.fakegpu.test_timing import _windows

    backend, records, _, preset, call_args = _run(fake_gpu, kernel)
    backend.to_host = None  # from here on, a read of the device fails the test: the plan must be reused
    backend.to_device = None  # and so must the grouped launch's arrays (no copy inside a timed window)
    run = IMPLEMENTATION.kernels[kernel]
    quick = GpuTimingSettings(warmup_runs=2, warmup_s=0.0, min_samples=4, max_samples=4, budget_s=5.0,
                              host_samples=2, clock_every_s=0.0)
    time_gpu(backend, lambda a: run(backend, a, preset), [call_args], 50 << 20, quick,
             clock_reader=lambda: {"sm_clock_mhz": "1980"})
    assert fake_gpu.errors == []
    windows = _windows(fake_gpu.timeline, backend.stream.handle.value)
    assert len(windows) == 4
    for *_, inside in windows:
        assert {e[0] for e in inside} == {"launch"} and len(inside) == len(records)

"""harness.timing.gpu on GpuBackend over the fake driver: what falls inside the timed window (only the call's kernel
launches on the backend's stream: no dispatch wait, allocation, free or synchronisation), the stream blocker's order,
throttled samples discarded, nvidia-smi field fallbacks."""
from types import SimpleNamespace

import pytest

from contract.kernels import KERNEL_NAMES, get_kernel
from contract.presets import get_preset
from harness.implementations import IMPLS, implementation_table
from harness.timing.gpu import BLOCKER_ENTRY, GpuTimingSettings, read_clocks, time_gpu


def _present(kernels) -> list[tuple[str, str]]:
    """(kernel, implementation) of every path that has the kernel (triton has only grouped_gemm_fp8)."""
    from harness.implementations import implementation_table

    return [(k, i) for k in kernels for i in sorted(IMPLS) if k in implementation_table(i)[0]]

QUICK = GpuTimingSettings(warmup_runs=2, warmup_s=0.0, min_samples=6, max_samples=6, budget_s=5.0, host_samples=2,
                          clock_every_s=0.0)


def _call(impl: str, kernel: str = "layer"):
    from harness.backends.gpu import GpuBackend
    from harness.contract_row import alloc as _alloc

    preset = get_preset("tiny")
    spec = get_kernel(kernel)
    backend = GpuBackend(event_timing=False)
    args, _ = _alloc(backend, spec, spec.make_inputs(preset, "balanced", 3), preset)
    run = implementation_table(impl)[0][kernel]
    return backend, args, (lambda a: run(backend, a, preset))


def _windows(timeline, stream):
    """[(blocker launch index, start event index, end event index, entries inside)] of every held sample."""
    out = []
    for i, entry in enumerate(timeline):
        if entry[0] == "launch" and entry[1] == BLOCKER_ENTRY:
            events = [j for j in range(i + 1, len(timeline)) if timeline[j][0] == "event"][:2]
            assert len(events) == 2 and all(timeline[j][2] == stream for j in events)
            out.append((i, *events, timeline[events[0] + 1:events[1]]))
    return out


@pytest.mark.parametrize("kernel, impl", [(k, i) for k, i in _present(KERNEL_NAMES) if i != "cutlass" or k == "layer"])
def test_timed_window_holds_only_the_calls_launches(fake_gpu, impl, kernel):
    """(cutlass's GEMMs plan from the routing read to the host, which the fake reads back as zeros: no launches; their
    own window test, fed the routing, is in test_cutlass_on_fake_driver.py; its layer builds the groups on the
    device and is here)"""
    backend, args, call = _call(impl, kernel)
    def clocks():
        return {"sm_clock_mhz": "1980"}

    out = time_gpu(backend, call, [args], 50 << 20, QUICK, clock_reader=clocks)
    assert fake_gpu.errors == []
    stream = backend.stream.handle.value
    windows = _windows(fake_gpu.timeline, stream)
    assert len(windows) == out["device"]["n"] == 6
    for _blocker, _start, end, inside in windows:
        kinds = {e[0] for e in inside}
        assert kinds == {"launch"}, f"inside the timed window: {sorted(kinds)}"  # no alloc/free/memset/sync
        assert {e[2] for e in inside} == {stream}
        assert len(inside) == len(out["launch_us"]) >= 1  # every launch of one call (the stage run counts them)
        released = [j for j in range(end, len(fake_gpu.timeline)) if fake_gpu.timeline[j][:2] == ("flag", 0)]
        synced = [j for j in range(end, len(fake_gpu.timeline)) if fake_gpu.timeline[j][0] == "sync-event"]
        assert released and synced and released[0] < synced[0]  # released after the end event, before the wait
    assert out["blocked"] is True and len(out["dispatch_us"]) == 6 and out["dispatch"]["n"] == 6
    if impl == "ptx":  # how each module the row launched was loaded, and the JIT's info log
        assert out["module_loads"] and all(v["via"] == "jit" and "Function properties" in v["info_log"]
                                           for v in out["module_loads"].values())
        assert not any(BLOCKER_ENTRY in name for name in out["module_loads"])  # the harness's own, not the row's
    assert backend.keep_workspaces is False and "_workspace_cache" not in backend.__dict__  # released after


def test_workspace_allocated_once_for_all_timed_calls(fake_gpu):
    backend, args, call = _call("ptx")
    allocs_before = sum(e[0] == "alloc" for e in fake_gpu.timeline)
    time_gpu(backend, call, [args], 50 << 20, QUICK, clock_reader=lambda: {"sm_clock_mhz": "1980"})
    from ptx_impl.layer import intermediate_specs

    l2_flush_buffer = 1
    allocs = sum(e[0] == "alloc" for e in fake_gpu.timeline) - allocs_before
    assert allocs == len(intermediate_specs(get_preset("tiny"))) + l2_flush_buffer


def test_throttled_samples_are_discarded(fake_gpu):
    backend, args, call = _call("ptx")
    reads = iter([1980, 1980, 1980, 1980, 1400, 1980, 1400] + [1980] * 100)  # before, reference (after warm-up), ...

    def clocks():
        return {"sm_clock_mhz": str(next(reads))}

    settings = GpuTimingSettings(warmup_runs=1, warmup_s=0.0, min_samples=4, max_samples=4, budget_s=5.0,
                                 host_samples=0, clock_every_s=0.0, rse_target=1e-12)
    out = time_gpu(backend, call, [args], 50 << 20, settings, clock_reader=clocks)
    assert len(out["throttled_us"]) == 2  # the samples judged by the two 1400 MHz reads
    assert out["device"]["n"] == 4
    assert [r["discarded"] for r in out["clock_reads"]] == [False, False, True, False, True, False]
    assert "2 samples discarded" in out["clock_note"]


def _nvml_reader(fake_gpu):
    from harness.timing.gpu import _NVML_STATE

    _NVML_STATE.clear()
    return lambda: read_clocks(run=None, nvml=fake_gpu.nvml)


def test_an_idle_clock_at_start_is_not_the_reference_and_nvml_reasons_judge(fake_gpu):
    """The target H200 idles at 345 MHz: read before the warm-up that would pass a 1400 MHz HW slowdown (old code).
    The reference is read after the warm-up, and the reasons (HW slowdown) discard what ran under them."""
    backend, args, call = _call("ptx", "gate")
    fake_gpu.nvml.slow_reads = {3, 5}  # reads: 0 before, 1 reference, 2.. one per sample
    settings = GpuTimingSettings(warmup_runs=1, warmup_s=0.0, min_samples=5, max_samples=5, budget_s=5.0,
                                 host_samples=0, clock_every_s=0.0, rse_target=1e-12)
    out = time_gpu(backend, call, [args], 50 << 20, settings, clock_reader=_nvml_reader(fake_gpu))
    assert out["clocks_before"]["sm_clock_mhz"] == "345" and out["clocks_before"]["throttle_reasons"].endswith("1")
    assert out["clocks_reference"]["sm_clock_mhz"] == "1980"
    assert [r["discarded"] for r in out["clock_reads"]] == [False, True, False, True, False, False, False]
    assert out["clock_reads"][1]["reasons"] == ["HW slowdown"]
    assert len(out["throttled_us"]) == 2 and out["device"]["n"] == 5
    assert "GPU reported throttling (HW slowdown)" in out["clock_note"]


def test_gpu_idle_alone_is_no_throttle(fake_gpu):
    from harness.timing.gpu import throttle_bits

    assert throttle_bits({"throttle_reasons": "0x0000000000000001"}) == 0  # idle between samples
    assert throttle_bits({"throttle_reasons": "0x0000000000000003"}) == 0  # + applications clocks setting
    assert throttle_bits({"throttle_reasons": "0x0000000000000041"}) == 0x40  # HW thermal
    assert throttle_bits({"throttle_reasons": "[N/A]"}) is None and throttle_bits({}) is None


def test_blocker_timeouts_drop_the_sample(fake_gpu):
    backend, args, call = _call("ptx")
    flags = iter([True, False] * 50)
    blocker = SimpleNamespace(hold=lambda: None, release=lambda: None, timed_out=lambda: next(flags))
    settings = GpuTimingSettings(warmup_runs=1, warmup_s=0.0, min_samples=3, max_samples=3, budget_s=5.0,
                                 host_samples=0)
    out = time_gpu(backend, call, [args], 50 << 20, settings, blocker=blocker,
                   clock_reader=lambda: {"error": "no nvidia-smi"})
    assert out["blocker_timeouts"] == 3 and out["device"]["n"] == 3
    assert out["clock_note"].startswith("SM clock unknown (no nvidia-smi)")


NO_NVML = SimpleNamespace()  # nvmlInit missing: AttributeError, as any NVML failure, sends read_clocks to nvidia-smi


def test_read_clocks_uses_nvml_when_there_with_either_reason_function():
    calls = []
    nvml = SimpleNamespace(
        NVML_CLOCK_SM=1, NVML_CLOCK_MEM=2, NVML_TEMPERATURE_GPU=0,
        nvmlInit=lambda: calls.append("init"), nvmlDeviceGetHandleByIndex=lambda i: ("h", i),
        nvmlDeviceGetClockInfo=lambda h, kind: {1: 1980, 2: 3201}[kind],
        nvmlDeviceGetTemperature=lambda h, kind: 41, nvmlDeviceGetPowerUsage=lambda h: 120500,
        nvmlDeviceGetCurrentClocksThrottleReasons=lambda h: 4)  # an older pynvml: only the old name
    clocks = read_clocks(run=None, nvml=nvml)
    assert clocks["source"] == "nvml" and clocks["sm_clock_mhz"] == "1980" and clocks["power_w"] == "120.50"
    assert clocks["throttle_reasons"] == "0x0000000000000004"
    assert read_clocks(run=None, nvml=nvml)["mem_clock_mhz"] == "3201" and calls == ["init"]  # initialised once


def test_read_clocks_falls_back_to_the_old_reason_field():
    calls = []

    def smi(argv, **_):
        calls.append(argv[1])
        if "clocks_event_reasons" in argv[1]:
            return SimpleNamespace(returncode=2, stdout="", stderr='Field "clocks_event_reasons.active" is not a '
                                   "valid field to query.\n")
        return SimpleNamespace(returncode=0, stdout="1980, 3201, 41, 120.5, 0x0000000000000000\n", stderr="")

    clocks = read_clocks(run=smi, nvml=NO_NVML)
    assert clocks["sm_clock_mhz"] == "1980" and clocks["throttle_reasons"] == "0x0000000000000000"
    assert clocks["reason_field"] == "clocks_throttle_reasons.active" and len(calls) == 2


def test_read_clocks_says_why_when_nothing_reads():
    def smi(argv, **_):
        return SimpleNamespace(returncode=9, stdout="", stderr="NVIDIA-SMI has failed\n")

    clocks = read_clocks(run=smi, nvml=NO_NVML)
    assert set(clocks) == {"error"} and "NVIDIA-SMI has failed" in clocks["error"]

    def missing(argv, **_):
        raise FileNotFoundError("nvidia-smi")

    assert "could not run" in read_clocks(run=missing, nvml=NO_NVML)["error"]

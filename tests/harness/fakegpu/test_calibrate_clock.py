"""`ptxmoe calibrate`'s under-load clock on the fake driver (plumbing with fake readings; the clock itself needs a
GPU): the wgmma load launched on every SM, the counters the kernel would have stored read back per CTA, the later
launches kept, the clock written into the profile, and the model then running every bound at it."""
import json

import numpy as np
import pytest

from harness.calibrate_clock import BLOCK, CTAS_PER_SM, ENTRY, clock_of_counters, measure_clock
from harness.cli import main
from harness.errors import PtxmoeError
from tests.harness.fakegpu.fakes import CUjit_target

# per launch: the SM clock the fake "measured" (a GPU settling from boost to its power-capped clock)
LAUNCH_HZ = (1.98e9, 1.90e9, 1.75e9, 1.62e9, 1.60e9, 1.61e9)


def fake_clock(gpu, launch_hz=LAUNCH_HZ, spread=0.01):
    """Make the fake kernel store [clock64 start, globaltimer start, clock64 end, globaltimer end] per CTA, as a GPU
    at launch_hz[i] (CTAs within +-spread of it) would over 50 ms."""
    state = {"launch": 0}

    def writes(values):
        hz = launch_hz[min(state["launch"], len(launch_hz) - 1)]
        state["launch"] += 1
        grid = gpu.launches[-1]["grid"][0]
        per_cta = hz * (1 + spread * np.linspace(-1, 1, grid))
        nanos = 50_000_000
        start_clk, start_ns = 10**9, 7 * 10**12
        rows = np.array([[start_clk, start_ns, start_clk + round(h * nanos / 1e9), start_ns + nanos]
                         for h in per_cta], np.uint64)
        return {values[2]: rows}
    gpu.kernel_writes[ENTRY] = writes


def test_the_clock_is_the_median_of_the_later_launches_per_cta_medians(fake_gpu):
    from harness.backends.gpu import GpuBackend

    fake_gpu.sm_count = 100
    fake_clock(fake_gpu)
    clock = measure_clock(GpuBackend(), launches=6, iters=1234, nvml=fake_gpu.nvml)
    assert clock["per_launch_hz"] == pytest.approx(LAUNCH_HZ, rel=1e-6)
    assert clock["under_load_hz"] == pytest.approx(1.61e9, rel=1e-6) and clock["samples"] == 3  # 1.62, 1.60, 1.61
    assert clock["cta_hz_range"] == pytest.approx([1.60e9 * 0.99, 1.98e9 * 1.01], rel=1e-6)
    assert clock["nvml_sm_clock_mhz"] == [1980.0] * 6 and clock["ctas"] == 100
    launches = [x for x in fake_gpu.launches if x["name"] == ENTRY]
    assert len(launches) == 6 and {x["grid"] for x in launches} == {(100, 1, 1)} and CTAS_PER_SM == 1
    assert all(x["values"][1] == 1234 for x in launches) and fake_gpu.errors == []
    assert any(x["target"] == CUjit_target.CU_TARGET_COMPUTE_90A for x in fake_gpu.module_loads)  # sm_90a wgmma
    assert BLOCK == 256


def test_counters_that_did_not_advance_are_an_error_naming_the_cta(fake_gpu, monkeypatch, tmp_path, capsys):
    from harness.backends.gpu import GpuBackend
    from harness.commands import calibrate_cmd
    from ptxsim.model.profile import load_profile

    with pytest.raises(PtxmoeError, match="CTA 0 read clock64 0 -> 0 and globaltimer 0 -> 0 ns"):
        measure_clock(GpuBackend(), launches=2, nvml=fake_gpu.nvml)  # the fake stores nothing: zeros
    # in calibrate, a clock that could not be measured is reported and the rest of the calibration still runs
    monkeypatch.setattr(calibrate_cmd, "measure_on_gpu", lambda repeat, backend=None: {"dram_read": 4300.0})
    monkeypatch.setattr(calibrate_cmd, "_gpu_device_name", lambda: "H200 SXM")
    out, saved = tmp_path / "p.json", tmp_path / "m.json"
    assert main(["calibrate", "--out", str(out), "--no-pairs", "--save-measurements", str(saved)]) == 0
    assert "under-load clock not measured (clock_under_load: CTA 0" in capsys.readouterr().out
    profile = load_profile(out)
    assert profile.under_load_clock_hz is None and profile.constants["dram_achievable_fraction"] > 0
    assert "CTA 0" in json.loads(saved.read_text())["not_measured"]["clock"]


def test_clock_of_counters_is_clock_ticks_over_nanoseconds():
    rows = np.array([[100, 5_000, 100 + 1_600_000, 1_005_000], [0, 0, 1_500_000, 1_000_000]], np.uint64)
    assert clock_of_counters(rows) == pytest.approx([1.6e9, 1.5e9])
    rows[1, 3] = 0
    with pytest.raises(PtxmoeError, match=r"CTA 1 .* \(1 of 2 CTAs like it\)"):
        clock_of_counters(rows)


def test_calibrate_writes_the_clock_and_the_model_runs_every_bound_at_it(fake_gpu, monkeypatch, tmp_path, capsys):
    from harness.commands import calibrate_cmd
    from harness.timing.sim import profile_spec
    from ptxsim.model.profile import load_profile

    fake_clock(fake_gpu)
    monkeypatch.setattr(calibrate_cmd, "measure_on_gpu", lambda repeat, backend=None: {"dram_read": 4300.0})
    monkeypatch.setattr(calibrate_cmd, "_gpu_device_name", lambda: "H200 SXM")
    out, saved = tmp_path / "h200.json", tmp_path / "measured.json"
    assert main(["calibrate", "--out", str(out), "--repeat", "1", "--no-pairs", "--save-measurements",
                 str(saved)]) == 0
    assert "under-load clock 1610 MHz" in capsys.readouterr().out
    profile = load_profile(out)
    assert profile.under_load_clock_hz == pytest.approx(1.61e9, rel=1e-6)
    assert profile_spec("H200 SXM", str(out)).under_load_clock_hz == profile.under_load_clock_hz
    assert profile_spec("H200 SXM", None).under_load_clock_hz == 1.6e9  # no profile: the documented default
    # the measurement file carries the clock: fitting from it again needs no GPU and gives the same profile
    again = tmp_path / "again.json"
    assert main(["calibrate", "--out", str(again), "--measurements", str(saved)]) == 0
    assert json.loads(again.read_text()) == json.loads(out.read_text())


def test_a_calibration_cut_short_keeps_the_phases_it_finished(fake_gpu, monkeypatch, tmp_path):
    from harness.commands import calibrate_cmd
    from ptxsim.model.profile import load_profile

    fake_clock(fake_gpu)

    def killed(repeat, backend=None):
        raise KeyboardInterrupt  # the step's time limit, in the middle of the microbenchmarks

    monkeypatch.setattr(calibrate_cmd, "measure_on_gpu", killed)
    monkeypatch.setattr(calibrate_cmd, "_gpu_device_name", lambda: "H200 SXM")
    out = tmp_path / "h200.json"
    assert main(["calibrate", "--out", str(out), "--repeat", "1"]) != 0  # the CLI reports the interrupt
    assert load_profile(out).under_load_clock_hz == pytest.approx(1.61e9, rel=1e-6)  # the clock phase was written


def test_too_few_clock_launches_is_a_usage_error(fake_gpu, tmp_path, capsys):
    assert main(["calibrate", "--out", str(tmp_path / "p.json"), "--clock-launches", "1"]) == 2
    assert "--clock-launches must be >= 2" in capsys.readouterr().err and fake_gpu.launches == []


def test_a_calibration_cut_short_in_the_pairs_keeps_the_pairs_timed_so_far(fake_gpu, monkeypatch, tmp_path):
    from harness import calibrate_variants
    from harness.commands import calibrate_cmd
    from ptxsim.model.paired import GPU_PAIRS
    from ptxsim.model.profile import load_profile

    monkeypatch.setattr(calibrate_cmd, "measure_on_gpu", lambda repeat, backend=None: {"dram_read": 4300.0})
    monkeypatch.setattr(calibrate_cmd, "_gpu_device_name", lambda: "H200 SXM")
    real, timed = calibrate_variants.variant_samples, []

    def samples(backend, bench, repeat, clock_hz):
        if len(timed) == 3:  # three variants timed (two pairs: they share copy_v4_132), then the step's time limit
            raise KeyboardInterrupt
        timed.append(bench.name)
        return real(backend, bench, repeat, clock_hz)
    monkeypatch.setattr(calibrate_variants, "variant_samples", samples)
    out = tmp_path / "h200.json"
    assert main(["calibrate", "--out", str(out), "--repeat", "2", "--no-clock"]) != 0
    assert timed == ["copy_v4_32b_256mb", "copy_v4_132b_256mb", "copy_v4_64b_256mb"]
    assert set(load_profile(out).pairs) == set(list(GPU_PAIRS)[:2])

"""The runner's gpu branch on the fake driver: a sticky CUDA error (illegal address) stops the sweep at its row,
with the rows before it saved, instead of blaming every later row for it."""
import io

import pytest

from harness import runner
from harness.results import RunFile
from harness.timing.gpu import GpuTimingSettings

TIMING = GpuTimingSettings(warmup_runs=1, warmup_s=0.0, min_samples=2, max_samples=2, budget_s=1.0, host_samples=1,
                           flush_l2=False)


def _sweep(tmp_path, kernels):
    from harness.backends.gpu import GpuBackend

    settings = runner.CompareSettings(backend="gpu", presets=("tiny",), skews=("balanced",), kernels=kernels,
                                      seed=5, static=False, timing=TIMING, model_estimate=False)
    rf = RunFile.create(tmp_path, "fake", settings.as_dict(), {"backend": "gpu", "gpu": {"name": "NVIDIA H200"}},
                        command=[])
    return rf, (lambda: runner.run_sweep(GpuBackend(), settings, rf, progress=io.StringIO()))


def test_sticky_error_stops_the_sweep_at_its_row(fake_gpu, tmp_path):
    from harness.backends.cuda_api import GpuError

    fake_gpu.poison("ptx_gate")
    rf, sweep = _sweep(tmp_path, ("gate", "align"))
    with pytest.raises(GpuError, match=r"gate.*ptx.*CUDA_ERROR_ILLEGAL_ADDRESS.*sticky") as info:
        sweep()
    assert info.value.sticky
    doc = RunFile.load(rf.run_dir).doc
    rows = doc["rows"] if isinstance(doc["rows"], list) else list(doc["rows"].values())
    before = runner.IMPL_ORDER[:runner.IMPL_ORDER.index("ptx")]
    assert [(r["kernel"], r["impl"]) for r in rows] == [("gate", impl) for impl in (*before, "ptx")]
    assert all(r["status"] != "error" for r in rows[:-1])  # the rows before it ran on a healthy context
    assert rows[-1]["status"] == "error" and rows[-1]["sticky_cuda_error"] == "CUDA_ERROR_ILLEGAL_ADDRESS"


def test_healthy_sweep_runs_every_row(fake_gpu, tmp_path):
    rf, sweep = _sweep(tmp_path, ("gate", "align"))
    summary = sweep()
    assert summary["ran"] == 2 * len(runner.IMPL_ORDER) and fake_gpu.errors == []
    doc = RunFile.load(rf.run_dir).doc
    rows = doc["rows"] if isinstance(doc["rows"], list) else list(doc["rows"].values())
    ok = [r for r in rows if r["status"] != "missing"]
    # triton and cutlass have only the GEMMs: missing rows
    assert {r["impl"] for r in rows if r not in ok} == {"triton", "cutlass"}
    assert len(ok) == 2 * (len(runner.IMPL_ORDER) - 2)
    assert all(r["timing"]["blocked"] and r["timing"]["device"]["n"] == 2 for r in ok)


def test_a_hung_kernel_ends_its_row_under_the_watchdog(fake_gpu, tmp_path, monkeypatch):
    """$PTXMOE_GPU_SYNC_TIMEOUT: a kernel that never finishes is reported as hung, with its row saved and named, and
    the sweep stops there (the hung kernel holds the context) instead of blocking forever."""
    from harness.backends.cuda_api import GpuError

    monkeypatch.setenv("PTXMOE_GPU_SYNC_TIMEOUT", "0.05")
    fake_gpu.hangs.add("ptx_gate")
    rf, sweep = _sweep(tmp_path, ("gate", "align"))
    with pytest.raises(GpuError, match=r"gate/ptx.*CUDA_ERROR_LAUNCH_TIMEOUT.*sticky") as info:
        sweep()
    assert info.value.sticky and info.value.code == "CUDA_ERROR_LAUNCH_TIMEOUT"
    doc = RunFile.load(rf.run_dir).doc
    rows = doc["rows"] if isinstance(doc["rows"], list) else list(doc["rows"].values())
    assert rows[-1]["impl"] == "ptx" and rows[-1]["status"] == "error"
    assert rows[-1]["sticky_cuda_error"] == "CUDA_ERROR_LAUNCH_TIMEOUT"
    assert "still busy after 0.05 s" in rows[-1]["reason"] and "a kernel hung" in rows[-1]["reason"], rows[-1]["reason"]
    assert all(r["status"] != "error" for r in rows[:-1])


def test_the_watchdog_setting_is_checked(monkeypatch):
    from harness.backends.cuda_api import sync_timeout_from_env
    from harness.errors import InputError

    monkeypatch.setenv("PTXMOE_GPU_SYNC_TIMEOUT", "0")
    assert sync_timeout_from_env() is None
    monkeypatch.setenv("PTXMOE_GPU_SYNC_TIMEOUT", "2.5")
    assert sync_timeout_from_env() == 2.5
    monkeypatch.setenv("PTXMOE_GPU_SYNC_TIMEOUT", "soon")
    with pytest.raises(InputError, match=r"PTXMOE_GPU_SYNC_TIMEOUT='soon'"):
        sync_timeout_from_env()

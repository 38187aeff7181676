"""The measured sweep on a real GPU (skipped with the reason when none is visible)."""
import pytest

from harness.partition.sweep import PartitionSettings, run_sweep


@pytest.mark.gpu
def test_measured_sweep_on_the_gpu(seed):
    settings = PartitionSettings(backend="gpu", preset="small", ep=4, sms=(0, 8, 20), repeats=2, seed=seed)
    doc = run_sweep(settings)
    assert doc["backend"] == "gpu" and doc["label"].startswith("measured")
    rows = doc["rows"]
    series = [s for s in ("ptx/plain", "ptx/no_allocate", "numba/plain") if s not in doc["measurement"]["skipped"]]
    assert "ptx/plain" in series and "ptx/no_allocate" in series
    assert [(r["series"], r["comm SMs"]) for r in rows] == [(s, n) for s in series for n in (0, 8, 20)]
    assert all(r["modelled"] is False for r in rows)
    assert all(v.startswith(("recv bitwise", "normwise")) for v in doc["measurement"]["checks"].values())
    for r in rows:
        assert r["comm (us)"] > 0 and r["GEMM (us)"] > 0
        # overlapping can never beat the longer of the two kernels alone by much (timer noise aside)
        assert r["step overlapped (us)"] >= 0.9 * max(r["comm (us)"], r["GEMM (us)"])
    by_n = {r["comm SMs"]: r for r in rows if r["series"] == "ptx/no_allocate"}
    assert by_n[20]["comm bandwidth (GB/s)"] > by_n[8]["comm bandwidth (GB/s)"]


def test_gpu_backend_without_a_gpu_says_why():
    from harness.errors import PtxmoeError
    from harness.toolchain import gpu_visible

    if gpu_visible()[0]:
        pytest.skip("a GPU is visible; the refusal path is not reachable")
    with pytest.raises(PtxmoeError, match="needs a visible CUDA GPU"):
        run_sweep(PartitionSettings(backend="gpu", preset="small", sms=(0, 8)))

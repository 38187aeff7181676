"""The measured sweep's plumbing without a GPU: GpuBackend swapped for ptxsim with fake streams and host-clock events.

The times are meaningless (simulation wall time); what is checked is everything else measure.py does: the GPU-side
correctness checks, argument shapes of every launch, the SM reservation and blocker launches, and the row schema
shared with the modelled sweep.
"""
import time
from types import SimpleNamespace

import pytest

from harness.partition import measure
from harness.partition.sweep import PartitionSettings, run_sweep


def _has_sim() -> bool:
    import ptxsim

    return hasattr(ptxsim, "Device") and hasattr(ptxsim, "load_ptx")


class _Stream:
    def synchronize(self):
        pass


class _Event:
    def __init__(self):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def wait(self, stream):
        pass

    def elapsed_time(self, other):
        return (other.t - self.t) * 1e3


class _Timer:
    def __init__(self, *_):
        pass

    def event(self, stream):
        return _Event()

    @staticmethod
    def ms(start, end):
        return start.elapsed_time(end)


@pytest.mark.skipif(not _has_sim(), reason="ptxsim.Device / ptxsim.load_ptx not available")
def test_measured_sweep_plumbing_on_ptxsim(monkeypatch, seed):
    from harness.backends import gpu
    from harness.backends.sim import SimBackend

    launches = []

    class FakeGpu(SimBackend):
        def __init__(self, event_timing=False):
            super().__init__()
            self.stream = _Stream()
            self.context = SimpleNamespace(device=SimpleNamespace(MULTIPROCESSOR_COUNT=132, name=b"Fake H200"))

        def launch_ptx(self, ptx, entry, grid, block, params, shared_bytes=0, tag=""):
            launches.append((entry, tuple(grid), shared_bytes))
            return super().launch_ptx(ptx, entry, grid, block, params, shared_bytes, tag)

        def launch_numba(self, pyfunc, signature, grid, block, args, shared_bytes=0, tag=""):
            launches.append((pyfunc.__name__, tuple(grid), shared_bytes))
            return super().launch_numba(pyfunc, signature, grid, block, args, shared_bytes, tag)

    monkeypatch.setattr(gpu, "GpuBackend", FakeGpu)
    monkeypatch.setattr("harness.toolchain.gpu_visible", lambda: (True, "fake"))
    monkeypatch.setattr(measure, "_Timer", _Timer)
    # ptxsim would spin on %globaltimer for real; the blocker's launch shape is what matters here
    monkeypatch.setattr(measure, "BLOCKER_PTX", measure.BLOCKER_PTX.split("{")[0] + "{\n    ret;\n}\n")
    from contract.presets import Preset

    small = Preset("fake-gpu", T=16, H=128, E=4, K=2, G=1, TG=1, I=64, BM=16)  # seconds on ptxsim, not minutes
    settings = PartitionSettings(backend="gpu", preset=small, ep=2, sms=(0, 8), repeats=1, seed=seed,
                                 series=("ptx/no_allocate", "numba/plain"))
    doc = run_sweep(settings)
    assert doc["backend"] == "gpu" and doc["label"].startswith("measured")
    m = doc["measurement"]
    assert m["device"] == "Fake H200" and m["sm_count"] == 132 and m["skipped"] == {}
    assert set(m["checks"]) == {f"{op}[{s}]" for op in ("dispatch", "combine") for s in settings.series}
    rows = doc["rows"]
    assert [(r["series"], r["comm SMs"]) for r in rows] == [(s, n) for s in settings.series for n in (0, 8)]
    assert all(r["modelled"] is False and r["GEMM SMs"] == 132 - r["comm SMs"] for r in rows)
    for r in rows:
        for key in ("comm (us)", "GEMM (us)", "step overlapped (us)", "step back-to-back (us)",
                    "comm bandwidth (GB/s)"):
            assert r[key] > 0, key
    # the partition: 8-CTA comm launches and the 8-CTA blocker reserve 227 KB each; unpartitioned comm uses all SMs
    reserved = {(e, g[0]) for e, g, smem in launches if smem == measure.RESERVE_BYTES}
    assert ("ptx_comm_dispatch_noalloc", 8) in reserved and ("comm_combine", 8) in reserved
    assert ("ptxmoe_sm_blocker", 8) in reserved
    assert ("ptx_comm_dispatch_noalloc", (132, 1, 1), 0) in launches
    assert doc["schedule"]["derived_from"]["series"] == "ptx/no_allocate"

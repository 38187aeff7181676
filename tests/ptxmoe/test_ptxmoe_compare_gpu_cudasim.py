"""ptxmoe.compare's gpu branch (measured timing, bootstrap verdicts, run.json) with a real GpuBackend on Numba's CUDA
simulator, in a subprocess (NUMBA_ENABLE_CUDASIM must be set before numba.cuda is imported). Numba kernels only:
the PTX half of the GpuBackend needs a real GPU (test_ptxmoe_compare.py's gpu tier)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.timing.stats import VERDICTS, verdict_of

REPO = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, sys
import numpy as np
from numba import cuda
import ptxmoe
from harness.backends.gpu import GpuBackend
from harness.timing.gpu import GpuTimingSettings


def saxpy(a, x, y, out, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = a * x[i] + y[i]


def saxpy_wrong(a, x, y, out, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = a * x[i]


def make_inputs(rng, n=200):
    return {"a": np.float32(2), "x": rng.standard_normal(n, dtype=np.float32),
            "y": rng.standard_normal(n, dtype=np.float32), "out": np.zeros(n, np.float32), "n": np.int32(n)}


def check(outputs, inputs):
    np.testing.assert_allclose(outputs["out"], inputs["a"] * inputs["x"] + inputs["y"], rtol=1e-6, atol=1e-6)


# a budget far above what 4 samples take, so the sample cap (not a loaded machine) decides when sampling stops
timing = GpuTimingSettings(warmup_runs=1, warmup_s=0, min_samples=4, max_samples=4, budget_s=120, host_samples=3,
                           flush_l2=False, block_stream=False)  # NOTE: the CUDA simulator runs no PTX (the blocker)
grid = lambda inputs: (int(inputs["n"]) + 63) // 64
result = ptxmoe.compare({"first": ptxmoe.NumbaKernel(saxpy, grid=grid, block=64),
                         "second": ptxmoe.NumbaKernel(saxpy, grid=grid, block=64),
                         "wrong": ptxmoe.NumbaKernel(saxpy_wrong, grid=grid, block=64)},
                        make_inputs, check=check, name="saxpy", backend=GpuBackend(), static=False, timing=timing,
                        seed=int(sys.argv[2]))
result.save(sys.argv[1])
print(json.dumps({"repr": repr(result), "verdict": str(result.verdict("second", "first")), "doc": result.doc}))
"""


def test_compare_gpu_branch_on_cudasim(tmp_path, seed):
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "run"), str(seed)], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    doc = got["doc"]
    rows = {r["impl"]: r for r in doc["rows"]}
    assert doc["settings"]["backend"] == "gpu" and "measured, median" in got["repr"]
    for impl in ("first", "second"):
        t = rows[impl]["timing"]
        assert rows[impl]["status"] == "ok", rows[impl].get("reason")
        assert t["basis"] == "measured" and t["device"]["n"] == 4 and t["stop_reason"] == "sample cap 4"
        assert rows[impl]["sim_counters"] is None and rows[impl]["launches"][0]["grid"] == [4, 1, 1]
    assert rows["wrong"]["status"] == "failed"
    verdicts = {(v["impl"], v["baseline"]): v for v in doc["verdicts"]}
    v = verdicts[("second", "first")]
    first, second = (np.median(rows[i]["timing"]["device_time_us"]) for i in ("first", "second"))
    assert v["basis"] == "measured" and v["speedup"] == pytest.approx(first / second) and v["ci_lo"] <= v["ci_hi"]
    assert v["verdict"] in VERDICTS and "(measured; 95% bootstrap)" in got["verdict"]
    assert v["verdict"] == verdict_of(v["ci_lo"], v["ci_hi"])
    assert (v["interval"], v["confidence"]) == ("bootstrap", 0.95)
    assert verdicts[("wrong", "first")]["verdict"] is None
    saved = json.loads((tmp_path / "run" / "run.json").read_text())
    assert [r["key"] for r in saved["rows"]] == [r["key"] for r in doc["rows"]]

"""The runner's gpu branch (measured timing, host call samples, rotation, stages, throughput, measured verdict) with
a real GpuBackend on Numba's CUDA simulator, in a subprocess. The 'kernels' are stand-ins: the reference answer is
copied into the outputs, then a trivial Numba kernel is launched, so the run is fast; correctness checking, timing
plumbing and run.json are the real ones."""
import json
import os
import subprocess
import sys
from pathlib import Path

from harness.timing.stats import verdict_of

REPO = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, sys
import numpy as np
from numba import cuda
from harness import cell, runner
from harness.backends.gpu import GpuBackend
from contract.kernels import get_kernel
from harness.results import RunFile
from harness.timing.gpu import GpuTimingSettings


def touch(x, n):
    i = cuda.grid(1)
    if i < n:
        x[i] = x[i] + 1


def make_run(kernel, stages):
    spec = get_kernel(kernel)

    def run(backend, args, preset, **params):
        inputs = {n: backend.to_host(args[n]) for n in spec.inputs if n in args}
        ref = spec.reference(inputs, preset, **params)
        for out in spec.output_specs(preset, inputs):
            args[out.name].handle.copy_to_device(np.ascontiguousarray(np.asarray(ref[out.name]).astype(out.dtype))
                                                 .view(args[out.name].handle.dtype))
        scratch = backend.empty((32,), np.int32, 0)
        return [backend.launch_numba(touch, "void(int32[::1], int32)", 1, 32, [scratch, np.int32(32)], tag=t)
                for t in stages]
    return run


top, lower = make_run("gate", ["gate_a", "gate_b"]), make_run("gate", ["gate_a", "gate_b", "gate_c"])


def ptx_gate(backend, args, preset, rung=None, **params):  # a two-rung ladder: rung 1 launches one more kernel
    return (lower if rung == 1 else top)(backend, args, preset, **params)


import types
from contract.registry import Implementation
ptx = types.ModuleType("ptx_impl")
ptx.IMPLEMENTATION = Implementation("ptx", "stand-in", {"gate": ptx_gate}, ladders={"gate": ("one more", "top")})
sys.modules["ptx_impl"] = ptx
find = cell.find_run
cell.find_run = lambda impl, k: (make_run("gate", ["k_gate"]), "") if impl == "numba" else find(impl, k)
timing = GpuTimingSettings(warmup_runs=1, warmup_s=0, min_samples=4, max_samples=4, host_samples=3, flush_l2=False,
                           block_stream=False)  # NOTE: the CUDA simulator runs no PTX (the blocker)
settings = runner.CompareSettings(backend="gpu", presets=("tiny",), skews=("balanced",), kernels=("gate",),
                                  seed=int(sys.argv[2]), impls=("numba", "ptx"), static=False, timing=timing)
rf = RunFile.create(sys.argv[1], "g", settings.as_dict(), {"backend": "gpu", "gpu": {"name": "NVIDIA H200"}},
                    command=[])
runner.run_sweep(GpuBackend(), settings, rf)
print(json.dumps(RunFile.load(rf.run_dir).doc))
"""


def test_gpu_branch_of_the_runner_on_cudasim(tmp_path, seed):
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), str(seed)], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    rows = {r["key"]: r for r in doc["rows"]}
    for key in ("gate/numba/tiny/balanced", "gate/ptx/tiny/balanced", "gate/ptx.r1/tiny/balanced"):
        row = rows[key]
        assert row["status"] == "ok", (row.get("reason"), row.get("traceback"), row.get("correctness"))
        t = row["timing"]
        assert t["basis"] == "measured" and t["device"]["n"] == 4 and len(t["device_time_us"]) == 4
        assert t["host_call"]["n"] == 3 and all(h > 0 for h in t["host_call_us"])
        assert t["stop_reason"] == "sample cap 4" and t["rotation_sets"] >= 2  # tiny inputs fit in L2: rotated
        assert row["sim_counters"] is None and row["static"] is None
        assert row["throughput"]["device"] == "H200 SXM" and row["throughput"]["min_bytes"] > 0
        # the model's estimate is recorded next to the measurement; these stand-in runs write outputs through
        # numba-cuda device arrays, which a ptxsim run cannot do: the failure is recorded, the row stays ok
        est = row["model_estimate"]
        assert est["basis"] == "modelled" and est["modelled_us"] is None and "sampled ptxsim run failed" in est["error"]
    assert rows["gate/ptx/tiny/balanced"]["launch_stages"] == ["gate", "gate"]
    assert set(rows["gate/ptx/tiny/balanced"]["stages_us"]) == {"gate"}
    # the ladder's lower rung is measured like any row (rung=1 reached the timing loop: three launches)
    assert rows["gate/ptx.r1/tiny/balanced"]["launch_stages"] == ["gate", "gate", "gate"]
    assert rows["gate/ptx.r1/tiny/balanced"]["rung"] == {"number": 1, "name": "one more", "of": 2, "top": False}
    assert len(rows["gate/ptx.r1/tiny/balanced"]["timing"]["launch_us"]) == 3
    assert [v["pair"] for v in doc["verdicts"]] == ["ptx-vs-numba", "ptx.r1-vs-numba", "ptx-vs-ptx.r1"]
    for verdict in doc["verdicts"]:
        assert verdict["basis"] == "measured" and verdict["verdict"] == verdict_of(verdict["ci_lo"], verdict["ci_hi"])
        assert (verdict["interval"], verdict["confidence"]) == ("bootstrap", 0.95)
    assert [r["phase"] for r in doc["nvtx_ranges"] if r["name"] == "gate/ptx/tiny/balanced"] == ["check", "timing"]

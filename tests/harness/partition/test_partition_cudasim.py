"""The Numba comm kernels on Numba's own CUDA simulator (NUMBA_ENABLE_CUDASIM=1, in a subprocess): an independent
cross-check of cuda_impl/comm.py that does not go through ptxsim."""
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

SCRIPT = r"""
import json, sys
import numpy as np
import cuda_impl.comm as cuda_comm
from harness.partition.problem import CommShapes, run_comm
from tests.cuda_impl.cudasim_backend import CudaSimBackend
rng = np.random.default_rng(int(sys.argv[1]))
out = {}
for op in ("dispatch", "combine"):
    # 15 rows over 2 CTAs x 16 warps: every warp at most one row; H = 72 -> 18 u64 words / 36 u32 words per row
    result, record = run_comm(cuda_comm, CudaSimBackend(), op, CommShapes(5, 72, 3, 2), rng, 2)
    out[op] = [bool(result.ok), result.message, [int(g) for g in record.grid]]
print(json.dumps(out))
"""


def test_numba_comm_kernels_on_cudasim(seed):
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(seed)], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    for op in ("dispatch", "combine"):
        ok, message, grid = got[op]
        assert ok, f"{op}: {message}"
        assert grid[0] == 2

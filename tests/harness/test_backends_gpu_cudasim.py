"""GpuBackend's Numba half (memory, poison, bf16 as uint16, launch_numba argument mapping, launch records) on
Numba's CUDA simulator, in a subprocess (NUMBA_ENABLE_CUDASIM must be set before numba.cuda is imported).
The PTX half (driver API) needs a real GPU: tests/harness/test_backends_gpu.py."""
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, sys
import numpy as np, ml_dtypes
from harness.backends.gpu import GpuBackend
from tests.harness.test_backends_sim import scale_rows, SCALE_SIG, bf16_copy
seed = int(sys.argv[1])
rng = np.random.default_rng(seed)
g = GpuBackend()
m, n_rows = 9, 3
a = rng.standard_normal(m).astype(np.float32)
s = np.float32(rng.uniform(0.5, 2))
da, do = g.to_device(a), g.empty((n_rows + 1, m), np.float32)
rec = g.launch_numba(scale_rows, SCALE_SIG, (1, 2), (4, 8), [da, do, s, np.int32(n_rows)])
out = g.to_host(do)
expect = a[None, :] * s + np.arange(n_rows, dtype=np.float32)[:, None]
x = rng.standard_normal(40).astype(ml_dtypes.bfloat16)
dx, dy = g.to_device(x), g.empty((40,), ml_dtypes.bfloat16)
g.launch_numba(bf16_copy, "void(uint16[::1], uint16[::1])", 2, 32, [dx, dy])
y = g.to_host(dy)
print(json.dumps({
    "close": bool(np.allclose(out[:n_rows], expect, rtol=1e-6)), "poison_row_nan": bool(np.isnan(out[n_rows]).all()),
    "bf16_bits_equal": bool((y.view(np.uint16) == x.view(np.uint16)).all()), "bf16_dtype": str(y.dtype),
    "int_poison": g.to_host(g.empty((2,), np.int32)).tolist(), "rec": [rec.name, rec.impl, list(rec.grid),
    list(rec.block)], "records": len(g.records), "sources": sorted(g.sources)}))
"""


def test_gpu_backend_numba_path_on_cudasim(seed):
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(seed)], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["close"] and got["poison_row_nan"] and got["bf16_bits_equal"] and got["bf16_dtype"] == "bfloat16"
    assert got["int_poison"] == [-1, -1]
    assert got["rec"] == ["scale_rows", "numba", [1, 2, 1], [4, 8, 1]]
    assert got["records"] == 2 and got["sources"] == ["bf16_copy", "scale_rows"]

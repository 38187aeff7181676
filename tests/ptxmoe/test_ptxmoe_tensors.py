"""Issue 31 item 4: inputs as the tensors people use. Host tensors (DLPack, the array interface: a torch CPU tensor)
and NumPy on both backends; CUDA tensors (torch on a GPU, CuPy: __cuda_array_interface__) on gpu, refused by name on
sim; bf16 and fp8 (ml_dtypes) arrays on both, a Numba kernel seeing their bits."""
import json
import os
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from numba import cuda

import ptxmoe

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SAXPY_PTX = (HERE / "saxpy.ptx").read_text()
BF16_CU = r"""
#include <cuda_bf16.h>
extern "C" __global__ void twice(const __nv_bfloat16* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __bfloat162float(x[i]) * 2.0f;
}
"""


class DlpackOnly:
    """A host tensor seen only through DLPack (as a torch CPU tensor is)."""

    def __init__(self, array):
        self._array = array
        self.shape, self.dtype = array.shape, array.dtype

    def __dlpack__(self, **kw):
        return self._array.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


class FakeCudaTensor:
    shape, dtype = (4,), np.float32
    __cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (0, False), "version": 3}


def test_host_tensors_by_dlpack_give_the_same_result_as_numpy():
    def numpy_inputs(rng, n=256):
        return {"a": np.float32(2.0), "x": rng.standard_normal(n, dtype=np.float32),
                "y": rng.standard_normal(n, dtype=np.float32), "out": np.zeros(n, np.float32), "n": np.uint32(n)}

    def tensor_inputs(rng, n=256):
        return {k: DlpackOnly(v) if isinstance(v, np.ndarray) else v for k, v in numpy_inputs(rng, n).items()}

    def check(outputs, inputs):
        assert isinstance(inputs["x"], np.ndarray)  # check sees NumPy
        np.testing.assert_allclose(outputs["out"], inputs["a"] * inputs["x"] + inputs["y"], rtol=1e-6)

    kernels = {"ptx": ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=1, block=256)}
    plain = ptxmoe.compare(kernels, numpy_inputs, check=check, backend="sim", static=False, seed=3)
    tensors = ptxmoe.compare(kernels, tensor_inputs, check=check, backend="sim", static=False, seed=3)
    assert plain.ok("ptx") and tensors.ok("ptx") and tensors.time_us("ptx") == plain.time_us("ptx")


def test_a_cuda_tensor_on_sim_is_refused_by_name():
    def inputs(rng):
        return {"x": FakeCudaTensor(), "n": np.int32(4)}
    with pytest.raises(ptxmoe.InputError, match=r"'x': a CUDA tensor \(FakeCudaTensor\); the sim backend"):
        ptxmoe.compare({"ptx": ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=1, block=4)}, inputs, backend="sim")


def copy_bits(x, out, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = x[i]


@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn])
def test_bf16_and_fp8_inputs_on_sim(dtype):
    def inputs(rng, n=128):
        return {"x": rng.standard_normal(n).astype(dtype), "out": np.zeros(n, dtype), "n": np.int32(n)}

    def check(outputs, inputs):
        assert outputs["out"].dtype == np.dtype(dtype)
        np.testing.assert_array_equal(outputs["out"].view(np.uint8), inputs["x"].view(np.uint8))
    result = ptxmoe.compare({"numba": ptxmoe.NumbaKernel(copy_bits, grid=1, block=128)}, inputs, check=check,
                            backend="sim", static=False)
    assert result.ok("numba"), result.row("numba").reason


def test_a_cpp_kernel_reads_bf16():
    def inputs(rng, n=128):
        return {"x": rng.standard_normal(n).astype(ml_dtypes.bfloat16), "out": np.zeros(n, np.float32),
                "n": np.int32(n)}

    def check(outputs, inputs):
        np.testing.assert_array_equal(outputs["out"], inputs["x"].astype(np.float32) * 2)
    result = ptxmoe.compare({"cpp": ptxmoe.CppKernel(BF16_CU, "twice", grid=1, block=128)}, inputs, check=check,
                            outputs=["out"], backend="sim", static=False)
    assert result.ok("cpp"), result.row("cpp").reason


SCRIPT = r"""
import json
import ml_dtypes
import numpy as np
from numba import cuda
import ptxmoe
from harness.backends.gpu import GpuBackend
from harness.timing.gpu import GpuTimingSettings


def copy_bits(x, out, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = x[i]


def inputs(rng, n=64):
    x = rng.standard_normal(n).astype(ml_dtypes.bfloat16)
    # a device tensor (as torch on a GPU or CuPy hand over): Numba's device array has __cuda_array_interface__
    return {"x": cuda.to_device(x.view(np.uint16)), "out": np.zeros(n, np.uint16), "n": np.int32(n)}


def check(outputs, inputs):
    assert isinstance(inputs["x"], np.ndarray)
    np.testing.assert_array_equal(outputs["out"], inputs["x"])


timing = GpuTimingSettings(warmup_runs=1, warmup_s=0, min_samples=3, max_samples=3, budget_s=120, host_samples=3,
                           flush_l2=False, block_stream=False)
result = ptxmoe.compare({"numba": ptxmoe.NumbaKernel(copy_bits, grid=1, block=64)}, inputs, check=check,
                        backend=GpuBackend(), static=False, timing=timing)
print(json.dumps({"status": result.row("numba").status, "reason": result.row("numba").reason}))
"""


def test_a_cuda_tensor_on_the_gpu_backend_cudasim():
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, cwd=REPO,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got == {"status": "ok", "reason": None}

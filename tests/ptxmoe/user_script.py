"""The acceptance script of issue #17: a user's own Numba saxpy against their own PTX saxpy, documented API only.

    python tests/ptxmoe/user_script.py sim|gpu|auto
"""
import sys
from pathlib import Path

import numpy as np
from numba import cuda

import ptxmoe


@cuda.jit
def saxpy(a, x, y, out, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = a * x[i] + y[i]


def make_inputs(rng, n=2048):
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    return {"a": np.float32(2.0), "x": x, "y": y, "out": np.zeros(n, np.float32), "n": np.int32(n)}


def check(outputs, inputs):
    # atol: with or without fma, results may differ by an ulp of a * x
    np.testing.assert_allclose(outputs["out"], inputs["a"] * inputs["x"] + inputs["y"], rtol=1e-6, atol=1e-6)


def grid(inputs):  # launch geometry as a function of the inputs
    return (int(inputs["n"]) + 127) // 128


result = ptxmoe.compare({"numba": ptxmoe.NumbaKernel(saxpy, grid=grid, block=128),
                         "ptx": ptxmoe.PtxKernel((Path(__file__).parent / "saxpy.ptx").read_text(), "saxpy",
                                                 grid=grid, block=128)},
                        make_inputs, check=check, name="saxpy", backend=sys.argv[1] if len(sys.argv) > 1 else "auto")
print(result)
print("VERDICT", result.verdict("ptx", "numba"))

"""A sweep over sizes: saxpy in Numba and hand PTX at five sizes, time and bandwidth against n, with its plot.

    python examples/sweep_sizes.py            # on the simulator (times modelled)
    python examples/sweep_sizes.py gpu        # on a GPU (times measured)

ptxmoe.sweep runs compare once per size (each a case "n=..."), so every size is checked and judged like any
compare; the result's DataFrame has an `n` column, and the run folder's dashboard a "Sweep over sizes" section:
time and achieved GB/s against n, one line per implementation (Triton's perf_report, nvbench's axes).
"""
import sys
from pathlib import Path

import numpy as np
from numba import cuda

import ptxmoe

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from saxpy_numba_vs_ptx import SAXPY_PTX  # noqa: E402 - the example beside this one

SIZES = [1 << 10, 1 << 12, 1 << 14, 1 << 16]


@cuda.jit
def saxpy(a, x, y, out, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = a * x[i] + y[i]


def make_inputs(rng, n):
    return {"a": np.float32(2.5), "x": rng.standard_normal(n, dtype=np.float32),
            "y": rng.standard_normal(n, dtype=np.float32), "out": np.zeros(n, np.float32), "n": np.int32(n)}


def check(outputs, inputs):
    np.testing.assert_allclose(outputs["out"], inputs["a"] * inputs["x"] + inputs["y"], rtol=1e-6, atol=1e-6)


def main(backend="sim", sizes=SIZES, out_dir=None):
    grid = lambda inputs: (int(inputs["n"]) + 255) // 256  # noqa: E731
    result = ptxmoe.sweep({"numba": ptxmoe.NumbaKernel(saxpy, grid=grid, block=256),
                           "ptx": ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=grid, block=256)},
                          make_inputs, sizes={"n": sizes}, check=check, name="saxpy", backend=backend,
                          min_bytes=lambda inputs: 12 * int(inputs["n"]), baseline="numba")
    print(result.to_dataframe()[["n", "impl", "status", "time_us", "achieved_gbps"]].to_string(index=False))
    if out_dir is not None:
        from harness.dashboard import build

        run_dir = result.save(out_dir, overwrite=True).parent
        print(f"dashboard: {build(run_dir)}")
    return result


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "sim", out_dir=Path("profiles") / "saxpy-sweep")

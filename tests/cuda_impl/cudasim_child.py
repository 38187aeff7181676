"""Child process of test_cudasim.py: runs cuda_impl kernels under Numba's CUDA simulator on given inputs.

Usage: python cudasim_child.py CASES.pkl OUT.pkl   (NUMBA_ENABLE_CUDASIM=1 must be in the environment)
CASES.pkl holds {"preset": Preset, "cases": [(label, kernel, params, inputs)]}; OUT.pkl gets {label: outputs}.
"""
import os
import pickle
import sys
import time

if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
    sys.exit("cudasim_child.py needs NUMBA_ENABLE_CUDASIM=1 before numba is imported")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cudasim_backend import CudaSimBackend  # noqa: E402


def main(cases_path: str, out_path: str) -> None:
    import cuda_impl
    from harness.verify import run_kernel

    with open(cases_path, "rb") as f:
        spec = pickle.load(f)
    backend = CudaSimBackend()
    results, seconds = {}, {}
    for label, kernel, params, inputs in spec["cases"]:
        t0 = time.perf_counter()
        _, outputs, _ = run_kernel(cuda_impl.KERNELS[kernel], backend, kernel, spec["preset"], "balanced", 0,
                                   inputs=inputs, **params)
        results[label] = outputs
        seconds[label] = time.perf_counter() - t0
    with open(out_path, "wb") as f:
        pickle.dump({"outputs": results, "seconds": seconds}, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

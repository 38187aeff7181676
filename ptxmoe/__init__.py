"""ptxmoe as a library: compare your own GPU kernels (Numba, CUDA C++, hand PTX) from a script.

    import ptxmoe
    result = ptxmoe.compare({"numba": ptxmoe.NumbaKernel(saxpy, grid=..., block=256),
                             "ptx": ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=..., block=256)},
                            make_inputs, check=check, backend="sim")
    print(result)                       # times (modelled on sim, measured on gpu) and pairwise verdicts
    result.to_dataframe()               # one row per kernel x implementation x case
    result.save("profiles/my-saxpy")    # a run folder: `ptxmoe dashboard profiles/my-saxpy`
    ptxmoe.sweep(kernels, make_inputs, sizes={"n": [1 << 12, 1 << 16]})  # one case per size; plotted against n

The same script runs on the simulator (`backend="sim"`, no GPU needed) and on a GPU (`backend="gpu"`). docs/api.md
documents every argument. Importing ptxmoe is cheap: Numba, pandas, plotly and the simulator load when used.
"""
from ptxmoe.compare import compare
from ptxmoe.errors import BuildError, InputError, KernelError, KernelSpecError, PtxmoeError, UnknownNameError
from ptxmoe.kernels import CppKernel, NumbaKernel, PtxKernel
from ptxmoe.profile import profile
from ptxmoe.result import Result, Verdict, load
from ptxmoe.sweep import sweep

__all__ = ["BuildError", "CppKernel", "InputError", "KernelError", "KernelSpecError", "NumbaKernel", "PtxKernel",
           "PtxmoeError", "Result", "UnknownNameError", "Verdict", "compare", "load", "profile", "sweep"]

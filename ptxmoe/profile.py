"""`profile`: your own kernels under Nsight from Python, `ptxmoe profile --tool ncu --script S --run RUN` as a call.

The script (which calls ptxmoe.compare or sweep and saves its result into `run`) runs under the tool in a child
process, as it must (ncu and nsys launch the program they profile); the report is imported into the run folder and
its metric rows attached to the script's rows by their NVTX ranges. Returns the run as a Result (row.nsight holds the
metrics).
"""
from __future__ import annotations

from pathlib import Path

from ptxmoe.errors import PtxmoeError


def profile(script, run, tool: str = "ncu", launches: str = "first"):
    """Profile `script` under `tool` ("ncu" or "nsys") and return the run it saved, with the metrics attached.

    Raises:
        PtxmoeError: the tool is missing, failed, or the script saved no run.json into `run` (the message says which;
            the tool's output went to stderr).
    """
    from harness.cli import main
    from ptxmoe.result import load

    argv = ["profile", "--tool", tool, "--script", str(script), "--run", str(run)]
    if tool == "ncu":
        argv += ["--ncu-launches", launches]
    code = main(argv)
    if code != 0 or not (Path(run) / "run.json").exists():
        raise PtxmoeError(f"ptxmoe profile --tool {tool} --script {script} --run {run} exited {code}; its messages "
                          f"are above (stderr)")
    return load(run)

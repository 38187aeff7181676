"""Pick a backend by name: "sim" (ptxsim), "gpu" (numba-cuda + driver API), or "auto" (gpu when one is visible)."""
from __future__ import annotations

from harness.backends.base import Backend
from harness.errors import PtxmoeError, UnknownNameError

BACKEND_NAMES = ("auto", "sim", "gpu")


def resolve_backend_name(name: str) -> str:
    """"auto" -> "gpu" when `harness.toolchain.gpu_visible()`, else "sim"; "sim"/"gpu" as they are.

    Raises:
        UnknownNameError: for any other name (the message lists the valid ones).
    """
    if name not in BACKEND_NAMES:
        raise UnknownNameError("backend", name, BACKEND_NAMES)
    if name != "auto":
        return name
    from harness.toolchain import gpu_visible

    return "gpu" if gpu_visible()[0] else "sim"


def select_backend(name: str = "auto", sanitize=()) -> Backend:
    """A new backend instance for `name` ("auto", "sim" or "gpu"); `sanitize` (sim only): ptxsim sanitizer names.

    Raises:
        UnknownNameError: unknown name.
        PtxmoeError: "gpu" asked for explicitly while no GPU is visible (the reason is given).
    """
    resolved = resolve_backend_name(name)
    if resolved == "sim":
        from harness.backends.sim import SimBackend

        return SimBackend(sanitize=sanitize)
    if sanitize:
        raise PtxmoeError(sanitize_on_gpu_message())
    from harness.toolchain import gpu_visible

    ok, why = gpu_visible()
    if not ok:
        raise PtxmoeError(f"backend 'gpu' needs a visible CUDA GPU: {why}; use --backend sim (or auto)")
    from harness.backends.gpu import GpuBackend

    return GpuBackend()


def sanitize_on_gpu_message() -> str:
    """Why --sanitize is refused on the gpu backend, and the command to use instead."""
    return ("--sanitize runs ptxsim's sanitizers and needs --backend sim; on a GPU use NVIDIA compute-sanitizer, "
            "e.g.: compute-sanitizer --tool memcheck python -m harness.cli compare --backend gpu ... "
            "(tools: memcheck, racecheck, initcheck, synccheck)")

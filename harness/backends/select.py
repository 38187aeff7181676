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


def select_backend(name: str = "auto") -> Backend:
    """A new backend instance for `name` ("auto", "sim" or "gpu").

    Raises:
        UnknownNameError: unknown name.
        PtxmoeError: "gpu" asked for explicitly while no GPU is visible (the reason is given).
    """
    resolved = resolve_backend_name(name)
    if resolved == "sim":
        from harness.backends.sim import SimBackend

        return SimBackend()
    from harness.toolchain import gpu_visible

    ok, why = gpu_visible()
    if not ok:
        raise PtxmoeError(f"backend 'gpu' needs a visible CUDA GPU: {why}; use --backend sim (or auto)")
    from harness.backends.gpu import GpuBackend

    return GpuBackend()

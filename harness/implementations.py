"""Which implementations of which kernels exist: `cuda` (cuda_impl/, Numba) and `ptx` (ptx_impl/, hand PTX)."""
from __future__ import annotations

import importlib
from typing import Callable

from contract.registry import Implementation
from harness.errors import UnknownNameError

IMPLS = {"cuda": "cuda_impl", "ptx": "ptx_impl"}


def implementation_table(impl: str) -> tuple[dict[str, Callable], str]:
    """(kernel -> run function, problem) for one implementation; problem is "" when the package imports."""
    if impl not in IMPLS:
        raise UnknownNameError("implementation", impl, IMPLS)
    try:
        module = importlib.import_module(IMPLS[impl])
    except Exception as exc:  # noqa: BLE001 - a broken package is reported, not fatal, in `list`/`compare`
        return {}, f"{IMPLS[impl]} failed to import: {exc}"
    registered = getattr(module, "IMPLEMENTATION", None)
    if not isinstance(registered, Implementation):
        return {}, f"{IMPLS[impl]} registers no contract.registry.Implementation (IMPLEMENTATION) yet"
    if registered.name != impl:
        return {}, f"{IMPLS[impl]} registers itself as {registered.name!r}, expected {impl!r}"
    return dict(registered.kernels), ""


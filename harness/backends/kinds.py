"""What each backend is, as data: whether its times are modelled or measured, whether it simulates.

Code outside harness/backends/ asks `backend_kind(name)` (or a backend's `kind`) what a backend does, never compares
its name: a new backend is one more row here.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.errors import UnknownNameError


@dataclass(frozen=True)
class BackendKind:
    """`basis`: "modelled" (the ptxsim timing model) or "measured" (CUDA events). `simulated`: kernels run on ptxsim,
    so launches may be sampled (--sample), checked by sanitizers (--sanitize), fed lazy inputs, on a heap reset
    between rows. `parallel_rows`: rows may run at once (on a GPU they would disturb each other's timing)."""

    name: str
    basis: str
    simulated: bool
    parallel_rows: bool
    default_preset: str  # `ptxmoe compare` without --preset: a small one on the simulator, the real decode on a GPU


KINDS = {
    "sim": BackendKind("sim", basis="modelled", simulated=True, parallel_rows=True, default_preset="tiny"),
    "gpu": BackendKind("gpu", basis="measured", simulated=False, parallel_rows=False, default_preset="dsv3-decode"),
}


def backend_kind(name: str) -> BackendKind:
    """The kind of a resolved backend name ("sim", "gpu"); UnknownNameError otherwise."""
    kind = KINDS.get(name)
    if kind is None:
        raise UnknownNameError("backend", name, tuple(KINDS))
    return kind

"""Memory a user's row will take, known before it runs: the case's arrays are drawn (and held) already, so what a
row adds is its device copies (sim: simulated global memory in this process) and the outputs read back.

On sim, ptxsim's heap holds a copy of every array and grows by doubling (the old and the new heap both live while
it copies: up to twice the arrays at the peak), and its per-byte written shadow (the never-written report) is one
more byte per byte. The process's base (Python, NumPy, Numba) is contract.footprint.PROCESS_BASE. On a GPU the
copies are device memory: only the outputs read back count here.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HEAP_GROWTH_PEAK = 2  # ptxsim's heap doubling: old + new heap while copying
SHADOW_BYTES_PER_BYTE = 1  # the written shadow, a bool per heap byte


def array_bytes(inputs: Mapping[str, Any], names=None) -> int:
    """Bytes of the arrays among `inputs` (only those named, when `names` is given)."""
    return sum(int(v.nbytes) for k, v in inputs.items()
               if hasattr(v, "nbytes") and getattr(v, "ndim", 0) > 0 and (names is None or k in names))


def case_estimate(name: str, case: str, inputs: Mapping[str, Any], outputs, simulated: bool):
    """contract.footprint.MemoryEstimate of one row of `case`: host = the outputs read back, sim = the heap's peak
    and the written shadow (0 on a GPU)."""
    from contract.footprint import MemoryEstimate

    arrays = array_bytes(inputs)
    back = array_bytes(inputs, set(outputs) if outputs is not None else None)
    sim = (HEAP_GROWTH_PEAK + SHADOW_BYTES_PER_BYTE) * arrays if simulated else 0
    return MemoryEstimate(kernel=name, preset=case, host_bytes=back, sim_bytes=sim, input_bytes=arrays,
                          output_bytes=back, lazy=False)


def skip_reason(estimate, available: int | None, simulated: bool) -> str | None:
    """Why a row will not fit in the memory this machine has now, or None (also when either is unknown)."""
    from harness.row_memory import gib

    if available is None or estimate.total_bytes <= available:
        return None
    parts = f"outputs read back {gib(estimate.host_bytes)}"
    if simulated:
        parts = (f"simulated memory {gib(estimate.sim_bytes)} (a copy of the {gib(estimate.input_bytes)} of arrays, "
                 f"up to twice while the heap grows, and the written shadow) + " + parts)
    helps = "a smaller case, or backend='gpu'" if simulated else "a smaller case"
    return (f"not run: needs about {gib(estimate.total_bytes)} ({parts} + the process's base) and this machine has "
            f"{gib(available)} available; try {helps}")


def device_need(inputs: Mapping[str, Any]) -> int:
    """Device bytes a gpu row needs: a copy of every array, times the timing loop's input rotation (copies of the
    inputs rotated between samples while they fit in L2: harness.timing.gpu.rotation_count)."""
    from harness.timing.gpu import rotation_count
    from harness.timing.row_timing import DEFAULT_L2_BYTES

    arrays = array_bytes(inputs)
    return arrays * rotation_count(arrays, DEFAULT_L2_BYTES)


def device_skip_reason(need: int, free: int | None) -> str | None:
    """Why a gpu row will not fit in the device memory free now, or None (also when unknown)."""
    from harness.row_memory import gib

    if free is None or need <= free:
        return None
    return (f"not run: needs about {gib(need)} of device memory (a copy of every array, and the timing loop's "
            f"rotated copies) and the GPU has {gib(free)} free; try a smaller case")

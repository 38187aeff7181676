"""How much memory a row will need, known before it runs, and whether this machine has it.

`estimate_row_memory(kernel, preset, impl)` is the one function the runner asks (the lead may swap in the contract's
own estimator): host bytes (inputs, outputs, the float64 reference the check computes) and, on the sim backend,
simulated device bytes times ptxsim's host bytes per simulated byte. The sizes come from kernels.md's shapes per
kernel (the KernelSpec tables need the arrays themselves, which at DeepSeek-V3 sizes are the thing to avoid making).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

BF16, F32, I32, E4M3, F64 = 2, 4, 4, 1, 8
# NOTE: ptxsim keeps data, a state byte and an initcheck shadow byte per simulated byte (ptxsim/memory.py), and
# grows its arena by doubling, so an arena can be up to twice what is live: 3 bytes, times 2 at worst.
SIM_BYTES_PER_BYTE = 3
SIM_GROWTH = 2


def _routing(p) -> int:
    """align's outputs, which every routed kernel takes some of (counts, offsets, sorted_ids, block_expert, ...)."""
    return I32 * (p.E + p.E + 1 + 1 + p.P_max + p.n_blocks + p.slots)


def _gemm_dims(p, variant: str | None) -> tuple[int, int]:
    return (p.H, 2 * p.I) if variant in (None, "up") else (p.I, p.H)


def _gemm(p, variant):
    kd, n = _gemm_dims(p, variant)
    return (BF16 * (p.P_max * kd + p.E * n * kd) + _routing(p), BF16 * p.P_max * n)


def _layer(p, variant):
    weights = BF16 * p.E * 3 * p.I * p.H
    inputs = F32 * (p.T * p.E + p.E) + BF16 * p.T * p.H + weights
    # permuted x, up output, swiglu output, down output (all P_max rows), then out and its fp8 quantisation
    middle = BF16 * p.P_max * (p.H + 2 * p.I + p.I + p.H) + _routing(p) + F32 * 2 * p.slots
    return inputs + middle, BF16 * p.T * p.H + E4M3 * p.T * p.H + F32 * p.T * p.H // 128


# kernel -> (preset, variant) -> (input bytes, output bytes); intermediates of the layer count as inputs
SHAPES = {
    "gate": lambda p, v: (F32 * (p.T * p.E + p.E), (I32 + F32) * p.T * p.K),
    "align": lambda p, v: (I32 * p.slots, _routing(p)),
    "permute": lambda p, v: (BF16 * p.T * p.H + I32 * (p.P_max + 1), BF16 * p.P_max * p.H),
    "act_quant": lambda p, v: (BF16 * p.T * p.H, E4M3 * p.T * p.H + F32 * p.T * p.H // 128),
    "grouped_gemm": _gemm,
    "swiglu": lambda p, v: (BF16 * p.P_max * 2 * p.I + I32, BF16 * p.P_max * p.I),
    "combine": lambda p, v: (BF16 * p.P_max * p.H + F32 * p.slots + I32 * p.slots, BF16 * p.T * p.H),
    "layer": _layer,
}


@dataclass(frozen=True)
class RowMemory:
    """A row's estimated peak memory in bytes: host (NumPy arrays) and the simulator's arena (0 on a real GPU)."""

    host_bytes: int
    sim_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.host_bytes + self.sim_bytes


def estimate_row_memory(kernel: str, preset, impl: str, variant: str | None = None, backend: str = "sim") -> RowMemory:
    """Estimated host and simulated memory of one row.

    Args:
        kernel: a contract kernel name; preset: a Preset or its name; impl: the implementation (all three today
            hold the same arrays); variant: grouped_gemm's "up" or "down"; backend: "sim" adds ptxsim's arena.
    Raises:
        UnknownNameError: an unknown kernel or preset.
    """
    from contract.errors import UnknownNameError
    from contract.presets import get_preset

    p = get_preset(preset)
    if kernel not in SHAPES:
        raise UnknownNameError("kernel", kernel, SHAPES)
    inputs, outputs = SHAPES[kernel](p, variant)
    reference = F64 // BF16 * outputs  # the check's float64 reference of the outputs (bf16 -> 4x; fp8 over-counted)
    host = inputs + 2 * outputs + reference  # host arrays, the outputs copied back, the reference
    sim = (inputs + outputs) * SIM_BYTES_PER_BYTE * SIM_GROWTH if backend == "sim" else 0
    return RowMemory(int(host), int(sim))


def available_bytes() -> int | None:
    """Memory this machine can give now (MemAvailable from /proc/meminfo, else free pages), or None if unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def memory_skip_reason(kernel: str, preset: str, impl: str, variant: str | None, backend: str,
                       available: int | None) -> str | None:
    """One line saying why a row will not fit (what it needs, what the machine has, which flag helps), or None."""
    if available is None or kernel not in SHAPES:  # unknown: run it rather than guess
        return None
    need = estimate_row_memory(kernel, preset, impl, variant, backend)
    if need.total_bytes <= available:
        return None
    parts = f"host {gib(need.host_bytes)}" + (f" + simulated {gib(need.sim_bytes)}" if need.sim_bytes else "")
    return (f"needs about {gib(need.total_bytes)} ({parts}), the machine has {gib(available)} free: skipped; "
            f"use a smaller --preset (e.g. tiny or small), leave the kernel out with --kernels, or run with "
            f"--backend gpu")

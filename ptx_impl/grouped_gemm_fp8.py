"""grouped_gemm_fp8 in hand-written PTX as issue #16's ablation ladder: one kernel per rung, each adding one Hopper
feature and passing the same kernels.md check, so a comparison shows where the gain comes from.

`RUNGS` lists them lowest first (number, short name, module); each module has `run(backend, args, preset, **params)`
and `ptx_modules()`. `run(..., rung=N)` runs rung N; without `rung` the top rung runs (the ptx path's best kernel).
`EXTRA_RUNGS` are rungs above the top that `run(..., rung=N)` reaches but the ladder (rows, dashboard, layer) leaves
out.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

from contract.errors import InputError

KERNEL = "grouped_gemm_fp8"


@dataclass(frozen=True)
class Rung:
    number: int
    name: str  # what it adds, for tables and the dashboard
    module: str  # the module with run() and ptx_modules()


RUNGS: tuple[Rung, ...] = (
    Rung(1, "mma.sync+cp.async", "ptx_impl.gemm_fp8_r1"),
    Rung(2, "wgmma+cp.async", "ptx_impl.gemm_fp8_r2"),
    Rung(3, "wgmma+TMA+mbarrier", "ptx_impl.gemm_fp8_r3"),
    Rung(4, "+warp-specialised persistent", "ptx_impl.gemm_fp8_r4"),
    Rung(5, "+2-CTA cluster multicast", "ptx_impl.gemm_fp8_r5"),
    Rung(6, "+token-major 128x128 tiles, 7 stages", "ptx_impl.gemm_fp8_r6"),
    Rung(7, "+scales by TMA / in shared memory", "ptx_impl.gemm_fp8_r7"),
    Rung(8, "+TMA-store epilogue", "ptx_impl.gemm_fp8_r8"),
    Rung(9, "+grouped rasterisation", "ptx_impl.gemm_fp8_r9"),
    Rung(10, "+promotion overlapping the next wgmma", "ptx_impl.gemm_fp8_r10"),
    # NOTE: rung 11 builds on rung 9's lockstep loop, not on rung 10's overlap (a second partial-sum set beside its
    # 128 sums does not fit the consumers' registers): its row against rung 10 is the wide tile against the overlap
    Rung(11, "+128x256 tiles (rung 9's lockstep loop)", "ptx_impl.gemm_fp8_r11"),
    Rung(12, "+weight tile multicast (pairs of token tiles)", "ptx_impl.gemm_fp8_r12"),
)
# NOTE: rungs built and checked but not in the ladder: `run(..., rung=N)` and get_rung reach them, the compare's rows,
# the dashboard and the layer (the top rung) do not. None today (rungs 11 and 12 joined the ladder once
# harness.sampling's threshold counted work, not items: docs/kernels.md).
EXTRA_RUNGS: tuple[Rung, ...] = ()


def rung_names() -> tuple[str, ...]:
    return tuple(r.name for r in RUNGS)


def get_rung(number: int | None) -> Rung:
    """Rung `number` (1-based); None = the top rung. Raises InputError naming the rungs there are."""
    if number is None:
        return RUNGS[-1]
    for r in RUNGS + EXTRA_RUNGS:
        if r.number == number:
            return r
    raise InputError(f"ptx {KERNEL}: rung={number!r}; expected one of "
                     f"{', '.join(f'{r.number} ({r.name})' for r in RUNGS + EXTRA_RUNGS)}")


def run(backend, args: dict, preset, rung: int | None = None, **params) -> list:
    """Launch rung `rung` (None: the top rung) of the FP8 grouped GEMM; params (`variant`) go to the rung."""
    return importlib.import_module(get_rung(rung).module).run(backend, args, preset, **params)


def ptx_modules() -> dict[str, str]:
    """{module name: PTX text} of every rung, for static analysis."""
    out: dict[str, str] = {}
    for r in RUNGS:
        out.update(importlib.import_module(r.module).ptx_modules())
    return out

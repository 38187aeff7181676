"""grouped_gemm_fp8 in hand-written PTX, the promotion-overlap rung (kernels.md "grouped_gemm_fp8"): rung 7 with each
K group's promotion running on the CUDA cores while the next K group's wgmmas run on the tensor cores.

Issue #30's finding (c): in rungs 6/7 both consumer warpgroups issue a stage's wgmmas, wait for them to retire
(`wgmma.wait_group 0`) and only then promote (64 fma a thread: partial sums x token scale x weight scale into fp32),
so the tensor cores idle through every promotion. Here each consumer thread keeps a second set of 64 partial-sum
registers: K group k's wgmmas write one set while group k - 1's promotion reads the other, after a
`wgmma.wait_group 1` that retires group k - 1 only (DeepGEMM's and CUTLASS's "wait depth 1, two accumulator sets";
the other way, ping-pong warpgroups on different tiles, needs a tile per warpgroup and ordering barriers between
them). The registers fit: 3 x 64 fp32 (promoted sums, two partial sets) in the consumers' 232 (ptxas: no spills, the
SASS keeps `WARPGROUP.DEPBAR.LE gsb0, 0x1`). A stage is released one K group later than in rung 7 (after the wait
that retires its wgmmas). Everything else (ring, scales by TMA, weight scales in shared memory, epilogue) is rung 7's,
so the output is bit-identical to rung 7's: the same products summed in the same order.

NOTE: provisionally rung 8 of the ladder on this branch (after rung 7); the file is named r10 because rungs 8 and 9
come from another branch (TMA-store epilogue, rasterisation), after which this one is renumbered.

The kernel is ptx_impl/kernels/grouped_gemm_fp8_tmso_m128n128.ptx (gemm_fp8_tm_template.render(tma_scales=True,
overlap=True)); parameters, launch and the scale transpose are rung 7's (gemm_fp8_r7.launch).
"""
from __future__ import annotations

import functools
from pathlib import Path

from ptx_impl import gemm_fp8_r7 as r7
from ptx_impl import gemm_fp8_tm_template as template

KERNEL = r7.KERNEL
RUNG = 8
PARAMS = r7.PARAMS


def path() -> Path:
    return template.path(True, overlap=True)


@functools.cache
def ptx_source(wait_bound: int = 0) -> str:
    """The GEMM's PTX module text: the checked-in file, or with wait_bound > 0 the variant whose waits trap."""
    if wait_bound:
        return template.render(wait_bound, tma_scales=True, overlap=True)
    return path().read_text(encoding="utf-8")


def ptx_modules() -> dict[str, str]:
    """{module name: PTX text}, for static analysis."""
    return {path().stem: ptx_source(), r7.TRANSPOSE.stem: r7.transpose_source()}


def run(backend, args: dict, preset, **params) -> list:
    """Launch the overlap rung: as rung 7 (gemm_fp8_r7.run: same arguments, params, checks and records), with its
    own GEMM kernel."""
    return r7.launch(backend, args, preset, params, RUNG, ptx_source, template.ENTRY_OV)

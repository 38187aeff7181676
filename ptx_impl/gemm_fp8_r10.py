"""grouped_gemm_fp8 in hand-written PTX, rung 10 (kernels.md "grouped_gemm_fp8"): rung 9 with each K group's
promotion running on the CUDA cores while the next K group's wgmmas run on the tensor cores.

Issue #30's finding (c): in rungs 6-9 both consumer warpgroups issue a stage's wgmmas, wait for them to retire
(`wgmma.wait_group 0`) and only then promote (64 fma a thread: partial sums x token scale x weight scale into fp32),
so the tensor cores idle through every promotion. Here each consumer thread keeps a second set of 64 partial-sum
registers: K group k's wgmmas write one set while group k - 1's promotion reads the other, after a
`wgmma.wait_group 1` that retires group k - 1 only (DeepGEMM's and CUTLASS's "wait depth 1, two accumulator sets";
the other way, ping-pong warpgroups on different tiles, needs a tile per warpgroup and ordering barriers between
them). The registers must fit: 3 x 64 fp32 (promoted sums, two partial sets) and rung 8's epilogue registers in the
consumers' 232 (tests/ptx_impl/test_gemm_fp8_r10.py checks ptxas's spill count and that the SASS keeps
`WARPGROUP.DEPBAR.LE gsb0, 0x1`). A stage is released one K group later than in rung 9 (after the wait that retires
its wgmmas). Everything else (ring, scales by TMA, weight scales in shared memory, TMA-store epilogue, raster order)
is rung 9's, so the output is bit-identical to rung 9's: the same products summed in the same order.

The kernel is ptx_impl/kernels/grouped_gemm_fp8_tmro_m128n128.ptx (gemm_fp8_tm_template.render(..., raster=True,
overlap=True)); parameters, launch, items and the scale transpose are rung 9's (gemm_fp8_r8.launch, r9.work_items).
"""
from __future__ import annotations

from ptx_impl import gemm_fp8_r8 as r8
from ptx_impl import gemm_fp8_r9 as r9
from ptx_impl import gemm_fp8_tm_rung as tm_rung

KERNEL = r9.KERNEL
RUNG = 10
PARAMS = r9.PARAMS
FEATURES = {**r9.FEATURES, "overlap": True}
work_items = r9.work_items  # rung 9's items in raster groups (harness.sampling's windows, the tests)


path, ptx_source, ptx_modules, default_sms = tm_rung.kernel(FEATURES, below=r9)  # gemm_fp8_tm_rung


def run(backend, args: dict, preset, **params) -> list:
    """Launch rung 10: rung 9 (gemm_fp8_r9.run: the same arguments, parameters, checks, items and records) with its
    own GEMM kernel."""
    import numpy as np

    return r8.launch(backend, args, preset, params, RUNG, FEATURES, r9.work_items,
                     lambda sizes: [np.uint32(r9.raster_blocks(sizes))])

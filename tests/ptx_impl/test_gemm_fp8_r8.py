"""PTX rung 8 of the FP8 grouped GEMM (rung 7 with a TMA-store epilogue: stmatrix into a 128B-swizzled buffer per
consumer warpgroup, then cp.async.bulk.tensor stores of the run's routing blocks): passes kernels.md's check through
ptxsim (tiny at every skew and variant on a small persistent grid, the full grid through the ladder, an odd N-tile
count, BM 32 and 64, small), bit-identical to rung 7, clean under ptxsim's sanitizers, zero spills, and the PTX shape
its header promises (no st.global: every output element goes through the buffer and TMA)."""
import functools
import re

import numpy as np
import pytest

from contract.presets import SKEWS
from ptx_impl import gemm_fp8_r8 as r8
from ptx_impl import gemm_fp8_tm_template as template
from tests.ptx_impl.rung_checks import rung_check
from tests.ptx_impl.test_gemm_fp8_r4 import RAGGED_BM
from tests.ptx_impl.test_grouped_gemm_fp8 import RAGGED


@pytest.fixture(scope="module")
def backend():
    from harness.backends.sim import SimBackend

    return SimBackend()


def _check(backend, preset, skew, seed, variant, run=r8.run, **params):
    return rung_check(backend, preset, skew, seed, variant, run, **params)


@pytest.mark.sim
@pytest.mark.parametrize("variant", ["up", "down"])
@pytest.mark.parametrize("skew", SKEWS)
def test_tiny_on_a_small_persistent_grid(backend, skew, variant, seed):
    """3 clusters for 31 items: each warpgroup's buffer is reused across items (the .read wait before it)."""
    _check(backend, "tiny", skew, seed, variant, sms=7)
    transpose, gemm = backend.records[-2:]
    assert transpose.name.startswith("scale_transpose") and tuple(gemm.grid) == (6, 1, 1)
    assert gemm.shared_bytes == template.shared_bytes(True, True) <= template.SMEM_LIMIT


@pytest.mark.sim
def test_tiny_on_the_full_grid_through_the_ladder(backend, seed):
    from ptx_impl import grouped_gemm_fp8 as ladder

    assert ladder.get_rung(8).module == "ptx_impl.gemm_fp8_r8"
    _check(backend, "tiny", SKEWS[seed % len(SKEWS)], seed, ("up", "down")[seed // 3 % 2], run=ladder.run, rung=8)
    assert backend.records[-1].grid[0] == 2 * 31


@pytest.mark.sim
def test_an_odd_n_tile_count_and_bm_32_and_64(backend, seed):
    """Store boxes of 32 and 64 rows (one routing block each), and a rank past the last N tile that stores nothing."""
    for preset in (RAGGED, *RAGGED_BM.values()):
        for variant in ("up", "down"):
            _check(backend, preset, SKEWS[seed % len(SKEWS)], seed, variant, sms=7)


@pytest.mark.sim
@pytest.mark.parametrize("preset", ["tiny", RAGGED], ids=["tiny", "odd-n-tiles"])
def test_sanitizers_find_nothing(preset, seed):
    """asynccheck (fence.proxy.async before the stores; no buffer write while a store reads it), racecheck (the
    warpgroup's barriers around the buffer), memcheck, initcheck, synccheck."""
    from harness.backends.sim import SimBackend

    sim = SimBackend(sanitize=("asynccheck", "racecheck", "memcheck", "initcheck", "synccheck"))
    _check(sim, preset, SKEWS[seed % len(SKEWS)], seed, "down", sms=4)
    assert sim.sanitizer_findings() == []


@pytest.mark.sim
def test_small(backend, seed):
    _check(backend, "small", SKEWS[seed % len(SKEWS)], seed, ("up", "down")[seed // 3 % 2])


@pytest.mark.sim
def test_bit_identical_to_rung_7(backend, seed):
    """The same accumulators rounded by the same cvt.rn.bf16x2: how they reach c must not change a bit."""
    from harness.verify import run_kernel
    from ptx_impl import gemm_fp8_r7 as r7

    skew = SKEWS[seed % len(SKEWS)]
    c7, c8 = (run_kernel(functools.partial(run, sms=9), backend, "grouped_gemm_fp8", "tiny", skew, seed,
                         variant="down")[1]["c"] for run in (r7.run, r8.run))
    assert np.array_equal(c7.view(np.uint16), c8.view(np.uint16))


def test_assembles_for_sm90a_with_zero_spills():
    from harness.toolchain import assemble

    _, usage = assemble(r8.ptx_source(), "sm_90a", name=r8.path().name)
    u = usage[template.ENTRY8]
    assert u.spills == 0 and u.stack_frame_bytes == 0, u
    assert u.registers == template.MAXNREG and u.shared_bytes == 0, u


def test_ptx_shape_matches_the_header():
    ptx = re.sub(r"//[^\n]*", "", r8.ptx_source())
    epilogue = ptx[ptx.index("$C_kdone:"):ptx.index("$C_next:")]

    def count(pattern: str, text: str = ptx) -> int:
        return len(re.findall(pattern, text))

    assert template.STAGES8 == 6 and template.shared_bytes(True, True) <= template.SMEM_LIMIT
    assert count(r"\.param \.align 64 \.b8 gf_tm_c\[128\]") == 1 and "gf_c," not in ptx
    assert count(r"st\.global") == 0  # every output element goes through the buffer and TMA
    assert count(r"stmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16", epilogue) == 8  # 2 halves x 4 (16 columns each)
    assert count(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta\.bulk_group \[%ptmc", epilogue) == 2
    assert count(r"cp\.async\.bulk\.commit_group", epilogue) == 2
    assert count(r"@%p_el cp\.async\.bulk\.wait_group\.read 0;", epilogue) == 2
    assert count(r"@%p_el cp\.async\.bulk\.wait_group 0;") == 1  # before exit
    # per half: read wait, barrier, stmatrix, proxy fence, barrier, then the stores
    half = (r"wait_group\.read 0;\s+bar\.sync\s+%bid, 128;(?:[^$]*?stmatrix){4}[^$]*?fence\.proxy\.async\.shared::cta;"
            r"\s+bar\.sync\s+%bid, 128;")
    assert len(re.findall(half, epilogue)) == 2
    assert count(r"bar\.sync\s+%bid, 128;") == 5  # 4 in the epilogue, 1 after the weight-scale copy

"""PTX rung 11 of the FP8 grouped GEMM (rung 9 with 128 x 256 CTA tiles: two m64n128 halves through one partial-sum
set), its own checks: bit-identical to rung 10 with a narrow last tile, a promotion that skips the fence or the wait
caught by asynccheck, and the PTX shape its header promises. What every token-major rung must do (tiny, the full grid
through the ladder, an odd N-tile count, BM 32 and 64, rung 9's raster shape, small, clean under every sanitizer,
bit-identical to rung 10 at tiny, zero spills) is tests/ptx_impl/test_gemm_fp8_rungs.py's."""
import functools
import re

import numpy as np
import pytest

from contract.presets import SKEWS
from ptx_impl import gemm_fp8_r11 as r11
from ptx_impl import gemm_fp8_tm_wide as wide
from tests.ptx_impl.rung_checks import launch_mutant, rung_check, rung_result
from tests.ptx_impl.test_grouped_gemm_fp8 import RAGGED


@pytest.fixture(scope="module")
def backend():
    from harness.backends.sim import SimBackend

    return SimBackend()


def _check(backend, preset, skew, seed, variant, run=r11.run, **params):
    return rung_check(backend, preset, skew, seed, variant, run, **params)


@pytest.mark.sim
def test_bit_identical_to_rung_10_with_a_narrow_last_tile(backend, seed):
    """The same products and scales summed in the same order per output element: the wider tile must not change a
    bit, its narrow last tile (RAGGED's down GEMM, N = 384) included (tiny: test_gemm_fp8_rungs)."""
    from harness.verify import run_kernel
    from ptx_impl import gemm_fp8_r10 as r10

    skew = SKEWS[seed % len(SKEWS)]
    c10, c11 = (run_kernel(functools.partial(run, sms=9), backend, "grouped_gemm_fp8", RAGGED, skew, seed,
                           variant="down")[1]["c"] for run in (r10.run, r11.run))
    assert np.array_equal(c10.view(np.uint16), c11.view(np.uint16))


def _findings(monkeypatch, seed, old: str, new: str) -> list[dict]:
    """Run the module with `old` (occurring once) replaced by `new` under asynccheck; its findings."""
    from harness.backends.sim import SimBackend

    launch_mutant(monkeypatch, r11, old, new)
    sim = SimBackend(sanitize=("asynccheck",))
    rung_result(sim, "tiny", "balanced", seed, "up", r11.run, sms=4)
    return sim.sanitizer_findings()


UPPER = "    @%p_nar bra.uni     $C_release;                 // no upper half\n"


@pytest.mark.sim
def test_a_second_half_without_its_wait_is_caught(seed, monkeypatch):
    """The upper half's wait_group 0 dropped: its promotion reads %part while the wgmmas still write it."""
    ptx = r11.ptx_source()
    upper = ptx[ptx.index(UPPER):]
    wait = upper[upper.index("    wgmma.commit_group"):upper.index("    shl.b32             %tmp, %kt, 2;")]
    found = _findings(monkeypatch, seed, wait, "    wgmma.commit_group.sync.aligned;\n")
    assert any(f["tool"] == "asynccheck" for f in found), found


@pytest.mark.sim
def test_a_second_half_without_its_fence_is_caught(seed, monkeypatch):
    """The upper half's wgmma.fence dropped: its wgmmas overwrite %part after the lower half's promotion read it
    with no fence between (the async rules' register hazard)."""
    ptx = r11.ptx_source()
    i = ptx.index(UPPER)
    fence = "    wgmma.fence.sync.aligned;                       // the last promotion's reads of %part come first\n"
    j = ptx.index(fence, i)
    old = ptx[i:j + len(fence)]
    found = _findings(monkeypatch, seed, old, old.replace(fence, ""))
    assert any(f["tool"] == "asynccheck" for f in found), found


def test_ptx_shape_matches_the_header():
    ptx = re.sub(r"//[^\n]*", "", r11.ptx_source())
    body = ptx[ptx.index("$C_k:"):ptx.index("@%p_more bra.uni    $C_k;")]  # the consumers' K loop

    def count(pattern: str, text: str = body) -> int:
        return len(re.findall(pattern, text))

    assert count(r"wgmma\.mma_async\.sync\.aligned\.m64n128k32\.f32\.e4m3\.e4m3 \{%part0, ") == 8  # 2 halves x 4
    assert count(r"wgmma\.fence\.sync\.aligned;") == 2 and count(r"wgmma\.wait_group\.sync\.aligned 0;") == 2
    assert count(r"fma\.rn\.f32\s+%acc(\d+), %part\d+,") == wide.ACC  # each promoted sum once a stage
    assert sorted(int(m) for m in re.findall(r"fma\.rn\.f32\s+%acc(\d+),", body)) == list(range(wide.ACC))
    assert count(r"ld\.global") == 0 and count(r"ld\.shared\.f32") == 2 + 2  # token scales, a weight scale a half
    assert ".reg .f32   %acc<128>, %part<64>," in r11.ptx_source() and "%part_b" not in r11.ptx_source()
    producer = ptx[ptx.index("$P_k:"):ptx.index("$P_next:")]
    assert count(r"cp\.async\.bulk\.tensor[^\n]*%ptmw", producer) == 2  # two 128-row weight boxes a stage
    assert count(r"@%p_nar bra\.uni\s+\$C_st[23]done;", ptx) == 2  # the upper spans skipped past N

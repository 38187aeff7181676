"""PTX rung 11 of the FP8 grouped GEMM (rung 9 with 128 x 256 CTA tiles: two m64n128 halves through one partial-sum
set): passes kernels.md's check through ptxsim (tiny on a small persistent grid, the full grid through the ladder's
run as a rung above its top, an odd 128-column N-tile count (a half tile past N), BM 32 and 64, rung 9's raster
shape, small), bit-identical to rung 10 (and so to rung 9), clean under ptxsim's sanitizers (asynccheck included),
a promotion that skips the fence or the wait caught, zero spills, and the PTX shape its header promises."""
import functools
import re

import numpy as np
import pytest

from contract.presets import SKEWS
from ptx_impl import gemm_fp8_r11 as r11
from ptx_impl import gemm_fp8_tm_template as template
from ptx_impl import gemm_fp8_tm_wide as wide
from tests.ptx_impl.rung_checks import launch_mutant, rung_check, rung_result
from tests.ptx_impl.test_gemm_fp8_r4 import RAGGED_BM
from tests.ptx_impl.test_gemm_fp8_r9 import RASTER
from tests.ptx_impl.test_grouped_gemm_fp8 import RAGGED

SANITIZERS = ("asynccheck", "racecheck", "memcheck", "initcheck", "synccheck")


@pytest.fixture(scope="module")
def backend():
    from harness.backends.sim import SimBackend

    return SimBackend()


def _check(backend, preset, skew, seed, variant, run=r11.run, **params):
    return rung_check(backend, preset, skew, seed, variant, run, **params)


@pytest.mark.sim
@pytest.mark.parametrize("variant", ["up", "down"])
def test_tiny_on_a_small_persistent_grid(backend, variant, seed):
    """3 clusters for the items: the ring (4 stages) wraps across items."""
    _check(backend, "tiny", SKEWS[seed % len(SKEWS)], seed, variant, sms=7)
    transpose, gemm = backend.records[-2:]
    assert transpose.name.startswith("scale_transpose") and tuple(gemm.grid) == (6, 1, 1)
    assert gemm.shared_bytes == template.shared_bytes(**r11.FEATURES) <= template.SMEM_LIMIT


@pytest.mark.sim
def test_tiny_on_the_full_grid_through_ladder_run_as_an_extra_rung(backend, seed):
    """ladder.run(rung=11) reaches rung 11; the ladder's rows, the dashboard and the layer stop at rung 10."""
    from ptx_impl import IMPLEMENTATION
    from ptx_impl import grouped_gemm_fp8 as ladder

    assert ladder.get_rung(r11.RUNG).module == "ptx_impl.gemm_fp8_r11"
    assert ladder.get_rung(None).number == 10 and len(IMPLEMENTATION.ladders["grouped_gemm_fp8"]) == 10
    _check(backend, "tiny", SKEWS[seed % len(SKEWS)], seed, ("up", "down")[seed // 3 % 2], run=ladder.run,
           rung=r11.RUNG)


@pytest.mark.sim
def test_an_odd_n_tile_count_bm_32_and_64_and_raster_groups_of_two_tiles(backend, seed):
    """RAGGED's down GEMM has N = 384: the last 256-column tile's upper half lies past N (no weight box, no wgmma,
    no store there); the check covers every column up to N. (Every other shape here has N = 256: one whole tile.)"""
    _check(backend, RAGGED, SKEWS[seed % len(SKEWS)], seed, "down", sms=7)
    for preset in (*RAGGED_BM.values(), RASTER):
        _check(backend, preset, SKEWS[seed % len(SKEWS)], seed, ("up", "down")[seed % 2], sms=7)


@pytest.mark.sim
@pytest.mark.parametrize("preset", ["tiny", RAGGED], ids=["tiny", "odd-n-tiles"])
def test_sanitizers_find_nothing(preset, seed):
    """asynccheck (no partial set read or overwritten while a wgmma writes it), racecheck, memcheck, initcheck,
    synccheck."""
    from harness.backends.sim import SimBackend

    sim = SimBackend(sanitize=SANITIZERS)
    _check(sim, preset, SKEWS[seed % len(SKEWS)], seed, "down", sms=4)
    assert sim.sanitizer_findings() == []


@pytest.mark.sim
@pytest.mark.parametrize("preset,variant", [("tiny", "up"), ("tiny", "down"), (RAGGED, "down")],
                         ids=["tiny-up", "tiny-down", "narrow-last-tile"])
def test_bit_identical_to_rung_10(backend, seed, preset, variant):
    """The same products and scales summed in the same order per output element: the wider tile must not change a
    bit (RAGGED's down GEMM, N = 384, has a narrow last tile)."""
    from harness.verify import run_kernel
    from ptx_impl import gemm_fp8_r10 as r10

    skew = SKEWS[seed % len(SKEWS)]
    c10, c11 = (run_kernel(functools.partial(run, sms=9), backend, "grouped_gemm_fp8", preset, skew, seed,
                           variant=variant)[1]["c"] for run in (r10.run, r11.run))
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


def test_assembles_for_sm90a_with_zero_spills():
    """128 promoted + 64 partial fp32 and the TMA-store epilogue's registers fit the consumers' 232 without
    spills."""
    from harness.toolchain import assemble

    _, usage = assemble(r11.ptx_source(), "sm_90a", name=r11.path().name)
    u = usage[template.entry(**r11.FEATURES)]
    assert u.spills == 0 and u.stack_frame_bytes == 0, u
    assert u.registers == template.MAXNREG and u.shared_bytes == 0, u


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


@pytest.mark.sim
def test_small(backend, seed):
    _check(backend, "small", SKEWS[seed % len(SKEWS)], seed, ("up", "down")[seed // 3 % 2])

"""PTX rung 10 of the FP8 grouped GEMM (rung 9 with each K group's promotion overlapping the next group's wgmmas, two
partial-sum sets and wgmma.wait_group 1): passes kernels.md's check through ptxsim (tiny at every skew and variant on
a small persistent grid, the full grid through the ladder as its top rung, an odd N-tile count, BM 32 and 64, rung
9's raster shape, small), bit-identical to rung 9, clean under ptxsim's sanitizers, the overlap
really there and checked (asynccheck flags a promotion of the set still in flight, a drain that leaves the last group
in flight), zero spills with rung 8's TMA-store epilogue, and the PTX shape its header promises."""
import functools
import re

import numpy as np
import pytest

from contract.presets import SKEWS
from ptx_impl import gemm_fp8_r10 as r10
from ptx_impl import gemm_fp8_tm_template as template
from tests.ptx_impl.rung_checks import launch_mutant, rung_check, rung_result
from tests.ptx_impl.test_gemm_fp8_r4 import RAGGED_BM
from tests.ptx_impl.test_gemm_fp8_r9 import RASTER
from tests.ptx_impl.test_grouped_gemm_fp8 import RAGGED

SANITIZERS = ("asynccheck", "racecheck", "memcheck", "initcheck", "synccheck")


@pytest.fixture(scope="module")
def backend():
    from harness.backends.sim import SimBackend

    return SimBackend()


def _check(backend, preset, skew, seed, variant, run=r10.run, **params):
    return rung_check(backend, preset, skew, seed, variant, run, **params)


@pytest.mark.sim
@pytest.mark.parametrize("variant", ["up", "down"])
@pytest.mark.parametrize("skew", SKEWS)
def test_tiny_on_a_small_persistent_grid(backend, skew, variant, seed):
    """3 clusters for 31 items: the ring wraps across items, each item drains its last group (odd or even)."""
    _check(backend, "tiny", skew, seed, variant, sms=7)
    transpose, gemm = backend.records[-2:]
    assert transpose.name.startswith("scale_transpose") and tuple(gemm.grid) == (6, 1, 1)
    assert gemm.shared_bytes == template.shared_bytes(**r10.FEATURES) <= template.SMEM_LIMIT


@pytest.mark.sim
def test_tiny_on_the_full_grid_through_the_ladder_as_its_top_rung(backend, seed):
    from ptx_impl import grouped_gemm_fp8 as ladder

    assert ladder.get_rung(None).module == ladder.get_rung(r10.RUNG).module == "ptx_impl.gemm_fp8_r10"
    _check(backend, "tiny", SKEWS[seed % len(SKEWS)], seed, ("up", "down")[seed // 3 % 2], run=ladder.run,
           rung=r10.RUNG)
    assert backend.records[-1].grid[0] == 2 * 31


@pytest.mark.sim
def test_an_odd_n_tile_count_bm_32_and_64_and_raster_groups_of_two_tiles(backend, seed):
    for preset in (RAGGED, *RAGGED_BM.values(), RASTER):
        for variant in ("up", "down"):
            _check(backend, preset, SKEWS[seed % len(SKEWS)], seed, variant, sms=7)


@pytest.mark.sim
@pytest.mark.parametrize("preset", ["tiny", RAGGED], ids=["tiny", "odd-n-tiles"])
def test_sanitizers_find_nothing(preset, seed):
    """asynccheck (no set read or overwritten while a wgmma writes it), racecheck, memcheck, initcheck, synccheck."""
    from harness.backends.sim import SimBackend

    sim = SimBackend(sanitize=SANITIZERS)
    _check(sim, preset, SKEWS[seed % len(SKEWS)], seed, "down", sms=4)
    assert sim.sanitizer_findings() == []


@pytest.mark.sim
def test_small(backend, seed):
    _check(backend, "small", SKEWS[seed % len(SKEWS)], seed, ("up", "down")[seed // 3 % 2])


@pytest.mark.sim
@pytest.mark.parametrize("variant", ["up", "down"])
def test_bit_identical_to_rung_9(backend, seed, variant):
    """The same products and scales summed in the same order: overlapping the promotion must not change a bit (tiny
    up has 2 K groups an item, down 1: both drains)."""
    from harness.verify import run_kernel
    from ptx_impl import gemm_fp8_r9 as r9

    skew = SKEWS[seed % len(SKEWS)]
    c9, c10 = (run_kernel(functools.partial(run, sms=9), backend, "grouped_gemm_fp8", "tiny", skew, seed,
                          variant=variant)[1]["c"] for run in (r9.run, r10.run))
    assert np.array_equal(c9.view(np.uint16), c10.view(np.uint16))


def _findings(monkeypatch, seed, old: str, new: str, count: int = 1) -> list[dict]:
    """Run the module with `old` (occurring `count` times) replaced by `new` under asynccheck; its findings."""
    from harness.backends.sim import SimBackend

    good = r10.ptx_source()
    assert good.count(old) == count, old
    if count == 1:
        launch_mutant(monkeypatch, r10, old, new)
    else:
        monkeypatch.setattr(r10, "ptx_source", lambda wait_bound=0: good.replace(old, new))
    sim = SimBackend(sanitize=("asynccheck",))
    rung_result(sim, "tiny", "balanced", seed, "up", r10.run, sms=4)
    return sim.sanitizer_findings()


@pytest.mark.sim
def test_promoting_the_set_in_flight_is_caught(seed, monkeypatch):
    """The even-group promotion reading %part_b (the odd set, whose wgmmas were just issued) instead of %part: the
    read of a register an in-flight wgmma writes, which asynccheck must flag."""
    found = _findings(monkeypatch, seed, "fma.rn.f32          %acc0, %part0,", "fma.rn.f32          %acc0, %part_b0,",
                      count=2)
    assert any(f["tool"] == "asynccheck" for f in found), found


@pytest.mark.sim
def test_a_drain_that_leaves_the_last_group_in_flight_is_caught(seed, monkeypatch):
    """wait_group 1 where the last group drains (0): its promotion reads registers still being written."""
    ptx = r10.ptx_source()
    drains = ptx.count("wgmma.wait_group.sync.aligned 0;")
    assert drains == 2
    found = _findings(monkeypatch, seed, "wgmma.wait_group.sync.aligned 0;", "wgmma.wait_group.sync.aligned 1;",
                      count=2)
    assert any(f["tool"] == "asynccheck" for f in found), found


def test_assembles_for_sm90a_with_zero_spills_and_keeps_the_overlap():
    """Three 64-register fp32 sets and the TMA-store epilogue's registers fit the consumers' 232 without spills, and
    the SASS keeps the loop's two waits at depth 1 (ptxas may deepen a wait it finds unsafe; here it must not) and
    the drains' at 0."""
    from harness.toolchain import assemble, sass_listing

    cubin, usage = assemble(r10.ptx_source(), "sm_90a", name=r10.path().name)
    u = usage[template.entry(**r10.FEATURES)]
    assert u.spills == 0 and u.stack_frame_bytes == 0, u
    assert u.registers == template.MAXNREG and u.shared_bytes == 0, u
    sass = sass_listing(cubin)
    assert len(re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, 0x1", sass)) == 2, sass
    assert len(re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, 0x0", sass)) == 2


def test_ptx_shape_matches_the_header():
    ptx = re.sub(r"//[^\n]*", "", r10.ptx_source())
    body = ptx[ptx.index("$C_k0:"):ptx.index("$C_kend:")]  # the consumers' K loop

    def count(pattern: str, text: str = body) -> int:
        return len(re.findall(pattern, text))

    wgmma = r"wgmma\.mma_async\.sync\.aligned\.m64n128k32\.f32\.e4m3\.e4m3 \{%"
    assert count(wgmma + r"part0, ") == 4 and count(wgmma + r"part_b0, ") == 4  # a stage into each set
    assert count(r"wgmma\.fence\.sync\.aligned;") == 2 and count(r"wgmma\.commit_group\.sync\.aligned;") == 2
    # in the loop: wait depth 1 after each issue; at the drains: depth 0
    assert count(r"wgmma\.wait_group\.sync\.aligned 1;") == 2 and count(r"wgmma\.wait_group\.sync\.aligned 0;") == 2
    assert count(r"fma\.rn\.f32\s+%acc\d+, %part\d+,") == 2 * template.ACC  # the even set: in the loop and a drain
    assert count(r"fma\.rn\.f32\s+%acc\d+, %part_b\d+,") == 2 * template.ACC
    assert count(r"ld\.global") == 0 and count(r"ld\.shared\.f32") == 2 * 2 + 4  # token scales x 2, weight x 4
    # each set's wgmmas are issued before the other set's promotion waits on depth 1 (the overlap)
    assert re.search(r"%part_b0, [^\n]*\n(?:[^\n]*\n)*?[^\n]*commit_group[^$]*wait_group\.sync\.aligned 1;"
                     r"(?:[^\n]*\n)*?[^\n]*fma\.rn\.f32\s+%acc0, %part0,", body)
    # the stage is released after the wait that retires its wgmmas (own and peer barrier), from %sprev
    assert count(r"mad\.lo\.u32\s+%bar, %sprev, 8, %sempty;") == 4
    assert ".reg .f32   %part_b<64>, %sb0, %sb1;" in r10.ptx_source()

"""PTX rung 10 of the FP8 grouped GEMM (rung 9 with each K group's promotion overlapping the next group's wgmmas, two
partial-sum sets and wgmma.wait_group 1), its own checks: the overlap really there and checked (asynccheck flags a
promotion of the set still in flight, a drain that leaves the last group in flight), the SASS keeping the loop's
waits at depth 1, and the PTX shape its header promises. What every token-major rung must do (kernels.md's check at
tiny, through the ladder as its top rung, an odd N-tile count, BM 32 and 64, rung 9's raster shape, small;
sanitizers; bit-identical to rung 9 at both variants; zero spills with rung 8's TMA-store epilogue) is
tests/ptx_impl/test_gemm_fp8_rungs.py."""
import re

import pytest

from ptx_impl import gemm_fp8_r10 as r10
from ptx_impl import gemm_fp8_tm_template as template
from tests.ptx_impl.rung_checks import assembled, launch_mutant, rung_result


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


def test_the_sass_keeps_the_overlap():
    """The SASS keeps the loop's two waits at depth 1 (ptxas may deepen a wait it finds unsafe; here it must not) and
    the drains' at 0. (Three 64-register fp32 sets and the TMA-store epilogue's registers fitting the consumers' 232
    without spills: test_gemm_fp8_rungs.py, on the same assembly.)"""
    from harness.toolchain import sass_listing

    cubin, _ = assembled(r10)
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

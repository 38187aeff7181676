"""PTX rung 7 of the FP8 grouped GEMM (rung 6 with the token scales brought by TMA from a transposed a_scale and the
weight scales kept in shared memory), its own checks: the scale paths really used (kernels reading the wrong
token-scale row or dropping the weight-scale barrier fail), the transpose kernel without spills, and the PTX shape its
header promises (no global load in the promotion). What every token-major rung must do (kernels.md's check at tiny
with the transpose launched first, through the ladder, an odd N-tile count, BM 32 and 64, small; sanitizers;
bit-identical to rung 6; zero spills) is tests/ptx_impl/test_gemm_fp8_rungs.py."""
import re

import pytest

from ptx_impl import gemm_fp8_r7 as r7
from ptx_impl import gemm_fp8_tm_template as template
from tests.ptx_impl.rung_checks import launch_mutant, rung_result


@pytest.fixture(scope="module")
def backend():
    from harness.backends.sim import SimBackend

    return SimBackend()


def _result(backend, preset, skew, seed, variant, run=r7.run, **params):
    return rung_result(backend, preset, skew, seed, variant, run, **params)


def _mutant(monkeypatch, old: str, new: str) -> None:
    launch_mutant(monkeypatch, r7, old, new)


@pytest.mark.sim
def test_the_wrong_token_scale_row_is_caught(backend, seed, monkeypatch):
    """Token row + 8's scale read from row + 16: the check must fail, so the promotion uses the TMA'd scale rows."""
    _mutant(monkeypatch, "ld.shared.f32       %sa1, [%tmp+32];", "ld.shared.f32       %sa1, [%tmp+64];")
    result = _result(backend, "tiny", "extreme", seed, "up", sms=8)
    assert not result.ok and "normwise relative error" in result.message


@pytest.mark.sim
def test_a_weight_scale_area_refilled_without_its_barrier_is_caught(seed, monkeypatch):
    """Without the named barrier before the copy, a warp may overwrite the weight scales its warpgroup's other warps
    still read for the previous item: racecheck must see it (the barrier is what orders them)."""
    from harness.backends.sim import SimBackend

    good = r7.ptx_source()
    first = good.index("    bar.sync            %bid, 128;\n")
    bad = good[:first] + good[first:].replace("    bar.sync            %bid, 128;\n", "", 1)
    assert bad.count("bar.sync            %bid, 128;") == 1
    monkeypatch.setattr(r7, "ptx_source", lambda wait_bound=0: bad)
    sim = SimBackend(sanitize=("racecheck",))
    _result(sim, "tiny", "balanced", seed, "down", sms=2)
    assert any(f["tool"] == "racecheck" for f in sim.sanitizer_findings()), sim.sanitizer_findings()


def test_the_transpose_assembles_for_sm90a_with_zero_spills():
    from harness.toolchain import assemble

    _, usage = assemble(r7.transpose_source(), "sm_90a", name=r7.TRANSPOSE.name)
    assert usage["scale_transpose"].spills == 0


def test_ptx_shape_matches_the_header():
    ptx = re.sub(r"//[^\n]*", "", r7.ptx_source())
    body = ptx[ptx.index("$C_k:"):ptx.index("$C_next:")]  # the consumers' K loop and epilogue

    def count(pattern: str, text: str = ptx) -> int:
        return len(re.findall(pattern, text))

    assert template.STAGES7 == 6 and template.shared_bytes(True) <= template.SMEM_LIMIT
    assert count(r"\.param \.align 64 \.b8 gf_tm_s\[128\]") == 1 and "gf_a_scale" not in ptx
    assert count(r"cp\.async\.bulk\.tensor\.2d") == 3  # tokens (multicast), weights, token scales
    assert count(r"\[%ptms, \{%abase, %kt\}\]") == 1
    assert count(r"expect_tx\.shared::cta\.b64 %tok, \[%bar\], 33280;") == 1  # 32 KB + 512 B of scales
    assert count(r"expect_tx\.shared::cta\.b64 %tok, \[%bar\], 16896;") == 1  # tokens-only rank: 16 KB + 512 B
    assert count(r"ld\.global", body) == 0 and count(r"ld\.shared\.f32", body) == 3  # 2 token scales, 1 weight
    assert count(r"ld\.global\.nc\.f32") == 1  # the item-start copy of the weight scales
    assert count(r"bar\.sync\s+%bid, 128;") == 2
    # the token scales are read between the commit and the wait (while the wgmma runs)
    assert re.search(r"commit_group[^$]*ld\.shared\.f32\s+%sa0[^$]*ld\.shared\.f32\s+%sa1[^$]*wait_group", body)
    assert count(r"mbarrier\.init\.shared::cta\.b64 \[%sempty\+\d+\], 16;") == template.STAGES7

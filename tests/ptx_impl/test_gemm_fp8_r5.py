"""PTX rung 5 of the FP8 grouped GEMM (rung 4 + 2-CTA clusters multicasting the weight tile): passes kernels.md's check
through ptxsim (tiny at every skew and variant on a small persistent grid, the full grid, a ragged preset, small), the
multicast path really runs (a kernel whose multicast half is misplaced fails the check), runs clean under ptxsim's
sanitizers, assembles for sm_90a with zero spills, has the PTX shape its header promises, and rounds the grid to whole
clusters."""
import functools
import re

import numpy as np
import pytest

from contract.errors import InputError
from contract.presets import SKEWS
from harness.verify import run_and_check
from ptx_impl import gemm_fp8_r4 as r4
from ptx_impl import gemm_fp8_r5 as r5
from ptx_impl import gemm_fp8_ws_template as template
from tests.ptx_impl.test_gemm_fp8_r4 import RAGGED_BM
from tests.ptx_impl.test_grouped_gemm_fp8 import RAGGED


@pytest.fixture(scope="module")
def backend():
    from harness.backends.sim import SimBackend

    return SimBackend()


def _result(backend, preset, skew, seed, variant, run=r5.run, **params):
    return run_and_check(functools.partial(run, **params), backend, "grouped_gemm_fp8", preset, skew, seed,
                         variant=variant)


def _check(backend, preset, skew, seed, variant, run=r5.run, **params):
    result = _result(backend, preset, skew, seed, variant, run, **params)
    assert result.ok, f"{getattr(preset, 'name', preset)} {skew} {variant} {params} seed={seed}: {result.message}"
    return result


@pytest.mark.sim
@pytest.mark.parametrize("variant", ["up", "down"])
@pytest.mark.parametrize("skew", SKEWS)
def test_tiny_on_a_small_persistent_grid(backend, skew, variant, seed):
    """sms=7 rounds down to 3 clusters of 2 for 32 pair items: the ring wraps across items; pairs of one expert
    (multicast) and of two experts occur at every skew, and the last pair's second tile is past P_max (31 tiles)."""
    _check(backend, "tiny", skew, seed, variant, sms=7)
    assert tuple(backend.records[-1].grid) == (6, 1, 1)


@pytest.mark.sim
def test_tiny_on_the_full_grid_through_the_ladder(backend, seed):
    from ptx_impl import grouped_gemm_fp8 as ladder

    assert ladder.get_rung(5).module == "ptx_impl.gemm_fp8_r5"
    _check(backend, "tiny", SKEWS[seed % len(SKEWS)], seed, ("up", "down")[seed // 3 % 2], run=ladder.run, rung=5)
    assert backend.records[-1].grid[0] == 2 * 32  # tiny: 31 token tiles -> 16 pairs x 2 N tiles, under 132 SMs


@pytest.mark.sim
def test_ragged(backend, seed):
    for variant in ("up", "down"):
        _check(backend, RAGGED, SKEWS[seed % len(SKEWS)], seed, variant, sms=12)


@pytest.mark.sim
def test_a_misplaced_multicast_half_is_caught(backend, seed, monkeypatch):
    """Each CTA multicasts weight rows 64*rank..; loading the peer's half instead leaves rows 0..63 missing in both
    CTAs: the check must fail, so the multicast path runs at tiny."""
    bad = r5.ptx_source(16).replace("shl.b32             %tmp, %rank, 6;", "shl.b32             %tmp, %peer, 6;")
    assert bad != r5.ptx_source(16)
    monkeypatch.setattr(r4, "ptx_source", lambda tokens, cluster=False, wait_bound=0: bad)
    result = _result(backend, "tiny", SKEWS[seed % len(SKEWS)], seed, "up", sms=8)
    assert not result.ok and "normwise relative error" in result.message


@pytest.mark.sim
@pytest.mark.parametrize("bm", sorted(RAGGED_BM))
def test_token_tile_follows_bm(backend, bm, seed):
    """BM 32 and 64 run the m32 / m64 cluster kernels: pairs of 64 / 128 tokens sharing a weight tile."""
    for variant in ("up", "down"):
        _check(backend, RAGGED_BM[bm], SKEWS[seed % len(SKEWS)], seed, variant, sms=7)
        assert backend.launched_sources()[backend.records[-1].name][1] == f"grouped_gemm_fp8_mc_m{bm}n128"


@pytest.mark.sim
def test_sanitizers_find_nothing(seed):
    """asynccheck, racecheck (within a CTA; ptxsim does not attribute peer accesses yet), memcheck, initcheck."""
    from harness.backends.sim import SimBackend

    sim = SimBackend(sanitize=("asynccheck", "racecheck", "memcheck", "initcheck"))
    _check(sim, "tiny", SKEWS[seed % len(SKEWS)], seed, "down", sms=4)
    assert sim.sanitizer_findings() == []


@pytest.mark.sim
@pytest.mark.slow
def test_small(backend, seed):
    """One variant per run (the seed picks it and the skew), on the default grid (as rung 4's: about a minute)."""
    _check(backend, "small", SKEWS[seed % len(SKEWS)], seed, ("up", "down")[seed // 3 % 2])


@pytest.mark.parametrize("tokens", template.TOKEN_TILES)
def test_assembles_for_sm90a_with_zero_spills(tokens):
    from harness.toolchain import assemble

    _, usage = assemble(r5.ptx_source(tokens), "sm_90a", name=r5.path(tokens).name)
    u = usage[template.entry(True, tokens)]
    assert u.spills == 0 and u.stack_frame_bytes == 0, u
    assert u.registers == template.MAXNREG and u.shared_bytes == 0, u


@pytest.mark.parametrize("tokens", template.TOKEN_TILES)
def test_ptx_shape_matches_the_header(tokens):
    ptx = re.sub(r"//[^\n]*", "", r5.ptx_source(tokens))

    def count(pattern: str) -> int:
        return len(re.findall(pattern, ptx))

    # cuLaunchKernel honours the directive: neither backend needs a cluster launch attribute
    assert len(re.findall(r"^\.reqnctapercluster 2, 1, 1$", ptx, re.M)) == 1
    assert count(r"\.multicast::cluster \[%dst\], \[%ptmw, \{%kc, %tmp\}\], \[%bar\], %mask;") == 1
    assert count(r"cp\.async\.bulk\.tensor\.2d") == 4  # tokens; the multicast half; the solo pair of halves
    assert count(r"mbarrier\.arrive\.release\.cluster\.shared::cluster\.b64 _, \[%bar\];") == 1  # the peer's empty
    assert count(r"mapa\.shared::cluster\.u32 %rbar, %sempty, %peer;") == 1
    assert count(r"mbarrier\.init\.shared::cta\.b64 \[%sempty\+\d+\], 16;") == template.STAGES  # 8 warps x 2 CTAs
    assert count(r"barrier\.cluster\.arrive\.release;") == 2  # after the inits, before exit (not .aligned)
    assert count(rf"wgmma\.mma_async\.sync\.aligned\.m64n{tokens}k32\.f32\.e4m3\.e4m3") == 4
    assert count(r"fma\.rn\.f32\s+%acc") == tokens // 2 and count(r"setmaxnreg\.(inc|dec)") == 2
    assert "%clusterid.x" in ptx and "%nclusterid.x" in ptx  # persistent over clusters


def test_grid_is_whole_clusters_and_bad_parameters_are_rejected():
    from contract.generators import BF16
    from contract.kernels import get_kernel
    from contract.presets import get_preset
    from harness.backends.sim import SimBackend

    preset = get_preset("tiny")
    inputs = get_kernel("grouped_gemm_fp8").make_inputs(preset, "balanced", 0)
    sim = SimBackend()
    args = {k: sim.to_device(v) for k, v in inputs.items()}
    args["c"] = sim.to_device(np.zeros((preset.P_max, 2 * preset.I), BF16))
    r5.run(sim, args, preset, sms=1)  # fewer SMs than a cluster: still one cluster of two
    assert tuple(sim.records[-1].grid) == (2, 1, 1)
    with pytest.raises(InputError, match="rung 5.*sms"):
        r5.run(sim, args, preset, sms=-2)
    with pytest.raises(InputError, match="unknown parameter"):
        r5.run(sim, args, preset, cluster=4)


@pytest.mark.sim
def test_bit_identical_to_rung_4(backend, seed):
    """Same wgmma steps and promotion order per output: multicasting the weights must not change a single bit."""
    from harness.verify import run_kernel

    skew = SKEWS[seed % len(SKEWS)]
    c4, c5 = (run_kernel(functools.partial(run, sms=9), backend, "grouped_gemm_fp8", "tiny", skew, seed,
                         variant="down")[1]["c"] for run in (r4.run, r5.run))
    assert np.array_equal(c4.view(np.uint16), c5.view(np.uint16))

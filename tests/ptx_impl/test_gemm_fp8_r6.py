"""PTX rung 6 of the FP8 grouped GEMM (token-major 128 x 128 tiles, 7 stages, 2-CTA clusters multicasting the token
tile), its own checks: the multicast and the tile-run rule really run (kernels with either broken fail the check), the
bounded-wait variant, the PTX shape its header promises, the generated file current, and what it cannot tile
rejected. What every token-major rung must do (kernels.md's check at tiny, through the ladder, an odd N-tile count,
BM 32 and 64, small; sanitizers; bit-identical to rung 5; zero spills) is tests/ptx_impl/test_gemm_fp8_rungs.py."""
import re

import numpy as np
import pytest

from contract.errors import InputError
from contract.presets import SKEWS, Preset
from ptx_impl import gemm_fp8_r6 as r6
from ptx_impl import gemm_fp8_tm_template as template
from tests.ptx_impl.rung_checks import launch_mutant, rung_check, rung_result


@pytest.fixture(scope="module")
def backend():
    from harness.backends.sim import SimBackend

    return SimBackend()


def _result(backend, preset, skew, seed, variant, run=r6.run, **params):
    return rung_result(backend, preset, skew, seed, variant, run, **params)


def _mutant(monkeypatch, old: str, new: str) -> None:
    launch_mutant(monkeypatch, r6, old, new)


@pytest.mark.sim
def test_a_misplaced_multicast_half_is_caught(backend, seed, monkeypatch):
    """Each CTA multicasts token rows 64*rank..; loading the peer's half instead leaves rows 0..63 missing in both
    CTAs: the check must fail, so the multicast path runs at tiny."""
    _mutant(monkeypatch, "shl.b32             %tmp, %rank, 6;", "shl.b32             %tmp, %peer, 6;")
    result = _result(backend, "tiny", SKEWS[seed % len(SKEWS)], seed, "up", sms=8)
    assert not result.ok and "normwise relative error" in result.message


@pytest.mark.sim
def test_a_tile_run_cut_short_is_caught(backend, seed, monkeypatch):
    """A run that stops at the first block of its own expert leaves the rows of a multi-block run's later blocks
    unwritten (their blocks are not heads, so no other tile covers them): the check must fail, so runs longer than
    one block occur at tiny's extreme skew and the run rule is what covers them. (A run that crossed into another
    expert would be a race with that expert's own tile, which the check cannot catch deterministically.)"""
    _mutant(monkeypatch, "setp.ne.s32         %p_q, %ep, %e;", "setp.eq.s32         %p_q, %ep, %e;")
    result = _result(backend, "tiny", "extreme", seed, "down", sms=8)
    assert not result.ok and "unwritten" in result.message, result.message


def test_ptx_shape_matches_the_header():
    ptx = re.sub(r"//[^\n]*", "", r6.ptx_source())

    def count(pattern: str) -> int:
        return len(re.findall(pattern, ptx))

    assert template.STAGES == 7 and template.shared_bytes() <= template.SMEM_LIMIT < template.shared_bytes() + \
        template.STAGE_BYTES  # the ring fills the 227 KB opt-in: one more stage would not fit
    assert len(re.findall(r"^\.reqnctapercluster 2, 1, 1$", ptx, re.M)) == 1
    assert count(r"\.multicast::cluster \[%tmp2\], \[%ptma, \{%kc, %tmp\}\], \[%bar\], %mask;") == 1
    assert count(r"cp\.async\.bulk\.tensor\.2d") == 2  # the multicast token half; the weight tile
    assert count(r"expect_tx\.shared::cta\.b64 %tok, \[%bar\], 32768;") == 1
    assert count(r"mbarrier\.arrive\.release\.cluster\.shared::cluster\.b64 _, \[%bar\];") == 1  # the peer's empty
    assert count(r"mbarrier\.init\.shared::cta\.b64 \[%sempty\+\d+\], 16;") == template.STAGES  # 8 warps x 2 CTAs
    assert count(r"mbarrier\.init\.shared::cta\.b64 \[%sfull\+\d+\], 1;") == template.STAGES
    assert count(r"barrier\.cluster\.arrive\.release;") == 2
    assert count(r"wgmma\.mma_async\.sync\.aligned\.m64n128k32\.f32\.e4m3\.e4m3") == 4
    assert count(r"wgmma\.mma_async") == 4 and count(r"wgmma\.wait_group\.sync\.aligned 0;") == 1
    assert count(r"fma\.rn\.f32\s+%acc") == 64 and count(r"setmaxnreg\.(inc|dec)") == 2
    assert count(r"ld\.global\.nc\.f32") == 3  # per stage: 2 token scales, 1 weight scale (rung 5: T/4 + 1)
    assert count(r"@%p_r[01] st\.global\.b32") == 32 and "st.global.b16" not in ptx
    assert "%clusterid.x" in ptx and "%nclusterid.x" in ptx  # persistent over clusters


@pytest.mark.sim
def test_the_bounded_variant_passes_tiny_and_bounds_both_wait_loops(seed):
    """What a backend with wait_bound launches (the GPU backend under its watchdog): both try_wait loops trap past
    the bound, and the check still passes (no wait reaches it)."""
    from harness.backends.sim import SimBackend

    plain, bounded = template.render(), template.render(wait_bound=8)
    assert "trap;" not in plain and plain.count("mbarrier.try_wait") == 2 == bounded.count("trap;")
    sim = SimBackend()
    sim.wait_bound = 8
    rung_check(sim, "tiny", SKEWS[seed % len(SKEWS)], seed, "down", r6.run, sms=4)
    assert "trap;" in sim.launched_sources()[sim.records[-1].name][0]


def test_generated_file_is_current():
    assert r6.path().read_text(encoding="utf-8") == template.render()


def test_grid_is_whole_clusters_and_bad_parameters_are_rejected():
    from contract.generators import BF16
    from contract.kernels import get_kernel
    from contract.presets import get_preset
    from harness.backends.sim import SimBackend

    sim = SimBackend()

    def args_of(preset):
        inputs = get_kernel("grouped_gemm_fp8").make_inputs(preset, "balanced", 0)
        args = {k: sim.to_device(v) for k, v in inputs.items()}
        args["c"] = sim.to_device(np.zeros((preset.P_max, 2 * preset.I), BF16))
        return args

    tiny = get_preset("tiny")
    args = args_of(tiny)
    r6.run(sim, args, tiny, sms=1)  # fewer SMs than a cluster: still one cluster of two
    assert tuple(sim.records[-1].grid) == (2, 1, 1)
    assert sim.records[-1].shared_bytes == template.shared_bytes()
    with pytest.raises(InputError, match="rung 6.*sms"):
        r6.run(sim, args, tiny, sms=-2)
    with pytest.raises(InputError, match="unknown parameter"):
        r6.run(sim, args, tiny, cluster=4)
    bm48 = Preset("bm48", T=16, H=256, E=4, K=2, G=2, TG=1, I=128, BM=48)
    with pytest.raises(InputError, match="BM.*48.*divisor of 128"):
        r6.run(sim, args_of(bm48), bm48)


def test_work_items_are_whole_aligned_groups():
    """Items (block, N-tile pair) by block; a group of R = 128 / BM blocks holds whole tiles, so sampling windows of
    whole groups run whole tiles."""
    items = r6.work_items((496, 256, 7168, 16, 16))  # tiny-like: 31 blocks, 28 pairs
    assert (items.count, items.blocks, items.blocks_per_group, items.items_per_group) == (31 * 28, 31, 8, 8 * 28)
    assert items.items_of(9, 10) == (8 * 28, 16 * 28)
    odd = r6.work_items((128, 256, 384, 64, 4))  # 2 blocks of 64 rows, 2 pairs (the last one half)
    assert (odd.count, odd.blocks_per_group, odd.items_per_group) == (4, 2, 4)

"""PTX rung 9 of the FP8 grouped GEMM (rung 8 with grouped rasterisation: items in raster groups of routing blocks,
blocks fastest): passes kernels.md's check through ptxsim (tiny, BM 32 and 64, a shape whose experts have two token
tiles each so a raster group spans two aligned groups and the last group is short, small), bit-identical to rung 8,
clean under ptxsim's sanitizers, zero spills, the raster group its docstring promises at DeepSeek-V3's and
DeepGEMM's shapes, and the PTX shape (both roles decode items in raster groups)."""
import functools
import re

import numpy as np
import pytest

from contract.presets import SKEWS, Preset, get_preset
from ptx_impl import gemm_fp8_r9 as r9
from ptx_impl import gemm_fp8_tm_template as template
from tests.ptx_impl.rung_checks import rung_check
from tests.ptx_impl.test_gemm_fp8_r4 import RAGGED_BM

# four experts of about 256 rows: 2 token tiles each, a raster group of 2 aligned groups (8 blocks of 32), 36 blocks:
# groups of 8, 8, 8, 8 and 4 blocks
RASTER = Preset("fp8-raster", T=512, H=256, E=4, K=2, G=2, TG=1, I=256, BM=32)


@pytest.fixture(scope="module")
def backend():
    from harness.backends.sim import SimBackend

    return SimBackend()


def _sizes(preset, variant="up"):
    N = 2 * preset.I if variant == "up" else preset.H
    Kd = preset.H if variant == "up" else preset.I
    return preset.P_max, Kd, N, preset.BM, preset.E


def _check(backend, preset, skew, seed, variant, run=r9.run, **params):
    return rung_check(backend, preset, skew, seed, variant, run, **params)


def test_the_raster_group_follows_the_token_tiles_an_expert_has():
    assert r9.raster_tiles(_sizes(RASTER)) == 2 and r9.raster_blocks(_sizes(RASTER)) == 8
    items = r9.work_items(_sizes(RASTER))
    assert (items.blocks, items.blocks_per_group, items.items_per_group) == (36, 8, 16)
    for name in ("dsv3-decode", "dsv3-prefill"):  # about one token tile an expert: one aligned group
        p = get_preset(name)
        assert r9.raster_blocks(_sizes(p)) == template.TILE_M // p.BM
    # DeepGEMM's contiguous 4 groups x 8192 rows: 64 tiles an expert, capped
    assert r9.raster_tiles((4 * 8192, 7168, 4096, 128, 4)) == r9.RASTER_MAX_TILES


@pytest.mark.sim
@pytest.mark.parametrize("variant", ["up", "down"])
def test_tiny_and_bm_32_and_64(backend, variant, seed):
    skew = SKEWS[seed % len(SKEWS)]
    for preset in ("tiny", *RAGGED_BM.values()):
        _check(backend, preset, skew, seed, variant, sms=7)
    gemm = backend.records[-1]
    assert gemm.shared_bytes == template.shared_bytes(True, True, True) <= template.SMEM_LIMIT


@pytest.mark.sim
@pytest.mark.parametrize("variant", ["up", "down"])
def test_raster_groups_of_two_token_tiles_and_a_short_last_group(backend, variant, seed):
    _check(backend, RASTER, SKEWS[seed % len(SKEWS)], seed, variant, sms=6)


@pytest.mark.sim
def test_tiny_on_the_full_grid_through_the_ladder(backend, seed):
    from ptx_impl import grouped_gemm_fp8 as ladder

    assert ladder.get_rung(9).module == "ptx_impl.gemm_fp8_r9"
    _check(backend, "tiny", SKEWS[seed % len(SKEWS)], seed, ("up", "down")[seed // 3 % 2], run=ladder.run, rung=9)
    assert backend.records[-1].grid[0] == 2 * 31


@pytest.mark.sim
def test_sanitizers_find_nothing(seed):
    from harness.backends.sim import SimBackend

    sim = SimBackend(sanitize=("asynccheck", "racecheck", "memcheck", "initcheck", "synccheck"))
    _check(sim, RASTER, SKEWS[seed % len(SKEWS)], seed, "down", sms=4)
    assert sim.sanitizer_findings() == []


@pytest.mark.sim
def test_small(backend, seed):
    _check(backend, "small", SKEWS[seed % len(SKEWS)], seed, ("up", "down")[seed // 3 % 2])


@pytest.mark.sim
def test_bit_identical_to_rung_8(backend, seed):
    """The same tiles, computed the same way: the order the clusters take them in must not change a bit."""
    from harness.verify import run_kernel
    from ptx_impl import gemm_fp8_r8 as r8

    skew = SKEWS[seed % len(SKEWS)]
    c8, c9 = (run_kernel(functools.partial(run, sms=6), backend, "grouped_gemm_fp8", RASTER, skew, seed,
                         variant="up")[1]["c"] for run in (r8.run, r9.run))
    assert np.array_equal(c8.view(np.uint16), c9.view(np.uint16))


def test_assembles_for_sm90a_with_zero_spills():
    from harness.toolchain import assemble

    _, usage = assemble(r9.ptx_source(), "sm_90a", name=r9.path().name)
    u = usage[template.ENTRY9]
    assert u.spills == 0 and u.stack_frame_bytes == 0, u
    assert u.registers == template.MAXNREG and u.shared_bytes == 0, u


def test_ptx_shape_matches_the_header():
    ptx = re.sub(r"//[^\n]*", "", r9.ptx_source())
    assert ptx.count(".param .u32 gf_raster_blocks") == 1 and ptx.count("[gf_raster_blocks]") == 1
    # both roles: group = item / (group blocks x pairs), pair = (item in the group) / (the group's blocks)
    assert len(re.findall(r"div\.u32\s+%b, %item, %sgitems;", ptx)) == 2
    assert len(re.findall(r"min\.u32\s+%tmp2, %tmp2, %sgb;\s+div\.u32\s+%ct, %tmp, %tmp2;", ptx)) == 2
    assert "div.u32             %b, %item, %npairs;" not in ptx
    assert r9.PARAMS[-1] == ("raster_blocks", "u32") and len(r9.PARAMS) == 14

"""PTX rung 9 of the FP8 grouped GEMM (rung 8 with grouped rasterisation: items in raster groups of routing blocks,
blocks fastest), its own checks: the raster group its docstring promises at DeepSeek-V3's and DeepGEMM's shapes, and
the PTX shape (both roles decode items in raster groups). What every token-major rung must do (kernels.md's check at
tiny, BM 32 and 64, RASTER: experts of two token tiles, so a raster group spans two aligned groups and the last group
is short; through the ladder, small; sanitizers; bit-identical to rung 8; zero spills) is
tests/ptx_impl/test_gemm_fp8_rungs.py."""
import re

from contract.presets import get_preset
from ptx_impl import gemm_fp8_r9 as r9
from ptx_impl import gemm_fp8_tm_template as template
from tests.ptx_impl.rung_checks import RASTER


def _sizes(preset, variant="up"):
    N = 2 * preset.I if variant == "up" else preset.H
    Kd = preset.H if variant == "up" else preset.I
    return preset.P_max, Kd, N, preset.BM, preset.E


def test_the_raster_group_follows_the_token_tiles_an_expert_has():
    assert r9.raster_tiles(_sizes(RASTER)) == 2 and r9.raster_blocks(_sizes(RASTER)) == 8
    items = r9.work_items(_sizes(RASTER))
    assert (items.blocks, items.blocks_per_group, items.items_per_group) == (36, 8, 16)
    for name in ("dsv3-decode", "dsv3-prefill"):  # about one token tile an expert: one aligned group
        p = get_preset(name)
        assert r9.raster_blocks(_sizes(p)) == template.TILE_M // p.BM
    # DeepGEMM's contiguous 4 groups x 8192 rows: 64 tiles an expert, capped
    assert r9.raster_tiles((4 * 8192, 7168, 4096, 128, 4)) == r9.RASTER_MAX_TILES


def test_ptx_shape_matches_the_header():
    ptx = re.sub(r"//[^\n]*", "", r9.ptx_source())
    assert ptx.count(".param .u32 gf_raster_blocks") == 1 and ptx.count("[gf_raster_blocks]") == 1
    # both roles: group = item / (group blocks x pairs), pair = (item in the group) / (the group's blocks)
    assert len(re.findall(r"div\.u32\s+%b, %item, %sgitems;", ptx)) == 2
    assert len(re.findall(r"min\.u32\s+%tmp2, %tmp2, %sgb;\s+div\.u32\s+%ct, %tmp, %tmp2;", ptx)) == 2
    assert "div.u32             %b, %item, %npairs;" not in ptx
    assert r9.PARAMS[-1] == ("raster_blocks", "u32") and len(r9.PARAMS) == 14

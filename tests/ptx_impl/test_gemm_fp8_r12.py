"""PTX rung 12 of the FP8 grouped GEMM (rung 11 with the cluster on two token tiles of one expert sharing the weight
tile by TMA multicast), its own checks: the multicast fires where the pair shares an expert (fewer L2 bytes than rung
11 for the same output, bit for bit), the item space of slots, and the PTX shape its header promises. What every
token-major rung must do (tiny at every skew, the full grid through the ladder, odd N tiles, BM 32 and 64, raster,
small, sanitizers, bit-identical to rung 11, zero spills) is tests/ptx_impl/test_gemm_fp8_rungs.py's; its mutants are
the mutation suite's (tests/mutations/table.py, _rung_mcw)."""
import functools
import re

import numpy as np
import pytest

from contract.presets import get_preset
from ptx_impl import gemm_fp8_r11 as r11
from ptx_impl import gemm_fp8_r12 as r12

L2_READ = "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum"


@pytest.mark.sim
def test_the_weight_multicast_cuts_l2_reads_for_the_same_output(seed):
    """contiguous 2 x 512 rows at N = 512, K = 256 (BM = 64: every pair of token tiles is one expert's): a rung-11
    cluster reads 16 KB of tokens and 64 KB of weights a K group for two 128 x 256 tiles, a rung-12 cluster 32 KB and
    32 KB: 0.8x the operand bytes, the same output bit for bit, and the same DRAM bytes (each expert's weights are
    read once either way)."""
    from harness.backends.sim import SimBackend
    from harness.verify import run_kernel

    preset = get_preset("contiguous-2x512x512x256")
    got = {}
    for module in (r11, r12):
        sim = SimBackend()
        _, out, records = run_kernel(functools.partial(module.run, sms=8), sim, "grouped_gemm_fp8", preset,
                                     "balanced", seed, variant="up")
        got[module.RUNG] = out["c"], records[-1].stats.metrics
    (c11, m11), (c12, m12) = got[11], got[12]
    assert np.array_equal(c11.view(np.uint16), c12.view(np.uint16))
    assert m12[L2_READ] < 0.85 * m11[L2_READ], (m12[L2_READ], m11[L2_READ])
    assert m12["dram__bytes_read.sum"] == pytest.approx(m11["dram__bytes_read.sum"], rel=0.02)


def test_slots_pair_the_blocks_of_even_and_odd_aligned_groups():
    """dsv3-decode's up GEMM (304 blocks of 16, R = 8): 19 pairs of aligned groups, 152 slots x 16 N tiles of 256;
    a raster group of one pair (an expert has about 0.15 token tiles) spans 16 blocks; the work is every rung's."""
    p = get_preset("dsv3-decode")
    sizes = (p.P_max, p.H, 2 * p.I, p.BM, p.E)
    items = r12.work_items(sizes)
    assert r12.slots(sizes) == 152 and items.count == 152 * 16 and items.blocks == 304
    assert items.blocks_per_group == 16 and items.items_per_group == 8 * 16
    assert items.work_tiles == r11.work_items(sizes).work_tiles == 304 * 32
    assert items.items_of(16, 32) == (128, 256)  # the second pair of aligned groups: slots 8-15


def test_ptx_shape_matches_the_header():
    ptx = re.sub(r"//[^\n]*", "", r12.ptx_source())
    producer = ptx[ptx.index("$P_k:"):ptx.index("$P_next:")]
    consumer = ptx[ptx.index("$C_k:"):ptx.index("@%p_more bra.uni    $C_k;")]

    def count(pattern: str, text: str) -> int:
        return len(re.findall(pattern, text))

    # weights: box 0 and box 1 each multicast by one rank or loaded alone; tokens: two 64-row boxes, never multicast
    assert count(r"cp\.async\.bulk\.tensor[^\n]*\.multicast::cluster[^\n]*%ptmw", producer) == 2
    assert count(r"cp\.async\.bulk\.tensor[^\n]*%ptmw", producer) == 4
    assert count(r"cp\.async\.bulk\.tensor[^\n]*%ptma", producer) == 2
    assert count(r"multicast::cluster[^\n]*%ptma", ptx) == 0
    assert count(r"@%p_nodd mbarrier\.arrive\.shared::cta", producer) == 1  # the idle CTA's arrival
    # the consumers' loop is rung 11's, token for token
    rung11 = re.sub(r"//[^\n]*", "", r11.ptx_source())
    assert consumer == rung11[rung11.index("$C_k:"):rung11.index("@%p_more bra.uni    $C_k;")]
    assert count(r"setp\.eq\.and\.s32\s+%p_sh, %e0, %e1, %p_hb0;", ptx) == 2  # producer and consumers decode alike

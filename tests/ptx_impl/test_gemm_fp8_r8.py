"""PTX rung 8 of the FP8 grouped GEMM (rung 7 with a TMA-store epilogue: stmatrix into a 128B-swizzled buffer per
consumer warpgroup, then cp.async.bulk.tensor stores of the run's routing blocks), its own check: the PTX shape its
header promises (no st.global: every output element goes through the buffer and TMA). What every token-major rung must
do (kernels.md's check at tiny, through the ladder, an odd N-tile count, BM 32 and 64, small; sanitizers, asynccheck
seeing the fence and the .read waits; bit-identical to rung 7; zero spills) is tests/ptx_impl/test_gemm_fp8_rungs.py."""
import re

from ptx_impl import gemm_fp8_r8 as r8
from ptx_impl import gemm_fp8_tm_template as template


def test_ptx_shape_matches_the_header():
    ptx = re.sub(r"//[^\n]*", "", r8.ptx_source())
    epilogue = ptx[ptx.index("$C_kdone:"):ptx.index("$C_next:")]

    def count(pattern: str, text: str = ptx) -> int:
        return len(re.findall(pattern, text))

    assert template.STAGES8 == 6 and template.shared_bytes(True, True) <= template.SMEM_LIMIT
    assert count(r"\.param \.align 64 \.b8 gf_tm_c\[128\]") == 1 and "gf_c," not in ptx
    assert count(r"st\.global") == 0  # every output element goes through the buffer and TMA
    assert count(r"stmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16", epilogue) == 8  # 2 halves x 4 (16 columns each)
    assert count(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta\.bulk_group \[%ptmc", epilogue) == 2
    assert count(r"cp\.async\.bulk\.commit_group", epilogue) == 2
    assert count(r"@%p_el cp\.async\.bulk\.wait_group\.read 0;", epilogue) == 2
    assert count(r"@%p_el cp\.async\.bulk\.wait_group 0;") == 1  # before exit
    # per half: read wait, barrier, stmatrix, proxy fence, barrier, then the stores
    half = (r"wait_group\.read 0;\s+bar\.sync\s+%bid, 128;(?:[^$]*?stmatrix){4}[^$]*?fence\.proxy\.async\.shared::cta;"
            r"\s+bar\.sync\s+%bid, 128;")
    assert len(re.findall(half, epilogue)) == 2
    assert count(r"bar\.sync\s+%bid, 128;") == 5  # 4 in the epilogue, 1 after the weight-scale copy

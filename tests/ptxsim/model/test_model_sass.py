"""Charging SASS instead of PTX: the per-module factors and their effect on the estimate."""
import pytest

from ptxsim.model import estimate, get_device, occupancy
from ptxsim.model.errors import ModelArgumentError
from ptxsim.model.sass import class_counts, sass_class, sass_factors

H100 = get_device("H100 SXM")


def test_sass_opcodes_map_to_classes():
    assert sass_class("LDG.E.128.CONSTANT") == "ld_global" and sass_class("FFMA.FTZ") == "fp32"
    assert sass_class("HMMA.16816.F32.BF16") == "tensor" and sass_class("UIADD3") == "uniform"
    assert sass_class("HFMA2.MMA") == "int" and sass_class("NOP") is None and sass_class("WHATEVER") is None
    assert class_counts({"IMAD.WIDE": 3, "LEA": 2, "ULDC.64": 4, "NOP": 9}) == {"int": 5, "uniform": 4}


def test_folded_index_arithmetic_and_unrolling():
    """NVVM-style PTX: 10 int ops per 2 loads; ptxas unrolled x4 and folded the int ops to 1 per load, some uniform."""
    ptx = {"ld_global": 2, "fp32": 2, "int": 10, "control": 2}
    sass = {"LDG.E": 8, "FADD": 8, "IMAD.WIDE": 8, "UIADD3": 4, "ISETP.GE.AND": 2, "BRA": 2, "EXIT": 1}
    f = sass_factors(ptx, sass)
    assert f["unroll"] == pytest.approx(4.0)
    assert f["int"] == pytest.approx(10 / (4 * 10))             # (8 IMAD + 2 ISETP) / (4 x 10)
    assert f["uniform_per_int"] == pytest.approx(4 / 40)
    assert f["control"] == pytest.approx(3 / 8)
    assert sass_factors({"int": 5}, {"IADD3": 5}) == {}          # nothing to compare like for like


def test_fewer_sass_instructions_is_faster():
    occ = occupancy(H100, 256, 32, 0)
    metrics = {"launch__grid_size": 1056, "ptxsim__inst_executed_int.sum": 4e8, "ptxsim__inst_executed_fp32.sum": 1e8,
               "ptxsim__model_ilp.ratio": 1.0}
    ptx_charged = estimate(metrics, H100, occ)
    folded = estimate(metrics, H100, occ, sass_mix={"int": 0.25, "uniform_per_int": 0.1})
    assert folded.components["issue"] < ptx_charged.components["issue"] / 2
    assert folded.details["uniform_instructions"] == pytest.approx(4e7)
    expanded = estimate(metrics, H100, occ, sass_mix={"int": 2.0})
    assert expanded.components["issue"] > ptx_charged.components["issue"]
    with pytest.raises(ModelArgumentError, match="not an instruction class"):
        estimate(metrics, H100, occ, sass_mix={"ints": 1.0})
    with pytest.raises(ModelArgumentError, match=">= 0"):
        estimate(metrics, H100, occ, sass_mix={"int": -1.0})


def test_real_module_mix_from_ptxas():
    from harness.static import analyse_ptx
    from harness.toolchain import ToolchainError, nvdisasm_path, ptxas_path
    from ptxsim.model.microbench import BENCHES, module_sass_mix

    try:
        ptxas_path(), nvdisasm_path()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas/nvdisasm: {exc}")
    ptx = BENCHES["dram_read"].ptx
    mix = module_sass_mix(ptx, analyse_ptx(ptx))
    # the 64-bit address arithmetic (mul.wide + add.s64 chains) folds: fewer SASS int instructions than PTX
    assert mix is not None and 0 < mix["int"] < 1 and mix["unroll"] == pytest.approx(1.0)

"""GEMM shapes (issue 28 item 5): GxMxNxK in DeepGEMM's contiguous and masked layouts, and the deepgemm-table preset."""
from __future__ import annotations

import argparse

import numpy as np
import pytest

from contract.errors import InputError, UnknownNameError
from contract.kernels import get_kernel
from contract.presets import DEEPGEMM_TABLE, expand_presets, gemm_shape, get_preset, parse_gemm_shape


def test_shape_is_a_preset_of_g_groups_of_m_rows():
    p = get_preset("4x8192x4096x7168")
    assert p.name == "contiguous-4x8192x4096x7168" and p.layout == "contiguous"
    assert (p.E, p.group_rows, 2 * p.I, p.H, p.BM) == (4, 8192, 4096, 7168, 64)
    assert p.P_max == 4 * 8192 and p.slots == 4 * 8192  # every row useful, no routing padding
    m = get_preset("masked-2x40x256x128")
    assert m.layout == "masked" and m.BM == 16 and m.P_max == 2 * 48 and m.slots == 80  # rows 40..47 pad each group


def test_names_parse_back_and_bad_shapes_name_the_value():
    for name in DEEPGEMM_TABLE:
        assert parse_gemm_shape(name).name == name
    assert parse_gemm_shape("tiny") is None and parse_gemm_shape("4x8x16") is None
    with pytest.raises(InputError, match="N=255 must be even"):
        gemm_shape(1, 64, 255, 128)
    with pytest.raises(InputError, match="K=100 a multiple of 16"):
        get_preset("1x64x256x100")
    with pytest.raises(InputError, match="not positive"):
        gemm_shape(0, 64, 256, 128)
    with pytest.raises(UnknownNameError, match="GEMM layout 'ragged'"):
        gemm_shape(1, 64, 256, 128, "ragged")
    with pytest.raises(UnknownNameError, match="GxMxNxK"):
        get_preset("4x8192x4096")


def test_deepgemm_table_is_the_readmes_ten_moe_shapes():
    """DeepGEMM README (55ab91f): contiguous 4x8192 and 8x4096, masked 1x1024, 2x512, 4x256, each at (N, K) =
    (4096, 7168) and (7168, 2048)."""
    shapes = [get_preset(n) for n in expand_presets(["deepgemm-table"])]
    got = {(p.layout, p.E, p.group_rows, 2 * p.I, p.H) for p in shapes}
    nk = {(4096, 7168), (7168, 2048)}
    want = {("contiguous", g, m, n, k) for g, m in ((4, 8192), (8, 4096)) for n, k in nk}
    want |= {("masked", g, m, n, k) for g, m in ((1, 1024), (2, 512), (4, 256)) for n, k in nk}
    assert len(shapes) == 10 and got == want
    assert expand_presets(["tiny", "2x32x256x128", "contiguous-2x32x256x128"]) == ["tiny", "contiguous-2x32x256x128"]


@pytest.mark.parametrize("kernel", ["grouped_gemm", "grouped_gemm_fp8"])
@pytest.mark.parametrize("name", ["contiguous-3x32x128x256", "masked-2x24x128x256"])
def test_inputs_hold_each_groups_rows_in_its_own_blocks(kernel, name):
    p = get_preset(name)
    spec = get_kernel(kernel)
    inputs = spec.make_inputs(p, "balanced", 7, variant="up")
    assert inputs["a"].shape == (p.P_max, 256) and inputs["w"].shape == (p.E, 128, 256)
    per_group = p.P_max // p.BM // p.E
    assert inputs["block_expert"].tolist() == [g for g in range(p.E) for _ in range(per_group)]
    assert int(inputs["total_padded"][0]) == p.P_max


def test_check_accepts_per_group_products_and_catches_a_wrong_group():
    """The reference of a shape is C[rows of group g] = A[rows] @ W[g]^T: computed here by hand, it passes; the
    product of the wrong group's weights fails."""
    import ml_dtypes

    p = get_preset("contiguous-2x32x128x256")
    spec = get_kernel("grouped_gemm")
    inputs = spec.make_inputs(p, "balanced", 3, variant="up")
    a, w = np.asarray(inputs["a"], np.float64), np.asarray(inputs["w"], np.float64)
    good = np.concatenate([a[g * 32:(g + 1) * 32] @ w[g].T for g in range(2)]).astype(ml_dtypes.bfloat16)
    assert spec.check({"c": good}, inputs, p).ok
    swapped = np.concatenate([a[g * 32:(g + 1) * 32] @ w[1 - g].T for g in range(2)]).astype(ml_dtypes.bfloat16)
    result = spec.check({"c": swapped}, inputs, p)
    assert not result.ok and "expert" in result.message


def _args(**kw):
    base = dict(preset=None, shape=None, skew=None, kernels=None, impls=None, seed=1, no_static=True, budget=2.0,
                sanitize=None, sample=None, memory_limit=None, model_device=None)
    return argparse.Namespace(**{**base, **kw})


def test_compare_options_take_shapes_and_run_only_the_gemms_up_variant():
    from harness.commands.compare_cmd import build_settings
    from harness.sweep_plan import plan

    s = build_settings(_args(shape=["2x32x256x128,masked-1x16x256x128"], model_device="h800"), "sim")
    assert s.presets == ("contiguous-2x32x256x128", "masked-1x16x256x128")
    assert s.kernels == ("grouped_gemm", "grouped_gemm_fp8") and s.model_device == "H800 SXM"
    items = plan(s)
    assert {i.variant for i in items} == {"up"} and len(items) == 4
    table = build_settings(_args(preset=["deepgemm-table"], kernels="grouped_gemm_fp8"), "sim")
    assert table.presets == DEEPGEMM_TABLE


@pytest.mark.parametrize("kw, needle", [
    ({"shape": ["4x8192"]}, "--shape '4x8192': expected GxMxNxK"),
    ({"shape": ["2x32x256x128"], "kernels": "gate,grouped_gemm"}, "runs only grouped_gemm, grouped_gemm_fp8"),
    ({"shape": ["2x32x256x128"], "model_device": "a100"}, "--model-device 'a100'"),
])
def test_compare_options_refuse_bad_shapes_by_name(kw, needle):
    from harness.commands.compare_cmd import build_settings
    from harness.errors import PtxmoeError

    with pytest.raises(PtxmoeError, match=needle.replace("(", r"\(").replace("[", r"\[")):
        build_settings(_args(**kw), "sim")


@pytest.mark.parametrize("name", ["contiguous-2x32x256x128", "masked-2x40x256x128"])
def test_ptx_fp8_gemm_at_a_shape_matches_the_reference_on_ptxsim(name):
    from harness.backends.sim import SimBackend
    from harness.verify import run_and_check
    from ptx_impl import grouped_gemm_fp8

    result = run_and_check(grouped_gemm_fp8.run, SimBackend(), "grouped_gemm_fp8", name, "balanced", 5, variant="up")
    assert result.ok, result.message

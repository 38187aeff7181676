"""PTX rung 1 of the FP8 grouped GEMM: passes kernels.md's check through ptxsim (tiny at every skew and variant,
small, a ragged preset), assembles for sm_90a and sm_89 with zero spills, has the PTX shape its header promises
(e4m3 mma.sync, a cp.async ring, promotion with fma every slab), and rejects bad arguments with InputError."""
import re

import numpy as np
import pytest

from contract.errors import InputError
from contract.presets import SKEWS, Preset
from harness.verify import run_and_check
from ptx_impl import gemm_fp8_r1 as fp8

# T not a multiple of anything, E = 40 (blocks of expert -1, ragged totals), Kd = 384 up: three scale groups
RAGGED = Preset("ragged-fp8", T=67, H=384, E=40, K=6, G=8, TG=3, I=128, BM=16)


@pytest.fixture(scope="module")
def backend():
    from harness.backends.sim import SimBackend

    return SimBackend()


def _check(backend, preset, skew, seed, variant):
    result = run_and_check(fp8.run, backend, "grouped_gemm_fp8", preset, skew, seed,
                           variant=variant)
    assert result.ok, f"{getattr(preset, 'name', preset)} {skew} {variant} seed={seed}: {result.message}"
    return result


@pytest.mark.sim
@pytest.mark.parametrize("variant", ["up", "down"])
@pytest.mark.parametrize("skew", SKEWS)
def test_tiny(backend, skew, variant, seed):
    _check(backend, "tiny", skew, seed, variant)


@pytest.mark.sim
def test_ragged(backend, seed):
    for variant in ("up", "down"):
        _check(backend, RAGGED, SKEWS[seed % len(SKEWS)], seed, variant)


@pytest.mark.sim
@pytest.mark.slow
def test_small(backend, seed):
    """One variant per run (the seed picks it and the skew): about half a minute on ptxsim."""
    _check(backend, "small", SKEWS[seed % len(SKEWS)], seed, ("up", "down")[seed // 3 % 2])


@pytest.mark.parametrize("arch", ["sm_90a", "sm_89"])
def test_assembles_with_zero_spills(arch):
    from harness.toolchain import assemble

    _, usage = assemble(fp8.ptx_source(), arch, name="grouped_gemm_fp8_m16n64.ptx")
    u = usage[fp8.ENTRY]
    assert u.spills == 0 and u.stack_frame_bytes == 0, u
    assert 0 < u.registers <= 128 and u.shared_bytes == 2 * 80 * 144, u


def test_ptx_shape_matches_the_header():
    ptx = re.sub(r"//[^\n]*", "", fp8.ptx_source())

    def count(pattern: str) -> int:
        return len(re.findall(pattern, ptx))

    assert count(r"mma\.sync\.aligned\.m16n8k32\.row\.col\.f32\.e4m3\.e4m3\.f32") == 4 * 2  # 4 k32 steps x 2 n8
    assert count(r"cp\.async\.cg\.shared\.global") == 2 * 5  # prologue + loop, 5 chunks per thread each
    assert count(r"cp\.async\.wait_group 1;") == 1 and count(r"cp\.async\.commit_group;") == 3
    assert count(r"fma\.rn\.f32\s+%acc") == 8  # promotion: every accumulator, once per 128-deep slab
    assert count(r"ld\.global\.nc\.f32") == 3  # a_scale of rows g and g+8, w_scale of the block
    assert "wmma" not in ptx and "cvt.rn.bf16x2.f32" in ptx and ".e4m3x2" not in ptx  # no dequantisation
    params = re.findall(r"\.param \.(\w+) gf_(\w+)", ptx)
    assert [t for t, _ in params] == [t for _, t in fp8.PARAMS]


def test_rejects_bad_arguments():
    from contract.generators import BF16
    from contract.kernels import get_kernel
    from contract.presets import get_preset
    from harness.backends.sim import SimBackend

    preset = get_preset("tiny")
    inputs = get_kernel("grouped_gemm_fp8").make_inputs(preset, "balanced", 0)
    backend = SimBackend()
    args = {k: backend.to_device(v) for k, v in inputs.items()}
    args["c"] = backend.to_device(np.zeros((preset.P_max, 2 * preset.I), BF16))
    with pytest.raises(InputError, match="a_scale"):
        fp8.run(backend, dict(args, a_scale=backend.to_device(inputs["a_scale"][:, :1])), preset)
    with pytest.raises(InputError, match=r"\ba\b"):
        fp8.run(backend, dict(args, a=backend.to_device(inputs["a"].astype(BF16))), preset)
    with pytest.raises(InputError, match="BM"):
        fp8.run(backend, args, Preset("odd", T=64, H=256, E=16, K=4, G=4, TG=2, I=128, BM=8))
    with pytest.raises(InputError, match="tile"):
        fp8.run(backend, args, preset, tile=3)


def test_ladder_dispatch_runs_the_named_rung_and_rejects_unknown_ones():
    """The ladder's run picks the rung by number (default: the top one) and names the rungs on a bad number."""
    from ptx_impl import IMPLEMENTATION
    from ptx_impl import grouped_gemm_fp8 as ladder

    assert IMPLEMENTATION.ladders["grouped_gemm_fp8"] == ladder.rung_names()
    assert ladder.get_rung(None) == ladder.RUNGS[-1] and ladder.get_rung(1).module == "ptx_impl.gemm_fp8_r1"
    with pytest.raises(InputError, match=r"rung=99.*1 \(mma.sync"):
        ladder.run(None, {}, "tiny", rung=99)
    assert set(fp8.ptx_modules()) <= set(ladder.ptx_modules())

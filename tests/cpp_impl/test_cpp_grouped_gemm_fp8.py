"""The CUDA C++ FP8 grouped GEMM: passes kernels.md's check through ptxsim (tiny at every skew and variant, small, a
ragged preset), assembles for sm_90 without spills, is plain C++ (no inline asm: wmma on bf16 tiles), and rejects
bad arguments with InputError."""
import re

import numpy as np
import pytest

import cpp_impl
from contract.errors import InputError
from contract.presets import SKEWS, Preset
from cpp_impl import grouped_gemm_fp8 as fp8
from cpp_impl import nvrtc
from harness.verify import run_and_check

# T not a multiple of anything, E = 40 (blocks of expert -1 and ragged totals), Kd = 384: three scale groups
RAGGED = Preset("ragged-fp8", T=67, H=384, E=40, K=6, G=8, TG=3, I=128, BM=16)


def _check(backend, preset, skew, seed, variant):
    result = run_and_check(cpp_impl.KERNELS["grouped_gemm_fp8"], backend, "grouped_gemm_fp8", preset, skew, seed,
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


@pytest.mark.parametrize("tm", sorted(fp8.TILES))
def test_assembles_for_sm90_without_spills(tm):
    from harness.toolchain import assemble

    ptx = fp8.DESCRIPTOR.source(**fp8.TILES[tm].defines)
    _, usage = assemble(ptx, "sm_90", name=f"cpp_grouped_gemm_fp8_m{tm}.ptx")
    u = usage[fp8.KERNEL]
    assert u.spills == 0 and u.stack_frame_bytes == 0, u
    assert u.shared_bytes <= 48 * 1024, u


def test_plain_cpp_bf16_wmma_not_fp8_tensor_cores():
    src = re.sub(r"//[^\n]*", "", (nvrtc.KERNEL_DIR / fp8.DESCRIPTOR.file).read_text())
    assert not re.search(r"\basm\b", src), "no inline PTX in the C++ path"
    ptx = fp8.DESCRIPTOR.source(**fp8.TILES[16].defines)
    assert "wmma.mma.sync.aligned.row.col.m16n16k16.f32.bf16.bf16.f32" in ptx
    assert "cp.async" in ptx and "e4m3" in ptx  # cp.async staging; the e4m3 -> half conversion
    assert not re.search(r"mma\.sync\.aligned\.m16n8k32\S*e4m3", ptx)
    params = re.findall(r"\.param (\.\w+) \w+_param_\d+", ptx)
    assert params == [{".ptr": ".u64", ".u32": ".u32"}[t] for _, t in fp8.DESCRIPTOR.params]


def test_rejects_bad_arguments():
    from contract.generators import BF16
    from contract.kernels import get_kernel
    from contract.presets import get_preset
    from harness.backends.sim import SimBackend

    preset = get_preset("tiny")
    spec = get_kernel("grouped_gemm_fp8")
    inputs = spec.make_inputs(preset, "balanced", 0)
    backend = SimBackend()
    args = {k: backend.to_device(v) for k, v in inputs.items()}
    args["c"] = backend.to_device(np.zeros((preset.P_max, 2 * preset.I), BF16))
    bad = dict(args, a=backend.to_device(inputs["a"].astype(BF16)))
    with pytest.raises(InputError, match="a"):
        fp8.run(backend, bad, preset)
    bad = dict(args, w_scale=backend.to_device(inputs["w_scale"][:, :1]))
    with pytest.raises(InputError, match="w_scale"):
        fp8.run(backend, bad, preset)
    with pytest.raises(InputError, match="sideways"):
        fp8.run(backend, args, preset, variant="sideways")

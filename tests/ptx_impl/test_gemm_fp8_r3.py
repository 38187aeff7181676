"""PTX rung 3 of the FP8 grouped GEMM (wgmma + TMA + mbarrier): passes kernels.md's check through ptxsim (tiny at
every skew and variant, small, ragged, deep K wrapping the mbarrier ring, BM = 64) with no sanitizer finding, asks
the backend for the tensor maps the header describes, assembles for sm_90a with zero spills, has the PTX shape its
header promises, and rejects bad arguments with InputError."""
import numpy as np
import pytest

from contract.errors import InputError
from contract.presets import SKEWS, Preset, get_preset
from ptx_impl import gemm_fp8_r3 as r3
from tests.ptx_impl.fp8_rungs import BM64, DEEP, assert_wgmma_core, check, count, entries
from tests.ptx_impl.test_grouped_gemm_fp8 import RAGGED


@pytest.fixture(scope="module")
def backend():
    from harness.backends.sim import SimBackend

    return SimBackend()


@pytest.mark.sim
@pytest.mark.parametrize("variant", ["up", "down"])
@pytest.mark.parametrize("skew", SKEWS)
def test_tiny(backend, skew, variant, seed):
    (record,) = check(r3, backend, "tiny", skew, seed, variant)
    assert record.grid[1] == get_preset("tiny").P_max // 16 and record.block == (288, 1, 1)  # n16; + producer warp


@pytest.mark.sim
def test_ragged(backend, seed):
    for variant in ("up", "down"):
        check(r3, backend, RAGGED, SKEWS[seed % len(SKEWS)], seed, variant)


@pytest.mark.sim
def test_deep_k_wraps_the_ring_with_no_sanitizer_finding(seed):
    """10 and 5 slabs through 4 stages: thread 0 refills each stage after its empty barrier, parities 0, 1, 0."""
    from harness.backends.sim import SimBackend

    backend = SimBackend(sanitize="all")
    for variant in ("up", "down"):
        check(r3, backend, DEEP, SKEWS[seed % len(SKEWS)], seed, variant)
    assert backend.sanitizer_findings() == []


@pytest.mark.sim
def test_bm64_uses_the_n64_entry(backend, seed):
    (record,) = check(r3, backend, BM64, SKEWS[seed % len(SKEWS)], seed, ("up", "down")[seed // 3 % 2])
    assert record.grid[1] == BM64.P_max // 64 and record.shared_bytes == 4 * (128 + 64) * 128 + 64 + 1024


@pytest.mark.sim
@pytest.mark.slow
def test_small(backend, seed):
    """BM = 32: the n32 entry; one variant per run (the seed picks it and the skew)."""
    (record,) = check(r3, backend, "small", SKEWS[seed % len(SKEWS)], seed, ("up", "down")[seed // 3 % 2])
    assert record.grid[1] == get_preset("small").P_max // 32


def test_tensor_maps_are_the_boxes_of_one_stage(backend):
    from contract.generators import E4M3

    a = backend.to_device(np.zeros((96, 384), E4M3))
    w = backend.to_device(np.zeros((5, 256, 384), E4M3))
    tmap_a, tmap_w = r3.tensor_maps(backend, {"a": a, "w": w}, 32)
    assert (tmap_a.shape, tmap_a.box, tmap_a.swizzle) == ((96, 384), (32, 128), 128)
    assert (tmap_w.shape, tmap_w.box, tmap_w.swizzle) == ((5 * 256, 384), (128, 128), 128)  # w as (E*N, Kd)
    assert len(tmap_a.raw) == len(tmap_w.raw) == 128


def test_assembles_with_zero_spills():
    from harness.toolchain import assemble

    _, usage = assemble(r3.ptx_source(), "sm_90a", name=r3.PATH.name)
    assert set(usage) == set(r3.ENTRIES.values())
    for entry in r3.ENTRIES.values():
        u = usage[entry]
        assert u.spills == 0 and u.stack_frame_bytes == 0, u
        assert 0 < u.registers <= 255 and u.shared_bytes == 0, u  # all shared memory (mbarriers too) is dynamic


@pytest.mark.parametrize("tt", [16, 32, 64])
def test_ptx_shape_matches_the_header(tt):
    body = entries(r3.ptx_source())[r3.ENTRIES[tt]]
    assert_wgmma_core(body, tt)
    tma = r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.tile\.mbarrier::complete_tx::bytes"
    assert count(body, tma + r" \[%dsw\], \[%ptmw,") == 5 and count(body, tma + r" \[%dsw\], \[%ptma,") == 5
    assert count(body, r"cvta\.param\.u64") == 2  # the maps' generic addresses, as nvcc takes a __grid_constant__'s
    assert count(body, rf"mbarrier\.arrive\.expect_tx\.shared::cta\.b64 %tok, \[%bfull\], {(128 + tt) * 128};") == 5
    assert count(body, r"mbarrier\.init\.shared::cta\.b64 \[%bars\+\d+\], 1;") == 4  # full: the producer's arrival
    assert count(body, r"mbarrier\.init\.shared::cta\.b64 \[%bars\+\d+\], 8;") == 4  # empty: one per warp
    assert count(body, r"mbarrier\.try_wait\.parity") == 2 and count(body, r"bar\.sync") == 3  # init, epilogue x2
    assert "cp.async.cg" not in body and "cp.async.wait_group" not in body and "fence.proxy.async" not in body


def test_rejects_bad_arguments():
    from contract.generators import BF16
    from contract.kernels import get_kernel
    from harness.backends.sim import SimBackend

    preset = get_preset("tiny")
    inputs = get_kernel("grouped_gemm_fp8").make_inputs(preset, "balanced", 0)
    backend = SimBackend()
    args = {k: backend.to_device(v) for k, v in inputs.items()}
    args["c"] = backend.to_device(np.zeros((preset.P_max, 2 * preset.I), BF16))
    with pytest.raises(InputError, match="a_scale"):
        r3.run(backend, dict(args, a_scale=backend.to_device(inputs["a_scale"][:, :1])), preset)
    with pytest.raises(InputError, match="BM"):
        r3.run(backend, args, Preset("odd", T=64, H=256, E=16, K=4, G=4, TG=2, I=128, BM=8))
    with pytest.raises(InputError, match="rung 3.*stages"):
        r3.run(backend, args, preset, stages=3)


def test_is_rung_3_of_the_ladder():
    from ptx_impl import grouped_gemm_fp8 as ladder

    assert ladder.get_rung(3).module == r3.__name__ and ladder.get_rung(3).name == "wgmma+TMA+mbarrier"
    assert set(r3.ptx_modules()) <= set(ladder.ptx_modules())

"""PTX rung 2 of the FP8 grouped GEMM (wgmma + cp.async): passes kernels.md's check through ptxsim (tiny at every
skew and variant, small, ragged, deep K, BM = 64), picks the token tile (wgmma N) that divides BM, assembles for
sm_90a with zero spills, has the PTX shape its header promises, and rejects bad arguments with InputError."""
import numpy as np
import pytest

from contract.errors import InputError
from contract.presets import SKEWS, Preset, get_preset
from ptx_impl import gemm_fp8_r2 as r2
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
    (record,) = check(r2, backend, "tiny", skew, seed, variant)
    P_max = get_preset("tiny").P_max
    assert record.grid[1] == P_max // 16 and record.block == (256, 1, 1)  # BM = 16: the n16 entry


@pytest.mark.sim
def test_ragged(backend, seed):
    for variant in ("up", "down"):
        check(r2, backend, RAGGED, SKEWS[seed % len(SKEWS)], seed, variant)


@pytest.mark.sim
def test_deep_k_wraps_the_ring_with_no_sanitizer_finding(seed):
    from harness.backends.sim import SimBackend

    backend = SimBackend(sanitize="all")
    for variant in ("up", "down"):  # 10 and 5 slabs through 4 stages
        check(r2, backend, DEEP, SKEWS[seed % len(SKEWS)], seed, variant)
    assert backend.sanitizer_findings() == []


@pytest.mark.sim
def test_bm64_uses_the_n64_entry(backend, seed):
    (record,) = check(r2, backend, BM64, SKEWS[seed % len(SKEWS)], seed, ("up", "down")[seed // 3 % 2])
    assert record.grid[1] == BM64.P_max // 64 and record.shared_bytes == 4 * (128 + 64) * 128 + 1024


@pytest.mark.sim
@pytest.mark.slow
def test_small(backend, seed):
    """BM = 32: the n32 entry; one variant per run (the seed picks it and the skew)."""
    (record,) = check(r2, backend, "small", SKEWS[seed % len(SKEWS)], seed, ("up", "down")[seed // 3 % 2])
    assert record.grid[1] == get_preset("small").P_max // 32


def test_token_tile_is_the_largest_wgmma_n_dividing_bm():
    assert [r2.token_tile(bm) for bm in (16, 32, 48, 64, 96, 128)] == [16, 32, 16, 64, 32, 64]
    with pytest.raises(InputError, match="BM=24"):
        r2.token_tile(24)


def test_assembles_with_zero_spills():
    from harness.toolchain import assemble

    _, usage = assemble(r2.ptx_source(), "sm_90a", name=r2.PATH.name)
    assert set(usage) == set(r2.ENTRIES.values())
    for entry in r2.ENTRIES.values():
        u = usage[entry]
        assert u.spills == 0 and u.stack_frame_bytes == 0, u
        assert 0 < u.registers <= 255 and u.shared_bytes == 0, u  # all shared memory is dynamic


@pytest.mark.parametrize("tt", [16, 32, 64])
def test_ptx_shape_matches_the_header(tt):
    body = entries(r2.ptx_source())[r2.ENTRIES[tt]]
    assert_wgmma_core(body, tt)
    copies = 4 + max(1, tt // 32)  # 4 weight rows and TT/32 token rows (one predicated at TT = 16) per slab
    assert count(body, r"cp\.async\.cg\.shared\.global \[") == copies * 4  # 3 prologue slabs + the loop's
    assert count(body, r"cp\.async\.wait_group 2;") == 1 and count(body, r"cp\.async\.commit_group;") == 4
    assert count(body, r"fence\.proxy\.async\.shared::cta;") == 1  # generic-proxy copies -> wgmma's async proxy
    assert "mbarrier" not in body and "cp.async.bulk" not in body


def test_rejects_bad_arguments():
    from contract.generators import BF16
    from contract.kernels import get_kernel
    from harness.backends.sim import SimBackend

    preset = get_preset("tiny")
    inputs = get_kernel("grouped_gemm_fp8").make_inputs(preset, "balanced", 0)
    backend = SimBackend()
    args = {k: backend.to_device(v) for k, v in inputs.items()}
    args["c"] = backend.to_device(np.zeros((preset.P_max, 2 * preset.I), BF16))
    with pytest.raises(InputError, match="w_scale"):
        r2.run(backend, dict(args, w_scale=backend.to_device(inputs["w_scale"][:1])), preset)
    with pytest.raises(InputError, match="BM"):
        r2.run(backend, args, Preset("odd", T=64, H=256, E=16, K=4, G=4, TG=2, I=128, BM=8))
    with pytest.raises(InputError, match="variant"):
        r2.run(backend, args, preset, variant="sideways")
    with pytest.raises(InputError, match="tile"):
        r2.run(backend, args, preset, tile=3)


def test_is_rung_2_of_the_ladder():
    from ptx_impl import grouped_gemm_fp8 as ladder

    assert ladder.get_rung(2).module == r2.__name__ and ladder.get_rung(2).name == "wgmma+cp.async"
    assert set(r2.ptx_modules()) <= set(ladder.ptx_modules())

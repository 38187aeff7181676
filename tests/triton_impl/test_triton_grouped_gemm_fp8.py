"""triton_impl's grouped_gemm_fp8 (issue 28 item 4): the committed PTX is the current source's, it is Triton's sm_90a
code (wgmma for 64-row tiles), and it passes kernels.md's check on ptxsim at tiny, small and a GEMM shape."""
from __future__ import annotations

import importlib.util
import re

import pytest

from contract.errors import InputError
from triton_impl import generate
from triton_impl import grouped_gemm_fp8 as tg


def test_committed_ptx_was_compiled_from_the_current_source():
    """Edit kernels/grouped_gemm_fp8_src.py and this fails until `python -m triton_impl.generate` is rerun."""
    meta = tg._meta()
    assert meta["source_sha256"] == generate.source_digest()
    assert meta["options"] == generate.OPTIONS and {int(t) for t in meta["tiles"]} == set(generate.TILE_ROWS)
    for tm in generate.TILE_ROWS:
        assert generate.ptx_path(tm).exists()


@pytest.mark.parametrize("tm", generate.TILE_ROWS)
def test_ptx_targets_sm90a_at_isa_8_8_with_tensor_cores_and_no_checkout_paths(tm):
    text = generate.ptx_path(tm).read_text()
    assert ".target sm_90a" in text and ".version 8.8" in text
    assert f".entry {generate.ENTRY}(" in text and len(re.findall(r"^\s*\.param ", text, re.MULTILINE)) == 12
    mma = "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3" if tm == 64 else "mma.sync.aligned.m16n8k16"
    assert mma in text
    assert "cp.async" in text  # Triton's software pipeline (num_stages 3)
    assert ".file" not in text and "/work/" not in text


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="Triton is not installed (make install)")
def test_regenerating_reproduces_the_committed_files():
    from triton_impl.generate import main

    assert main(["--check"]) == 0


def test_tile_follows_bm_and_bad_shapes_name_the_value():
    assert tg.tile_for(16).tm == 16 and tg.tile_for(32).tm == 32 and tg.tile_for(64).tm == 64
    assert tg.tile_for(128).tm == 64
    with pytest.raises(InputError, match="BM=24"):
        tg.tile_for(24)


@pytest.mark.parametrize("preset, variant", [("tiny", "up"), ("tiny", "down"), ("small", "up"),
                                             ("contiguous-2x64x256x256", "up")])
def test_matches_the_reference_on_ptxsim(preset, variant):
    from harness.backends.sim import SimBackend
    from harness.verify import run_and_check

    result = run_and_check(tg.run, SimBackend(), "grouped_gemm_fp8", preset, "imbalanced" if preset == "tiny"
                           else "balanced", 11, variant=variant)
    assert result.ok, result.message


def test_registered_with_its_pairs_and_in_default_runs_only_where_it_has_the_kernel():
    from harness.commands.compare_cmd import default_impls
    from harness.implementations import IMPL_ORDER, PAIRS, impl_name, implementation_table

    assert set(implementation_table("triton")[0]) == {"grouped_gemm_fp8"} and impl_name("triton") == "Triton"
    assert {p.name for p in PAIRS} >= {"ptx-vs-triton", "triton-vs-cpp", "triton-vs-numba"}
    assert default_impls(IMPL_ORDER, ["gate"]) == ("numba", "cpp", "ptx")
    assert default_impls(IMPL_ORDER, ["grouped_gemm_fp8"]) == IMPL_ORDER

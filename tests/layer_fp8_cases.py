"""Shared by the three paths' fp8 layer tests: the cases (tiny at every skew, small, a ragged preset), the check that
a run passed with DeepSeek-V3's ten launches in order, and Fp8LayerTests, the tests every path's module runs."""
from __future__ import annotations

import importlib

import pytest

from contract.kernels import get_kernel
from contract.presets import SKEWS, Preset, get_preset
from harness.verify import run_kernel

# H and I multiples of 128 (the scale groups) but little else round: T not a multiple of a gate CTA's tokens, H three
# scale groups, E > 32 (two experts per gate lane), K = 6 of TG = 3 groups (E/G stays a power of two for Numba's gate)
RAGGED = Preset("ragged-fp8", T=67, H=384, E=64, K=6, G=8, TG=3, I=128, BM=16)
# what each launch is: the stage a launch's entry (or Numba function) name belongs to, by a word in it
STAGE_WORDS = ("gate", "align", "act_quant", "permute_words", "permute_scales", "permute", "grouped_gemm_fp8",
               "gemm_fp8", "swiglu", "combine")
FP8_ORDER = ["gate", "align", "act_quant", "permute", "permute_scales", "grouped_gemm_fp8", "swiglu", "act_quant",
             "grouped_gemm_fp8", "combine"]
_CANONICAL = {"permute_words": "permute_scales", "gemm_fp8": "grouped_gemm_fp8"}


def stage_of(record) -> str:
    name = record.name.lower()
    for word in STAGE_WORDS:
        if word in name:
            return _CANONICAL.get(word, word)
    return name


def check_fp8_layer(run, backend, preset, skew, seed, launches: bool = False) -> dict:
    """Run the fp8 layer through `run` on `backend`; assert it passes kernels.md's check (and, with `launches`,
    that it made DeepSeek-V3's ten launches in order: the payload permuted with its scales, swiglu re-quantised)."""
    preset = get_preset(preset) if isinstance(preset, str) else preset
    inputs, outputs, records = run_kernel(run, backend, "layer", preset, skew, seed, variant="fp8")
    where = f"fp8 layer {getattr(preset, 'name', preset)} {skew} seed={seed}"
    assert "W1_scale" in inputs, where
    result = get_kernel("layer").check(outputs, inputs, preset)
    assert result.ok, f"{where}: {result.message} {result.errors}"
    if launches:
        # a GEMM's own preprocessing (the ptx ladder's rung 7 transposes a_scale first) is part of its stage
        stages = [stage_of(r) for r in records]
        stages = [st for i, st in enumerate(stages)
                  if not (st.startswith("scale_transpose") and stages[i + 1:i + 2] == ["grouped_gemm_fp8"])]
        assert stages == FP8_ORDER, f"{where}: {[r.name for r in records]}"
    return result.errors


def check_permute_scales(run, backend, preset, skew, seed, width: int = 3) -> None:
    """A path's permute_scales against reference.permute: f32 rows of `width` words gathered bit for bit below
    total_padded (padding rows zero), rows past it untouched."""
    import numpy as np

    from contract import reference as ref
    from contract.coverage import POISON_BYTE
    from contract.kernels import get_kernel

    preset = get_preset(preset) if isinstance(preset, str) else preset
    routing = get_kernel("permute").make_inputs(preset, skew, seed)
    x = (np.random.default_rng(seed).random((preset.T, width), np.float32) + 0.5).astype(np.float32)
    args = {"x": backend.to_device(x), "sorted_ids": backend.to_device(routing["sorted_ids"]),
            "total_padded": backend.to_device(routing["total_padded"]),
            "xp": backend.empty((preset.P_max, width), np.float32, fill_byte=POISON_BYTE)}
    run(backend, args, preset)
    got = backend.to_host(args["xp"])
    total = int(routing["total_padded"][0])
    want = ref.permute(x, routing["sorted_ids"], routing["total_padded"], preset)
    where = f"permute_scales {preset.name} {skew} seed={seed}"
    assert np.array_equal(got[:total].view(np.uint32), want.view(np.uint32)), where
    assert np.all(got[total:].view(np.uint8) == POISON_BYTE), f"{where}: wrote past total_padded"


def check_act_quant_rows(run, backend, preset, seed, rows: int = 37) -> None:
    """A path's act_quant bounded by a device-side row count (the fp8 layer passes total_padded): the rows below it
    bit for bit as reference.act_quant, the rows past it neither read (they are poison, NaN) nor written."""
    import numpy as np

    from contract import reference as ref
    from contract.coverage import POISON_BYTE
    from contract.generators import BF16, E4M3, keyed_bf16

    preset = get_preset(preset) if isinstance(preset, str) else preset
    M, N = preset.P_max, 2 * 128
    a = keyed_bf16(seed, "act_quant_rows.a", (M, N))
    a.view(np.uint8)[rows:] = POISON_BYTE  # what swiglu leaves past total_padded
    args = {"a": backend.to_device(a), "total_padded": backend.to_device(np.array([rows], np.int32)),
            "q": backend.empty((M, N), E4M3, fill_byte=POISON_BYTE),
            "scale": backend.empty((M, N // 128), np.float32, fill_byte=POISON_BYTE)}
    run(backend, args, preset)
    q, scale = backend.to_host(args["q"]), backend.to_host(args["scale"])
    want = ref.act_quant(a[:rows].astype(BF16))
    assert np.array_equal(q[:rows].view(np.uint8), want["q"].view(np.uint8)), f"act_quant rows seed={seed}"
    assert np.array_equal(scale[:rows], want["scale"]), f"act_quant rows seed={seed}"
    assert np.all(q[rows:].view(np.uint8) == POISON_BYTE) and np.all(scale[rows:].view(np.uint8) == POISON_BYTE)


class Fp8LayerTests:
    """The fp8 layer tests every path runs through ptxsim, with fresh seeds (PTXMOE_SEED reproduces): tiny at every
    skew (the first also checks the ten launches in order), a ragged preset, small (long tier), and the two kernels
    whose rows the layer's check cannot see (permute_scales' padding, act_quant past total_padded).

    A path's module subclasses it as `TestFp8Layer`, naming its package in `impl`; it overrides a test only to mark
    it differently (Numba's ragged layer is `slow`) or adds its own tests.
    """

    impl = ""  # the path's package: "cpp_impl", "ptx_impl" or "cuda_impl"

    @pytest.fixture
    def backend(self):
        from harness.backends.sim import SimBackend

        return SimBackend()

    def module(self, name: str | None = None):
        """The path's package, or one of its modules ("permute")."""
        return importlib.import_module(self.impl if name is None else f"{self.impl}.{name}")

    @property
    def layer(self):
        return self.module().KERNELS["layer"]

    @pytest.mark.parametrize("skew", SKEWS)
    def test_fp8_layer_tiny(self, backend, skew, seed):
        check_fp8_layer(self.layer, backend, "tiny", skew, seed, launches=skew == SKEWS[0])

    def test_fp8_layer_ragged(self, backend, seed):
        check_fp8_layer(self.layer, backend, RAGGED, SKEWS[seed % len(SKEWS)], seed)

    @pytest.mark.long  # ~22 s on 2 cores (Numba's CUDA-core GEMMs: ~2 min): make test keeps tiny and ragged; the
    # sampled small fp8 layer runs in tests/harness/test_verify_layer_fp8.py
    def test_fp8_layer_small(self, backend, seed):
        check_fp8_layer(self.layer, backend, "small", SKEWS[seed % len(SKEWS)], seed)

    @pytest.mark.parametrize("width", [2, 3])
    def test_permute_scales(self, backend, width, seed):
        """The scale gather alone: the layer's check cannot see its padding rows (combine never reads them)."""
        check_permute_scales(self.module("permute").run_scales, backend, RAGGED, SKEWS[seed % len(SKEWS)], seed,
                             width)

    def test_act_quant_bounded_by_total_padded(self, backend, seed):
        """The second quantisation reads and writes only the rows swiglu wrote (below total_padded, on the device)."""
        check_act_quant_rows(self.module("act_quant").run, backend, RAGGED, seed, rows=16 + seed % 40)

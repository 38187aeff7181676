"""Every hand-written PTX kernel, and the whole layer, against kernels.md through ptxsim (the sim backend).

Fresh seeds per run (the `seed` fixture prints them; PTXMOE_SEED reproduces). Outputs start poisoned, so an
element a kernel forgets to write fails its check, and rows past total_padded must stay untouched. Besides the tiny
preset, a `ragged` preset covers the shapes the presets miss: T not a multiple of the 4 tokens of a gate CTA,
E > 32 (two experts per gate lane, two scan chunks in align), more than one 256-slot align chunk with a partial last
one, a partial last CTA in act_quant, and groups of 5 experts.
"""
import numpy as np
import pytest

import ptx_impl
from contract.kernels import get_kernel
from contract.presets import SKEWS, Preset, get_preset
from harness.verify import run_and_check, run_kernel

pytestmark = pytest.mark.sim

RAGGED = Preset("ragged", T=67, H=384, E=40, K=6, G=8, TG=3, I=96, BM=16)
KERNELS = ("gate", "align", "permute", "act_quant", "swiglu", "combine")


@pytest.fixture
def backend():
    from harness.backends.sim import SimBackend

    return SimBackend()


def _check(backend, kernel, preset, skew, seed, **params):
    result = run_and_check(ptx_impl.KERNELS[kernel], backend, kernel, preset, skew, seed, **params)
    assert result.ok, f"{kernel} {getattr(preset, 'name', preset)} {skew} seed={seed}: {result.message} {result.errors}"
    return result


@pytest.mark.parametrize("skew", SKEWS)
@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_tiny(backend, kernel, skew, seed):
    _check(backend, kernel, "tiny", skew, seed)


@pytest.mark.parametrize("skew", SKEWS)
def test_act_quant_pow2_scale(backend, skew, seed):
    _check(backend, "act_quant", "tiny", skew, seed, pow2_scale=True)


@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_ragged_shapes(backend, kernel, seed):
    skew = SKEWS[seed % len(SKEWS)]
    _check(backend, kernel, RAGGED, skew, seed)


@pytest.mark.parametrize("skew", SKEWS)
def test_align_covers_ragged_routing(backend, skew, seed):
    """The routing really is ragged (not a multiple of BM, empty experts under `extreme`), and align gets it exact."""
    preset = RAGGED
    inputs, outputs, _ = run_kernel(ptx_impl.KERNELS["align"], backend, "align", preset, skew, seed)
    counts = np.bincount(inputs["topk_ids"].ravel(), minlength=preset.E)
    assert np.any(counts % preset.BM != 0)
    if skew == "extreme":
        assert np.count_nonzero(counts == 0) == preset.E - preset.K
    expect = get_kernel("align").reference(inputs, preset)
    for name, want in expect.items():
        np.testing.assert_array_equal(outputs[name], want, err_msg=name)


def test_gate_tie_breaking_lower_index_wins(backend):
    """Exact ties (not produced by the generators): equal scores resolve to the lower group / expert id."""
    preset = get_preset("tiny")
    logits = np.zeros((preset.T, preset.E), np.float32)  # every s = 0.5
    bias = np.zeros(preset.E, np.float32)
    bias[[5, 6, 9, 10]] = 0.25  # groups 1 and 2 tie for the best group score; expert pairs tie inside them
    inputs = {"logits": logits, "bias": bias}
    _, outputs, _ = run_kernel(ptx_impl.KERNELS["gate"], backend, "gate", preset, "balanced", 0, inputs=inputs)
    np.testing.assert_array_equal(outputs["topk_ids"], np.tile([5, 6, 9, 10], (preset.T, 1)))
    np.testing.assert_allclose(outputs["topk_w"], np.full((preset.T, preset.K), preset.route_scale / preset.K),
                               rtol=1e-6)


@pytest.mark.parametrize("skew", SKEWS)
def test_layer_tiny(backend, skew, seed):
    """gate -> align -> permute -> GEMM(W1) -> swiglu -> GEMM(W2) -> combine, plus act_quant(x), end to end."""
    preset = get_preset("tiny")
    inputs, outputs, records = run_kernel(ptx_impl.KERNELS["layer"], backend, "layer", preset, skew, seed)
    result = get_kernel("layer").check(outputs, inputs, preset)
    assert result.ok, f"layer tiny {skew} seed={seed}: {result.message} {result.errors}"
    names = [r.name for r in records]
    assert len(names) == 8 and all(r.impl == "ptx" for r in records), names
    assert names[:4] == ["ptx_act_quant", "ptx_gate", "ptx_align", "ptx_permute"]
    assert names[5] == "ptx_swiglu" and names[7] == "ptx_combine" and "grouped_gemm" in names[4] + names[6]


@pytest.mark.parametrize("max_ctas", [1, 5])
@pytest.mark.parametrize("kernel", ["permute", "swiglu", "combine"])
def test_streaming_grid_stride_loop(backend, kernel, max_ctas, seed, monkeypatch):
    """With the grid capped, each thread walks many chunks and the stride (256 or 1280 chunks) is not a multiple of
    the chunks per row (48 or 12 at the ragged preset), so the incremental (row, column) step wraps rows."""
    from ptx_impl import descriptor

    monkeypatch.setattr(descriptor, "STREAM_MAX_CTAS", max_ctas)
    inputs, outputs, records = run_kernel(ptx_impl.KERNELS[kernel], backend, kernel, RAGGED, "imbalanced", seed)
    assert records[0].grid == (max_ctas, 1, 1)
    result = get_kernel(kernel).check(outputs, inputs, RAGGED)
    assert result.ok, f"{kernel} max_ctas={max_ctas} seed={seed}: {result.message} {result.errors}"


@pytest.mark.parametrize("skew", SKEWS)
def test_gate_dsv3_sizes(backend, skew, seed):
    """E=256: eight experts per lane, groups of 32 spread over all lanes, top-4 of 8 groups, top-8."""
    _check(backend, "gate", "dsv3-decode", skew, seed)


@pytest.mark.parametrize("preset", ["dsv3-decode", "dsv3-prefill"])
def test_align_dsv3_sizes(backend, preset, seed):
    """E=256 (8 scan chunks), 1024 and 32768 slots (4 and 128 scatter chunks), BM=16 and 64 (docs/tiling.md)."""
    _check(backend, "align", preset, SKEWS[seed % len(SKEWS)], seed)


def test_act_quant_dsv3_width_pow2(backend, seed):
    _check(backend, "act_quant", "dsv3-decode", "balanced", seed, pow2_scale=True)


@pytest.mark.parametrize("kernel, op", [("permute", "st"), ("swiglu", "st"), ("combine", "st"), ("act_quant", "ld")])
def test_streaming_accesses_are_fully_coalesced(backend, kernel, op, seed):
    """Every 32-byte sector a streaming kernel touches on its main stream is fully used (simulated ncu counters)."""
    _, _, records = run_kernel(ptx_impl.KERNELS[kernel], backend, kernel, "tiny", "balanced", seed)
    m = records[0].stats.metrics
    sectors = m[f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum"]
    requests = m[f"l1tex__t_requests_pipe_lsu_mem_global_op_{op}.sum"]
    assert sectors * 32 == m[f"ptxsim__bytes_requested_global_op_{op}.sum"]
    assert sectors == 16 * requests  # 32 lanes x 16 bytes = 512 bytes = 16 sectors per warp request


class _SanitizingDevice:
    """A ptxsim Device whose launches run every sanitizer (memcheck, racecheck, initcheck, synccheck, nc)."""

    def __init__(self, device):
        self._device = device

    def __getattr__(self, name):
        return getattr(self._device, name)

    def launch(self, *args, **kwargs):
        return self._device.launch(*args, sanitize="all", **kwargs)


@pytest.mark.parametrize("kernel", (*KERNELS, "layer"))
def test_sanitizers_clean(kernel, seed):
    """No out-of-bounds or uninitialised reads, no shared-memory races, no divergent barriers, no write to data
    read through ld.global.nc in the same launch (ptxsim raises a SanitizerError on the first report)."""
    import ptxsim
    from harness.backends.sim import SimBackend

    backend = SimBackend(device=_SanitizingDevice(ptxsim.Device()))
    preset = "tiny" if kernel == "layer" else RAGGED
    _check(backend, kernel, preset, SKEWS[seed % len(SKEWS)], seed)


def test_layer_ragged(backend, seed):
    """The layer where gate runs two register blocks and groups of 5, align two scatter chunks, combine K=6."""
    _check(backend, "layer", RAGGED, SKEWS[seed % len(SKEWS)], seed)

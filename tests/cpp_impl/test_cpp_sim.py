"""Every CUDA C++ kernel (NVRTC -> PTX) against kernels.md through ptxsim (the layer: test_cpp_layer.py).

Fresh seeds per run (the `seed` fixture prints them; PTXMOE_SEED reproduces). Outputs start poisoned, so an element
a kernel forgets to write fails its check, and rows past total_padded must stay untouched. Besides tiny and small
(every skew), a `ragged` preset covers what the presets miss: T not a multiple of the 4
tokens of a gate CTA, E > 32 (two experts per gate lane), more than one 256-slot align chunk with a partial last
one, a partial last CTA in act_quant, groups of 5 experts, and combine with K=6.
"""
import numpy as np
import pytest

import cpp_impl
from contract.kernels import get_kernel
from contract.presets import SKEWS, Preset, get_preset
from harness.verify import run_and_check, run_kernel

pytestmark = pytest.mark.sim

RAGGED = Preset("ragged", T=67, H=384, E=40, K=6, G=8, TG=3, I=96, BM=16)
KERNELS = ("gate", "align", "permute", "act_quant", "swiglu", "combine")


def _check(backend, kernel, preset, skew, seed, **params):
    result = run_and_check(cpp_impl.KERNELS[kernel], backend, kernel, preset, skew, seed, **params)
    assert result.ok, f"{kernel} {getattr(preset, 'name', preset)} {skew} seed={seed}: {result.message} {result.errors}"
    return result


@pytest.mark.parametrize("skew", SKEWS)
@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_tiny(backend, kernel, skew, seed):
    _check(backend, kernel, "tiny", skew, seed)


@pytest.mark.parametrize("skew", SKEWS)
@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_small(backend, kernel, skew, seed):
    _check(backend, kernel, "small", skew, seed)


@pytest.mark.parametrize("skew", SKEWS)
def test_act_quant_pow2_scale(backend, skew, seed):
    _check(backend, "act_quant", "tiny", skew, seed, pow2_scale=True)


@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_ragged_shapes(backend, kernel, seed):
    _check(backend, kernel, RAGGED, SKEWS[seed % len(SKEWS)], seed)


@pytest.mark.parametrize("skew", SKEWS)
def test_align_covers_ragged_routing(backend, skew, seed):
    """The routing really is ragged (not a multiple of BM, empty experts under `extreme`), and align gets it exact."""
    inputs, outputs, _ = run_kernel(cpp_impl.KERNELS["align"], backend, "align", RAGGED, skew, seed)
    counts = np.bincount(inputs["topk_ids"].ravel(), minlength=RAGGED.E)
    assert np.any(counts % RAGGED.BM != 0)
    if skew == "extreme":
        assert np.count_nonzero(counts == 0) == RAGGED.E - RAGGED.K
    expect = get_kernel("align").reference(inputs, RAGGED)
    for name, want in expect.items():
        np.testing.assert_array_equal(outputs[name], want, err_msg=name)


def test_gate_tie_breaking_lower_index_wins(backend):
    """Exact ties (not produced by the generators): equal scores resolve to the lower group / expert id."""
    preset = get_preset("tiny")
    logits = np.zeros((preset.T, preset.E), np.float32)  # every s = 0.5
    bias = np.zeros(preset.E, np.float32)
    bias[[5, 6, 9, 10]] = 0.25  # groups 1 and 2 tie for the best group score; expert pairs tie inside them
    inputs = {"logits": logits, "bias": bias}
    _, outputs, _ = run_kernel(cpp_impl.KERNELS["gate"], backend, "gate", preset, "balanced", 0, inputs=inputs)
    np.testing.assert_array_equal(outputs["topk_ids"], np.tile([5, 6, 9, 10], (preset.T, 1)))
    np.testing.assert_allclose(outputs["topk_w"], np.full((preset.T, preset.K), preset.route_scale / preset.K),
                               rtol=1e-6)


@pytest.mark.parametrize("skew", SKEWS)
def test_gate_dsv3_sizes(backend, skew, seed):
    """E=256: eight experts per lane (-DNJ=8), groups of 32 spread over all lanes, top-4 of 8 groups, top-8."""
    _check(backend, "gate", "dsv3-decode", skew, seed)


def test_align_dsv3_decode(backend, seed):
    """E=256 (8 scan steps), 1024 slots (4 scatter chunks), BM=16."""
    _check(backend, "align", "dsv3-decode", SKEWS[seed % len(SKEWS)], seed)


@pytest.mark.parametrize("max_ctas", [1, 5])
@pytest.mark.parametrize("kernel", ["permute", "swiglu", "combine"])
def test_streaming_grid_stride_loop(backend, kernel, max_ctas, seed, monkeypatch):
    """With the grid capped, each thread walks many chunks and the stride (256 or 1280 chunks) is not a multiple of
    the chunks per row (48 or 12 at the ragged preset), so the incremental (row, column) step wraps rows."""
    from cpp_impl import descriptor

    monkeypatch.setattr(descriptor, "STREAM_MAX_CTAS", max_ctas)
    inputs, outputs, records = run_kernel(cpp_impl.KERNELS[kernel], backend, kernel, RAGGED, "imbalanced", seed)
    assert records[0].grid == (max_ctas, 1, 1)
    result = get_kernel(kernel).check(outputs, inputs, RAGGED)
    assert result.ok, f"{kernel} max_ctas={max_ctas} seed={seed}: {result.message} {result.errors}"


@pytest.mark.parametrize("kernel, op", [("permute", "st"), ("swiglu", "st"), ("combine", "st"), ("act_quant", "ld")])
def test_streaming_accesses_are_fully_coalesced(backend, kernel, op, seed):
    """Every 32-byte sector a streaming kernel touches on its main stream is fully used (simulated ncu counters)."""
    _, _, records = run_kernel(cpp_impl.KERNELS[kernel], backend, kernel, "tiny", "balanced", seed)
    m = records[0].stats.metrics
    sectors = m[f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum"]
    requests = m[f"l1tex__t_requests_pipe_lsu_mem_global_op_{op}.sum"]
    assert sectors * 32 == m[f"ptxsim__bytes_requested_global_op_{op}.sum"]
    assert sectors == 16 * requests  # 32 lanes x 16 bytes = 512 bytes = 16 sectors per warp request


@pytest.mark.parametrize("kernel", KERNELS)
def test_sanitizers_clean(sanitizing_backend, kernel, seed):
    """No out-of-bounds or uninitialised reads, no shared-memory races, no divergent barriers, no write to data
    read through ld.global.nc in the same launch (ptxsim raises a SanitizerError on the first report)."""
    _check(sanitizing_backend, kernel, RAGGED, SKEWS[seed % len(SKEWS)], seed)


def test_swiglu_saturating_inputs_stay_finite(backend):
    """g = -3e38 (exp(-g) = inf) with u = 3e38: silu(g) = -0, so a = -0, not the NaN of (g * u) / inf; g = 3e38 with
    u = 0.5: a = g * u (the denominator is 1)."""
    import ml_dtypes

    preset = get_preset("tiny")
    inter = preset.I
    h = np.zeros((preset.P_max, 2 * inter), ml_dtypes.bfloat16)
    h[:, :inter] = -3e38
    h[:, inter:] = 3e38
    h[1, :inter], h[1, inter:] = 3e38, 0.5
    inputs = {"h": h, "total_padded": np.array([preset.BM], np.int32)}
    _, outputs, _ = run_kernel(cpp_impl.KERNELS["swiglu"], backend, "swiglu", preset, "balanced", 0, inputs=inputs)
    a = outputs["a"][: preset.BM].astype(np.float32)
    assert np.all(np.isfinite(a))
    assert np.all(a[0] == 0) and np.all(np.signbit(a[0]))
    np.testing.assert_array_equal(a[1], np.float32(ml_dtypes.bfloat16(3e38)) * np.float32(0.5))


def test_align_more_experts_than_threads(backend, seed):
    """E=300 > 256 threads: the zero, fill and cursor loops stride over experts, the scan takes ten 32-expert steps."""
    wide = Preset("wide", T=40, H=128, E=300, K=4, G=4, TG=2, I=32, BM=16)
    _check(backend, "align", wide, SKEWS[seed % len(SKEWS)], seed)

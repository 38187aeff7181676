"""Memory estimates from shapes alone: the shape table matches the real tensors, and lazy sampled rows are small."""
import numpy as np
import pytest

from contract.errors import UnknownNameError
from contract.footprint import PROCESS_BASE, estimate_memory, tensor_bytes, wants_lazy
from contract.kernels import KERNEL_NAMES, get_kernel
from contract.presets import get_preset

GiB = 1 << 30


@pytest.mark.parametrize("kernel", KERNEL_NAMES)
def test_shape_table_matches_the_drawn_tensors(kernel):
    preset = get_preset("tiny")
    spec = get_kernel(kernel)
    for variant in spec.variants or ("up",):
        params = {"variant": variant} if spec.variants else {}
        inputs = spec.make_inputs(preset, "balanced", 0, **params)
        ins, outs = tensor_bytes(kernel, preset, variant)
        assert ins == {k: int(np.asarray(v).nbytes) for k, v in inputs.items()}
        real_outs = {o.name: int(np.prod(o.shape)) * o.dtype.itemsize for o in spec.output_specs(preset, inputs)}
        assert outs == real_outs


def test_dsv3_decode_grouped_gemm_estimates():
    ins, _ = tensor_bytes("grouped_gemm", "dsv3-decode", "up")
    assert ins["w"] == 256 * 4096 * 7168 * 2
    assert wants_lazy("grouped_gemm", "dsv3-decode") and not wants_lazy("grouped_gemm", "tiny")
    eager = estimate_memory("grouped_gemm", "dsv3-decode", lazy=False)
    assert eager.host_bytes > ins["w"] and eager.sim_bytes > ins["w"]  # the weights twice: host array and device copy
    lazy = estimate_memory("grouped_gemm", "dsv3-decode", lazy=True, sample_ctas=4)
    assert lazy.lazy and lazy.input_bytes == eager.input_bytes
    assert lazy.total_bytes < 2 * GiB < eager.total_bytes - PROCESS_BASE
    more = estimate_memory("grouped_gemm", "dsv3-decode", lazy=True, sample_ctas=32)
    assert more.sim_bytes > lazy.sim_bytes
    checked = estimate_memory("grouped_gemm", "dsv3-decode", lazy=True, sample_ctas=4, sanitizers=("initcheck",))
    assert checked.sim_bytes - lazy.sim_bytes == eager.input_bytes + eager.output_bytes  # a shadow byte per heap byte
    prefill = estimate_memory("layer", "dsv3-prefill", lazy=False)
    assert prefill.input_bytes > 21 * GiB


def test_unknown_names():
    with pytest.raises(UnknownNameError, match="kernel"):
        tensor_bytes("gemm", "tiny")
    with pytest.raises(UnknownNameError, match="variant"):
        estimate_memory("grouped_gemm", "tiny", "sideways")


def test_fp8_layer_shapes_are_the_inputs_make_inputs_draws_and_its_weights_lazy():
    from contract.footprint import LAZY_INPUTS, SHAPES, tensor_bytes
    from contract.kernels import get_kernel
    from contract.presets import get_preset

    tiny = get_preset("tiny")
    for variant, kernel in (("fp8", "layer"), ("bf16", "layer"), ("down", "grouped_gemm_fp8")):
        inputs = get_kernel(kernel).make_inputs(tiny, "balanced", 1, variant=variant)
        shapes, _ = SHAPES[kernel](tiny, variant)
        assert {k: (v.shape, v.dtype) for k, v in inputs.items() if k in shapes} == shapes, (kernel, variant)
        assert set(LAZY_INPUTS[kernel]) <= set(shapes)
    fp8, _ = tensor_bytes("layer", "dsv3-decode", "fp8")
    bf16, _ = tensor_bytes("layer", "dsv3-decode", "bf16")
    assert fp8["W1"] + fp8["W2"] == 256 * 3 * 2048 * 7168 and bf16["W1"] == 2 * fp8["W1"]  # 11 GB of e4m3 weights


def test_a_sampled_layer_counts_its_intermediates_once_and_its_sampled_experts_weights():
    """A sampled layer's stage check reads views of its intermediates (no host copy) and its largest whole-stage
    reference is permute's xp; its lazy weights count the experts its sampled blocks hold, not one per block."""
    import numpy as np

    from contract.footprint import estimate_memory
    from contract.layer import intermediate_specs
    from contract.presets import get_preset

    p = get_preset("dsv3-prefill")  # 3 routing blocks an expert
    for variant, xp in (("bf16", "xp"), ("fp8", "xq")):
        specs = intermediate_specs(p, variant)
        whole, sampled = (estimate_memory("layer", p, variant, lazy=True, sample_ctas=c) for c in (None, 18))
        xp_bytes = int(np.prod(specs[xp][0])) * np.dtype(specs[xp][1]).itemsize
        assert sampled.host_bytes - xp_bytes < whole.host_bytes / 4  # no float64 layer, no copies
        ins, _ = tensor_bytes("layer", p, variant)
        six_experts = 6 * (ins["W1"] + ins["W2"]) // p.E  # W1 and W2 of each: the up GEMM reads one, down the other
        middle = sum(int(np.prod(s)) * np.dtype(t).itemsize for s, t in specs.values())
        assert sampled.sim_bytes < whole.sim_bytes and six_experts + middle < sampled.sim_bytes < 2 * six_experts + \
            1.5 * middle
        assert sampled.total_bytes < 6 << 30  # measured: 3.8 GB bf16, 4.4 GB fp8 (PTX, the checks' peak included)


def test_drawing_fp8_weights_whole_counts_their_float32_temporaries():
    """make_inputs scales the fp8 weights in float32 before quantising: at dsv3 that is tens of GB, which must stop
    the row before it is drawn (a lazy draw has no such temporaries)."""
    import contract.footprint as fp

    p = fp.get_preset("dsv3-decode")
    weights = p.E * 2 * p.I * p.H
    est = fp.estimate_memory("grouped_gemm_fp8", p, "up", lazy=False)
    assert est.host_bytes >= weights * (1 + 6)
    assert fp._draw_bytes("grouped_gemm_fp8", p, "up", ("w",)) == 0


def test_a_sampled_fp8_gemm_counts_the_reference_of_its_sampled_blocks_as_the_bf16_one():
    """Both grouped GEMM checks build the float64 rows of the sampled blocks and one expert's float64 weights at a
    time; the fp8 one was counted as a float64 copy of its whole output (2.8 GB at dsv3-prefill down), which ran its
    row alone under a 6 GB budget."""
    import contract.footprint as fp

    p = fp.get_preset("dsv3-prefill")
    for variant in ("up", "down"):
        _, outs = fp.tensor_bytes("grouped_gemm_fp8", p, variant)
        bf16 = fp._reference_bytes("grouped_gemm", p, variant, outs, 18)
        assert fp._reference_bytes("grouped_gemm_fp8", p, variant, outs, 18) == bf16 < outs["c"]
        whole = fp._reference_bytes("grouped_gemm_fp8", p, variant, outs, None)
        assert whole >= 2 * outs["c"]  # unsampled: every block's float64 rows
    down = fp.estimate_memory("grouped_gemm_fp8", p, "down", lazy=True, sample_ctas=18)
    assert down.total_bytes < 4 << 30

"""harness/row_memory.py: a row's memory known before it runs, and the one-line reason to skip it."""
import pytest

from contract.errors import UnknownNameError
from harness.row_memory import SIM_BYTES_PER_BYTE, SIM_GROWTH, estimate_row_memory, memory_skip_reason


def test_gemm_estimate_counts_the_expert_weights():
    """dsv3 up-projection: 256 experts x 4096 x 7168 bf16 weights alone are 14 GiB of input."""
    est = estimate_row_memory("grouped_gemm", "dsv3-decode", "ptx", "up")
    weights = 256 * 4096 * 7168 * 2
    assert weights < est.host_bytes < weights * 1.2
    assert est.sim_bytes >= weights * SIM_BYTES_PER_BYTE * SIM_GROWTH
    assert estimate_row_memory("grouped_gemm", "dsv3-decode", "ptx", "up", backend="gpu").sim_bytes == 0


def test_estimates_grow_with_the_preset():
    for kernel in ("gate", "align", "permute", "act_quant", "swiglu", "combine", "layer"):
        tiny, big = (estimate_row_memory(kernel, p, "ptx").total_bytes for p in ("tiny", "dsv3-prefill"))
        assert 0 < tiny < big, kernel


def test_skip_reason_is_one_line_naming_need_have_and_flags():
    assert memory_skip_reason("layer", "tiny", "ptx", None, "sim", 8 * 2**30) is None
    assert memory_skip_reason("layer", "dsv3-decode", "ptx", None, "sim", None) is None  # unknown: run it
    why = memory_skip_reason("layer", "dsv3-decode", "ptx", None, "sim", 16 * 2**30)
    assert why.startswith("needs about ") and "the machine has 16.0 GiB free" in why
    assert "--preset" in why and "--backend gpu" in why and "\n" not in why


def test_unknown_kernel_names_the_valid_ones():
    with pytest.raises(UnknownNameError, match="gate"):
        estimate_row_memory("gatee", "tiny", "ptx")


def test_a_kernel_without_a_size_table_is_run_not_skipped():
    assert memory_skip_reason("my_kernel", "dsv3-prefill", "ptx", None, "sim", 1) is None

"""harness/row_memory.py: a row's memory (the contract's estimate) known before it runs, and the one line that says
why a row is skipped."""
import numpy as np

from contract.footprint import PROCESS_BASE, estimate_memory
from harness.row_memory import estimate_row_memory, memory_record, memory_skip_reason, peak_rss_bytes, reset_peak_rss

WEIGHTS = 256 * 4096 * 7168 * 2  # dsv3 up-projection: 14 GiB of bf16 expert weights


def test_the_runner_asks_the_contracts_estimate():
    for lazy, blocks in ((False, None), (True, 6)):
        assert estimate_row_memory("grouped_gemm", "dsv3-decode", "up", "sim", lazy, blocks) == \
            estimate_memory("grouped_gemm", "dsv3-decode", "up", lazy=lazy, sample_ctas=blocks)


def test_lazy_sampled_dsv3_gemm_fits_a_laptop_and_eager_does_not():
    lazy = estimate_row_memory("grouped_gemm", "dsv3-decode", "up", "sim", lazy=True, sample_blocks=6)
    eager = estimate_row_memory("grouped_gemm", "dsv3-decode", "up", "sim", lazy=False)
    assert lazy.total_bytes < 2 << 30 < WEIGHTS < eager.total_bytes
    gpu = estimate_row_memory("grouped_gemm", "dsv3-decode", "up", backend="gpu")
    assert gpu.sim_bytes == 0 and WEIGHTS < gpu.host_bytes < WEIGHTS * 1.2  # a GPU run draws the weights on the host


def test_skip_reason_is_one_line_naming_need_have_and_flags():
    assert memory_skip_reason("layer", "tiny", None, "sim", 8 * 2**30) is None
    assert memory_skip_reason("layer", "dsv3-decode", None, "sim", None) is None  # unknown: run it
    why = memory_skip_reason("layer", "dsv3-decode", None, "sim", 4 * 2**30)
    assert why.startswith("needs about ") and "the machine has 4.0 GiB free" in why and "\n" not in why
    assert "--sample auto" in why and "--preset" in why
    sampled = memory_skip_reason("layer", "dsv3-prefill", None, "sim", 2**30, lazy=True, sample_blocks=18)
    assert "--sample auto" not in sampled and "--workers" in sampled
    assert "--sample" not in memory_skip_reason("permute", "dsv3-prefill", None, "sim", 2**30)  # not a GEMM


def test_a_kernel_without_a_size_table_is_run_not_skipped():
    assert memory_skip_reason("my_kernel", "dsv3-prefill", None, "sim", 1) is None


def test_a_lazy_sampled_dsv3_fp8_gemm_counts_the_blocks_it_touches_not_every_weight():
    """The sampled fp8 GEMM touches the weights of its simulated blocks' experts, as the bf16 one does: counting all
    7.5 GB of e4m3 up weights as touched made two Dask workers (half the free memory each) skip its rows at decode,
    which a serial run finished within 2.7 GB."""
    fp8 = estimate_row_memory("grouped_gemm_fp8", "dsv3-decode", "up", "sim", lazy=True, sample_blocks=12)
    whole = estimate_row_memory("grouped_gemm_fp8", "dsv3-decode", "up", "sim", lazy=True, sample_blocks=None)
    assert fp8.sim_bytes < 2 << 30 < WEIGHTS // 2 < whole.sim_bytes


def test_the_peak_is_the_rows_own_after_a_reset():
    """After a reset the peak reads about the current RSS, whatever the process held at its height before; a
    64 MiB array touched after it raises the peak by about that."""
    big = np.ones(256 << 20, np.uint8)  # a 256 MiB height, then freed
    del big
    if not reset_peak_rss():
        import pytest

        pytest.skip("this kernel refuses /proc/self/clear_refs: the peak is the process's")
    after_reset = peak_rss_bytes()
    grown = np.ones(64 << 20, np.uint8)
    peak = peak_rss_bytes()
    assert 60 << 20 <= peak - after_reset <= 128 << 20, (after_reset, peak)
    del grown
    record = memory_record(estimate_row_memory("gate", "tiny"), peak, True)
    assert record["peak_rss_bytes"] == peak and record["peak_is_row"]
    assert record["estimated_bytes"] == PROCESS_BASE + record["estimated_host_bytes"] + record["estimated_sim_bytes"]
    unknown = memory_record(None, None, True)
    assert "estimated_bytes" not in unknown and not unknown["peak_is_row"]

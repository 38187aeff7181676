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


def _touched_pages(n_bytes: int):
    """n_bytes of fresh anonymous pages, each written: they add n_bytes to RSS whatever the allocator holds (a numpy
    array may reuse free chunks that are still resident after earlier tests, and then RSS does not move)."""
    import mmap

    pages = mmap.mmap(-1, n_bytes)
    np.frombuffer(pages, np.uint8)[:] = 1
    return pages


def test_the_peak_is_the_rows_own_after_a_reset():
    """After a reset the peak reads about the current RSS, whatever the process held at its height before; 64 MiB of
    pages touched after it raise the peak by about that."""
    from harness.row_memory import RESET_SLACK_BYTES, rss_bytes

    big = _touched_pages(256 << 20)  # a height 256 MiB over the present, then unmapped
    height = peak_rss_bytes()
    big.close()
    if not reset_peak_rss():
        import pytest

        pytest.skip("this kernel refuses or ignores /proc/self/clear_refs: the peak is the process's")
    after_reset = peak_rss_bytes()
    assert after_reset <= rss_bytes() + RESET_SLACK_BYTES < height, (after_reset, height)
    grown = _touched_pages(64 << 20)
    peak = peak_rss_bytes()
    assert 60 << 20 <= peak - after_reset <= 128 << 20, (after_reset, peak)
    grown.close()
    record = memory_record(estimate_row_memory("gate", "tiny"), peak, True)
    assert record["peak_rss_bytes"] == peak and record["peak_is_row"]
    assert record["estimated_bytes"] == PROCESS_BASE + record["estimated_host_bytes"] + record["estimated_sim_bytes"]
    unknown = memory_record(None, None, True)
    assert "estimated_bytes" not in unknown and not unknown["peak_is_row"]


def _fake_proc(tmp_path, monkeypatch, hwm_kib: int, rss_kib: int):
    import harness.row_memory as row_memory

    status = tmp_path / "status"
    status.write_text(f"Name:\tpython\nVmHWM:\t{hwm_kib} kB\nVmRSS:\t{rss_kib} kB\n")
    monkeypatch.setattr(row_memory, "CLEAR_REFS", str(tmp_path / "clear_refs"))
    monkeypatch.setattr(row_memory, "STATUS", str(status))


def test_a_reset_the_kernel_ignores_is_not_taken_for_a_row_window(tmp_path, monkeypatch):
    """CI's sandbox accepts the write to clear_refs and leaves VmHWM at the process's 2 GB height: the row's peak
    must then be reported as the process's (peak_is_row False), not as the row's own."""
    _fake_proc(tmp_path, monkeypatch, hwm_kib=2_000_000, rss_kib=300_000)
    assert not reset_peak_rss()
    assert peak_rss_bytes() == 2_000_000 * 1024
    assert not memory_record(None, peak_rss_bytes(), reset_peak_rss())["peak_is_row"]
    _fake_proc(tmp_path, monkeypatch, hwm_kib=300_100, rss_kib=300_000)  # a reset that took: HWM back at RSS
    assert reset_peak_rss()


def test_a_refused_reset_or_missing_status_is_no_window(tmp_path, monkeypatch):
    import harness.row_memory as row_memory

    monkeypatch.setattr(row_memory, "CLEAR_REFS", str(tmp_path / "no" / "clear_refs"))
    assert not reset_peak_rss()
    monkeypatch.setattr(row_memory, "CLEAR_REFS", str(tmp_path / "clear_refs"))
    monkeypatch.setattr(row_memory, "STATUS", str(tmp_path / "missing"))
    assert not reset_peak_rss() and peak_rss_bytes() is None

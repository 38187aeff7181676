"""harness/row_memory.py: a row's memory (the contract's estimate) known before it runs, and the one line that says
why a row is skipped."""
import os

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


def _fake_system(tmp_path, meminfo: str, self_cgroup: str, files: dict):
    """A /proc/meminfo, a /proc/self/cgroup and a cgroup mount under tmp_path; files maps paths under the mount to
    their text. Returns available_bytes's three paths."""
    (tmp_path / "meminfo").write_text(meminfo)
    (tmp_path / "cgroup").write_text(self_cgroup)
    root = tmp_path / "sys-fs-cgroup"
    root.mkdir()
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return str(tmp_path / "meminfo"), str(tmp_path / "cgroup"), str(root)


GIB = 2**30
MEMINFO = f"MemTotal: {64 * GIB // 1024} kB\nMemFree: {10 * GIB // 1024} kB\nMemAvailable: {40 * GIB // 1024} kB\n"


def test_a_cgroup_v2_limit_below_memavailable_is_what_the_row_gets(tmp_path):
    """A container limited to 8 GiB, 3 GiB used (1 GiB of it inactive page cache the kernel drops first), on a
    machine with 40 GiB available: the row gets 6 GiB, not 40. An ancestor's tighter limit wins."""
    from harness.row_memory import available_bytes, cgroup_headroom

    paths = _fake_system(tmp_path, MEMINFO, "0::/user.slice/job\n", {
        "user.slice/job/memory.max": f"{8 * GIB}\n", "user.slice/job/memory.current": f"{3 * GIB}\n",
        "user.slice/job/memory.stat": f"anon {2 * GIB}\ninactive_file {GIB}\n",
        "user.slice/memory.max": "max\n", "user.slice/memory.current": f"{30 * GIB}\n"})
    assert available_bytes(*paths) == 6 * GIB
    (tmp_path / "sys-fs-cgroup/user.slice/memory.max").write_text(f"{32 * GIB}\n")
    assert cgroup_headroom(*paths[1:]) == 2 * GIB == available_bytes(*paths)


def test_a_cgroup_v1_limit_counts_and_its_no_limit_does_not(tmp_path):
    """v1: memory.limit_in_bytes - memory.usage_in_bytes; a namespaced container names a path the mount lacks, so
    the mount's root (its own cgroup) is read. 2**63 rounded to pages is v1's "no limit"."""
    from harness.row_memory import available_bytes

    paths = _fake_system(tmp_path, MEMINFO, "4:memory:/docker/abc\n0::/\n", {
        "memory/memory.limit_in_bytes": f"{12 * GIB}\n", "memory/memory.usage_in_bytes": f"{4 * GIB}\n"})
    assert available_bytes(*paths) == 8 * GIB
    (tmp_path / "sys-fs-cgroup/memory/memory.limit_in_bytes").write_text("9223372036854771712\n")
    assert available_bytes(*paths) == 40 * GIB  # no limit: the machine's MemAvailable


def test_a_full_cgroup_is_zero_not_negative_and_no_cgroup_leaves_memavailable(tmp_path):
    from harness.row_memory import available_bytes

    paths = _fake_system(tmp_path, MEMINFO, "0::/\n", {"memory.max": f"{GIB}\n", "memory.current": f"{2 * GIB}\n"})
    assert available_bytes(*paths) == 0
    (tmp_path / "bare").mkdir()
    bare = _fake_system(tmp_path / "bare", MEMINFO, "", {})
    assert available_bytes(*bare) == 40 * GIB
    assert available_bytes(paths[0], str(tmp_path / "no-such-file"), paths[2]) == 40 * GIB


def test_a_kernel_without_memavailable_counts_free_plus_caches_not_free_pages_alone(tmp_path):
    """Before Linux 3.14 /proc/meminfo has no MemAvailable: MemFree + Buffers + Cached + SReclaimable."""
    from harness.row_memory import available_bytes

    old = "MemTotal: 16000000 kB\nMemFree: 1000000 kB\nBuffers: 200000 kB\nCached: 3000000 kB\n" \
          "SwapCached: 999999 kB\nSReclaimable: 300000 kB\n"
    paths = _fake_system(tmp_path, old, "", {})
    assert available_bytes(*paths) == (1000000 + 200000 + 3000000 + 300000) * 1024


def test_this_machines_available_memory_is_known_and_below_its_total():
    from harness.row_memory import available_bytes

    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert 0 < available_bytes() <= total

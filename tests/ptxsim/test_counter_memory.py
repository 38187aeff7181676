"""ptxsim's per-sector counter tables (MemCounters, WaveL2) cost memory only where a launch touches the heap."""
import sys

import numpy as np
import pytest
from ptxkit import kernel

from ptxsim.counters import MemCounters
from ptxsim.device import Device
from ptxsim.model.l2 import WaveL2, lazy_zeros

pytestmark = pytest.mark.sim

HEAP = 1 << 30  # a lazy GiB: 32 M sectors, so eager tables would take ~400 MB (int64 L1 owners, int32 L2 waves)


def _rss() -> int:
    import os

    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_tables_over_a_big_lazy_heap_commit_only_what_a_launch_touches():
    dev = Device()
    big = dev.alloc_lazy(HEAP, 0)
    x = np.arange(4096, dtype=np.float32)
    buf = dev.alloc(x.nbytes)
    dev.copy_in(buf, x.view(np.uint8))
    before = _rss()
    counters = MemCounters(dev.gmem, l2_bytes=50 << 20)
    stats = dev.launch(kernel("ld.global.f32 %f1, [%rd7]; st.global.f32 [%rd8], %f1;"), 4, 1024,
                       [buf, big, np.uint64(0), np.uint64(0)], l2_bytes=50 << 20)
    grown = _rss() - before
    assert counters.nsec >= HEAP // 32
    assert grown < 48 << 20, f"RSS grew {grown / 2**20:.0f} MiB for tables over a {HEAP >> 20} MiB untouched heap"
    m = stats.metrics
    assert m["dram__bytes_read.sum"] == x.nbytes and m["dram__bytes_write.sum"] == x.nbytes


def test_lazy_zeros_reads_zero_and_keeps_writes():
    a = lazy_zeros(1000, np.int64)
    assert a.shape == (1000,) and a.dtype == np.int64 and not a.any()
    a[[3, 999]] = [7, -1]
    assert a[3] == 7 and a[999] == -1 and np.count_nonzero(a) == 2


def test_l2_never_touched_sectors_miss_and_wave_zero_touches_hit():
    l2 = WaveL2(64, capacity_bytes=None)
    l2.begin_wave(0)
    s = np.arange(8)
    assert np.array_equal(l2.access(s), s)  # stored as wave + 1: wave 0 must not read as "never"
    assert l2.access(s).size == 0
    l2.begin_wave(1)
    assert l2.access(s).size == 0 and l2.footprint_bytes(1) == 8 * 32


def test_written_sectors_count_once_across_stores():
    dev = Device()
    y = np.zeros(256, np.uint32)
    buf = dev.alloc(y.nbytes)
    dev.copy_in(buf, y.view(np.uint8))
    body = "st.global.u32 [%rd7], %r0; st.global.u32 [%rd7], %r0; atom.global.add.u32 %r1, [%rd7], 1;"
    m = dev.launch(kernel(body), 2, 128, [buf, np.uint64(0), np.uint64(0), np.uint64(0)]).metrics
    assert m["dram__bytes_write.sum"] == y.nbytes


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux overcommit")
def test_reserve_maps_more_than_this_machines_memory():
    """A dsv3 layer's heap (22 GB of lazy weights, doubled on growth) must map on a machine with less RAM."""
    import os

    from ptxsim.memory import reserve

    ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    big = reserve(2 * ram)
    assert big.size == 2 * ram and big[-1] == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_growing_the_heap_for_a_lazy_buffer_commits_none_of_it():
    """A second lazy buffer that doubles the heap: growth copies the committed bytes, and the new buffer's untouched
    range is not among them (it was: up to a GB of zeros written into the new heap)."""
    dev = Device()
    dev.alloc_lazy(3 << 28, 0)  # 768 MiB in a 1 GiB heap
    before = _rss()
    second = dev.alloc_lazy(1 << 30, 7)  # grows the heap to 2 GiB
    grown = _rss() - before
    assert grown < 48 << 20, f"RSS grew {grown / 2**20:.0f} MiB for a lazy GiB nothing touched"
    out = np.empty(4, np.uint8)
    dev.copy_out(second, out)
    assert out.tolist() == [7] * 4

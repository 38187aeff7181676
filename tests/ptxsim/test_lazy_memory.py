"""Lazy global memory: pages filled on first touch give the same results (outputs and counters) as copied buffers;
shadow bytes exist only when a sanitizer asks; freed and unmapped bytes are still told apart."""
import numpy as np
import pytest

from contract.generators import KeyedNormal
from ptxsim.device import Device
from ptxsim.errors import MemoryFault
from ptxsim.memory import FREED, GLOBAL_BASE, LIVE, PAGE, UNMAPPED, GlobalMemory


def test_pages_fill_on_touch_only():
    dev = Device()
    t = KeyedNormal("w", (64, 4096), seed=3)  # 8 pages
    buf = dev.alloc_lazy(t.nbytes, t.fill_bytes)
    assert (buf.addr - GLOBAL_BASE) % PAGE == 0
    g = dev.gmem
    assert g.pending_pages == t.nbytes // PAGE and g.filled_pages == 0
    g.touch(np.array([buf.addr - GLOBAL_BASE + 3 * PAGE + 10], np.uint64))
    assert g.filled_pages == 1
    page = g.data[buf.addr - GLOBAL_BASE + 3 * PAGE: buf.addr - GLOBAL_BASE + 4 * PAGE]
    assert np.array_equal(page, t.fill_bytes(3 * PAGE, 4 * PAGE))
    got = dev.read(buf, t.dtype, t.shape)  # a copy out produces the rest without committing it
    assert np.array_equal(got.view(np.uint16), t.materialise().view(np.uint16))
    assert g.pending_pages == t.nbytes // PAGE - 1 and g.filled_pages == 1
    part = g.read_bytes(buf.addr + PAGE - 6, 12)  # across a filled and a pending page
    assert np.array_equal(part, t.fill_bytes(PAGE - 6, PAGE + 6))


def test_constant_fill_partial_write_and_free():
    dev = Device()
    buf = dev.alloc_lazy(3 * PAGE + 100, 0xFF)
    dev.gmem.write_bytes(buf.addr + PAGE - 4, np.arange(8, dtype=np.uint8))  # straddles pages 0 and 1
    raw = dev.read(buf, np.uint8, (buf.nbytes,))
    expect = np.full(buf.nbytes, 0xFF, np.uint8)
    expect[PAGE - 4: PAGE + 4] = np.arange(8)
    assert np.array_equal(raw, expect)
    whole = dev.alloc_lazy(2 * PAGE, 0xAB)
    dev.copy_in(whole, np.zeros(2 * PAGE, np.uint8))  # covers both pages: nothing to fill first
    assert dev.gmem.filled_pages == 2 and dev.gmem.pending_pages == 2  # the two pages written; whole's overwritten
    assert not dev.read(whole, np.uint8, (2 * PAGE,)).any()
    dev.free(whole)
    assert dev.gmem.state[whole.addr - GLOBAL_BASE] == FREED
    assert dev.gmem.state[buf.addr - GLOBAL_BASE + buf.nbytes] == UNMAPPED  # the guard gap
    assert dev.gmem.state[np.array([buf.addr - GLOBAL_BASE, whole.addr - GLOBAL_BASE - 1])].tolist() == [LIVE, UNMAPPED]


def test_bad_fill_source_is_a_memory_fault():
    dev = Device()
    buf = dev.alloc_lazy(PAGE, lambda lo, hi: np.zeros(3, np.uint8), label="short")
    with pytest.raises(MemoryFault, match="'short' returned 3 bytes.*expected 65536"):
        dev.read(buf, np.uint8, (PAGE,))
    with pytest.raises(TypeError, match="fill must be"):
        dev.alloc_lazy(PAGE, "poison")


def test_growth_keeps_data_and_pending_pages():
    g = GlobalMemory(capacity=1 << 20)
    eager = g.alloc(1000)
    g.write_bytes(eager.addr, np.arange(1000, dtype=np.uint16).view(np.uint8)[:1000])
    lazy = g.alloc(4 * PAGE, fill=0x5A)
    g.touch(np.array([lazy.addr - GLOBAL_BASE], np.uint64))
    big = g.alloc(8 << 20, fill=0x11)  # forces the reserved array to grow
    assert len(g.data) >= 8 << 20 and g.pending_pages == 3 + (8 << 20) // PAGE
    assert np.array_equal(g.read_bytes(eager.addr, 1000), np.arange(1000, dtype=np.uint16).view(np.uint8)[:1000])
    assert (g.read_bytes(lazy.addr, 4 * PAGE) == 0x5A).all()
    assert (g.read_bytes(big.addr + (5 << 20), 16) == 0x11).all()


def test_shadow_only_when_asked():
    dev = Device()
    a = dev.alloc_lazy(PAGE, 0xFF)
    b = dev.to_device(np.ones(100, np.float32))
    dev.mark_uninitialised(a)
    assert not dev.gmem.has_shadow and dev.memory_stats()["shadow_bytes"] == 0
    shadow = dev.gmem.written  # initcheck asks: the log of marks is replayed
    assert dev.gmem.has_shadow
    off_a, off_b = a.addr - GLOBAL_BASE, b.addr - GLOBAL_BASE
    assert not shadow[off_a: off_a + PAGE].any() and shadow[off_b: off_b + 400].all()


def _run(lazy: bool, kernel="grouped_gemm", preset="tiny", sanitize=None, **params):
    import ptx_impl
    from harness.backends.sim import SimBackend
    from harness.verify import run_kernel

    backend = SimBackend(sanitize=sanitize)
    run = ptx_impl.IMPLEMENTATION.kernels[kernel]
    inputs, outputs, records = run_kernel(run, backend, kernel, preset, "imbalanced", 11, lazy=lazy, **params)
    return inputs, outputs, records, backend


def _run_gemm(lazy: bool, sanitize=None):
    return _run(lazy, sanitize=sanitize, variant="up")


@pytest.mark.parametrize("kernel", ["swiglu", "combine", "permute"])
def test_lazy_equals_materialised_at_small(kernel):
    from harness.timing.sim import metrics_dict

    lin, lout, lrec, _ = _run(True, kernel, "small")
    _, eout, erec, _ = _run(False, kernel, "small")
    assert any(isinstance(v, KeyedNormal) for v in lin.values())
    for name, value in eout.items():
        assert np.array_equal(lout[name].view(np.uint8), value.view(np.uint8)), name
    assert [metrics_dict(r.stats) for r in lrec] == [metrics_dict(r.stats) for r in erec]


def test_lazy_run_identical_to_materialised_outputs_and_counters():
    from contract.kernels import get_kernel
    from contract.presets import get_preset
    from harness.timing.sim import metrics_dict

    lin, lout, lrec, lback = _run_gemm(lazy=True)
    ein, eout, erec, _ = _run_gemm(lazy=False)
    assert isinstance(lin["w"], KeyedNormal) and isinstance(ein["w"], np.ndarray)
    assert np.array_equal(lout["c"].view(np.uint16), eout["c"].view(np.uint16))
    lm, em = metrics_dict(lrec[0].stats), metrics_dict(erec[0].stats)
    assert lm == em and lm["dram__bytes_read.sum"] > 0
    assert lrec[0].stats.thread_instructions == erec[0].stats.thread_instructions
    assert get_kernel("grouped_gemm").check(lout, lin, get_preset("tiny")).ok
    assert lback.memory_stats()["shadow_bytes"] == 0


def test_lazy_run_under_initcheck_finds_nothing_on_a_correct_kernel():
    _, outputs, _, backend = _run_gemm(lazy=True, sanitize="initcheck")
    assert backend.sanitizer_findings() == []
    assert backend.memory_stats()["shadow_bytes"] > 0
    assert not np.isnan(outputs["c"][:16].astype(np.float32)).any()


def test_sim_backend_on_a_device_without_lazy_buffers():
    from harness.backends.sim import SimBackend

    class EagerOnly:  # a device that predates alloc_lazy
        def __init__(self):
            self._dev = Device()

        def __getattr__(self, name):
            if name == "alloc_lazy":
                raise AttributeError(name)
            return getattr(self._dev, name)

    backend = SimBackend(device=EagerOnly())
    t = KeyedNormal("x", (8, 300), seed=2)
    arr = backend.to_device(t)
    poison = backend.empty((5,), np.float32, fill_byte=0xFF)
    assert backend.device._dev.gmem.pending_pages == 0  # everything copied in eagerly
    assert np.array_equal(backend.to_host(arr).view(np.uint16), t.materialise().view(np.uint16))
    assert (backend.to_host(poison).view(np.uint32) == 0xFFFFFFFF).all()


def test_live_span_is_one_live_allocation_only():
    """The memcheck fast path: a span counts as live only inside one live allocation (not its guard gap, not a
    freed one), so the per-byte lookup still runs for everything else."""
    from ptxsim.memory import GLOBAL_BASE, GlobalMemory

    gmem = GlobalMemory()
    a = gmem.alloc(256, "a")
    b = gmem.alloc(64, "b")
    off_a, off_b = a.addr - GLOBAL_BASE, b.addr - GLOBAL_BASE
    assert gmem.state.live_span(off_a, off_a + 255)
    assert not gmem.state.live_span(off_a, off_a + 256)  # one byte into the guard gap
    assert not gmem.state.live_span(off_a + 200, off_b + 8)  # spans two allocations
    gmem.free(b.addr)
    assert not gmem.state.live_span(off_b, off_b + 8)  # use after free


def test_snapshot_is_a_read_only_view_that_stays_after_free():
    """A buffer's snapshot shares the heap's bytes (no host copy), cannot be written, and still reads the same after
    the buffer is freed and the heap grows; a lazy buffer's pending pages are filled into the heap first."""
    dev = Device()
    values = np.arange(3 * PAGE // 4, dtype=np.float32)
    buf = dev.alloc(values.nbytes)
    dev.copy_in(buf, values)
    snap = dev.snapshot(buf, np.float32, values.shape)
    assert np.shares_memory(snap, dev.gmem.data) and not snap.flags.writeable
    assert np.array_equal(snap, values)
    with pytest.raises(ValueError):
        snap[0] = 1.0
    dev.free(buf)
    dev.alloc(64 * PAGE)  # the heap grows into a new array; the view keeps the old one
    assert np.array_equal(snap, values)
    lazy = dev.alloc_lazy(2 * PAGE, 0xAB)
    dev.gmem.write_bytes(lazy.addr, np.zeros(8, np.uint8))  # page 0 filled, page 1 pending
    assert dev.gmem.pending_pages == 1
    view = dev.snapshot(lazy, np.uint8, (2 * PAGE,))
    assert np.shares_memory(view, dev.gmem.data) and not view.flags.writeable
    assert view[:8].tolist() == [0] * 8 and (view[8:] == 0xAB).all() and dev.gmem.pending_pages == 0

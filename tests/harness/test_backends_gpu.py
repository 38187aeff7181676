"""GpuBackend on a real GPU: memory, Numba and PTX launches on the same buffers and stream (skipped without one)."""
import ml_dtypes
import numpy as np
import pytest

from harness.backends.base import DeviceArray
from tests.harness.test_backends_sim import ADD_PTX, SCALE_SIG, bf16_copy, scale_rows

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu():
    from harness.backends.gpu import GpuBackend

    return GpuBackend()


def test_roundtrip_and_poison(gpu, rng):
    host = rng.standard_normal((4, 6)).astype(ml_dtypes.bfloat16)
    dev = gpu.to_device(host)
    np.testing.assert_array_equal(gpu.to_host(dev).view(np.uint16), host.view(np.uint16))
    np.testing.assert_array_equal(gpu.to_host(gpu.empty((3, 2), np.int32, 0xFF)), np.full((3, 2), -1, np.int32))


def test_numba_then_ptx_on_same_buffer(gpu, rng):
    m, n_rows = 300, 7
    a = rng.standard_normal(m).astype(np.float32)
    s = np.float32(rng.uniform(0.5, 2))
    d_a, d_out = gpu.to_device(a), gpu.empty((n_rows + 1, m), np.float32)
    rec = gpu.launch_numba(scale_rows, SCALE_SIG, (1, 19), (8, 16), [d_a, d_out, s, np.int32(n_rows)])
    gpu.synchronize()
    expect = a[None, :] * s + np.arange(n_rows, dtype=np.float32)[:, None]
    out = gpu.to_host(d_out)
    np.testing.assert_allclose(out[:n_rows], expect, rtol=1e-6)
    assert np.isnan(out[n_rows]).all()
    assert rec.stats.elapsed_ms() > 0
    # PTX reads the buffer Numba wrote (same device pointers, same stream)
    k = np.float32(1.5)
    d_res = gpu.empty((m,), np.float32)
    flat = DeviceArray(((n_rows + 1) * m,), np.dtype(np.float32), d_out.addr)  # the same buffer, 1-D
    rec2 = gpu.launch_ptx(ADD_PTX, "add_scalar", (3,), (128,), [flat, d_res, k, np.uint32(m)])
    np.testing.assert_array_equal(gpu.to_host(d_res), out[0] + k)
    assert rec2.impl == "ptx" and rec2.stats.elapsed_ms() > 0


def test_bf16_numba(gpu, rng):
    x = rng.standard_normal(100).astype(ml_dtypes.bfloat16)
    d_x, d_y = gpu.to_device(x), gpu.empty((100,), ml_dtypes.bfloat16)
    gpu.launch_numba(bf16_copy, "void(uint16[::1], uint16[::1])", 4, 32, [d_x, d_y])
    np.testing.assert_array_equal(gpu.to_host(d_y).view(np.uint16), x.view(np.uint16))


def test_numba_launch_over_48k_dynamic_shared_memory(gpu, rng):
    """numba-cuda never raises MAX_DYNAMIC_SHARED_SIZE_BYTES itself; the backend must, or this launch fails."""
    from harness.partition.measure import reserve_bytes

    m, n_rows = 64, 2
    a = rng.standard_normal(m).astype(np.float32)
    d_a, d_out = gpu.to_device(a), gpu.empty((n_rows, m), np.float32)
    smem = reserve_bytes(gpu)
    assert smem > 200 * 1024
    gpu.launch_numba(scale_rows, SCALE_SIG, (1, 8), (8, 8), [d_a, d_out, np.float32(2), np.int32(n_rows)], smem)
    np.testing.assert_allclose(gpu.to_host(d_out), a[None, :] * 2 + np.arange(n_rows)[:, None], rtol=1e-6)


def test_ptx_jit_error_shows_the_jit_log(gpu):
    from harness.backends.cuda_api import GpuError

    bad = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u32 n)\n{\n    mov.u32 %r9, 1;\n" \
          "    ret;\n}\n"
    with pytest.raises(GpuError, match="PTX JIT log"):
        gpu.launch_ptx(bad, "k", 1, 32, [np.uint32(1)])


def test_stream_blocker_holds_and_releases(gpu):
    from harness.timing.gpu import GpuTimingSettings, StreamBlocker, time_gpu

    blocker = StreamBlocker(gpu, timeout_s=2.0)
    d_res = gpu.empty((128,), np.float32)
    flat = gpu.to_device(np.ones(128, np.float32))
    settings = GpuTimingSettings(warmup_runs=2, warmup_s=0.0, min_samples=5, max_samples=5, host_samples=2,
                                 flush_l2=False)
    out = time_gpu(gpu, lambda a: gpu.launch_ptx(ADD_PTX, "add_scalar", 1, 128,
                                                 [flat, d_res, np.float32(1), np.uint32(128)]),
                   [{}], 50 << 20, settings, blocker=blocker)
    assert out["blocked"] and out["blocker_timeouts"] == 0 and out["device"]["n"] == 5
    assert out["device"]["median_us"] < 1000  # the kernel, not the blocker's wait nor the host's dispatch
    np.testing.assert_array_equal(gpu.to_host(d_res), np.full(128, 2, np.float32))

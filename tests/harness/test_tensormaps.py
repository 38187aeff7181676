"""backend.tensor_map: the NumPy-order request becomes the driver's innermost-first parameters (one translation for
both backends), a sim map copies the right tile through cp.async.bulk.tensor, bad requests name what is wrong, and
the gpu backend hands cuTensorMapEncodeTiled typed arguments and passes the map by value (fake driver)."""
import ml_dtypes
import numpy as np
import pytest

from contract.device import DeviceArray, TensorMapArg
from harness.backends.tensormaps import tiled_params
from harness.errors import InputError
from ptxsim import tensormap as ptxsim_tensormap

BF16 = np.dtype(ml_dtypes.bfloat16)
E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)

# thread 0 loads one box of the map at (column c0, row r0) into 128B-swizzled shared memory; every thread then copies
# one u32 of the box out. NOTE: the bar.sync after thread 0's mbarrier.init is what keeps the others from waiting on
# an uninitialised mbarrier (real shared memory is not zeroed; without it the test fails by chance on a GPU)
COPY_PTX = """
.version 8.4
.target sm_90a
.address_size 64
.shared .align 1024 .b8 sm[16384];
.shared .align 8 .b64 bar;
.visible .entry copy_box(.param .align 64 .b8 tm[128], .param .u64 pout, .param .u32 c0, .param .u32 r0,
                         .param .u32 nbytes)
{
  .reg .pred %p<4>; .reg .b32 %r<16>; .reg .b64 %rd<8>;
  mov.b64 %rd6, tm; cvta.param.u64 %rd6, %rd6;  // the map's generic address, as nvcc emits a __grid_constant__ one
  ld.param.u64 %rd1, [pout]; ld.param.u32 %r10, [c0]; ld.param.u32 %r11, [r0]; ld.param.u32 %r12, [nbytes];
  mov.u32 %r0, %tid.x; mov.u32 %r1, sm; mov.u32 %r2, bar;
  setp.eq.u32 %p1, %r0, 0;
  @!%p1 bra SYNC;
  mbarrier.init.shared::cta.b64 [%r2], 1;
  fence.mbarrier_init.release.cluster;
  fence.proxy.async.shared::cta;
SYNC:
  bar.sync 0;
  @!%p1 bra WAIT;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r2], %r12;
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1], [%rd6, {%r10, %r11}], [%r2];
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r2], 0;
  @!%p2 bra WAIT;
  shl.b32 %r4, %r0, 2; add.u32 %r4, %r4, %r1; ld.shared.u32 %r5, [%r4];
  mul.wide.u32 %rd3, %r0, 4; add.s64 %rd4, %rd1, %rd3; st.global.u32 [%rd4], %r5;
  ret;
}
"""


def test_copy_kernel_assembles_for_sm_90a():
    """The test kernel is what ptxas accepts (a tensor map named directly in cp.async.bulk.tensor is refused)."""
    from harness.toolchain import assemble

    _, usage = assemble(COPY_PTX, "sm_90a", name="copy_box.ptx")
    assert usage["copy_box"].spills == 0


def test_copy_kernel_initialises_its_mbarrier_before_any_thread_waits():
    """In program order every path from mbarrier.init to the first mbarrier wait passes a bar.sync, and no thread
    can reach a wait without passing it (the threads other than 0 jump only to the bar.sync)."""
    lines = [line.strip() for line in COPY_PTX.splitlines()]
    init = next(i for i, x in enumerate(lines) if x.startswith("mbarrier.init"))
    sync = next(i for i, x in enumerate(lines) if x.startswith("bar.sync"))
    wait = next(i for i, x in enumerate(lines) if x.startswith("mbarrier.try_wait"))
    assert init < sync < wait
    branches_before_sync = [x for x in lines[:sync] if " bra " in f" {x} " or x.startswith("@")]
    targets = {x.rsplit(None, 1)[-1].rstrip(";") for x in branches_before_sync if "bra" in x}
    assert targets == {"SYNC"}, targets  # nobody skips the barrier


def _unswizzle128(raw: np.ndarray) -> np.ndarray:
    """Undo the 128-byte swizzle: 16-byte chunk c of 128-byte line L sits at chunk c ^ (L % 8)."""
    out = np.empty_like(raw)
    for o in range(raw.size):
        line, chunk, byte = o // 128, (o % 128) // 16, o % 16
        out[o] = raw[line * 128 + (chunk ^ (line % 8)) * 16 + byte]
    return out


def test_numpy_order_becomes_innermost_first():
    w = DeviceArray((4, 256, 384), E4M3, 1 << 20)
    p = tiled_params(w, box=(64, 128), swizzle=128, shape=(4 * 256, 384))
    assert (p.rank, p.dims, p.strides, p.box) == (2, (384, 1024), (384,), (128, 64))
    assert p.data_type == 0 and p.swizzle == 3 and p.element_strides == (1, 1) and p.address == 1 << 20
    a = DeviceArray((3, 5, 64), BF16, 1 << 20)
    p = tiled_params(a, box=(1, 2, 64), swizzle=0, oob_fill="nan")
    assert (p.data_type, p.dims, p.strides, p.box, p.oob_fill) == (9, (64, 5, 3), (128, 640), (64, 2, 1), 1)


@pytest.mark.parametrize("kwargs,match", [
    ({"shape": (100, 384)}, r"shape \(100, 384\) holds 38400 elements; the array holds 393216"),
    ({"box": (64,)}, r"box \(64,\); expected 3 sizes"),
    ({"box": (1, 300, 16)}, r"box \(1, 300, 16\).*each 1..256"),
    ({"swizzle": 96}, r"swizzle=96; expected one of \[0, 32, 64, 128\]"),
    ({"oob_fill": "inf"}, r"oob_fill='inf'"),
])
def test_bad_requests_name_the_argument(kwargs, match):
    w = DeviceArray((4, 256, 384), E4M3, 1 << 20)
    with pytest.raises(InputError, match=match):
        tiled_params(w, **{"box": (1, 64, 128), **kwargs})
    with pytest.raises(InputError, match="expected a DeviceArray"):
        tiled_params(np.zeros(4), (4,))


@pytest.mark.sim
def test_sim_map_copies_the_swizzled_box_through_launch_ptx():
    from harness.backends.sim import SimBackend

    rows, cols = 40, 192  # e4m3 bytes viewed as u8; a box of 16 rows x 128 bytes at (64, 8)
    host = np.random.default_rng(7).integers(1, 255, (2, rows // 2, cols), dtype=np.uint8)
    sim = SimBackend()
    arr = sim.to_device(host)
    tmap = sim.tensor_map(arr, box=(16, 128), swizzle=128, shape=(rows, cols))
    assert isinstance(tmap, TensorMapArg) and len(tmap.raw) == 128
    decoded = ptxsim_tensormap.decode(tmap.raw)
    assert decoded.dims == (cols, rows) and decoded.box == (128, 16) and decoded.swizzle_bytes == 128
    out = sim.empty((16 * 128 // 4,), np.uint32)
    sim.launch_ptx(COPY_PTX, "copy_box", 1, 16 * 128 // 4,
                   [tmap, out, np.uint32(64), np.uint32(8), np.uint32(16 * 128)])
    got = _unswizzle128(sim.to_host(out).view(np.uint8)).reshape(16, 128)
    want = np.zeros((16, 128), np.uint8)
    flat = host.reshape(rows, cols)
    want[:, :cols - 64] = flat[8:24, 64:]  # columns past 192 read as zeros (out of bounds)
    assert np.array_equal(got, want)


@pytest.mark.sim
def test_sim_refuses_what_the_driver_refuses():
    from harness.backends.sim import SimBackend

    sim = SimBackend()
    arr = sim.to_device(np.ones((8, 256), BF16))
    with pytest.raises(InputError, match="at most the swizzle span 64 bytes"):
        sim.tensor_map(arr, box=(8, 64), swizzle=64)  # a 128-byte box row in a 64-byte swizzle


@pytest.mark.fakegpu
def test_gpu_backend_encodes_with_typed_arguments_and_passes_the_map_by_value(monkeypatch):
    from harness.backends.gpu import GpuBackend
    from tests.harness.fakegpu.fakes import install

    gpu = install(monkeypatch)
    backend = GpuBackend()
    arr = backend.to_device(np.ones((40, 192), np.uint8))
    tmap = backend.tensor_map(arr, box=(16, 128), swizzle=128)
    decoded = ptxsim_tensormap.decode(tmap.handle.opaque)  # the fake driver keeps ptxsim's encoding
    assert decoded.dims == (192, 40) and decoded.box == (128, 16) and decoded.address == arr.addr
    out = backend.empty((512,), np.uint32)
    backend.launch_ptx(COPY_PTX, "copy_box", 1, 512, [tmap, out, np.uint32(64), np.uint32(8), np.uint32(2048)])
    assert gpu.errors == [] and [launch["name"] for launch in gpu.launches] == ["copy_box"]
    with pytest.raises(InputError, match=r"parameter 1 has type .u64; a tensor map needs"):
        backend.launch_ptx(COPY_PTX, "copy_box", 1, 512, [tmap, tmap, np.uint32(64), np.uint32(8), np.uint32(2048)])


@pytest.mark.gpu
def test_gpu_map_copies_the_swizzled_box():
    """On a real GPU (skipped without one): the driver's map moves the same bytes ptxsim's does."""
    from harness.backends.gpu import GpuBackend, GpuError

    try:
        backend = GpuBackend()
    except GpuError as exc:
        pytest.skip(f"needs a CUDA GPU: {exc}")
    host = np.random.default_rng(7).integers(1, 255, (40, 192), dtype=np.uint8)
    arr = backend.to_device(host)
    tmap = backend.tensor_map(arr, box=(16, 128), swizzle=128)
    out = backend.empty((512,), np.uint32)
    backend.launch_ptx(COPY_PTX, "copy_box", 1, 512, [tmap, out, np.uint32(64), np.uint32(8), np.uint32(2048)])
    backend.synchronize()
    got = _unswizzle128(backend.to_host(out).view(np.uint8)).reshape(16, 128)
    want = np.zeros((16, 128), np.uint8)
    want[:, :128] = host[8:24, 64:]
    assert np.array_equal(got, want)

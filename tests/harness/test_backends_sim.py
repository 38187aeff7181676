"""SimBackend: Numba kernels (1-D, 2-D arrays, scalars) and hand PTX through ptxsim; the Numba ABI expansion."""
import ml_dtypes
import numpy as np
import pytest
from numba import cuda

from harness.backends import numba_abi
from harness.backends.base import DeviceArray
from harness.errors import InputError


def _has_device() -> bool:
    try:
        import ptxsim

        return hasattr(ptxsim, "Device") and hasattr(ptxsim, "load_ptx")
    except ImportError:
        return False


needs_ptxsim = pytest.mark.skipif(not _has_device(), reason="ptxsim.Device / ptxsim.load_ptx not landed yet")


def scale_rows(a, out, s, n):
    """out[i, j] = a[j] * s + i for i < n (1-D in, 2-D out, a float scalar and an int scalar)."""
    i, j = cuda.grid(2)
    if i < n and j < a.shape[0]:
        out[i, j] = a[j] * s + i


SCALE_SIG = "void(float32[::1], float32[:, ::1], float32, int32)"


def bf16_copy(src, dst):
    i = cuda.grid(1)
    if i < src.shape[0]:
        dst[i] = src[i]


# ---- ABI (no simulator needed) -----------------------------------------------------------------------------
def test_expand_args_follows_numba_abi():
    a = DeviceArray((5,), np.dtype(np.float32), 0x1000)
    b = DeviceArray((3, 7), np.dtype(np.float32), 0x2000)
    types = numba_abi.parse_signature(SCALE_SIG)
    flat = numba_abi.expand_args("scale_rows", types, [a, b, np.float32(2.5), np.int32(3)])
    assert [int(v) for v in flat[:7]] == [0, 0, 5, 4, 0x1000, 5, 4]
    assert [int(v) for v in flat[7:16]] == [0, 0, 21, 4, 0x2000, 3, 7, 28, 4]
    assert flat[16].dtype == np.float32 and float(flat[16]) == 2.5
    assert flat[17].dtype == np.int32 and int(flat[17]) == 3


def test_compiled_param_count_matches_abi():
    compiled = numba_abi.compile_numba(scale_rows, SCALE_SIG)
    assert len(compiled.param_types) == 7 + 9 + 2
    assert compiled.param_types[-2:] == ("f32", "u32")
    assert numba_abi.compile_numba(scale_rows, SCALE_SIG) is compiled  # compiled once per (pyfunc, signature)


def test_bad_arguments_name_the_problem():
    types = numba_abi.parse_signature(SCALE_SIG)
    a = DeviceArray((5,), np.dtype(np.float32), 0x1000)
    b2 = DeviceArray((3, 7), np.dtype(np.float32), 0x2000)
    wrong_nd = DeviceArray((21,), np.dtype(np.float32), 0x2000)
    wrong_item = DeviceArray((3, 7), np.dtype(np.float64), 0x2000)
    with pytest.raises(InputError, match="argument 1.*2-D"):
        numba_abi.expand_args("k", types, [a, wrong_nd, np.float32(1), np.int32(1)])
    with pytest.raises(InputError, match="itemsize 8"):
        numba_abi.expand_args("k", types, [a, wrong_item, np.float32(1), np.int32(1)])
    with pytest.raises(InputError, match="3 arguments given"):
        numba_abi.expand_args("k", types, [a, b2, np.float32(1)])
    bf = DeviceArray((4,), np.dtype(ml_dtypes.bfloat16), 0x3000)  # bf16 passes as uint16 (same itemsize)
    numba_abi.expand_args("k", numba_abi.parse_signature("void(uint16[::1], uint16[::1])"), [bf, bf])


def test_entry_params_parses_hand_ptx():
    assert numba_abi.entry_params(ADD_PTX) == {"add_scalar": ("u64", "u64", "f32", "u32")}


# ---- through ptxsim ----------------------------------------------------------------------------------------
ADD_PTX = """
.version 8.0
.target sm_90
.address_size 64

.visible .entry add_scalar(
    .param .u64 src,
    .param .u64 dst,
    .param .f32 k,
    .param .u32 n
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<8>;

    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [dst];
    ld.param.f32 %f1, [k];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mul.wide.u32 %rd5, %r5, 4;
    add.s64 %rd6, %rd3, %rd5;
    add.s64 %rd7, %rd4, %rd5;
    ld.global.f32 %f2, [%rd6];
    add.f32 %f3, %f2, %f1;
    st.global.f32 [%rd7], %f3;
DONE:
    ret;
}
"""


@pytest.fixture
def sim():
    from harness.backends.sim import SimBackend

    return SimBackend()


@needs_ptxsim
def test_memory_roundtrip_and_poison(sim, rng):
    host = rng.standard_normal((3, 5)).astype(np.float32)
    dev = sim.to_device(host)
    assert dev.shape == (3, 5) and dev.dtype == np.float32
    np.testing.assert_array_equal(sim.to_host(dev), host)
    poisoned = sim.empty((4, 2), np.int32, fill_byte=0xFF)
    np.testing.assert_array_equal(sim.to_host(poisoned), np.full((4, 2), -1, np.int32))
    bf = sim.empty((3,), ml_dtypes.bfloat16, fill_byte=0xFF)
    assert np.isnan(sim.to_host(bf).astype(np.float32)).all()


@needs_ptxsim
def test_hand_ptx_kernel(sim, rng):
    n = 70  # not a multiple of the block: the bounds check matters
    src = rng.standard_normal(n).astype(np.float32)
    d_src, d_dst = sim.to_device(src), sim.empty((n + 3,), np.float32)
    k = np.float32(rng.uniform(-2, 2))
    rec = sim.launch_ptx(ADD_PTX, "add_scalar", (3,), (32,), [d_src, d_dst, k, np.uint32(n)], tag="add")
    out = sim.to_host(d_dst)
    np.testing.assert_array_equal(out[:n], src + k)
    assert np.isnan(out[n:]).all()  # past n: still poisoned
    assert rec.impl == "ptx" and rec.grid == (3, 1, 1) and rec.block == (32, 1, 1) and rec.name == "add"
    assert rec.stats is not None and rec.host_seconds > 0


@needs_ptxsim
def test_numba_kernel_1d_2d_scalar(sim, rng):
    m, n_rows = 11, 5
    a = rng.standard_normal(m).astype(np.float32)
    s = np.float32(rng.uniform(0.5, 2))
    d_a, d_out = sim.to_device(a), sim.empty((n_rows + 1, m), np.float32)
    rec = sim.launch_numba(scale_rows, SCALE_SIG, (1, 1), (8, 16), [d_a, d_out, s, np.int32(n_rows)])
    out = sim.to_host(d_out)
    expect = (a[None, :] * s + np.arange(n_rows, dtype=np.float32)[:, None]).astype(np.float32)
    np.testing.assert_allclose(out[:n_rows], expect, rtol=1e-6, atol=0)
    assert np.isnan(out[n_rows]).all()  # row n_rows is outside i < n: untouched
    assert rec.impl == "numba" and rec.name == "scale_rows" and rec.stats is not None


@needs_ptxsim
def test_numba_bf16_as_uint16(sim, rng):
    x = rng.standard_normal(40).astype(ml_dtypes.bfloat16)
    d_x, d_y = sim.to_device(x), sim.empty((40,), ml_dtypes.bfloat16)
    sim.launch_numba(bf16_copy, "void(uint16[::1], uint16[::1])", 2, 32, [d_x, d_y])
    np.testing.assert_array_equal(sim.to_host(d_y).view(np.uint16), x.view(np.uint16))


@needs_ptxsim
def test_reset_memory_gives_a_fresh_device_and_keeps_modules(sim, rng):
    src = rng.standard_normal(8).astype(np.float32)
    sim.launch_ptx(ADD_PTX, "add_scalar", 1, 32, [sim.to_device(src), sim.empty((8,), np.float32), np.float32(1),
                                                  np.uint32(8)])
    before = sim.device
    sim.reset_memory()
    assert sim.device is not before and ADD_PTX in sim._modules
    d_src, d_dst = sim.to_device(src), sim.empty((8,), np.float32)
    sim.launch_ptx(ADD_PTX, "add_scalar", 1, 32, [d_src, d_dst, np.float32(2), np.uint32(8)])
    np.testing.assert_array_equal(sim.to_host(d_dst), src + np.float32(2))


def test_launches_carry_the_backends_time_limit(monkeypatch):
    """A runaway kernel stops at the backend's wall-clock limit (default well above ptxsim's minute, for real-shape
    GEMMs), naming the kernel; PTXSIM_TIME_LIMIT overrides the default."""
    import ptxsim
    from harness.backends.sim import LAUNCH_TIME_LIMIT_S, SimBackend

    monkeypatch.delenv("PTXSIM_TIME_LIMIT", raising=False)
    assert SimBackend().time_limit == LAUNCH_TIME_LIMIT_S > 60
    monkeypatch.setenv("PTXSIM_TIME_LIMIT", "7")
    assert SimBackend().time_limit == 7.0
    spin = (".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry spin(.param .u32 n)\n{\n"
            "  .reg .u32 %r<3>;\n  ld.param.u32 %r1, [n];\n  mov.u32 %r2, 0;\nLOOP:\n  add.u32 %r2, %r2, %r1;\n"
            "  bra LOOP;\n}\n")
    backend = SimBackend(time_limit=0.2)
    with pytest.raises(ptxsim.errors.TimeLimitExceeded, match=r"spin.*0\.2 s"):
        backend.launch_ptx(spin, "spin", 1, 32, [np.uint32(1)])


def test_a_budget_stops_a_runaway_by_instructions_not_by_the_clock():
    """SimBackend(budget=N): the launch stops after N warp-instructions with InstructionBudgetExceeded, however fast
    the machine (the wall-clock limit is far away); a kernel under the budget runs; a bad budget is named."""
    import ptxsim
    from harness.backends.sim import SimBackend

    spin = (".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry spin(.param .u32 n)\n{\n"
            "  .reg .u32 %r<3>;\n  ld.param.u32 %r1, [n];\n  mov.u32 %r2, 0;\nLOOP:\n  add.u32 %r2, %r2, %r1;\n"
            "  bra LOOP;\n}\n")
    backend = SimBackend(time_limit=600, budget=5000)
    with pytest.raises(ptxsim.errors.InstructionBudgetExceeded, match=r"spin ran more than 5000 warp-instr") as exc:
        backend.launch_ptx(spin, "spin", 1, 32, [np.uint32(1)])
    assert not isinstance(exc.value, ptxsim.errors.TimeLimitExceeded)
    src = np.arange(64, dtype=np.float32)
    small = SimBackend(budget=64)  # the add kernel runs 38 warp-instructions (2 warps)
    d_src, d_dst = small.to_device(src), small.empty((64,), np.float32)
    small.launch_ptx(ADD_PTX, "add_scalar", 1, 64, [d_src, d_dst, np.float32(1), np.uint32(64)])
    dst = small.to_host(d_dst)
    np.testing.assert_array_equal(dst, src + np.float32(1))
    with pytest.raises(ptxsim.errors.InstructionBudgetExceeded):
        SimBackend(budget=8).launch_ptx(ADD_PTX, "add_scalar", 1, 64, [d_src, d_dst, np.float32(1), np.uint32(64)])
    for bad in (0, -3, 2.5, True):
        with pytest.raises(InputError, match="budget"):
            SimBackend(budget=bad)


def test_wave_shape_is_the_model_devices_resident_ctas_and_l2():
    from harness.backends.sim import wave_shape
    from harness.static import resources_of
    from harness.timing.sim import MODEL_DEVICE
    from ptx_impl.grouped_gemm import launch_config
    from ptxsim.model.devices import get_device
    from ptxsim.model.occupancy import occupancy_from_resources

    cfg = launch_config("small")
    ptx = open(cfg.path).read()
    spec = get_device(MODEL_DEVICE)
    shape = wave_shape(ptx, cfg.entry, cfg.block, cfg.shared_bytes)
    resources = resources_of(ptx, cfg.entry)
    if resources is None:
        pytest.skip("no ptxas in this environment: wave_shape then gives the L2 capacity alone")
    occ = occupancy_from_resources(spec, cfg.block[0], resources, cfg.shared_bytes)
    assert shape == {"l2_bytes": spec.l2_bytes, "wave_ctas": occ.blocks_per_sm * spec.sm_count}
    assert 1 <= occ.blocks_per_sm <= 32


def test_a_rows_dropped_heap_is_freed_at_once_not_at_the_next_collection():
    """A launch leaves cycles to its device's heap; with Python's collector off (as between its rare full runs), a
    row's 80 MiB heap is still freed when the runner resets the device after the row."""
    import gc
    import weakref

    from harness import runner
    from harness.backends.sim import SimBackend
    from harness.nvtx_ranges import RangeRecorder
    from harness.sweep_plan import plan

    settings = runner.CompareSettings(backend="sim", presets=("tiny",), skews=("balanced",), kernels=("gate",),
                                      seed=1, impls=("ptx",), static=False)
    backend = SimBackend()
    backend.empty((80 << 20,), np.uint8)  # the row's heap, above RESET_COLLECT_BYTES
    heap = weakref.ref(backend.device.gmem)
    gc.collect()
    gc.disable()
    try:
        rows = list(runner.run_cell(backend, settings, plan(settings)[0], ["ptx"], None, RangeRecorder()))
        assert rows[0][1]["status"] == "ok" and heap() is None
    finally:
        gc.enable()

"""The comm kernels (ptx_impl/comm.py both entries, cuda_impl/comm.py) through ptxsim against NumPy, poisoned outputs.

Shapes are chosen to reach every path of the loops: more rows than warps in the grid (the persistent row loop
turns), H/8 chunks above 32 (a lane's second chunk, the 4-way unroll's predicates) and above 128 (the chunk loop
repeats), spare receive slots that must stay poison.
"""
import re

import numpy as np
import pytest

import cuda_impl.comm as cuda_comm
from contract.generators import BF16
from harness.errors import InputError
from harness.partition.problem import (
    CommShapes,
    check_combine,
    check_dispatch,
    combine_inputs,
    dispatch_inputs,
    dispatch_reference,
    poisoned,
    run_comm,
)
from ptx_impl import comm as ptx_comm


def _has_sim() -> bool:
    import ptxsim

    return hasattr(ptxsim, "Device") and hasattr(ptxsim, "load_ptx")


needs_ptxsim = pytest.mark.skipif(not _has_sim(), reason="ptxsim.Device / ptxsim.load_ptx not available")

IMPLS = [("ptx", ptx_comm, {"loads": "plain"}), ("ptx", ptx_comm, {"loads": "no_allocate"}), ("numba", cuda_comm, {})]
IDS = ["ptx-plain", "ptx-no_allocate", "numba"]
# (T, H, K, spare, ctas): 40 rows over 16 warps (1 CTA) -> 3 trips; H=296 -> 37 chunks; H=1088 -> 136 chunks.
CASES = [(10, 296, 4, 5, 1), (9, 1088, 2, 3, 2), (3, 64, 3, 0, 3)]


def _backend():
    from harness.backends.sim import SimBackend

    return SimBackend()


@needs_ptxsim
@pytest.mark.parametrize("impl,mod,kw", IMPLS, ids=IDS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"T{c[0]}H{c[1]}K{c[2]}s{c[3]}c{c[4]}")
def test_dispatch_moves_the_right_rows(impl, mod, kw, case, rng):
    T, H, K, spare, ctas = case
    shapes = CommShapes(T, H, K, spare)
    result, record = run_comm(mod, _backend(), "dispatch", shapes, rng, ctas, **kw)
    assert result.ok, result.message
    assert record.grid == (ctas, 1, 1)  # persistent: exactly the CTAs asked for


@needs_ptxsim
@pytest.mark.parametrize("impl,mod,kw", IMPLS, ids=IDS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"T{c[0]}H{c[1]}K{c[2]}s{c[3]}c{c[4]}")
def test_combine_matches_float64(impl, mod, kw, case, rng):
    T, H, K, spare, ctas = case
    shapes = CommShapes(T, H, K, spare)
    result, record = run_comm(mod, _backend(), "combine", shapes, rng, ctas, **kw)
    assert result.ok, result.message
    assert result.errors["normwise_rel"] < 5e-3  # fp32 accumulation, one bf16 rounding: far inside 1e-2
    assert record.grid == (ctas, 1, 1)


@needs_ptxsim
def test_plain_and_no_allocate_give_identical_bits(rng):
    shapes = CommShapes(6, 136, 3, 2)
    inputs = combine_inputs(shapes, rng)
    outs = []
    for loads in ("plain", "no_allocate"):
        backend = _backend()
        args = {k: backend.to_device(v) for k, v in inputs.items()}
        args["out"] = backend.empty((shapes.T, shapes.H), BF16)
        ptx_comm.combine(backend, args, 2, loads=loads)
        outs.append(backend.to_host(args["out"]).view(np.uint16))
    np.testing.assert_array_equal(outs[0], outs[1])


def test_dispatch_check_catches_a_misplaced_row_and_a_stray_write(rng):
    shapes = CommShapes(4, 16, 2, spare=3)
    inputs = dispatch_inputs(shapes, rng)
    good = dispatch_reference(inputs, shapes)
    assert check_dispatch(good, inputs, shapes).ok
    swapped = good.copy()
    a, b = inputs["dst_slot"][0], inputs["dst_slot"][-1]  # copies of token 0 and token T-1
    swapped[[a, b]] = swapped[[b, a]]
    assert not check_dispatch(swapped, inputs, shapes).ok
    stray = good.copy()
    spare_slot = sorted(set(range(shapes.S)) - set(inputs["dst_slot"].tolist()))[0]
    stray[spare_slot] = 0
    assert not check_dispatch(stray, inputs, shapes).ok
    unwritten = good.copy()
    unwritten[inputs["dst_slot"][-1], -1] = poisoned((1,))[0]
    assert not check_dispatch(unwritten, inputs, shapes).ok


def test_combine_check_catches_unwritten_and_wrong_weights(rng):
    shapes = CommShapes(5, 32, 3)
    inputs = combine_inputs(shapes, rng)
    recv = inputs["recv"].astype(np.float64)
    ref = np.einsum("tk,tkh->th", inputs["w"].astype(np.float64), recv[inputs["slot"]]).astype(BF16)
    assert check_combine(ref, inputs).ok
    hole = ref.copy()
    hole[2, 7] = poisoned((1,))[0]
    assert not check_combine(hole, inputs).ok
    unweighted = recv[inputs["slot"]].sum(axis=1).astype(BF16)
    assert not check_combine(unweighted, inputs).ok


def test_dispatch_inputs_are_an_injective_map(rng):
    shapes = CommShapes(7, 8, 3, spare=4)
    inputs = dispatch_inputs(shapes, rng)
    assert len(set(inputs["dst_slot"].tolist())) == shapes.R
    assert inputs["dst_slot"].max() < shapes.S
    np.testing.assert_array_equal(inputs["src_row"], np.repeat(np.arange(7), 3))


class _NoLaunch:
    """A backend that fails the test if anything is launched (argument errors must come first)."""

    def launch_ptx(self, *a, **k):
        raise AssertionError("launched despite bad arguments")

    launch_numba = launch_ptx


def _arrays(shapes, dtype_x=BF16):
    from harness.backends.base import DeviceArray

    return {"x": DeviceArray((shapes.T, shapes.H), np.dtype(dtype_x), 0),
            "src_row": DeviceArray((shapes.R,), np.dtype(np.int32), 0),
            "dst_slot": DeviceArray((shapes.R,), np.dtype(np.int32), 0),
            "recv": DeviceArray((shapes.S, shapes.H), np.dtype(BF16), 0)}


@pytest.mark.parametrize("mod", [ptx_comm, cuda_comm], ids=["ptx", "cuda"])
@pytest.mark.parametrize("ctas", [0, 133, 2.0, True])
def test_bad_cta_counts_are_refused(mod, ctas):
    with pytest.raises(InputError, match="ctas"):
        mod.dispatch(_NoLaunch(), _arrays(CommShapes(2, 16, 2)), ctas)


@pytest.mark.parametrize("mod", [ptx_comm, cuda_comm], ids=["ptx", "cuda"])
def test_row_width_must_be_chunks_of_8(mod):
    from harness.backends.base import DeviceArray

    args = _arrays(CommShapes(2, 16, 2))
    args["x"] = DeviceArray((2, 12), np.dtype(BF16), 0)
    with pytest.raises(InputError, match="multiple of 8"):
        mod.dispatch(_NoLaunch(), args, 2)


def test_unknown_load_policy_is_refused():
    with pytest.raises(InputError, match="loads"):
        ptx_comm.dispatch(_NoLaunch(), _arrays(CommShapes(2, 16, 2)), 2, loads="streaming")


def test_ptx_dtype_mismatch_is_refused():
    with pytest.raises(InputError, match="x.dtype"):
        ptx_comm.dispatch(_NoLaunch(), _arrays(CommShapes(2, 16, 2), np.float32), 2)


def _entry_text(ptx: str, entry: str) -> str:
    start = ptx.index(f".entry {entry}(")
    end = ptx.find(".visible .entry", start + 1)
    return ptx[start: end if end > 0 else len(ptx)]


@pytest.mark.parametrize("op", ["dispatch", "combine"])
def test_entries_differ_only_in_cache_policy(op):
    """FileCheck-style: plain has no .nc / no_allocate; noalloc moves payload with the DeepSeek-V3 hints."""
    ptx = ptx_comm.kernel_for(op, "plain").ptx
    plain = _entry_text(ptx, ptx_comm.kernel_for(op, "plain").entry)
    noalloc = _entry_text(ptx, ptx_comm.kernel_for(op, "no_allocate").entry)
    assert ".nc" not in plain and "no_allocate" not in plain
    assert re.search(r"ld\.global\.v4\.u32\s", plain) and re.search(r"st\.global\.v4\.b32\s", plain)
    assert re.search(r"ld\.global\.nc\.L1::no_allocate\.v4\.u32\s", noalloc)
    assert re.search(r"st\.global\.L1::no_allocate\.v4\.b32\s", noalloc)
    assert "st.global.v4.b32" not in noalloc and not re.search(r"ld\.global\.v4", noalloc)
    strip = [" ".join(re.sub(r"\.nc|\.L1::no_allocate|_noalloc|_plain", "", t).split()) for t in (plain, noalloc)]
    assert strip[0] == strip[1]


def test_both_files_assemble_with_ptxas():
    from harness.toolchain import assemble

    for op in ("dispatch", "combine"):
        _, usage = assemble(ptx_comm.kernel_for(op, "plain").ptx)
        assert {ptx_comm.kernel_for(op, p).entry for p in ptx_comm.LOADS} <= set(usage)
        for entry in usage.values():
            assert entry.spill_stores_bytes == 0 and entry.registers <= 64  # 512 threads x 64 regs fit one SM


class _SanitizingDevice:
    """A ptxsim Device whose launches run every sanitizer (memcheck, racecheck, initcheck, synccheck, nc)."""

    def __init__(self, device):
        self._device = device

    def __getattr__(self, name):
        return getattr(self._device, name)

    def launch(self, *args, **kwargs):
        return self._device.launch(*args, sanitize="all", **kwargs)


@needs_ptxsim
@pytest.mark.parametrize("impl,mod,kw", IMPLS, ids=IDS)
@pytest.mark.parametrize("op", ["dispatch", "combine"])
def test_sanitizers_clean(impl, mod, kw, op, rng):
    """No out-of-bounds or uninitialised reads and no write to memory the same launch reads through .nc (the
    no_allocate entries' contract: inputs must not alias the output)."""
    import ptxsim
    from harness.backends.sim import SimBackend

    backend = SimBackend(device=_SanitizingDevice(ptxsim.Device()))
    result, _ = run_comm(mod, backend, op, CommShapes(9, 1088, 2, 3), rng, 2, **kw)
    assert result.ok, result.message


@needs_ptxsim
def test_no_allocate_dispatch_must_not_alias_its_output(rng):
    """The .nc contract made visible: dispatching in place (recv is x) is a hazard for the no_allocate entry only."""
    import ptxsim
    from harness.backends.sim import SimBackend

    shapes = CommShapes(8, 64, 1)
    inputs = dispatch_inputs(shapes, rng)
    for loads in ("plain", "no_allocate"):
        backend = SimBackend(device=_SanitizingDevice(ptxsim.Device()))
        x = backend.to_device(inputs["x"])
        args = {"x": x, "src_row": backend.to_device(inputs["src_row"]),
                "dst_slot": backend.to_device(inputs["dst_slot"]), "recv": x}
        if loads == "plain":
            ptx_comm.dispatch(backend, args, 1, loads=loads)
        else:
            with pytest.raises(ptxsim.SanitizerError):
                ptx_comm.dispatch(backend, args, 1, loads=loads)

"""Kernel descriptions: argument packing against the PTX entry, launch shapes, signature inference, and errors that
name the implementation, the value and what was expected (raised by compare before anything is timed)."""
import re
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

import ptxmoe
from contract.device import DeviceArray
from ptxmoe.kernels import entry_params, launch_shape, numba_signature, pack_ptx_params

SAXPY_PTX = (Path(__file__).resolve().parent / "saxpy.ptx").read_text()


def inputs(n=64):
    return {"a": np.float32(2), "x": np.ones(n, np.float32), "y": np.ones(n, np.float32),
            "out": np.zeros(n, np.float32), "n": np.int32(n)}


def device(values):
    return {k: DeviceArray(v.shape, v.dtype, 0x1000) if isinstance(v, np.ndarray) else v for k, v in values.items()}


def test_entry_params_reads_each_entry_in_order():
    assert entry_params(SAXPY_PTX) == {"saxpy": ("f32", "u64", "u64", "u64", "u32")}


def test_pack_casts_scalars_to_the_declared_param_type_and_passes_arrays():
    args = device({**inputs(), "a": 2, "n": 64})  # Python numbers: typed by the entry
    packed = pack_ptx_params("impl 'p'", "saxpy", SAXPY_PTX, list(args), args)
    assert isinstance(packed[0], np.float32) and packed[0] == 2.0
    assert isinstance(packed[4], np.uint32) and packed[4] == 64
    assert all(isinstance(p, DeviceArray) for p in packed[1:4])


@pytest.mark.parametrize("change, match", [
    ({"n": -1}, r"argument n \(.param 4 of saxpy, .u32\): got -1; expected an integer in \[0, 4294967295\]"),
    ({"n": 2.5}, r"argument n .*got 2.5; expected an integer"),
    ({"a": np.ones(4, np.float32)}, r"argument a \(.param 0 of saxpy, .f32\): got an array"),
    ({"x": "text"}, r"argument x .*got 'text'; expected a number"),
])
def test_pack_rejects_values_that_do_not_fit_the_param(change, match):
    args = device({**inputs(), **change})
    with pytest.raises(ptxmoe.KernelSpecError, match=match) as info:
        pack_ptx_params("implementation 'hand'", "saxpy", SAXPY_PTX, list(args), args)
    assert str(info.value).startswith("implementation 'hand'")


def test_pack_names_a_missing_entry_and_a_wrong_argument_count():
    args = device(inputs())
    with pytest.raises(ptxmoe.KernelSpecError, match=r"no .entry 'saxpi' in the PTX; it has saxpy"):
        pack_ptx_params("impl", "saxpi", SAXPY_PTX, list(args), args)
    with pytest.raises(ptxmoe.KernelSpecError, match=r"takes 5 parameters; 4 arguments given \(a, x, y, out\)"):
        pack_ptx_params("impl", "saxpy", SAXPY_PTX, ["a", "x", "y", "out"], args)


def test_launch_shape_resolves_functions_of_the_inputs_and_checks_limits():
    kernel = ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=lambda i: (int(i["n"]) + 31) // 32, block=(32,),
                              shared_bytes=lambda i: 4 * int(i["n"]))
    assert launch_shape("impl", kernel, inputs(100)) == ((4, 1, 1), (32, 1, 1), 400)
    with pytest.raises(ptxmoe.KernelSpecError, match=r"impl: block \(64, 32, 1\) has 2048 threads; expected 1..1024"):
        launch_shape("impl", ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=1, block=(64, 32)), inputs())
    with pytest.raises(ptxmoe.KernelSpecError, match=r"impl: the grid function raised KeyError: 'm'"):
        launch_shape("impl", ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=lambda i: i["m"], block=32), inputs())
    with pytest.raises(ptxmoe.KernelSpecError, match=r"shared_bytes = -4; expected an int in 0..232448"):
        launch_shape("impl", ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=1, block=32, shared_bytes=-4), inputs())


def test_numba_signature_is_inferred_from_the_inputs():
    values = {"a": np.float32(1), "m": np.zeros((2, 3), np.int16), "v": np.zeros(4, np.float64), "k": 3}
    assert numba_signature("impl", list(values), values) == "void(float32, int16[:, ::1], float64[::1], int64)"


def _numba_saxpy(a, x, y, out, n):
    from numba import cuda

    i = cuda.grid(1)
    if i < n:
        out[i] = a * x[i] + y[i]


def _compare(kernels, make=None, **kw):
    return ptxmoe.compare(kernels, make or (lambda rng: inputs()), backend="sim", static=False, **kw)


def _error_row(result, impl: str):
    row = result.row(impl)
    assert row.status == "error" and not result.ok(impl) and row.time_us is None and row.traceback
    return row


def test_compare_names_the_implementation_whose_description_is_wrong():
    """A wrong kernel description fails its own row, naming the implementation; the good one beside it runs."""
    good = ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=2, block=32)
    bad = ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=2, block=32, args=("x", "y", "out", "n"))
    result = _compare({"first": good, "second": bad})
    assert re.fullmatch(r"KernelSpecError: implementation 'second' \(PtxKernel saxpy\): .entry saxpy takes 5 "
                        r"parameters; 4 arguments given.*", _error_row(result, "second").reason)
    assert result.ok("first") and result.time_us("first") > 0
    v = result.verdict("second", "first")
    assert v.verdict is None and "second error (KernelSpecError: implementation 'second'" in v.reason
    result = _compare({"k": ptxmoe.NumbaKernel(_numba_saxpy, grid=1, block=32)},
                      lambda rng: {"x": np.ones(4, np.float32)})
    assert re.match(r"KernelSpecError: implementation 'k' \(NumbaKernel _numba_saxpy\): argument\(s\) a, y, out, n "
                    r"not among the inputs; make_inputs returned x", _error_row(result, "k").reason)


def test_compare_rejects_bad_arguments_with_what_was_expected():
    good = ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=2, block=32)
    with pytest.raises(ptxmoe.InputError, match=r"implementation 'numba': got function; expected ptxmoe.NumbaKernel"):
        _compare({"numba": _numba_saxpy})
    with pytest.raises(ptxmoe.InputError, match=r"implementation name 'a/b': expected a non-empty str without '/'"):
        _compare({"a/b": good})
    with pytest.raises(ptxmoe.InputError, match=r"make_inputs for case 'default': 'x' = list; expected str names"):
        _compare({"p": good}, lambda rng: {"x": [1, 2]})
    with pytest.raises(ptxmoe.InputError, match=r"make_inputs\(rng, \*\*\{\}\) for case 'default' raised "
                                                r"ZeroDivisionError"):
        _compare({"p": good}, lambda rng: 1 / 0)
    with pytest.raises(ptxmoe.UnknownNameError, match=r"unknown backend 'tpu'"):
        ptxmoe.compare({"p": good}, lambda rng: inputs(), backend="tpu")


def test_a_check_that_crashes_is_reported_not_counted_as_a_failure():
    good = ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=2, block=32)
    with pytest.raises(ptxmoe.InputError, match=r"check\(outputs, inputs\) raised KeyError for implementation 'p'"):
        _compare({"p": good}, check=lambda outputs, inputs: outputs["missing"])


def test_cpp_that_does_not_compile_fails_its_row_with_the_log_and_the_implementation():
    """NVRTC's refusal is that implementation's error row (with the log); the PTX one beside it runs and is checked."""
    broken = ptxmoe.CppKernel('extern "C" __global__ void k(float* x) { x[0] = undefined_name; }', "k",
                              grid=1, block=32)
    good = ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=2, block=32)
    result = _compare({"cpp": broken, "ptx": good}, check=_saxpy_ok)
    assert re.match(r"(?s)BuildError: implementation 'cpp' \(CppKernel k\): NVRTC failed.*undefined_name",
                    _error_row(result, "cpp").reason)
    assert result.ok("ptx") and result.time_us("ptx") > 0
    assert "cpp error (BuildError" in result.verdict("ptx", "cpp").reason


def test_a_simulator_fault_fails_the_row_naming_the_implementation():
    """An out-of-bounds write faults in ptxsim: that row is an error naming the implementation, the Numba row of the
    same inputs (which checks its bounds) still runs and is checked."""
    # out is given as a 4-element array but the kernel writes n = 64 elements: ptxsim faults on the bad address
    def small(rng):
        return {**inputs(64), "out": np.zeros(4, np.float32), "x": np.ones(4, np.float32),
                "y": np.ones(4, np.float32)}

    careful = ptxmoe.NumbaKernel(_numba_saxpy_bounded, grid=1, block=32)
    result = _compare({"hand": ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=2, block=32), "numba": careful}, small)
    assert re.match(r"KernelError: implementation 'hand' \(PtxKernel saxpy\) failed: ",
                    _error_row(result, "hand").reason)
    assert result.row("numba").status == "ok" and result.time_us("numba") > 0
    assert "hand error (KernelError" in result.verdict("numba", "hand").reason


def _numba_saxpy_bounded(a, x, y, out, n):
    i = cuda.grid(1)
    if i < out.shape[0] and i < x.shape[0]:
        out[i] = a * x[i] + y[i]


def _saxpy_ok(outputs, inputs):
    np.testing.assert_allclose(outputs["out"], inputs["a"] * inputs["x"] + inputs["y"], rtol=1e-6)


def test_sanitizer_findings_fail_the_row_instead_of_raising():
    from harness.backends.sim import SimBackend

    def small(rng):  # out has 4 elements but the kernel writes n = 64
        return {**inputs(64), "out": np.zeros(4, np.float32), "x": np.ones(64, np.float32),
                "y": np.ones(64, np.float32)}

    result = ptxmoe.compare({"hand": ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=2, block=32)}, small,
                            backend=SimBackend(sanitize="memcheck"), static=False)
    row = result.row("hand")
    assert row.status == "failed" and row.sanitizer.tools == ("memcheck",)
    assert row.sanitizer.findings and row.reason.startswith(f"{len(row.sanitizer.findings)} sanitizer")


def test_a_check_returning_an_array_is_an_error_in_the_check():
    good = ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=2, block=32)
    with pytest.raises(ptxmoe.InputError, match=r"check\(outputs, inputs\) returned ndarray for implementation 'p'"):
        _compare({"p": good}, check=lambda outputs, inputs: outputs["out"] > 0)


class RecordingBackend:
    """Stands in for a backend: remembers what each launch was given."""

    def __init__(self):
        self.calls = []

    def launch_ptx(self, ptx, entry, grid, block, params, shared_bytes=0, tag=""):
        self.calls.append((entry, grid, block, params, shared_bytes, tag))
        return len(self.calls)


def test_prepared_launcher_passes_device_arrays_and_precast_scalars():
    host = {**inputs(100), "a": 3, "n": 100}
    launcher = ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=lambda i: (i["n"] + 63) // 64, block=64).prepare(
        host, "impl", "mytag")
    backend, dev = RecordingBackend(), device(host)
    assert launcher(backend, dev) == 1 and launcher(backend, dev) == 2  # reusable: one check, many launches
    entry, grid, block, params, shared, tag = backend.calls[0]
    assert (entry, grid, block, shared, tag) == ("saxpy", (2, 1, 1), (64, 1, 1), 0, "mytag")
    assert isinstance(params[0], np.float32) and params[0] == 3.0 and isinstance(params[4], np.uint32)
    assert params[1:4] == [dev["x"], dev["y"], dev["out"]]


def test_outputs_must_name_arrays_and_0d_arrays_are_scalars():
    good = ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=2, block=32)
    with pytest.raises(ptxmoe.InputError, match=r"outputs \['n'\] for case 'default': not arrays among the inputs"):
        _compare({"p": good}, outputs=["n"])
    result = _compare({"p": good}, lambda rng: {**inputs(), "n": np.array(64, np.int32)}, outputs=["out"],
                      check=lambda outputs, inputs: bool(np.all(outputs["out"] == 3.0)))
    assert result.ok("p") and result.row("p").status == "ok"

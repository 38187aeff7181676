"""Issue 31 item 1: array argument dtypes are checked before launch, naming the argument, the dtype given and the type
expected: from a declared signature (dtypes=, Numba's signature=), else from the loads and stores each untyped .u64
pointer reaches in the PTX (hand PTX and extern "C" C++); where nothing says, the row says "argument types
unchecked"."""
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

import ptxmoe
from harness.pointer_types import expected_element, pointer_accesses

HERE = Path(__file__).resolve().parent
SAXPY_PTX = (HERE / "saxpy.ptx").read_text()
SAXPY_CU = r"""
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
"""
# a kernel that copies words as bits: nothing says what they are
COPY_BITS_PTX = SAXPY_PTX.replace("ld.global.f32 %f2, [%rd5];", "ld.global.b32 %r2, [%rd5];").replace(
    "fma.rn.f32 %f4, %f1, %f2, %f3;", "mov.b32 %f4, %r2;")


def inputs_of(dtype):
    def make_inputs(rng, n=256):
        return {"a": np.float32(2.0), "x": rng.standard_normal(n).astype(dtype),
                "y": rng.standard_normal(n).astype(np.float32), "out": np.zeros(n, np.float32), "n": np.uint32(n)}
    return make_inputs


def saxpy(a, x, y, out, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = a * x[i] + y[i]


def test_dataflow_follows_params_through_cvta_and_address_arithmetic():
    accesses = pointer_accesses(SAXPY_PTX, "saxpy")
    assert [a.ptype for a in accesses["x"]] == ["f32"] and accesses["x"][0].line == 25
    assert [a.text for a in accesses["out"]] == ["st.global.f32 [%rd7], %f4"]
    assert accesses["a"] == [] and accesses["n"] == []
    assert expected_element(accesses["x"]).dtype == "float32"
    assert expected_element(pointer_accesses(COPY_BITS_PTX, "saxpy")["x"]) is None


def test_float64_passed_to_a_float_pointer_is_refused_naming_argument_and_types():
    kernels = {"ptx": ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=1, block=256),
               "cpp": ptxmoe.CppKernel(SAXPY_CU, "saxpy", grid=1, block=256)}
    result = ptxmoe.compare(kernels, inputs_of(np.float64), backend="sim", static=False)
    for impl in ("ptx", "cpp"):
        row = result.row(impl)
        assert row.status == "error" and row.timing is None
        assert "argument x is a float64 array" in row.reason and "float32" in row.reason
        assert "ld.global" in row.reason and "PTX line" in row.reason


def test_matching_dtypes_run_and_the_row_says_what_was_checked():
    kernels = {"ptx": ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=1, block=256),
               "bits": ptxmoe.PtxKernel(COPY_BITS_PTX, "saxpy", grid=1, block=256),
               "numba": ptxmoe.NumbaKernel(saxpy, grid=1, block=256)}
    result = ptxmoe.compare(kernels, inputs_of(np.float32), backend="sim", static=False)
    assert result.ok("ptx") and "loads and stores: x, y, out" in result.row("ptx").arg_types
    bits = result.row("bits")
    assert bits.status == "ok" and "argument types unchecked: x" in bits.arg_types
    assert "argument types unchecked: x" in repr(result)
    assert "inputs' dtypes" in result.row("numba").arg_types


def test_declared_signatures_are_checked():
    declared = {"bits": ptxmoe.PtxKernel(COPY_BITS_PTX, "saxpy", grid=1, block=256, dtypes={"x": np.float32}),
                "numba": ptxmoe.NumbaKernel(saxpy, grid=1, block=256,
                                            signature="void(float32, float32[::1], float32[::1], float32[::1], "
                                                      "uint32)")}
    result = ptxmoe.compare(declared, inputs_of(np.int32), backend="sim", static=False)
    assert "argument x is a int32 array; the declared signature (dtypes=) says float32" in result.row("bits").reason
    assert "argument x is a int32 array; Numba's signature" in result.row("numba").reason
    ok = ptxmoe.compare(declared, inputs_of(np.float32), backend="sim", static=False)
    assert ok.ok("bits") and "declared signature: x" in ok.row("bits").arg_types
    assert ok.ok("numba") and "Numba's signature: x, y, out" in ok.row("numba").arg_types


@pytest.mark.parametrize("bad", [{"z": np.float32}, {"x": "not a dtype"}])
def test_a_bad_declared_signature_names_itself(bad):
    result = ptxmoe.compare({"ptx": ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=1, block=256, dtypes=bad)},
                            inputs_of(np.float32), backend="sim", static=False)
    assert result.row("ptx").status == "error" and "dtypes" in result.row("ptx").reason

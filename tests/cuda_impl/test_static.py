"""Static facts of the Numba kernels: no spills, no stack, no float64, and the PTX shows the intended tuning."""
import re

import pytest

from cuda_impl import KERNEL_NAMES

PRESETS = ["tiny", "small", "dsv3-decode", "dsv3-prefill"]

# Instructions each kernel's PTX must contain: the tuning the module docstrings promise (a regression guard).
# ld.global.cs.b64: numba-cuda's streaming cache hint on read-once data; ex2/div.approx: fast math where kernels.md's
# tolerances allow it.
MUST_HAVE = {
    "gate": ["shfl.sync.bfly.b32", "ex2.approx.f32", "div.approx.f32"],
    "align": ["atom.shared.add", "match.any.sync.b32", "shfl.sync.up.b32", "bar.sync"],
    "permute": ["ld.global.cs.b64", "st.global.u64"],
    "act_quant": ["ld.global.cs.b64", "shfl.sync.bfly.b32", "div.rn.f32", "st.global.u32"],
    "grouped_gemm": ["ld.global.u64", "ld.shared.v4.f32", "st.shared", "bar.sync", "fma.rn.f32", "st.global.u64"],
    "swiglu": ["ld.global.cs.b64", "st.global.u64", "ex2.approx.f32", "div.approx.f32"],
    "combine": ["ld.global.cs.b64", "st.global.u64", "fma.rn.f32"],
    "grouped_gemm_fp8": ["ld.global.u32", "st.shared.f32", "bar.sync", "fma.rn.f32", "st.global.u16"],
}
# ...and must not: act_quant's division and rounding are specified bit for bit, so no approximate math there
MUST_NOT_HAVE = {"act_quant": [".approx", ".ftz"]}


def opcodes(ptx: str) -> set[str]:
    return set(re.findall(r"^\s+(?:@%!?p\d+\s+)?([a-z][\w.:]*)", ptx, re.M))


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("kernel", KERNEL_NAMES)
def test_ptx_is_float32_and_tuned(kernel, preset):
    from harness.impl_static import numba_ptx_texts

    for ptx in numba_ptx_texts(kernel, preset):
        ops = opcodes(ptx)
        f64 = sorted(o for o in ops if ".f64" in o)
        assert not f64, f"{kernel} at {preset}: float64 instructions {f64} (an untyped literal or uint64/int64 mix?)"
        assert ".local" not in ptx, f"{kernel} at {preset}: local memory in the PTX (a register array not promoted)"
        for needle in MUST_HAVE[kernel]:
            assert any(o.startswith(needle) for o in ops), f"{kernel} at {preset}: no {needle} in the PTX"
        for needle in MUST_NOT_HAVE.get(kernel, ()):
            bad = sorted(o for o in ops if needle in o)
            assert not bad, f"{kernel} at {preset}: {bad} in the PTX (its rounding is exact: no fast math)"


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("kernel", KERNEL_NAMES)
def test_ptxas_no_spills(kernel, preset):
    from harness.impl_static import numba_resource_report

    report = numba_resource_report(kernel, preset)
    assert report, f"{kernel}: ptxas reported no entry"
    for entry, usage in report.items():
        assert usage.spills == 0, f"{kernel} at {preset}: {usage.spills} spill bytes in {entry}"
        assert usage.stack_frame_bytes == 0, f"{kernel} at {preset}: {usage.stack_frame_bytes} B stack in {entry}"
        assert 0 < usage.registers <= 255
        assert usage.shared_bytes <= 48 * 1024, f"{kernel} at {preset}: {usage.shared_bytes} B static shared"


def test_kernel_tables():
    import cuda_impl

    assert set(cuda_impl.KERNELS) == {*KERNEL_NAMES, "layer"}
    assert all(callable(run) for run in cuda_impl.KERNELS.values())
    pairs = cuda_impl.KERNEL_SOURCES["grouped_gemm"]
    assert len(pairs) == 1 and callable(pairs[0][0]) and not hasattr(pairs[0][0], "py_func"), \
        "kernel sources must be plain (undecorated) Python functions"
    assert len(cuda_impl.KERNEL_SOURCES["act_quant"]) == 2  # pow2_scale False and True
    assert len(cuda_impl.KERNEL_SOURCES["layer"]) == 8


def test_unknown_kernel_is_named():
    from cuda_impl import static
    from harness.errors import UnknownNameError

    with pytest.raises(UnknownNameError, match="nope"):
        static.kernel_sources("nope")

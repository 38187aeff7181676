"""Rules the hardware enforces that ptxsim used to forgive (issue 26): wgmma scale-d = 0 ignores D, bar.warp.sync
reconverges its members, an out-of-bounds TMA destination is a memcheck report, swizzle alignment."""
import ml_dtypes
import numpy as np
import pytest

from tests.ptxsim.test_hopper_wgmma import _a_registers, _d_matrix, _desc, _kernel, _place, _run

pytestmark = pytest.mark.sim

_POISON = ("0f7FC00000", "0f7F800000", "0fFF800000")  # NaN, +Inf, -Inf


def _poisoned(src: str, nd: int) -> str:
    """The kernel with its accumulators started at NaN / +Inf / -Inf instead of 1.0."""
    for i in range(nd):
        src = src.replace(f"mov.b32 %d{i}, 0f3F800000;", f"mov.b32 %d{i}, {_POISON[i % 3]};")
    assert "0f3F800000" not in src
    return src


@pytest.mark.parametrize("scale_d", ["predicate", "immediate"])
def test_wgmma_scale_d_zero_ignores_nan_and_inf_in_the_old_accumulator(scale_d):
    rng = np.random.default_rng(11)
    n = 16
    A = rng.standard_normal((64, 16)).astype(ml_dtypes.bfloat16)
    B = rng.standard_normal((n, 16)).astype(ml_dtypes.bfloat16)
    ib = _place(B.view(np.uint8).reshape(n, 32), 0, 128, 256)
    src = _poisoned(_kernel(n, 1, 0, a_regs=True), n // 2)
    if scale_d == "immediate":
        assert src.count("%p1, 1, 1") == 1
        src = src.replace("%p1, 1, 1", "0, 1, 1")
    D = _run(src, ib, 0, _desc(0, 128, 256, 0), n, areg=_a_registers(A.view(np.uint16), 2), scd=0)
    ref = A.astype(np.float64) @ B.astype(np.float64).T
    assert np.isfinite(D).all()  # before: NaN * 0 = NaN and Inf * 0 = NaN leaked into every element
    np.testing.assert_allclose(D, ref, rtol=1e-6, atol=1e-5)


def test_wgmma_scale_d_one_still_adds_the_old_accumulator():
    # the same kernel with scale-d 1: the poisoned accumulators propagate as IEEE addition says
    rng = np.random.default_rng(12)
    n = 16
    A = rng.standard_normal((64, 16)).astype(ml_dtypes.bfloat16)
    B = rng.standard_normal((n, 16)).astype(ml_dtypes.bfloat16)
    ib = _place(B.view(np.uint8).reshape(n, 32), 0, 128, 256)
    src = _poisoned(_kernel(n, 1, 0, a_regs=True), n // 2)
    D = _run(src, ib, 0, _desc(0, 128, 256, 0), n, areg=_a_registers(A.view(np.uint16), 2), scd=1)
    start = np.array([np.nan, np.inf, -np.inf], np.float32)
    init = _d_matrix(np.tile(start[np.arange(n // 2) % 3], (128, 1)), n)  # each element's starting value
    np.testing.assert_array_equal(D, init)  # finite products plus NaN / +-Inf stay NaN / +-Inf

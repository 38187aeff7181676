"""The stream blocker's PTX run on ptxsim: it returns at once when released, and flags a timeout when not."""
import numpy as np
import pytest

from harness.timing.gpu import BLOCKER_ENTRY, BLOCKER_PTX


@pytest.mark.parametrize(("release", "timeout_ns", "timed_out"), [(1, 10**12, 0), (0, 0, 1)])
def test_blocker_kernel_on_ptxsim(release, timeout_ns, timed_out):
    from harness.backends.sim import SimBackend

    sim = SimBackend()
    flag = sim.to_device(np.array([release, 0], np.int32))
    sim.launch_ptx(BLOCKER_PTX, BLOCKER_ENTRY, 1, 1, [np.uint64(flag.addr), np.uint64(timeout_ns)])
    assert sim.to_host(flag).tolist() == [release, timed_out]

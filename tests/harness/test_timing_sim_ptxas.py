"""A PTX text ptxas refuses (ptxas 12.9 and the `.version 9.0` nvcc 13 writes) is the row's error, named with
ptxas's message, not an "ok" row with no modelled time (issue 25)."""
import numpy as np
import pytest

from harness.errors import ToolchainError

V90 = """.version 9.0
.target sm_90
.address_size 64
.visible .entry seven(.param .u64 p)
{
  .reg .b64 %rd<2>; .reg .b32 %r<2>;
  ld.param.u64 %rd1, [p]; mov.u32 %r1, 7; st.global.u32 [%rd1], %r1; ret;
}
"""


@pytest.mark.sim
def test_a_ptx_version_ptxas_refuses_is_the_rows_error():
    from harness import toolchain
    from harness.backends.sim import SimBackend
    from harness.timing.sim import model_row

    major = int(toolchain.ptxas_version().split(".")[0])
    text = V90 if major < 13 else V90.replace(".version 9.0", ".version 99.0")  # a version this ptxas refuses
    sim = SimBackend()
    out = sim.empty((1,), np.uint32)
    record = sim.launch_ptx(text, "seven", 1, 1, [out])
    assert sim.to_host(out)[0] == 7  # ptxsim ran it: only ptxas refuses
    with pytest.raises(ToolchainError, match=r"(?s)seven: the PTX does not assemble.*Unsupported \.version"):
        model_row([record], sim.launched_sources())
    ok = sim.launch_ptx(text.replace(text.splitlines()[0], ".version 8.0"), "seven", 1, 1, [out])
    assert model_row([ok], sim.launched_sources())["launches"][0]["occupancy"] is not None

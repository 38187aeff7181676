"""Issue 31 item 2: PTX the simulator cannot load is named for what it is, by ptxas's verdict on the same text:
invalid PTX (a misspelled opcode: ptxas refuses it, its line quoted) or a simulator gap (valid PTX ptxsim does not
support yet). Either fails its own row; the other rows still run."""
from pathlib import Path

import numpy as np

import ptxmoe
from harness.errors import InvalidPtx, SimulatorGap
from harness.ptx_verdict import classify_refusal, ptx_arch

HERE = Path(__file__).resolve().parent
SAXPY_PTX = (HERE / "saxpy.ptx").read_text()
MISSPELLED = SAXPY_PTX.replace("fma.rn.f32 %f4", "fmaa.rn.f32 %f4")
# a valid video instruction (ptxas assembles it) that ptxsim has no handler for
UNSUPPORTED = SAXPY_PTX.replace("mad.lo.s32 %r4, %r1, %r2, %r3;",
                                "mad.lo.s32 %r4, %r1, %r2, %r3;\n    vabsdiff.u32.u32.u32 %r2, %r1, %r3, %r4;")



def make_inputs(rng, n=256):
    return {"a": np.float32(2.0), "x": rng.standard_normal(n, dtype=np.float32),
            "y": rng.standard_normal(n, dtype=np.float32), "out": np.zeros(n, np.float32), "n": np.uint32(n)}


def test_misspelled_opcode_is_invalid_ptx_and_a_valid_unknown_one_a_simulator_gap():
    kernels = {"ok": ptxmoe.PtxKernel(SAXPY_PTX, "saxpy", grid=1, block=256),
               "typo": ptxmoe.PtxKernel(MISSPELLED, "saxpy", grid=1, block=256),
               "gap": ptxmoe.PtxKernel(UNSUPPORTED, "saxpy", grid=1, block=256)}
    result = ptxmoe.compare(kernels, make_inputs, backend="sim", static=False)
    assert result.ok("ok")
    typo = result.row("typo")
    assert typo.status == "error" and typo.reason.startswith("InvalidPtx:")
    assert "ptxas (sm_90) refuses it: line 27" in typo.reason and "'fmaa'" in typo.reason
    gap = result.row("gap")
    assert gap.status == "error" and gap.reason.startswith("SimulatorGap:")
    assert "ptxas (sm_90) accepts this PTX but ptxsim does not support it" in gap.reason and "vabsdiff" in gap.reason


def test_classify_refusal_asks_ptxas_for_the_modules_own_target():
    assert ptx_arch(SAXPY_PTX) == "sm_90" and ptx_arch(".version 8.0\n.target sm_90a\n") == "sm_90a"
    refusal = RuntimeError("no handler")
    assert isinstance(classify_refusal(MISSPELLED, refusal), InvalidPtx)
    assert isinstance(classify_refusal(UNSUPPORTED, refusal), SimulatorGap)

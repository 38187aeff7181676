"""One exception hierarchy for ptxmoe's harness; messages name the bad value, where, and what was expected.

The root (PtxmoeError) and the kernel contract's errors live in contract.errors; the harness's own errors derive
from the same root.
"""
from contract.errors import CheckError, InputError, PtxmoeError, TooSlowToSimulate, UnknownNameError

__all__ = ["CheckError", "InputError", "InvalidPtx", "PtxmoeError", "SimulatorGap", "UnknownNameError",
           "ToolchainError", "TooSlowToSimulate"]


class ToolchainError(PtxmoeError):
    """A toolchain piece (ptxas, NVVM, NVRTC, nvdisasm) is missing or failed."""


class InvalidPtx(ToolchainError):
    """PTX the simulator could not load and ptxas refuses too: the text is wrong (a misspelled opcode, a bad
    operand), not the simulator; the message carries ptxas's verdict with its line."""


class SimulatorGap(PtxmoeError):
    """Valid PTX (ptxas assembles it) that ptxsim does not support yet: the simulator's limit, not the kernel's."""

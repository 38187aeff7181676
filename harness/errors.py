"""One exception hierarchy for ptxmoe's harness; messages name the bad value, where, and what was expected.

The root (PtxmoeError) and the kernel contract's errors live in contract.errors; the harness's own errors derive
from the same root.
"""
from contract.errors import CheckError, InputError, PtxmoeError, UnknownNameError

__all__ = ["CheckError", "InputError", "PtxmoeError", "UnknownNameError", "ToolchainError", "TooSlowToSimulate"]


class ToolchainError(PtxmoeError):
    """A toolchain piece (ptxas, NVVM, NVRTC, nvdisasm) is missing or failed."""


class TooSlowToSimulate(PtxmoeError):
    """A launch the sim backend cannot sample and would simulate whole for hours: its row is skipped with this reason
    (what the launch is, why it cannot be sampled, which flag or backend helps)."""

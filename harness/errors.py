"""One exception hierarchy for ptxmoe's harness; messages name the bad value, where, and what was expected.

The root (PtxmoeError) and the kernel contract's errors live in contract.errors; the harness's own errors derive
from the same root.
"""
from contract.errors import CheckError, InputError, PtxmoeError, UnknownNameError

__all__ = ["CheckError", "InputError", "PtxmoeError", "UnknownNameError", "ToolchainError"]


class ToolchainError(PtxmoeError):
    """A toolchain piece (ptxas, NVVM, NVRTC, nvdisasm) is missing or failed."""

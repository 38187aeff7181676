"""Errors of the ptxmoe API; all derive from PtxmoeError (contract.errors), so `except ptxmoe.PtxmoeError` catches
everything ptxmoe raises on purpose."""
from contract.errors import BuildError, CheckError, InputError, PtxmoeError, UnknownNameError

__all__ = ["BuildError", "CheckError", "InputError", "KernelError", "KernelSpecError", "PtxmoeError",
           "UnknownNameError"]


class KernelSpecError(InputError):
    """A kernel description that cannot be launched with these inputs (arguments, types, launch shape); the message
    names the implementation, the value and what was expected."""


class KernelError(PtxmoeError):
    """An implementation failed while it ran (simulator or driver error, bad memory access...); `impl` names it and
    the original exception is the `__cause__`."""

    def __init__(self, impl: str, message: str):
        self.impl = impl
        super().__init__(message)

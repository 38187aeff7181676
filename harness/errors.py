"""One exception hierarchy for ptxmoe's harness; messages name the bad value, where, and what was expected."""


class PtxmoeError(Exception):
    """Base of every error ptxmoe raises on purpose (the CLI turns these into exit code 2 without a traceback)."""


class UnknownNameError(PtxmoeError):
    """An unknown kernel, preset, skew, backend or implementation name."""

    def __init__(self, what: str, name: str, valid):
        self.what, self.name, self.valid = what, name, sorted(valid)
        super().__init__(f"unknown {what} {name!r}; valid {what}s: {', '.join(self.valid)}")


class ToolchainError(PtxmoeError):
    """A toolchain piece (ptxas, NVVM, NVRTC, nvdisasm) is missing or failed."""


class CheckError(PtxmoeError):
    """An output failed its kernels.md check."""


class InputError(PtxmoeError):
    """Inputs violate a kernel's documented assumptions (shape, dtype, divisibility)."""

"""The root of ptxmoe's exception hierarchy and the errors of the kernel contract.

Messages name the bad value, where it is, and what was expected. The harness adds its own errors on top
(harness.errors re-exports these, so `except PtxmoeError` catches everything ptxmoe raises on purpose).
"""


class PtxmoeError(Exception):
    """Base of every error ptxmoe raises on purpose (the CLI turns these into exit code 2 without a traceback)."""


class UnknownNameError(PtxmoeError):
    """An unknown kernel, preset, skew, backend or implementation name."""

    def __init__(self, what: str, name: str, valid):
        self.what, self.name, self.valid = what, name, sorted(valid)
        super().__init__(f"unknown {what} {name!r}; valid {what}s: {', '.join(self.valid)}")


class CheckError(PtxmoeError):
    """An output failed its kernels.md check."""


class InputError(PtxmoeError):
    """Inputs violate a kernel's documented assumptions (shape, dtype, divisibility)."""


class BuildError(PtxmoeError):
    """An implementation's source did not build (e.g. NVRTC rejected CUDA C++); the message carries the compiler's
    log with file and line."""


class TooSlowToSimulate(PtxmoeError):
    """A launch the sim backend cannot sample and would simulate whole for hours: its row is skipped with this reason
    (what the launch is, why it cannot be sampled, which flag or backend helps). Here so an implementation can say
    it too (cutlass's grouped cluster candidates: no sampling mark, which the simulator runs whole)."""

"""Fixtures of the C++ path's tests: the sim backend, plain and with every ptxsim sanitizer on every launch."""
import pytest


class _SanitizingDevice:
    """A ptxsim Device whose launches run every sanitizer (memcheck, racecheck, initcheck, synccheck, nc)."""

    def __init__(self, device):
        self._device = device

    def __getattr__(self, name):
        return getattr(self._device, name)

    def launch(self, *args, **kwargs):
        return self._device.launch(*args, sanitize="all", **kwargs)


@pytest.fixture
def backend():
    from harness.backends.sim import SimBackend

    return SimBackend()


@pytest.fixture
def sanitizing_backend():
    """A sim backend on which the first sanitizer report raises a SanitizerError."""
    import ptxsim
    from harness.backends.sim import SimBackend

    return SimBackend(device=_SanitizingDevice(ptxsim.Device()))

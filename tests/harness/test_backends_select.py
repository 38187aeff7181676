"""select_backend / resolve_backend_name: names, auto resolution, clear errors."""
import pytest

from harness.backends.select import BACKEND_NAMES, resolve_backend_name, select_backend
from harness.errors import PtxmoeError, UnknownNameError


def test_unknown_backend_lists_valid_names():
    with pytest.raises(UnknownNameError) as info:
        select_backend("cuda")
    msg = str(info.value)
    assert "'cuda'" in msg and all(name in msg for name in BACKEND_NAMES)


def test_auto_without_gpu_is_sim(monkeypatch):
    monkeypatch.setenv("PTXMOE_FORCE_NO_GPU", "1")
    assert resolve_backend_name("auto") == "sim"
    assert resolve_backend_name("gpu") == "gpu"  # explicit names are kept
    with pytest.raises(PtxmoeError, match="needs a visible CUDA GPU.*PTXMOE_FORCE_NO_GPU"):
        select_backend("gpu")


def test_auto_follows_gpu_visibility(monkeypatch):
    import harness.toolchain as toolchain

    monkeypatch.setattr(toolchain, "gpu_visible", lambda: (True, "NVIDIA H200"))
    assert resolve_backend_name("auto") == "gpu"
    monkeypatch.setattr(toolchain, "gpu_visible", lambda: (False, "no CUDA device visible"))
    assert resolve_backend_name("auto") == "sim"

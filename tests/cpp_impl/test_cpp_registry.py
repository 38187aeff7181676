"""cpp_impl registers itself as the contract's "cpp" implementation, lazily (importing the package compiles nothing)."""
import importlib
import sys

from contract.kernels import get_kernel
from contract.registry import Implementation


def test_registers_every_written_kernel_under_its_contract_name():
    import cpp_impl

    impl = cpp_impl.IMPLEMENTATION
    assert isinstance(impl, Implementation) and impl.name == "cpp"
    assert {"gate", "align", "permute", "act_quant", "swiglu", "combine", "layer"} <= set(impl.kernels)
    for name, run in impl.kernels.items():
        get_kernel(name)  # raises UnknownNameError for a name the contract does not define
        assert run is importlib.import_module(f"cpp_impl.{cpp_impl.KERNEL_MODULES[name]}").run


def test_import_compiles_nothing(monkeypatch):
    """`import cpp_impl` touches neither NVRTC nor the kernel modules (the CLI's --help stays fast)."""
    for mod in [m for m in sys.modules if m == "cpp_impl" or m.startswith("cpp_impl.")]:
        monkeypatch.delitem(sys.modules, mod)
    importlib.import_module("cpp_impl")
    assert "cpp_impl.nvrtc" not in sys.modules and "cpp_impl.gate" not in sys.modules

"""The toolchain comes from the wheels and works without a GPU."""
import pytest

from harness import toolchain
from harness.errors import ToolchainError


def test_ptxas_is_from_the_wheel():
    assert "site-packages" in str(toolchain.ptxas_path())
    assert toolchain.ptxas_version().startswith("12.")


def test_nvrtc_compiles_and_ptxas_reports_resources():
    ptx = toolchain.compile_cuda_to_ptx('extern "C" __global__ void twice(float* a) { a[threadIdx.x] *= 2.f; }')
    assert ".entry twice" in ptx
    cubin, usage = toolchain.assemble(ptx)
    assert usage["twice"].registers > 0 and usage["twice"].spills == 0
    assert "FMUL" in toolchain.sass_histogram(cubin) or "FADD" in toolchain.sass_histogram(cubin)


def test_nvrtc_error_carries_the_log():
    with pytest.raises(ToolchainError, match="undefined_thing"):
        toolchain.compile_cuda_to_ptx('extern "C" __global__ void bad() { undefined_thing(); }')


def test_ptxas_error_names_the_line():
    with pytest.raises(ToolchainError, match="line 5"):
        toolchain.assemble(".version 8.4\n.target sm_90\n.address_size 64\n.visible .entry k() {\n  bogus.op %r1;\n}\n")


def test_parse_ptxas_report_reads_spills_and_smem():
    text = (
        "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
        "ptxas info    : Function properties for k\n"
        "    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
        "ptxas info    : Used 40 registers, 4096 bytes smem, 372 bytes cmem[0]\n"
    )
    usage = toolchain.parse_ptxas_report(text)["k"]
    assert (usage.registers, usage.shared_bytes, usage.constant_bytes, usage.spills) == (40, 4096, 372, 12)


def test_cuda13_wheel_layout_finds_ptxas_and_libnvvm(tmp_path, monkeypatch):
    """CUDA 13 wheels keep the tools under nvidia/cu13 (bin/ptxas, nvvm/lib64/libnvvm.so), not nvidia/cuda_nvcc."""
    from harness import toolchain

    (tmp_path / "cu13" / "bin").mkdir(parents=True)
    (tmp_path / "cu13" / "nvvm" / "lib64").mkdir(parents=True)
    (tmp_path / "cu13" / "bin" / "ptxas").write_text("")
    (tmp_path / "cu13" / "nvvm" / "lib64" / "libnvvm.so.4").write_text("")
    monkeypatch.setattr(toolchain, "_nvidia_roots", lambda: [tmp_path])
    for fn in (toolchain.ptxas_path, toolchain.nvvm_path):
        fn.cache_clear()
    try:
        assert toolchain.ptxas_path() == tmp_path / "cu13" / "bin" / "ptxas"
        assert toolchain.nvvm_path() == tmp_path / "cu13" / "nvvm" / "lib64" / "libnvvm.so.4"
    finally:
        for fn in (toolchain.ptxas_path, toolchain.nvvm_path):
            fn.cache_clear()

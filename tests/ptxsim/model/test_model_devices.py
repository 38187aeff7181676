"""Device specs: name lookup, errors, and consistency of the per-clock rates with the datasheet peaks."""
import ast
import dataclasses
from pathlib import Path

import pytest

from ptxsim.model import DEVICES, DeviceSpec, ModelError, UnknownDeviceError, get_device

MODEL_DIR = Path(__file__).resolve().parents[3] / "ptxsim" / "model"


@pytest.mark.parametrize("name, expected", [
    ("h800", "H800 SXM"), ("H800", "H800 SXM"), ("NVIDIA H800", "H800 SXM"), ("H800 SXM5", "H800 SXM"),
    ("H100 SXM", "H100 SXM"), ("h100", "H100 SXM"), ("NVIDIA H100 80GB HBM3", "H100 SXM"), ("h100-sxm", "H100 SXM"),
    ("NVIDIA H200", "H200 SXM"), ("H200 SXM 141GB HBM3e", "H200 SXM"), ("  nvidia_h200  ", "H200 SXM"),
])
def test_get_device_accepts_common_spellings(name, expected):
    assert get_device(name).name == expected


def test_get_device_passes_a_spec_through():
    spec = DEVICES["H200 SXM"]
    assert get_device(spec) is spec


@pytest.mark.parametrize("bad", ["A100", "H100 PCIe", "H100 NVL", "h300", "", "nvidia", 42, None])
def test_unknown_device_names_the_value_and_lists_valid_ones(bad):
    with pytest.raises(UnknownDeviceError) as info:
        get_device(bad)
    message = str(info.value)
    assert repr(bad) in message
    for valid in DEVICES:
        assert valid in message
    assert isinstance(info.value, ModelError) and isinstance(info.value, Exception)


def test_specs_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEVICES["H100 SXM"].sm_count = 20


@pytest.mark.parametrize("name", sorted(DEVICES))
def test_per_clock_rates_reproduce_datasheet_peaks(name):
    spec = DEVICES[name]
    clock = spec.boost_clock_hz
    # FP32: 128 lanes x FMA (2 FLOP) x 132 SMs x 1.98 GHz = 66.9 TFLOP/s (whitepaper)
    assert spec.fp32_lanes_per_sm * 2 * spec.sm_count * clock == pytest.approx(spec.fp32_flops, rel=2e-3)
    assert spec.fp64_lanes_per_sm * 2 * spec.sm_count * clock == pytest.approx(spec.fp64_flops, rel=2e-3)
    # Datasheet tensor peaks are quoted at ~1830 MHz, FP8 exactly twice BF16.
    assert spec.tensor_rate_clock_hz == pytest.approx(1830e6, rel=1e-3)
    assert spec.fp8_dense_flops == pytest.approx(2 * spec.bf16_dense_flops, rel=1e-4)
    assert spec.tensor_fp8_flop_per_clk_per_sm == 2 * spec.tensor_bf16_flop_per_clk_per_sm
    # SM resources: 64K registers in 4 sub-partitions, 228 KB shared, 227 KB per block + 1 KB reserved.
    assert spec.registers_per_sub_partition * spec.sub_partitions_per_sm == spec.registers_per_sm == 65536
    assert spec.max_shared_memory_per_block + spec.shared_memory_reserved_per_block == spec.shared_memory_per_sm
    assert spec.max_warps_per_sm * spec.warp_size == spec.max_threads_per_sm == 2048
    assert spec.sm_count == 132 and spec.l2_bytes == 50 * 2**20


def test_products_differ_where_the_datasheets_say():
    h100, h800, h200 = DEVICES["H100 SXM"], DEVICES["H800 SXM"], DEVICES["H200 SXM"]
    assert (h100.memory_bandwidth, h800.memory_bandwidth, h200.memory_bandwidth) == (3.35e12, 3.35e12, 4.8e12)
    assert (h100.nvlink_bandwidth, h800.nvlink_bandwidth, h200.nvlink_bandwidth) == (900e9, 400e9, 900e9)
    assert h800.fp64_flops == 1e12 and h100.fp64_flops == h200.fp64_flops == 33.5e12
    assert h200.memory_bytes > h100.memory_bytes == h800.memory_bytes
    assert h100.bf16_dense_flops == h800.bf16_dense_flops == h200.bf16_dense_flops == 989.4e12
    # Everything else (the SM) is the same GH100 configuration.
    differing = {f.name for f in dataclasses.fields(DeviceSpec) if getattr(h100, f.name) != getattr(h800, f.name)}
    assert differing == {"name", "fp64_flops", "fp64_lanes_per_sm", "nvlink_bandwidth"}


# microbench.py runs its kernels on the simulator (inside run_on_sim) to validate the model, and hopper_benches.py
# encodes the tensor map its TMA bench passes (ptxsim.tensormap): the exceptions.
SIMULATOR_RUNNERS = {"microbench.py", "hopper_benches.py"}


def test_model_package_imports_nothing_from_the_simulator_core():
    """The model is formulas over data: only ptxsim.model.* imports are allowed (but in SIMULATOR_RUNNERS)."""
    for path in MODEL_DIR.glob("*.py"):
        if path.name in SIMULATOR_RUNNERS:
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "ptxsim":
                assert node.module.startswith("ptxsim.model"), f"{path.name} imports {node.module}"
            if isinstance(node, ast.Import):
                for alias in node.names:
                    assert alias.name.split(".")[0] != "ptxsim" or alias.name.startswith("ptxsim.model"), path.name

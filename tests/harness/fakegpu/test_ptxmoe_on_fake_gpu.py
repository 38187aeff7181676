"""ptxmoe.compare's GPU path on the fake driver (issue 31 items 4 and 6): bf16 and fp8 (ml_dtypes) inputs reach the
device as their bits and come back as their dtype; a row whose arrays will not fit in the GPU's free memory is
skipped with the reason before it allocates anything."""
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import ptxmoe
from harness.backends.gpu import GpuBackend
from harness.timing.gpu import GpuTimingSettings

PTX = (Path(__file__).resolve().parents[2] / "ptxmoe" / "saxpy.ptx").read_text()
TIMING = GpuTimingSettings(warmup_runs=1, warmup_s=0, min_samples=3, max_samples=3, budget_s=60, host_samples=3)
# an entry of the same parameters whose x and y are bit copies (b16 loads): bf16 / fp8 pointers in hand PTX
COPY_PTX = PTX.replace("ld.global.f32 %f2, [%rd5];", "ld.global.b16 %rs1, [%rd5];").replace(
    ".reg .f32 %f<5>;", ".reg .f32 %f<5>;\n    .reg .b16 %rs<2>;")


def inputs_of(dtype):
    def make_inputs(rng, n=256):
        return {"a": np.float32(2.0), "x": rng.standard_normal(n).astype(dtype),
                "y": rng.standard_normal(n).astype(np.float32), "out": np.zeros(n, np.float32), "n": np.uint32(n)}
    return make_inputs


@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn])
def test_bf16_and_fp8_inputs_on_the_gpu_path(fake_gpu, dtype):
    seen = {}

    def check(outputs, inputs):
        seen["x"] = inputs["x"].dtype
        seen["out"] = outputs["out"].dtype
    result = ptxmoe.compare({"ptx": ptxmoe.PtxKernel(COPY_PTX, "saxpy", grid=1, block=256)}, inputs_of(dtype),
                            check=check, backend=GpuBackend(), static=False, timing=TIMING)
    assert result.ok("ptx"), result.row("ptx").reason
    assert seen == {"x": np.dtype(dtype), "out": np.dtype(np.float32)}
    assert fake_gpu.launches, "the kernel was launched on the fake device"


def test_a_row_too_big_for_the_gpu_is_skipped_with_the_reason(fake_gpu):
    fake_gpu.free_device_bytes = 1 << 20  # 1 MiB free
    result = ptxmoe.compare({"ptx": ptxmoe.PtxKernel(PTX, "saxpy", grid=1, block=256)}, inputs_of(np.float32),
                            cases={"big": {"n": 1 << 18}}, backend=GpuBackend(), static=False, timing=TIMING)
    row = result.row("ptx")
    assert row.status == "skipped" and "of device memory" in row.reason and "0.0 GiB free" in row.reason
    assert not fake_gpu.launches

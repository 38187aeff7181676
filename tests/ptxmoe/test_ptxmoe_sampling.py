"""Issue 31 item 6: sampling a user's kernel keeps L2 reuse. On a plain tiled SGEMM (every wave reads all of B), a
sampled run's DRAM bytes stay within 1.5x of the full run's with compare(sample_waves=...) (the first wave counted
once, later waves simulated after it: harness.plain_sampling.WarmWaves); ptxsim's systematic sample of cold waves
reads B once per sampled wave and extrapolates that."""
import numpy as np
import pytest

import ptxmoe
from harness.backends.sim import SimBackend
from harness.plain_sampling import WarmWaves

SGEMM_CU = r"""
#define T 16
extern "C" __global__ void sgemm(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float a[T][T];
    __shared__ float b[T][T];
    int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += T) {
        a[threadIdx.y][threadIdx.x] = A[row * K + k0 + threadIdx.x];
        b[threadIdx.y][threadIdx.x] = B[(k0 + threadIdx.y) * N + col];
        __syncthreads();
        for (int k = 0; k < T; ++k) acc += a[threadIdx.y][k] * b[k][threadIdx.x];
        __syncthreads();
    }
    C[row * N + col] = acc;
}
"""
WAVE = 64  # CTAs resident together, small so the 1024-CTA grid has 16 waves


def make_inputs(rng, m=512, n=512, k=128):
    return {"A": rng.standard_normal((m, k), dtype=np.float32), "B": rng.standard_normal((k, n), dtype=np.float32),
            "C": np.zeros((m, n), np.float32), "M": np.int32(m), "N": np.int32(n), "K": np.int32(k)}


def check(outputs, inputs):
    np.testing.assert_allclose(outputs["C"], inputs["A"] @ inputs["B"], rtol=1e-4, atol=1e-3)


KERNELS = {"sgemm": ptxmoe.CppKernel(SGEMM_CU, "sgemm", grid=lambda i: (int(i["N"]) // 16, int(i["M"]) // 16),
                                     block=(16, 16))}


def dram_read(result) -> float:
    return result.counters("sgemm")["dram__bytes_read.sum"]


@pytest.fixture(scope="module")
def full():
    result = ptxmoe.compare(KERNELS, make_inputs, check=check, outputs=["C"], backend=SimBackend(wave_ctas=WAVE),
                            static=False)
    assert result.ok("sgemm"), result.row("sgemm").reason
    return result


def test_warm_waves_keep_the_dram_bytes_of_the_full_run(full):
    sampled = ptxmoe.compare(KERNELS, make_inputs, check=check, outputs=["C"], backend=SimBackend(wave_ctas=WAVE),
                             static=False, sample_waves=3)
    row = sampled.row("sgemm")
    assert row.status == "ok" and row.correctness.message.startswith("not checked: a sampled run")
    assert 0.2 < row.unwritten["C"] < 1.0  # it ran part of the grid
    ratio = dram_read(sampled) / dram_read(full)
    assert 1 / 1.5 <= ratio <= 1.5, ratio
    assert sampled.time_us("sgemm") == pytest.approx(full.time_us("sgemm"), rel=0.5)
    assert sampled.doc["settings"]["sample"] == "warm waves 3"


def test_cold_systematic_sampling_is_what_this_fixes(full):
    cold = ptxmoe.compare(KERNELS, make_inputs, outputs=["C"], allow_unwritten=True, static=False,
                          backend=SimBackend(wave_ctas=WAVE, sample_ctas=3 * WAVE))
    assert dram_read(cold) / dram_read(full) > 3


def test_plan_counts_the_first_wave_once_and_weights_the_rest():
    plan = WarmWaves(3).launch_plan("plain", (32, 32, 1), wave_ctas=64)
    (first, *later) = plan.sample_ranges
    assert first == (0, 64, 1.0) and len(later) == 2
    assert sum((b - a) * w for a, b, w in plan.sample_ranges) == 1024  # the weighted CTAs are the grid
    assert all(a % 64 == 0 and b - a == 64 for a, b, _ in later)
    assert WarmWaves(3).launch_plan("plain", (3 * 64, 1, 1), wave_ctas=64).whole  # too few waves: whole
    assert WarmWaves(3).launch_plan("rows", (32, 32, 1), wave_ctas=64).whole


def test_sample_waves_is_checked():
    with pytest.raises(ptxmoe.InputError, match="sample_waves = 1"):
        ptxmoe.compare(KERNELS, make_inputs, backend="sim", sample_waves=1)

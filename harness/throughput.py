"""A row's achieved throughput: GB/s and TFLOP/s from the kernel's byte and FLOP counts, and the share of the
device's peaks (the peak a kernel's FLOPs are measured against: PEAK_FLOPS_KIND)."""
from __future__ import annotations

# The peak a kernel's FLOPs are measured against (a DeviceSpec attribute "<kind>_flops"): tensor-core kernels use the
# dense tensor-core peak of their input type, everything else the fp32 CUDA-core peak.
PEAK_FLOPS_KIND = {"grouped_gemm": "bf16_dense", "layer": "bf16_dense", "grouped_gemm_fp8": "fp8_dense",
                   "layer[fp8]": "fp8_dense"}
GEMM_LIKE = ("grouped_gemm", "layer", "grouped_gemm_fp8")  # kernels whose FLOPs run on tensor cores


def peak_flops_kind(kernel: str, variant: str | None = None) -> str:
    """The peak a row's FLOPs are measured against: by "kernel[variant]" first (the fp8 layer), then by kernel."""
    return PEAK_FLOPS_KIND.get(f"{kernel}[{variant}]", PEAK_FLOPS_KIND.get(kernel, "fp32"))


def device_spec_for(backend_name: str, gpu_name: str | None, model_device: str):
    """The ptxsim.model DeviceSpec peaks are taken from: the GPU measured on, else the model device (None when the
    model does not know it)."""
    from harness.backends.kinds import backend_kind

    try:
        from ptxsim.model.devices import get_device

        measured = not backend_kind(backend_name).simulated
        return get_device(gpu_name if measured and gpu_name else model_device)
    except Exception:  # noqa: BLE001 - an unknown GPU has no peaks; throughput is still reported
        return None


def throughput(kernel: str, min_bytes: int, flops: int, time_us: float | None, spec, variant: str | None = None
               ) -> dict:
    """Achieved GB/s and TFLOP/s from the kernel's byte/FLOP counts, and % of the device's peaks."""
    out = {"min_bytes": int(min_bytes), "flops": int(flops), "time_us": time_us, "achieved_gbps": None,
           "achieved_tflops": None, "pct_peak_bandwidth": None, "pct_peak_flops": None, "peak_flops_kind":
           peak_flops_kind(kernel, variant), "device": getattr(spec, "name", None)}
    if not time_us or time_us <= 0:
        return out
    seconds = time_us * 1e-6
    out["achieved_gbps"] = min_bytes / seconds / 1e9
    out["achieved_tflops"] = flops / seconds / 1e12
    if spec is not None:
        out["pct_peak_bandwidth"] = 100.0 * min_bytes / seconds / spec.memory_bandwidth
        peak = getattr(spec, f"{out['peak_flops_kind']}_flops")
        out["pct_peak_flops"] = 100.0 * flops / seconds / peak
    return out

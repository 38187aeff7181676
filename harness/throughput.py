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
    out: dict = {"min_bytes": int(min_bytes), "flops": int(flops), "time_us": time_us, "achieved_gbps": None,
           "achieved_tflops": None, "pct_peak_bandwidth": None, "pct_peak_flops": None, "peak_flops_kind":
           peak_flops_kind(kernel, variant), "device": getattr(spec, "name", None), "warnings": []}
    if not time_us or time_us <= 0:
        return out
    seconds = time_us * 1e-6
    out["achieved_gbps"] = min_bytes / seconds / 1e9
    out["achieved_tflops"] = flops / seconds / 1e12
    if spec is not None:
        out["pct_peak_bandwidth"] = 100.0 * min_bytes / seconds / spec.memory_bandwidth
        peak = getattr(spec, f"{out['peak_flops_kind']}_flops")
        out["pct_peak_flops"] = 100.0 * flops / seconds / peak
        out["warnings"] = impossible_rates(out, spec)
    return out


def impossible_rates(out: dict, spec) -> list[str]:
    """Warnings for a time no device could reach: the kernel's minimum bytes or its FLOPs over the time above the
    device's peak. NOTE: a physical invariant, recorded on the row rather than accepted silently: a modelled time
    that beats it comes from the model or its sampling (a sampled persistent GEMM once extrapolated 0.13x its live
    work, 5x the DRAM's peak at dsv3-decode), a measured one from a broken timer or a kernel that skipped work."""
    warnings = []
    if out["pct_peak_bandwidth"] is not None and out["pct_peak_bandwidth"] > 100.0:
        warnings.append(f"implied DRAM bandwidth {out['achieved_gbps']:.4g} GB/s (the kernel's minimum "
                        f"{out['min_bytes']} bytes in {out['time_us']:.4g} us) is {out['pct_peak_bandwidth']:.0f} % "
                        f"of {spec.name}'s peak {spec.memory_bandwidth / 1e9:.4g} GB/s: the time is not physical")
    if out["pct_peak_flops"] is not None and out["pct_peak_flops"] > 100.0:
        warnings.append(f"implied {out['achieved_tflops']:.4g} TFLOP/s is {out['pct_peak_flops']:.0f} % of "
                        f"{spec.name}'s {out['peak_flops_kind']} peak: the time is not physical")
    return warnings

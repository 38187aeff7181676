"""The cheap version of benchmarks/scale_memory.py: grouped_gemm at dsv3-decode (14 GiB of weights) on ptxsim with
two sampled CTAs and lazy inputs passes its check on the simulated subset, touching a few hundred MB."""
import numpy as np

from contract.generators import KeyedNormal


def test_dsv3_decode_grouped_gemm_sampled_and_lazy():
    import ptx_impl
    from contract.footprint import estimate_memory
    from contract.kernels import get_kernel
    from contract.presets import get_preset
    from harness.backends.sim import SimBackend
    from harness.verify import run_kernel, was_sampled

    preset = get_preset("dsv3-decode")
    backend = SimBackend(sample_ctas=2, wave_ctas=2)  # one 2-CTA wave (sampling simulates whole waves)
    inputs, outputs, records = run_kernel(ptx_impl.IMPLEMENTATION.kernels["grouped_gemm"], backend, "grouped_gemm",
                                          preset, "balanced", 0, variant="up")  # lazy chosen by size
    assert isinstance(inputs["w"], KeyedNormal) and inputs["w"].nbytes == 14 << 30
    assert was_sampled(records)
    stats = backend.memory_stats()
    assert stats["heap_bytes"] > 14 << 30
    filled = stats["lazy_pages_filled"] * stats["lazy_page_bytes"]
    assert filled < 512 << 20 and stats["shadow_bytes"] == 0
    estimate = estimate_memory("grouped_gemm", preset, "up", sample_ctas=2)
    assert estimate.lazy and filled <= estimate.sim_bytes < 2 << 30  # the estimate bounds what was committed
    result = get_kernel("grouped_gemm").check(outputs, inputs, preset, sampled=True)
    assert result.ok, result.message
    assert result.errors["blocks_checked"] >= 1 and 0 < result.errors["coverage"] < 0.01
    assert np.isnan(outputs["c"][-1].astype(np.float32)).all()  # untouched rows stay poison


def test_benchmark_script_runs(capsys):
    import importlib.util
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "scale_memory.py"
    spec = importlib.util.spec_from_file_location("scale_memory", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--preset", "tiny", "--ctas", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["check"]["ok"] and out["check"]["errors"]["sampled"] and out["peak_rss_mib"] > 0
    assert out["estimate_mib"]["total"] < out["estimate_mib"]["total_without_lazy_inputs"]

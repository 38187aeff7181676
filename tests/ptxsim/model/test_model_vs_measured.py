"""The timing model against real GPU measurements, when profiles/ holds a GPU run.

A GPU run (`ptxmoe compare --backend gpu`) records, next to each measured row, the model's estimate for the same
implementation, preset and inputs (`row["model_estimate"]`, harness/timing/model_estimate.py: a sampled ptxsim run).
Every measured row must carry an estimate with a limiter (or the recorded reason it was skipped); the goal, not yet
calibrated, is estimate / measured within 30 % for memory-bound rows. The machinery is exercised on a synthetic GPU
run folder so it runs in CI, where profiles/ holds no GPU run.
"""
import json
import sys
from pathlib import Path

import pytest

from harness.results import RunFile

PROFILES = Path(__file__).resolve().parents[3] / "profiles"
MEMORY_BOUND = ("dram", "l2", "latency")
BAND = (1 / 1.3, 1.3)


def gpu_run_files(profiles: Path) -> list[RunFile]:
    """The run folders under `profiles` whose run.json is a GPU run (RunFile.load refuses other schema versions)."""
    gpu = [p.parent for p in sorted(profiles.glob("*/run.json"))
           if json.loads(p.read_text()).get("settings", {}).get("backend") == "gpu"]
    return [RunFile.load(d) for d in gpu]


def comparisons(profiles: Path) -> list[dict]:
    """One entry per measured row of every GPU run: identity, measured and estimated µs, ratio, limiter, problem."""
    out = []
    for run in gpu_run_files(profiles):
        for row in run.doc["rows"]:
            device = ((row.get("timing") or {}).get("device") or {})
            if row.get("status") != "ok" or device.get("median_us") is None:
                continue
            est = row.get("model_estimate")
            entry = {"run": run.doc["run_id"], "key": row["key"], "kernel": row["kernel"], "impl": row["impl"],
                     "preset": row["preset"], "skew": row["skew"], "measured_us": float(device["median_us"]),
                     "estimate_us": None, "ratio": None, "limiter": None, "skipped": None, "problem": None}
            if est is None:
                entry["problem"] = "no model_estimate recorded (a run from before it existed, or --no-model-estimate)"
            elif est.get("skipped"):
                entry["skipped"] = est["skipped"]
            elif est.get("modelled_us") is None or not est.get("limiter"):
                entry["problem"] = f"model_estimate has no time or limiter: {est.get('error')}"
            else:
                entry.update(estimate_us=float(est["modelled_us"]), limiter=est["limiter"],
                             ratio=float(est["modelled_us"]) / entry["measured_us"])
            out.append(entry)
    return out


def table(entries: list[dict]) -> str:
    lines = [f"{'row':<44} {'measured us':>12} {'estimate us':>12} {'est/meas':>9}  limiter / note"]
    for e in entries:
        est = "-" if e["estimate_us"] is None else f"{e['estimate_us']:.2f}"
        ratio = "-" if e["ratio"] is None else f"{e['ratio']:.3f}"
        note = e["limiter"] or e["skipped"] or e["problem"]
        lines.append(f"{e['key']:<44} {e['measured_us']:>12.2f} {est:>12} {ratio:>9}  {note}")
    return "\n".join(lines)


def problems(entries: list[dict]) -> list[str]:
    return [f"{e['run']}: {e['key']}: {e['problem']}" for e in entries if e["problem"]]


def out_of_band(entries: list[dict]) -> list[str]:
    return [f"{e['key']}: estimate/measured {e['ratio']:.3f} ({e['limiter']}-bound)" for e in entries
            if e["limiter"] in MEMORY_BOUND and not BAND[0] <= e["ratio"] <= BAND[1]]


def _entries_or_skip() -> list[dict]:
    entries = comparisons(PROFILES)
    if not entries:
        pytest.skip(f"no GPU run under {PROFILES} (profiles/*/run.json with settings.backend 'gpu'); run "
                    f"`ptxmoe compare --backend gpu` on a GPU machine to compare the model with measurements")
    return entries


def test_every_measured_row_has_an_estimate_with_a_limiter():
    entries = _entries_or_skip()
    print("\n" + table(entries))
    assert not problems(entries), "\n".join(problems(entries))


@pytest.mark.xfail(strict=False, reason="goal, not yet calibrated")
def test_memory_bound_estimates_within_30_percent():
    entries = _entries_or_skip()
    print("\n" + table(entries))
    assert not out_of_band(entries), "\n".join(out_of_band(entries))


# ------------------------------------------------------------------------------------- the machinery, synthetic
def _real_estimate(kernel: str, impl: str, seed: int, **kw) -> dict:
    from contract.kernels import get_kernel
    from contract.presets import get_preset
    from harness.cell import find_run as _find_run
    from harness.timing.model_estimate import model_estimate

    spec, preset = get_kernel(kernel), get_preset("tiny")
    run, why = _find_run(impl, kernel)
    assert run is not None, why
    return model_estimate(run, spec.make_inputs(preset, "balanced", seed), preset, {}, spec, "H200 SXM", **kw)


def test_model_estimate_of_a_kernel(seed):
    from ptxsim.model import COMPONENTS

    est = _real_estimate("combine", "ptx", seed)
    assert est["error"] is None and est["skipped"] is None and est["launches"]
    assert est["modelled_us"] == pytest.approx(sum(launch["modelled_s"] for launch in est["launches"]) * 1e6)
    assert all(launch["estimate"]["limiter"] in COMPONENTS for launch in est["launches"])
    assert est["limiter"] == max(est["launches"], key=lambda launch: launch["modelled_s"])["estimate"]["limiter"]
    assert est["sample"] == "auto" and est["sample_ctas"] is None
    skipped = _real_estimate("combine", "ptx", seed, max_input_bytes=1000)
    assert "over the" in skipped["skipped"] and skipped["modelled_us"] is None and skipped["launches"] == []


def test_model_estimate_uses_the_sim_rows_sampling(seed, monkeypatch):
    """A GPU row's estimate is the sim row's figure: the simulation runs under the --sample policy for the row's
    preset (rows_per_wave from its routing blocks), not 16 scattered CTAs, unless a caller asks for those."""
    import harness.backends.sim as sim_backend

    made = []
    real = sim_backend.SimBackend

    def spy(*args, **kwargs):
        made.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(sim_backend, "SimBackend", spy)
    policy = _real_estimate("grouped_gemm", "ptx", seed, sample="3")
    scattered = _real_estimate("grouped_gemm", "ptx", seed, sample_ctas=16)
    assert policy["error"] is None and policy["sample"] == "3" and policy["sample_ctas"] is None
    from contract.presets import get_preset

    tiny = get_preset("tiny")
    assert made[0]["sample"].waves == 3 and made[0]["sample"].rows_per_wave == max(1, round(tiny.n_blocks / tiny.E))
    assert made[1] == {"sample_ctas": 16} and scattered["sample"] is None


def test_model_estimate_records_a_failing_run():
    from contract.kernels import get_kernel
    from contract.presets import get_preset
    from harness.timing.model_estimate import model_estimate

    def broken(backend, args, preset):
        raise ValueError("kernel exploded")

    spec, preset = get_kernel("gate"), get_preset("tiny")
    est = model_estimate(broken, spec.make_inputs(preset, "balanced", 1), preset, {}, spec, "H200 SXM")
    assert est["modelled_us"] is None and "ValueError: kernel exploded" in est["error"]


def _gpu_row(key: str, measured_us: float, model_estimate, status: str = "ok") -> dict:
    kernel, impl, preset, skew = key.split("/")
    return {"key": key, "kernel": kernel, "variant": None, "impl": impl, "preset": preset, "skew": skew,
            "backend": "gpu", "status": status, "timing": {"basis": "measured", "device": {"median_us": measured_us}},
            "model_estimate": model_estimate}


def test_machinery_on_a_synthetic_gpu_run(tmp_path, monkeypatch, rng, seed, capsys):
    """A GPU run folder with: a row whose real estimate is within the band, one far outside it, one skipped (too
    big), one from before estimates were recorded, one failed row (ignored); plus a sim run (ignored)."""
    est = _real_estimate("gate", "numba", seed)
    near, far = float(rng.uniform(0.9, 1.1)), float(rng.uniform(2.0, 4.0))
    memory = dict(est, limiter="dram")  # the same estimate labelled memory-bound, so the band applies
    gpu = RunFile.create(tmp_path, "gpu-run", {"backend": "gpu"}, {"backend": "gpu"}, command=[])
    rows = [_gpu_row("gate/numba/tiny/balanced", est["modelled_us"] / near, est),
            _gpu_row("combine/numba/tiny/balanced", memory["modelled_us"] / far, memory),
            _gpu_row("grouped_gemm/ptx/dsv3-decode/balanced", 900.0, {"skipped": "inputs are 15.03 GB, over ..."}),
            _gpu_row("swiglu/ptx/tiny/balanced", 5.0, None),
            _gpu_row("align/ptx/tiny/balanced", 5.0, None, status="failed")]
    for row in rows:
        gpu.add_row(row)
    sim = RunFile.create(tmp_path, "sim-run", {"backend": "sim"}, {"backend": "sim"}, command=[])
    sim.add_row(_gpu_row("gate/numba/tiny/extreme", 1.0, None))
    monkeypatch.setattr(sys.modules[__name__], "PROFILES", tmp_path)

    entries = _entries_or_skip()
    assert [e["key"] for e in entries] == [r["key"] for r in rows[:4]]
    first, second, big, old = entries
    assert first["ratio"] == pytest.approx(near) and first["limiter"] == est["limiter"]
    assert second["ratio"] == pytest.approx(far) and second["estimate_us"] == pytest.approx(est["modelled_us"])
    assert big["skipped"] and big["problem"] is None and old["problem"] and old["estimate_us"] is None
    assert problems(entries) == [f"gpu-run: swiglu/ptx/tiny/balanced: {old['problem']}"]
    bad = out_of_band(entries)
    assert len(bad) == 1 and bad[0].startswith("combine/numba/tiny/balanced") and "dram-bound" in bad[0]
    if first["limiter"] in MEMORY_BOUND:  # the real estimate's own limiter: in the band by construction
        assert not any(b.startswith("gate/") for b in bad)
    text = table(entries)
    assert f"{near:.3f}" in text and f"{far:.3f}" in text and "15.03 GB" in text
    with pytest.raises(AssertionError, match="swiglu/ptx/tiny/balanced"):
        test_every_measured_row_has_an_estimate_with_a_limiter()
    assert "gate/numba/tiny/balanced" in capsys.readouterr().out


def test_sim_rows_carry_the_estimate_and_its_limiter(tmp_path, seed):
    """`ptxmoe compare --backend sim --preset tiny --kernels gate,combine`: every launch of every row has an
    Estimate row with its limiter, and the row's modelled time is their sum."""
    import io

    from harness.backends.sim import SimBackend
    from harness.runner import CompareSettings, run_sweep
    from ptxsim.model import COMPONENTS

    settings = CompareSettings(backend="sim", presets=("tiny",), skews=("balanced",), kernels=("gate", "combine"),
                               seed=seed, impls=("numba", "ptx"), static=False)
    run_file = RunFile.create(tmp_path, "sim", settings.as_dict(), {"gpu": {}})
    run_sweep(SimBackend(), settings, run_file, progress=io.StringIO())
    assert len(run_file.doc["rows"]) == 4
    for row in run_file.doc["rows"]:
        timing = row["timing"]
        assert row["status"] == "ok" and timing["basis"] == "modelled" and timing["error"] is None, row["key"]
        assert timing["launches"] and all(launch["estimate"]["limiter"] in COMPONENTS for launch in timing["launches"])
        assert timing["modelled_us"] == pytest.approx(sum(launch["modelled_s"] for launch in timing["launches"]) * 1e6)
        assert row["throughput"]["time_us"] == timing["modelled_us"] > 0
        # kernel time with the launch gap apart, and the 95% prediction interval of the predicted absolute rows
        lo, hi = timing["interval_us"]
        assert lo < timing["modelled_us"] < hi and timing["launch_us"] > 0
        assert timing["model_error"]["relative"] > 0
        assert "95% prediction interval of the" in timing["model_error"]["basis"]
        assert "predicted absolute validation rows" in timing["model_error"]["worst_launch"]["basis"]

"""benchmarks/gemm_table.py: DeepGEMM's published table beside the modelled FP8 GEMMs (issue 28 item 6)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("gemm_table", REPO / "benchmarks" / "gemm_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_published_figures_cover_exactly_the_deepgemm_table():
    from contract.presets import DEEPGEMM_TABLE

    bench = _bench()
    assert tuple(bench.PUBLISHED) == DEEPGEMM_TABLE
    assert bench.PUBLISHED["contiguous-4x8192x4096x7168"] == (1346, 434, 1.3)  # README @55ab91f
    assert bench.PUBLISHED["masked-4x256x7168x2048"] == (815, 2047, 1.2)


def test_render_sets_the_implied_cutlass_figure_and_flags_a_failed_check():
    bench = _bench()
    rows = [{"shape": "contiguous-4x8192x4096x7168", "impl": "ptx", "status": "ok", "check": True, "tflops": 700.0,
             "gbps": 300.0, "device": "H800 SXM", "sampled": True},
            {"shape": "contiguous-4x8192x4096x7168", "impl": "cpp", "status": "failed", "check": False,
             "tflops": None, "gbps": None, "device": "H800 SXM", "sampled": False}]
    text = bench.render(rows)
    assert "1035" in text  # 1346 TFLOPS / 1.3
    assert "ptx" in text and "700" in text and "sampled" in text and "CHECK FAILED" in text


def test_runs_a_small_shape_end_to_end_and_reads_it_back(tmp_path, capsys):
    bench = _bench()
    assert bench.main(["--shapes", "2x32x256x128", "--impls", "ptx", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    labels = {line.split()[1] for line in text.splitlines() if line.startswith("contiguous-2x32x256x128")}
    assert labels == {"ptx.r1", "ptx.r2", "ptx.r3", "ptx.r4", "ptx.r5", "ptx.r6", "ptx.r7", "ptx.r8", "ptx.r9",
                      "ptx.r10"}, text
    assert "(top)" in text
    run_json = next(tmp_path.glob("*/run.json"))
    doc = json.loads(run_json.read_text())
    assert doc["settings"]["model_device"] == "H800 SXM"
    assert all(r["timing"]["device"] == "H800 SXM" for r in doc["rows"])
    assert bench.main(["--from", str(run_json)]) == 0
    assert capsys.readouterr().out.split("\n", 1)[1] == text.split("\n", 1)[1]


def test_the_cutlass_column_names_its_configuration(tmp_path, capsys):
    """A cutlass row runs through the compare CLI on sim, passes its check and says which of CUTLASS's candidates it
    ran (a shape the sweep did not cover: CUTLASS's default, said so)."""
    bench = _bench()
    assert bench.main(["--shapes", "2x32x256x128", "--impls", "cutlass", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    (line,) = [ln for ln in text.splitlines() if ln.startswith("contiguous-2x32x256x128")]
    assert line.split()[1] == "cutlass" and " ok" in line
    assert "cooperative 128x128x128 (default, not swept)" in line, line

"""`ptxmoe compare --backend sim --preset tiny --kernels grouped_gemm_fp8` end to end: a row per path and variant,
all passing their checks, and the three pairwise verdicts."""
import json

import pytest

from harness.cli import main

pytestmark = pytest.mark.sim


def test_compare_writes_a_passing_row_per_path(tmp_path, capsys):
    argv = ["compare", "--backend", "sim", "--preset", "tiny", "--kernels", "grouped_gemm_fp8", "--out", str(tmp_path),
            "--no-static", "--no-dashboard", "--quick-timing", "--seed", "7"]
    assert main(argv) == 0, capsys.readouterr().err
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    rows = json.loads((run_dir / "run.json").read_text())["rows"]
    assert sorted((r["impl"], r["variant"]) for r in rows) == sorted(
        (impl, v) for impl in ("numba", "cpp", "ptx") for v in ("up", "down"))
    for row in rows:
        assert row["status"] == "ok" and row["correctness"]["ok"], row["key"]
        assert row["correctness"]["errors"]["worst_block_normwise_rel"] < 1e-2
    assert "grouped_gemm_fp8[up]/tiny/balanced/ptx-vs-cpp" in capsys.readouterr().out

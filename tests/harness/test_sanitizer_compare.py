"""scripts/sanitizer_compare.py: compute-sanitizer logs read per kernel, set beside a sim run's sanitizer findings."""
import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "sanitizer_compare.py"
spec = importlib.util.spec_from_file_location("sanitizer_compare", SCRIPT)
sc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sc)

MEMCHECK = """========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at gate_ptx+0x70
=========     by thread (3,0,0) in block (0,0,0)
=========     Address 0x7f00 is out of bounds
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2f] in libcuda.so.1
========= Invalid __global__ read of size 4 bytes
=========     at cudapy::cuda_impl::permute::permute_kernel[abi:v1](Array<int, 1, C, mutable>)+0x1a0 in permute.py:31
=========     by thread (0,0,0) in block (1,0,0)
========= ERROR SUMMARY: 2 errors
"""
RACECHECK = ("========= COMPUTE-SANITIZER\n"
             "========= Error: Race reported between Write access at grouped_gemm_fp8_ws_m16n128+0x1f0 and Read access "
             "at grouped_gemm_fp8_ws_m16n128+0x2a0 [128 hazards]\n"
             """=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
""")
SYNCCHECK = "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n"


def test_logs_are_read_per_kernel():
    found, summary = sc.parse_log(MEMCHECK)
    assert dict(found) == {"gate_ptx": 1, "permute_kernel": 1} and summary == 2
    assert dict(sc.parse_log(RACECHECK)[0]) == {"grouped_gemm_fp8_ws_m16n128": 1}
    assert sc.parse_log(SYNCCHECK) == ({}, 0)


def test_gpu_and_sim_side_by_side(tmp_path):
    gpu = tmp_path / "sanitize"
    gpu.mkdir()
    for tool, text in (("memcheck", MEMCHECK), ("racecheck", RACECHECK), ("synccheck", SYNCCHECK)):
        (gpu / f"{tool}.log").write_text(text)
    run = tmp_path / "run"
    run.mkdir()
    finding = {"tool": "memcheck", "kernel": "gate_ptx", "count": 1}
    (run / "run.json").write_text(json.dumps({"rows": [{"sanitizer": {"findings": [finding]}}, {"sanitizer": None}]}))
    lines = sc.compare(gpu, run)
    assert lines[0] == "memcheck: differ"
    assert "  gate_ptx: compute-sanitizer 1, ptxsim 1" in lines
    assert "  permute_kernel: compute-sanitizer 1, ptxsim 0" in lines
    assert "racecheck: differ" in lines and "synccheck: both clean" in lines

"""`ptxmoe list` and the CLI's handling of bad input."""
import subprocess
import sys

from harness.cli import main


def test_list_shows_kernels_presets_and_the_wheel_toolchain(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for word in ("gate", "grouped_gemm", "layer", "dsv3-prefill", "extreme", "ptxas", "NVRTC", "nvdisasm"):
        assert word in out
    assert "site-packages" in out and "NOT FOUND" not in out
    assert "GPU:" in out


def test_unknown_command_exits_2_without_traceback():
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "frobnicate"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "invalid choice" in proc.stderr and "Traceback" not in proc.stderr

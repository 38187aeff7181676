"""`ptxmoe list` and the CLI's handling of bad input."""
import subprocess
import sys

import pytest

from harness.cli import main


def test_list_shows_kernels_presets_and_the_wheel_toolchain(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for word in ("gate", "grouped_gemm", "layer", "dsv3-prefill", "extreme", "ptxas", "NVRTC", "nvdisasm"):
        assert word in out
    assert "site-packages" in out and "NOT FOUND" not in out
    assert "GPU:" in out


def test_list_shows_each_ladder_rung_by_rung(capsys, monkeypatch):
    import types

    from contract.registry import Implementation

    fake = types.ModuleType("fake_ptx_impl")
    fake.IMPLEMENTATION = Implementation("ptx", "fake", {"gate": lambda *a, **k: []},
                                         ladders={"gate": ("plain", "async", "tensor cores")})
    monkeypatch.setitem(sys.modules, "ptx_impl", fake)
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = lines.index("  ptx gate:")
    assert lines[at - 1].startswith("ladders")
    assert [line.split()[:3] for line in lines[at + 1:at + 4]] == [["rung", "1", "plain"], ["rung", "2", "async"],
                                                                   ["rung", "3", "tensor"]]
    assert lines[at + 1].rstrip().endswith("row ptx.r1") and lines[at + 3].rstrip().endswith("row ptx  (top)")


def test_unknown_command_exits_2_without_traceback():
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "frobnicate"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "invalid choice" in proc.stderr and "Traceback" not in proc.stderr



@pytest.mark.parametrize("flag, value, valid", [
    ("--preset", "bogus", "dsv3-prefill"), ("--skew", "bogus", "imbalanced"),
    ("--backend", "bogus", "sim"), ("--kernels", "bogus", "grouped_gemm"),
])
def test_unknown_names_exit_2_listing_the_valid_ones(flag, value, valid, tmp_path, capsys):
    assert main(["compare", flag, value, "--out", str(tmp_path), "--no-dashboard"]) == 2
    err = capsys.readouterr().err
    assert f"unknown {flag.strip('-').rstrip('s')} 'bogus'" in err and valid in err and "Traceback" not in err
    assert not any(tmp_path.iterdir())  # nothing half-written

"""Checks shared by the tests of the wgmma rungs (2 and 3) of the PTX FP8 grouped GEMM ladder: run a rung through
kernels.md's check remembering its launches, and count instructions in each entry of its PTX module."""
import re

from contract.presets import Preset
from harness.verify import run_and_check

# BM = 64 (dsv3-prefill's routing block) at a size ptxsim runs in seconds: the n64 entry
BM64 = Preset("fp8-bm64", T=80, H=256, E=8, K=4, G=4, TG=2, I=128, BM=64)
# Kd = 1280 up (10 slabs) and 640 down (5): the 4-stage ring wraps (refills, parity 0, 1, 0) in seconds
DEEP = Preset("fp8-deep", T=24, H=1280, E=4, K=2, G=2, TG=1, I=640, BM=16)


def check(module, backend, preset, skew, seed, variant):
    """Run `module.run` through run_and_check; assert the check passed; return the launch records."""
    records = []

    def run(*args, **params):
        out = module.run(*args, **params)
        records.extend(out)
        return out

    result = run_and_check(run, backend, "grouped_gemm_fp8", preset, skew, seed, variant=variant)
    assert result.ok, f"{getattr(preset, 'name', preset)} {skew} {variant} seed={seed}: {result.message}"
    return records


def entries(ptx: str) -> dict[str, str]:
    """{entry name: its body without comments} of a PTX module."""
    text = re.sub(r"//[^\n]*", "", ptx)
    parts = re.split(r"\.visible \.entry (\w+)\(", text)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def count(body: str, pattern: str) -> int:
    return len(re.findall(pattern, body))


def assert_wgmma_core(body: str, tt: int) -> None:
    """What both rungs share: 4 e4m3 wgmma k32 steps of m64nTT (the first overwriting), the promotion (TT/2 fma,
    every slab, with TT/4 token scales and one weight scale), the stmatrix.trans epilogue, no mma.sync."""
    assert count(body, rf"wgmma\.mma_async\.sync\.aligned\.m64n{tt}k32\.f32\.e4m3\.e4m3 ") == 4
    assert count(body, r"wgmma\.mma_async") == 4 and count(body, r"%p_zd, 1, 1;") == 1
    assert count(body, r"wgmma\.fence\.sync\.aligned;") == 1 and count(body, r"wgmma\.commit_group") == 1
    assert count(body, r"wgmma\.wait_group\.sync\.aligned 0;") == 1
    assert count(body, r"fma\.rn\.f32\s+%acc") == tt // 2
    assert count(body, r"ld\.global\.nc\.f32") == tt // 4 + 1
    assert count(body, r"stmatrix\.sync\.aligned\.m8n8\.x4\.trans\.shared\.b16") == tt // 16
    assert count(body, r"st\.global\.v4\.b32") == tt // 16
    assert "mma.sync" not in body and "cvt.rn.bf16x2.f32" in body and ".e4m3x2" not in body  # no dequantisation
    # the descriptors: 128B swizzle (bits 62-63 = 1) and SBO 1024 (bits 32-45 = 64), k-steps 32 bytes apart
    assert count(body, r"or\.b64\s+%d[AB], %d[AB], 0x4000004000000000;") == 2

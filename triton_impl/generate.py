"""Compile triton_impl's Triton kernels to sm_90a PTX without a GPU and write them under triton_impl/kernels/.

    python -m triton_impl.generate            # rewrite the PTX and kernels/grouped_gemm_fp8.json
    python -m triton_impl.generate --check    # exit 1 when the committed files differ from a fresh compile

Triton compiles for an explicit target (`GPUTarget("cuda", 90, 32)`: sm_90a, as Triton picks the `a` features for
Hopper) from an `ASTSource`, so no driver is needed. The PTX is committed (a clean clone's tests need no Triton and
no compile); kernels/grouped_gemm_fp8.json records per tile the source's SHA-256, Triton's version and the options,
which tests/triton_impl compares with the source (tile variants and options below are the whole configuration).
`ptx_version` 88 (PTX ISA 8.8, CUDA 12.9) instead of Triton 3.9's default 9.x: the project's CUDA 12.9 driver stack
JIT-compiles PTX up to 8.8, and ptxsim knows ISA versions up to 9.0.
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"
SOURCE = KERNEL_DIR / "grouped_gemm_fp8_src.py"
META = KERNEL_DIR / "grouped_gemm_fp8.json"
ENTRY = "grouped_gemm_fp8_triton"
# row tiles: 16 and 32 compile to mma.sync (Triton converts e4m3 to f16, exact), 64 to wgmma m64n128k32 e4m3
TILE_ROWS = (16, 32, 64)
BN = BK = 128
OPTIONS = {"num_warps": 4, "num_stages": 3, "ptx_version": 88}
SIGNATURE = {"a": "*fp8e4nv", "a_scale": "*fp32", "w": "*fp8e4nv", "w_scale": "*fp32", "block_expert": "*i32",
             "total_padded": "*i32", "c": "*bf16", "N": "i32", "Kd": "i32", "BM": "i32",
             "TM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
# arguments Triton may assume 16-divisible (pointers: 16-byte aligned; N and Kd: multiples of 128, checked at launch)
DIVISIBLE = ("a", "a_scale", "w", "w_scale", "block_expert", "total_padded", "c", "N", "Kd")


def source_digest() -> str:
    return hashlib.sha256(SOURCE.read_bytes()).hexdigest()


def ptx_path(tm: int) -> Path:
    return KERNEL_DIR / f"grouped_gemm_fp8_m{tm}n{BN}.ptx"


def compile_tile(tm: int) -> tuple[str, dict]:
    """(PTX text, metadata) of the row tile `tm`, compiled by Triton for sm_90a."""
    import importlib.util
    import os

    # NOTE: no line info: it would embed this checkout's absolute path (.file, DWARF) in the committed PTX
    os.environ["TRITON_DISABLE_LINE_INFO"] = "1"
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9's default, said explicitly (it warns otherwise)
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    spec = importlib.util.spec_from_file_location("grouped_gemm_fp8_src", SOURCE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = module.grouped_gemm_fp8_triton
    names = list(SIGNATURE)
    attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in DIVISIBLE}
    src = ASTSource(fn, SIGNATURE, constexprs={"TM": tm, "BN": BN, "BK": BK}, attrs=attrs)
    compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=dict(OPTIONS))
    meta = {"shared_bytes": int(compiled.metadata.shared), "num_warps": int(compiled.metadata.num_warps),
            "threads": 32 * int(compiled.metadata.num_warps), "entry": compiled.metadata.name}
    return compiled.asm["ptx"], meta


def generate() -> dict:
    import triton

    tiles = {}
    texts = {}
    for tm in TILE_ROWS:
        texts[tm], tiles[str(tm)] = compile_tile(tm)
    meta = {"source_sha256": source_digest(), "triton": triton.__version__, "options": OPTIONS,
            "target": "cuda sm_90a (GPUTarget('cuda', 90, 32))", "BN": BN, "BK": BK, "tiles": tiles}
    return {"meta": meta, "ptx": texts}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    fresh = generate()
    meta_text = json.dumps(fresh["meta"], indent=1, sort_keys=True) + "\n"
    if "--check" in argv:
        stale = [str(ptx_path(tm)) for tm, text in fresh["ptx"].items()
                 if not ptx_path(tm).exists() or ptx_path(tm).read_text() != text]
        if not META.exists() or META.read_text() != meta_text:
            stale.append(str(META))
        print("stale: " + ", ".join(stale) if stale else "up to date")
        return 1 if stale else 0
    for tm, text in fresh["ptx"].items():
        ptx_path(tm).write_text(text)
    META.write_text(meta_text)
    print(f"wrote {len(fresh['ptx'])} PTX files and {META.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Static checks of the CUDA C++ path: the sources are idiomatic C++ (no inline asm, extern "C", __launch_bounds__),
NVRTC's PTX assembles with the wheel's ptxas for sm_90 without spills at every specialisation the presets use, each
descriptor's parameter list is the entry's real signature, and the tuning idioms reach the PTX."""
import re

import pytest

from cpp_impl import act_quant, align, combine, gate, nvrtc, permute, swiglu

MODULES = {"gate": gate, "align": align, "permute": permute, "act_quant": act_quant, "swiglu": swiglu,
           "combine": combine}
PTX_PARAM_TYPE = {".ptr": ".u64", ".u32": ".u32", ".s32": ".s32", ".u64": ".u64", ".f32": ".f32"}
# the compile-time constants the presets need: gate NJ = ceil(E/32) (E = 16, 32, 40, 256), combine K (4, 6, 8)
SPECIALISATIONS = [("gate", {"NJ": nj}) for nj in (1, 2, 8)] + [("combine", {"K": k}) for k in (4, 6, 8, 16)] + \
    [(name, {}) for name in ("align", "permute", "act_quant", "swiglu")]


def _code(text: str) -> str:
    return re.sub(r"//[^\n]*", "", text)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_source_is_plain_cuda_cpp(name):
    src = (nvrtc.KERNEL_DIR / MODULES[name].KERNEL.file).read_text()
    code = _code(src)
    assert not re.search(r"\basm\b", code), "no inline PTX in the C++ path"
    assert re.search(rf'extern "C" __global__ void __launch_bounds__\(\d+\)\s*\n{MODULES[name].KERNEL.entry}\(',
                     code)
    assert "Work split" in src.split("#include")[0] or "Work split" in src.split("extern")[0], "header comment"


@pytest.mark.parametrize("name, defines", SPECIALISATIONS, ids=[f"{n}-{d}" for n, d in SPECIALISATIONS])
def test_assembles_for_sm90_without_spills(name, defines):
    from harness.toolchain import assemble

    kernel = MODULES[name].KERNEL
    _, usage = assemble(kernel.source(**defines), "sm_90", name=f"cpp_{name}.ptx")
    u = usage[kernel.entry]
    assert u.spills == 0 and u.stack_frame_bytes == 0, u
    assert 0 < u.registers <= 64, u  # leaves room for full occupancy
    assert ".local" not in _code(kernel.source(**defines)), "per-thread arrays must stay in registers"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_descriptor_matches_entry_signature(name):
    kernel = MODULES[name].KERNEL
    match = re.search(r"\.visible \.entry (\w+)\((.*?)\n\)", kernel.ptx, re.DOTALL)
    assert match and match.group(1) == kernel.entry
    declared = re.findall(r"\.param (\.\w+) \w+_param_\d+", match.group(2))
    assert declared == [PTX_PARAM_TYPE[t] for _, t in kernel.params]


def test_tuning_idioms_reach_the_ptx():
    src = {name: _code(m.KERNEL.ptx) for name, m in MODULES.items()}
    assert "redux.sync.max.u32" in src["gate"] and "redux.sync.min.u32" in src["gate"]
    assert "match.any.sync.b32" in src["align"] and "popc.b32" in src["align"]
    assert "atom.global" not in src["align"] and "red.global" not in src["align"]  # deterministic: no global atomics
    assert src["act_quant"].count("redux.sync.max.u32") == 1 and "shfl" not in src["act_quant"]
    assert src["act_quant"].count("cvt.rn.satfinite.e4m3x2.f32") == 4
    assert src["act_quant"].count("div.rn.f32") == 9  # the scale and eight quotients: IEEE, bitwise-exact
    assert "ld.global.cs.v4.u32" in src["act_quant"] and "st.global.cs.v2.u32" in src["act_quant"]
    assert src["swiglu"].count("cvt.rn.bf16x2.f32") == 4 and "ex2.approx" in src["swiglu"]
    assert "div.approx.f32" in src["swiglu"] and "div.rn.f32" not in src["swiglu"]
    for name in ("permute", "swiglu", "combine"):
        assert "st.global.cs.v4.u32" in src[name] and "ld.global.nc.v4.u32" in src[name], name


def test_combine_issues_all_k_gathers_before_the_first_fma():
    text = _code(combine.KERNEL.source(K=8))
    loads = [m.start() for m in re.finditer(r"ld\.global\.nc\.v4\.u32", text)]
    first_fma = text.find("fma.rn.f32")
    assert len(loads) == 8 and max(loads) < first_fma


def test_gate_specialisation_unrolls_nj_blocks():
    one, eight = (_code(gate.KERNEL.source(NJ=n)) for n in (1, 8))
    assert one.count("ld.global.nc.f32") == 2 and eight.count("ld.global.nc.f32") == 16  # logits + bias per block

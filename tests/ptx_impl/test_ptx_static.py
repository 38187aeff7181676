"""Static checks of the hand-written PTX: it assembles for sm_90 without spills, loads on CUDA 12.4+ drivers,
is documented, and every descriptor's parameter list is the entry's real signature."""
import re

import pytest

from harness import impl_static
from ptx_impl import act_quant, align, combine, gate, permute, static, swiglu
from ptx_impl.descriptor import expand_unrolls

MODULES = {"gate": gate, "align": align, "permute": permute, "act_quant": act_quant, "swiglu": swiglu,
           "combine": combine}
PTX_PARAM_TYPE = {".ptr": ".u64", ".u32": ".u32", ".s32": ".s32", ".u64": ".u64", ".f32": ".f32"}


@pytest.fixture(scope="module")
def reports():
    return impl_static.ptx_resource_reports()


@pytest.mark.parametrize("name", sorted(MODULES))
def test_assembles_for_sm90_without_spills(name, reports):
    usage = reports[name][MODULES[name].KERNEL.entry]
    assert usage.spills == 0 and usage.stack_frame_bytes == 0, usage
    assert 0 < usage.registers <= 64, usage  # leaves room for full occupancy of the streaming kernels


@pytest.mark.parametrize("name", sorted(MODULES))
def test_version_target_and_header(name):
    text = MODULES[name].KERNEL.ptx
    version = re.search(r"^\.version (\d+)\.(\d+)", text, re.M)
    assert version and (int(version.group(1)), int(version.group(2))) <= (8, 4), "must load on CUDA 12.4 drivers"
    assert re.search(r"^\.target sm_90\s*$", text, re.M)
    header = text.split(".version")[0]
    assert len(header.splitlines()) >= 15 and ("Phases" in header or "Math" in header), "kernel header comment"
    assert "$" not in text and "//@" not in text, "unexpanded template left in the PTX"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_descriptor_matches_entry_signature(name):
    kernel = MODULES[name].KERNEL
    text = kernel.ptx
    match = re.search(r"\.visible \.entry (\w+)\((.*?)\n\)", text, re.S)
    assert match and match.group(1) == kernel.entry
    declared = re.findall(r"\.param (\.\w+) p_(\w+)", match.group(2))
    assert [(n, t) for t, n in declared] == [(n, PTX_PARAM_TYPE[t]) for n, t in kernel.params]


def _code(text: str) -> str:
    return re.sub(r"//[^\n]*", "", text)


def test_hopper_instructions_are_used():
    src = {name: _code(text) for name, text in static.ptx_sources().items()}
    assert "ld.global.nc.L1::no_allocate.v4.u32" in src["act_quant"]
    assert src["act_quant"].count("cvt.rn.satfinite.e4m3x2.f32") == 4
    assert src["act_quant"].count("div.rn.f32") == 9  # the scale and eight quotients: IEEE, bitwise-exact
    assert src["swiglu"].count("cvt.rn.bf16x2.f32") == 4 and "ex2.approx.ftz.f32" in src["swiglu"]
    assert "st.global.v4.b32" in src["permute"] and "st.global.v4.b32" in src["combine"]
    assert "redux.sync.max.u32" in src["gate"] and "redux.sync.min.u32" in src["gate"]
    assert "match.any.sync.b32" in src["align"] and "%lanemask_lt" in src["align"]


def test_sass_uses_128_bit_memory_ops():
    from harness.toolchain import sass_histogram

    cubins = impl_static.ptx_cubins()
    for name in ("permute", "swiglu", "combine", "act_quant"):
        hist = sass_histogram(cubins[name])
        assert any(op.startswith("LDG.E.128") or op.startswith("LDG.E.EL.128") or ".128" in op and "LDG" in op
                   for op in hist), (name, hist)


def test_unroll_expansion():
    text = "a\n//@unroll I 0 3\n  x$I y\n//@end\nb\n"
    assert expand_unrolls(text) == "a\n  x0 y\n  x1 y\n  x2 y\nb\n"
    nested = "//@unroll I 0 2\n//@unroll J 0 2\n$I$J\n//@end\n//@end\n"
    assert expand_unrolls(nested) == "00\n01\n10\n11\n"


@pytest.mark.parametrize("kernel, const, values", [(gate, "NJ", range(1, 9)), (combine, "K", (1, 2, 6, 8, 16))])
def test_every_specialisation_assembles_without_spills(kernel, const, values):
    from harness.toolchain import assemble

    texts = {v: kernel.KERNEL.source(**{const: v}) for v in values}
    assert len(set(texts.values())) == len(texts)  # the constant really changes the module
    for v, text in texts.items():
        usage = assemble(text)[1][kernel.KERNEL.entry]
        assert usage.spills == 0 and usage.stack_frame_bytes == 0, (const, v, usage)


def test_unknown_tile_constant_is_an_input_error():
    from harness.errors import InputError

    with pytest.raises(InputError, match=r"tile constants = \['KK'\], expected a subset of \['K'\]"):
        combine.KERNEL.source(KK=3)

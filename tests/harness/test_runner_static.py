"""Static facts: PTX histogram counting, ptxas resources and SASS histogram of a launched PTX text, totals."""
from harness import static
from tests.harness.test_backends_sim import ADD_PTX, SCALE_SIG, scale_rows


def test_ptx_histogram_counts_instructions_only():
    hist = static.ptx_histogram(ADD_PTX)
    assert hist == {"ld": 5, "mov": 3, "add": 3, "cvta": 2, "mad": 1, "setp": 1, "bra": 1, "mul": 1, "st": 1,
                    "ret": 1}
    full = static.ptx_histogram(ADD_PTX, with_modifiers=True)
    assert full["ld.param.u64"] == 2 and full["ld.global.f32"] == 1 and full["add.f32"] == 1


def test_static_facts_of_hand_and_numba_ptx():
    from harness.backends.numba_abi import compile_numba

    compiled = compile_numba(scale_rows, SCALE_SIG)
    facts = static.static_facts({"add": (ADD_PTX, "add_scalar"), "scale_rows": (compiled.ptx, compiled.entry)})
    add = facts["kernels"]["add"]
    assert add["resources"]["registers"] >= 4 and add["resources"]["spills"] == 0 and not add["errors"]
    assert add["sass_histogram"].get("STG.E", 0) + sum(v for k, v in add["sass_histogram"].items()
                                                       if k.startswith("STG")) >= 1
    assert any(k.startswith("LDG") for k in add["sass_histogram"])
    assert facts["kernels"]["scale_rows"]["resources"]["registers"] >= 4
    t = facts["totals"]
    assert t["kernels"] == 2 and t["registers_max"] == max(k["resources"]["registers"]
                                                           for k in facts["kernels"].values())
    assert t["ptx_instructions"] == sum(sum(k["ptx_histogram"].values()) for k in facts["kernels"].values())


def test_bad_ptx_is_recorded_not_raised():
    facts = static.analyse_ptx(ADD_PTX.replace("add.f32 %f3, %f2, %f1;", "add.f32 %f3, %f2, %nope;"), "broken")
    assert facts["resources"] == {} and facts["errors"] and "ptxas" in facts["errors"][0]


def test_sm90a_only_ptx_is_assembled_for_its_target():
    """wgmma needs sm_90a: a module that targets it gets ptxas resources (occupancy for the timing model)."""
    ptx = (".version 8.4\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n  .reg .b32 %d<4>;\n"
           "  .reg .b64 %a;\n  mov.b64 %a, 0;\n  wgmma.fence.sync.aligned;\n"
           "  wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%d0, %d1, %d2, %d3}, %a, %a, 0, 1, 1;\n"
           "  wgmma.commit_group.sync.aligned;\n  wgmma.wait_group.sync.aligned 0;\n  ret;\n}\n")
    facts = static.analyse_ptx(ptx, "wgmma")
    assert not facts["errors"] and facts["resources"]["k"]["registers"] > 0, facts["errors"]


def test_sm90a_modules_are_assembled_for_sm90a():
    """wgmma and setmaxnreg exist only on sm_90a: a module targeting it gets its resources (rung 4 of the FP8 GEMM)."""
    from ptx_impl import gemm_fp8_r4

    ptx, entry = gemm_fp8_r4.ptx_source(16), "grouped_gemm_fp8_ws_m16n128"
    facts = static.analyse_ptx(ptx, "fp8_r4")
    assert not facts["errors"] and facts["resources"][entry]["registers"] == 168
    assert static.resources_of(ptx, entry).registers == 168

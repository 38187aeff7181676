"""harness.implementations: the names, the pairs, --impls parsing, and finding a package's registration."""
import sys
import types

import pytest

from contract.registry import Implementation
from harness import implementations as impls
from harness.errors import UnknownNameError


def test_names_and_pairs_in_one_place():
    assert impls.IMPL_ORDER == ("numba", "cpp", "cutlass", "triton", "ptx")
    assert [p.name for p in impls.PAIRS] == ["ptx-vs-cpp", "ptx-vs-numba", "cpp-vs-numba", "ptx-vs-triton",
                                             "triton-vs-cpp", "triton-vs-numba", "ptx-vs-cutlass", "cutlass-vs-cpp"]
    assert impls.HEADLINE_PAIR.title == "PTX vs CUDA C++"
    assert impls.pairs_of(("ptx", "numba")) == (impls.Pair("ptx", "numba"),)
    assert impls.pairs_of(("cpp",)) == ()
    assert impls.pair_by_name("cpp-vs-numba") == impls.Pair("cpp", "numba")
    with pytest.raises(UnknownNameError, match="unknown implementation pair 'numba-vs-ptx'.*ptx-vs-cpp"):
        impls.pair_by_name("numba-vs-ptx")
    assert impls.canonical_impl("cuda") == "numba" and impls.canonical_impl("ptx") == "ptx"
    assert impls.impl_name("cuda") == "Numba CUDA" and impls.impl_name("other") == "other"


def test_parse_impls():
    assert impls.parse_impls(None) == impls.parse_impls("") == ("numba", "cpp", "cutlass", "triton", "ptx")
    assert impls.parse_impls("ptx, cuda,ptx") == ("numba", "ptx")  # run order, legacy name, no duplicates
    assert impls.parse_impls("ptx,triton") == ("triton", "ptx")
    assert impls.parse_impls("ptx,cutlass") == ("cutlass", "ptx")
    with pytest.raises(UnknownNameError) as err:
        impls.parse_impls("ptx,deepgemm")
    assert "unknown implementation 'deepgemm'" in str(err.value)
    assert "cpp, cutlass, numba, ptx, triton" in str(err.value)
    with pytest.raises(UnknownNameError):
        impls.parse_impls(" , ")


def test_implementation_table_reports_problems_instead_of_raising(monkeypatch):
    good = types.ModuleType("good")
    good.IMPLEMENTATION = Implementation("cpp", "fake", {"gate": print})
    monkeypatch.setitem(sys.modules, "cpp_impl", good)
    assert impls.implementation_table("cpp") == ({"gate": print}, "")
    bare = types.ModuleType("bare")
    monkeypatch.setitem(sys.modules, "cpp_impl", bare)
    table, problem = impls.implementation_table("cpp")
    assert table == {} and "registers no contract.registry.Implementation" in problem
    with pytest.raises(UnknownNameError):
        impls.implementation_table("cuda")  # the old name is for reading files, not for asking
    reason = impls.missing_reason("cpp", "gate")
    assert reason == "not implemented in cpp (cpp_impl registers no gate kernel)"


def test_real_packages_register_under_their_names():
    for name in ("numba", "ptx", "cpp"):
        _, problem = impls.implementation_table(name)
        assert problem == "", problem
    assert {"gate", "layer"} <= set(impls.implementation_table("numba")[0])
    assert {"gate", "layer"} <= set(impls.implementation_table("ptx")[0])

"""The implementations of the kernel contract and their names, in one place.

Three paths: `numba` (cuda_impl/, Numba CUDA), `cpp` (cpp_impl/, CUDA C++ through NVRTC) and `ptx` (ptx_impl/,
hand-written PTX). Each package registers a contract.registry.Implementation as `IMPLEMENTATION`; the harness
imports the ones it is asked for by name. The pairs compared, and which of them is the headline (PTX vs CUDA C++,
the seed's question), are here too, so the runner, run.json, the CLI and the dashboard spell them the same way.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable, TypeVar

from contract.registry import Implementation
from harness.errors import UnknownNameError

# name -> package, in the order rows are run and series are drawn
IMPLS = {"numba": "cuda_impl", "cpp": "cpp_impl", "ptx": "ptx_impl"}
IMPL_ORDER = tuple(IMPLS)
# for people: tables, legends, the headline
IMPL_NAMES = {"numba": "Numba CUDA", "cpp": "CUDA C++", "ptx": "PTX"}
# names older run.json files (schema 1) used: the Numba path was "cuda"
LEGACY_IMPL_NAMES = {"cuda": "numba"}


@dataclass(frozen=True)
class Pair:
    """One comparison: `impl` against `baseline`; speedup = baseline time / impl time (> 1: `impl` faster)."""

    impl: str
    baseline: str

    @property
    def name(self) -> str:
        """"ptx-vs-cpp": the suffix of verdict keys and the id of the pair's figures."""
        return f"{self.impl}-vs-{self.baseline}"

    @property
    def title(self) -> str:
        """"PTX vs CUDA C++"."""
        return f"{IMPL_NAMES.get(self.impl, self.impl)} vs {IMPL_NAMES.get(self.baseline, self.baseline)}"


# the headline first (PTX vs CUDA C++), the two against Numba beside it
PAIRS = (Pair("ptx", "cpp"), Pair("ptx", "numba"), Pair("cpp", "numba"))
HEADLINE_PAIR = PAIRS[0]


_Name = TypeVar("_Name")


def canonical_impl(name: _Name) -> _Name | str:
    """The current name of an implementation name read from a file ("cuda" -> "numba"); others unchanged."""
    return LEGACY_IMPL_NAMES.get(name, name) if isinstance(name, str) else name


def impl_name(impl) -> str:
    """The human name of an implementation ("Numba CUDA"), or the name itself when unknown."""
    return IMPL_NAMES.get(canonical_impl(impl), str(impl))


def pair_by_name(name: str) -> Pair:
    """The Pair called `name` ("ptx-vs-cpp").

    Raises:
        UnknownNameError: no such pair.
    """
    for pair in PAIRS:
        if pair.name == name:
            return pair
    raise UnknownNameError("implementation pair", name, [p.name for p in PAIRS])


def pairs_of(impls) -> tuple[Pair, ...]:
    """The pairs (in PAIRS order) whose two implementations are both in `impls`."""
    chosen = set(impls)
    return tuple(p for p in PAIRS if p.impl in chosen and p.baseline in chosen)


def parse_impls(text: str | None) -> tuple[str, ...]:
    """--impls: comma-separated names (legacy "cuda" accepted as "numba"), in IMPL_ORDER, no duplicates.

    None or "" means all implementations. Raises UnknownNameError naming the bad entry and the valid names.
    """
    if not text:
        return IMPL_ORDER
    wanted = []
    for part in text.split(","):
        name = canonical_impl(part.strip())
        if not name:
            continue
        if name not in IMPLS:
            raise UnknownNameError("implementation", name, IMPLS)
        wanted.append(name)
    if not wanted:
        raise UnknownNameError("implementation", text, IMPLS)
    return tuple(i for i in IMPL_ORDER if i in wanted)


def implementation_table(impl: str) -> tuple[dict[str, Callable], str]:
    """(kernel -> run function, problem) for one implementation; problem is "" when the package imports."""
    if impl not in IMPLS:
        raise UnknownNameError("implementation", impl, IMPLS)
    package = IMPLS[impl]
    try:
        module = importlib.import_module(package)
        registered = getattr(module, "IMPLEMENTATION", None)
    except Exception as exc:  # noqa: BLE001 - a broken package is reported, not fatal, in `list`/`compare`
        return {}, f"{package} failed to import: {exc}"
    if not isinstance(registered, Implementation):
        return {}, f"{package} registers no contract.registry.Implementation (IMPLEMENTATION) yet"
    if registered.name != impl:
        return {}, f"{package} registers itself as {registered.name!r}, expected {impl!r}"
    return dict(registered.kernels), ""


def missing_reason(impl: str, kernel: str, problem: str = "") -> str:
    """The row reason of a kernel an implementation lacks: "not implemented in cpp (cpp_impl has no gate kernel)"."""
    package = IMPLS.get(impl, impl)
    detail = problem or f"{package} registers no {kernel} kernel"
    return f"not implemented in {impl} ({detail})"

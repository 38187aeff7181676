"""The implementations of the kernel contract and their names, in one place.

The paths: `numba` (cuda_impl/, Numba CUDA), `cpp` (cpp_impl/, CUDA C++ through NVRTC), `cutlass` (cutlass_impl/,
CUTLASS's sm90 GEMMs), `triton` (triton_impl/) and `ptx` (ptx_impl/, hand-written PTX). Each package registers a
contract.registry.Implementation as `IMPLEMENTATION`; the harness imports the ones it is asked for by name. The
pairs compared, and which of them is the headline (PTX vs CUDA C++, the seed's question), are here too, so the
runner, run.json, the CLI and the dashboard spell them the same way.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable, TypeVar

from contract.registry import Implementation
from harness.errors import UnknownNameError

# name -> package, in the order rows are run and series are drawn
IMPLS = {"numba": "cuda_impl", "cpp": "cpp_impl", "cutlass": "cutlass_impl", "triton": "triton_impl",
         "ptx": "ptx_impl"}
IMPL_ORDER = tuple(IMPLS)
# for people: tables, legends, the headline
IMPL_NAMES = {"numba": "Numba CUDA", "cpp": "CUDA C++", "cutlass": "CUTLASS", "triton": "Triton", "ptx": "PTX"}
# names older run.json files (schema 1) used: the Numba path was "cuda"
LEGACY_IMPL_NAMES = {"cuda": "numba"}


@dataclass(frozen=True)
class Pair:
    """One comparison: `impl` against `baseline`; speedup = baseline time / impl time (> 1: `impl` faster)."""

    impl: str
    baseline: str
    own: bool = field(default=False, compare=False)  # a user's pair (ptxmoe.compare): titled by the user's names

    @property
    def name(self) -> str:
        """"ptx-vs-cpp": the suffix of verdict keys and the id of the pair's figures."""
        return f"{self.impl}-vs-{self.baseline}"

    @property
    def title(self) -> str:
        """"PTX vs CUDA C++"; a lower rung of a ladder reads "PTX rung 2 vs CUDA C++"; a user's pair reads as the
        user named its implementations ("mine vs cpp")."""
        if self.own:
            return f"{self.impl} vs {self.baseline}"
        return f"{impl_name(self.impl)} vs {impl_name(self.baseline)}"


# the headline first (PTX vs CUDA C++), the two against Numba beside it; then Triton (issue 28: what vLLM and SGLang
# run for DeepSeek-V3's FP8 MoE GEMM) against PTX, CUDA C++ and Numba where a cell has its row; then CUTLASS (issue
# 28: the vendor's template library, what DeepGEMM was measured against) against PTX and CUDA C++ where it has a row
PAIRS = (Pair("ptx", "cpp"), Pair("ptx", "numba"), Pair("cpp", "numba"),
         Pair("ptx", "triton"), Pair("triton", "cpp"), Pair("triton", "numba"),
         Pair("ptx", "cutlass"), Pair("cutlass", "cpp"))
HEADLINE_PAIR = PAIRS[0]
# The question's two sides (issue 28: "the headline pair becomes PTX vs the best C++ present"): hand PTX, and every
# implementation written in or generated from C++-level code: CUDA C++ through public APIs, CUTLASS's templates,
# Triton. The answer table (harness.answer) and each cell's headline verdict compare PTX with the fastest of these
# that ran ok in the cell; an implementation without the cell's kernel simply has no row there.
PTX_SIDE = "ptx"
CPP_SIDE = ("cpp", "cutlass", "triton")


_Name = TypeVar("_Name")


def canonical_impl(name: _Name) -> _Name | str:
    """The current name of an implementation name read from a file ("cuda" -> "numba"); others unchanged."""
    return LEGACY_IMPL_NAMES.get(name, name) if isinstance(name, str) else name


def impl_name(impl) -> str:
    """The human name of an implementation ("Numba CUDA") or of a lower rung's row slot ("PTX rung 2"), or the name
    itself when unknown."""
    base, number = split_slot(impl) if isinstance(impl, str) else (impl, None)
    if number is None or base not in IMPL_NAMES:  # NOTE: a user's own implementation may be called "v.r2"
        return IMPL_NAMES.get(canonical_impl(impl), str(impl))
    return f"{IMPL_NAMES[base]} rung {number}"


# ------------------------------------------------------------------------------------------------------- ladders
# A kernel written as an ablation ladder (contract.registry.Implementation.ladders, issue #16) has one row per rung in
# each cell: the implementation's plain row ("ptx") is its top rung, and each lower rung is an extra row whose slot
# (the name standing for the implementation in the row key and in verdict pairs) is "<impl>.r<number>": "ptx.r1".
RUNG_MARK = ".r"


def split_slot(slot: str) -> tuple[str, int | None]:
    """("ptx", 2) of the lower-rung slot "ptx.r2"; (slot, None) of a plain implementation name."""
    impl, mark, number = slot.rpartition(RUNG_MARK)
    if mark and impl and number.isdigit() and int(number) >= 1:
        return impl, int(number)
    return slot, None


def is_rung_slot(name) -> bool:
    """True for a lower rung's slot ("ptx.r1"), False for an implementation name."""
    return isinstance(name, str) and split_slot(name)[1] is not None


def row_slot(row) -> str:
    """What stands for a run.json row (a harness.run_records.Row) in its cell: the implementation ("ptx"), or for the
    row of a ladder's lower rung its slot ("ptx.r1")."""
    rung = row.rung
    impl = canonical_impl(row.impl)
    if rung is not None and not rung.top:
        return f"{impl}{RUNG_MARK}{rung.number}"
    return str(impl)


@dataclass(frozen=True)
class Ladder:
    """The rungs of one implementation's laddered kernel: `names` lowest first; the last is the top rung."""

    impl: str
    names: tuple[str, ...]

    @property
    def top(self) -> int:
        return len(self.names)

    def slot(self, number: int) -> str:
        """The row slot of rung `number`: the implementation's name for the top rung, "<impl>.r<number>" below it."""
        return self.impl if number == self.top else f"{self.impl}{RUNG_MARK}{number}"

    def slots(self) -> tuple[str, ...]:
        """Every rung's slot, lowest first (the last is the plain implementation name)."""
        return tuple(self.slot(n) for n in range(1, self.top + 1))

    def number_of(self, slot: str) -> int | None:
        """The rung number of `slot`, None when it is not a slot of this ladder."""
        return next((n for n in range(1, self.top + 1) if self.slot(n) == slot), None)

    def rung(self, slot: str) -> dict | None:
        """run.json's rung record of `slot`: {number, name, of (the number of rungs), top}, or None."""
        number = self.number_of(slot)
        if number is None:
            return None
        return {"number": number, "name": self.names[number - 1], "of": self.top, "top": number == self.top}

    def pairs(self, present) -> tuple[Pair, ...]:
        """The rung verdicts of a cell whose rows have the slots `present`: each rung against the rung below it and
        against each baseline the implementation is compared with in PAIRS (ptx: cpp, then numba); pairs already in
        PAIRS (the top rung against the other paths) are left to pairs_of, so every verdict key stays unique."""
        have = set(present)
        baselines = [p.baseline for p in PAIRS if p.impl == self.impl]
        out: list[Pair] = []
        for number in range(1, self.top + 1):
            slot = self.slot(number)
            if slot not in have:
                continue
            below = [self.slot(number - 1)] if number > 1 else []
            for base in below + baselines:
                pair = Pair(slot, base)
                if base in have and pair not in PAIRS:
                    out.append(pair)
        return tuple(out)


def implementation_ladders(impl: str) -> dict[str, Ladder]:
    """{kernel: Ladder} of the laddered kernels an implementation registers ({} when it has none or fails to
    import: its rows then say why, through implementation_table)."""
    if impl not in IMPLS:
        raise UnknownNameError("implementation", impl, IMPLS)
    try:
        registered = getattr(importlib.import_module(IMPLS[impl]), "IMPLEMENTATION", None)
    except Exception:  # noqa: BLE001 - reported by implementation_table on the rows
        return {}
    if not isinstance(registered, Implementation) or registered.name != impl:
        return {}
    return {kernel: Ladder(impl, tuple(names)) for kernel, names in dict(registered.ladders).items() if names}


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

"""The table entry of an opcode: Spec(handler, class, modifiers, prepare, control, hints). Apart from the table
(ptxsim/ops/__init__.py), which imports every family, so that the families can import this without a circle."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Spec:
    handler: Callable
    klass: str  # instruction class for counters (int, fp32, fp64, fp16, sfu, tensor, convert, ld_global, ...)
    mods: frozenset  # accepted non-type modifiers
    prepare: Callable | None = None  # prepare(ins, decoder, ctx): validate and pre-compute at decode time
    control: bool = False  # handler sets the pc of its lanes itself
    hints: bool = False  # accepts cache/eviction/memory-order hint modifiers


def spec(handler, klass, mods=(), prepare=None, control=False, hints=False) -> Spec:
    return Spec(handler, klass, frozenset(mods), prepare, control, hints)

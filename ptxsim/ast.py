"""AST of a PTX module as the parser produces it (plain frozen dataclasses, no semantics)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Ident:
    name: str  # register, symbol, label or special register (%tid.x keeps its suffix)


@dataclass(frozen=True)
class Imm:
    value: int | float
    kind: str  # "int", "f32" (0fXXXXXXXX), "f64" (0dXXXX... or decimal float)


@dataclass(frozen=True)
class Addr:
    base: str | None  # register or symbol name; None for an absolute [imm]
    offset: int


@dataclass(frozen=True)
class Vec:
    items: tuple


@dataclass(frozen=True)
class Pair:
    first: object
    second: object  # d|p of shfl/setp


@dataclass(frozen=True)
class Not:
    inner: object  # !%p


@dataclass(frozen=True)
class ParenList:
    items: tuple  # (retval0) / (param0, param1) of call


@dataclass(frozen=True)
class Instr:
    opcode: str
    mods: tuple
    operands: tuple
    guard: tuple | None  # (pred name, negated) or None
    line: int
    col: int = 0


@dataclass(frozen=True)
class Label:
    name: str
    line: int


@dataclass(frozen=True)
class RegDecl:
    type: str  # ".f32" etc.
    names: tuple  # ((name, count or None), ...)
    line: int
    vec: int = 1


@dataclass(frozen=True)
class VarDecl:
    space: str  # "global" "shared" "const" "local" "param"
    name: str
    type: str
    align: int
    count: int | None  # elements (dims multiplied); None for `[]` (extern/unsized)
    init: tuple = ()
    line: int = 0
    linkage: tuple = ()
    vec: int = 1

    @property
    def elem_bytes(self) -> int:
        from ptxsim.ptxtypes import type_bits

        return max(type_bits(self.type) // 8, 1) * self.vec

    @property
    def nbytes(self) -> int:
        return self.elem_bytes * (self.count if self.count is not None else 0)


@dataclass(frozen=True)
class Scope:
    opening: bool  # `{` (True) or `}` (False) inside a function body
    line: int


@dataclass
class Function:
    name: str
    kind: str  # "entry" or "func"
    params: list
    rets: list
    body: list | None
    line: int
    directives: dict = field(default_factory=dict)


@dataclass
class ModuleAst:
    version: str = ""
    target: str = ""
    address_size: int = 64
    functions: list = field(default_factory=list)
    variables: list = field(default_factory=list)

"""Decoded form: operand descriptors, decoded instructions, and the per-kernel program (built by decode.py)."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum


class OperandKind(IntEnum):
    """What a decoded operand is (Opnd.kind). The module-level names below are the same members, for brevity in
    handlers: `op.kind == REG` is `op.kind == OperandKind.REG`."""

    REG = 0  # a register (idx, bits)
    IMM = 1  # an immediate (value; sym for a dynamic-shared base resolved at launch)
    SREG = 2  # a special register (%tid.x, ...)
    SYM = 3  # a module symbol's address, resolved at run time
    VEC = 4  # a vector {a, b, ...}
    ADDR = 5  # a memory operand [base+offset]
    LABEL = 6  # a branch target
    PAIR = 7  # p|q
    NOT = 8  # !p
    SINK = 9  # _
    FUNC = 10  # a .func name (call)
    LIST = 11  # a parenthesised argument list (call)


REG, IMM, SREG, SYM, VEC, ADDR, LABEL, PAIR, NOT, SINK, FUNC, LIST = OperandKind


class Opnd:
    """One decoded operand. REG: idx, bits; IMM: value; SREG: name; SYM: name (runtime-resolved address);
    VEC/LIST: items; ADDR: base (Opnd or None), offset, sym (runtime symbol or None); LABEL: target pc;
    PAIR: items (first, second); NOT: items (inner,)."""

    __slots__ = ("kind", "idx", "bits", "value", "name", "items", "base", "offset", "sym", "cache")

    def __init__(self, kind, idx=-1, bits=0, value=None, name="", items=(), base=None, offset=0, sym=None):
        self.kind, self.idx, self.bits, self.value, self.name = kind, idx, bits, value, name
        self.items, self.base, self.offset, self.sym = items, base, offset, sym
        self.cache = {}

    def __repr__(self):
        return {REG: lambda: f"r{self.idx}:{self.name}", IMM: lambda: f"#{self.value}", SREG: lambda: self.name,
                SYM: lambda: f"&{self.name}", ADDR: lambda: f"[{self.base}+{self.offset}]",
                LABEL: lambda: f"@{self.value}"}.get(self.kind, lambda: f"<{self.kind}:{self.items}>")()


class Ins:
    """One decoded instruction: everything the hot loop needs, resolved ahead of time."""

    __slots__ = ("pc", "op", "mods", "modlist", "types", "ops", "guard", "line", "text", "handler", "klass",
                 "control", "target", "aux", "space", "func")

    def __init__(self, pc, op, modlist, types, ops, guard, line, text):
        self.pc, self.op, self.modlist, self.types, self.ops, self.guard = pc, op, modlist, types, ops, guard
        self.mods = frozenset(modlist)
        self.line, self.text = line, text
        self.handler = None
        self.klass = "other"
        self.control = False
        self.target = -1
        self.aux = {}
        self.space = ""
        self.func = ""

    def __repr__(self):
        return f"<{self.pc}: {self.text} (line {self.line})>"


@dataclass(frozen=True)
class ParamSlot:
    name: str
    type: str
    offset: int
    nbytes: int
    align: int


@dataclass(frozen=True)
class FuncFrame:
    """What one activation of a (recursive) .func owns: saved at each call to it, restored when it returns."""

    name: str
    regs: tuple  # register indices
    fparam: tuple  # ((offset, nbytes), ...) in the per-thread frame memory
    local: tuple  # ((offset, nbytes), ...) in .local memory


@dataclass
class Program:
    """A kernel lowered to one flat instruction list (callees appended), with its memory layout."""

    name: str
    instrs: list
    params: list  # [ParamSlot] of the kernel
    param_bytes: int
    reg_bits: list  # bit width per register index (1 = predicate)
    reg_names: list
    shared_static: int  # bytes of static shared variables (dynamic shared starts at shared_dyn_offset)
    shared_dyn_offset: int
    local_bytes: int  # per thread
    frame_bytes: int  # per-thread scratch for .func params / call-site params
    global_syms: list  # module variable names (global/const) this kernel references
    ntid_hint: tuple = ()  # .reqntid (the launch's block must be exactly this)
    maxntid: tuple = ()  # .maxntid (the launch's block may hold at most their product of threads)
    maxnreg: int = 0  # .maxnreg (registers per thread; 0: none): setmaxnreg's register pool (ptxsim/regpool.py)
    lines: dict = field(default_factory=dict)  # pc -> PTX line
    recursive: frozenset = frozenset()  # .func names that can call themselves
    frames: dict = field(default_factory=dict)  # name -> FuncFrame of each recursive .func

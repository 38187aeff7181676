"""Reject at load/decode time what ptxas or the driver rejects, instead of running it silently.

Module checks (`check_module`): known `.version` and `.target`, `.const` data within 64 KB.
Function checks (`label_blocks`): no label defined twice in one `{ }` block.
Instruction checks (`check_instruction`): the PTX ISA's operand type-checking rules for add, mul, setp, selp, atom,
shfl, ld/st, cvt, ...: a register must have the instruction type's width (ld/st/cvt may use wider registers, ISA
"Operand Size Exceeding Instruction-Type Size") and a compatible kind (.b any; .u/.s: .b/.u/.s; .f: .b/.f),
predicates only where a predicate belongs, integer immediates within the type's range (NOTE: ptxas silently
truncates an out-of-range immediate, e.g. 4294967296 in an .s32 add becomes 0; ptxsim refuses it, as it is almost
surely a bug); no stores to a kernel's `.param` space.
"""
from __future__ import annotations

import re

from ptxsim.errors import DecodeError
from ptxsim.program import IMM, NOT, PAIR, REG, VEC

# PTX ISA versions released so far (ISA 1.0 ... 9.0)
KNOWN_VERSIONS = frozenset(
    [f"1.{m}" for m in range(6)] + [f"2.{m}" for m in range(4)] + [f"3.{m}" for m in range(3)]
    + [f"4.{m}" for m in range(4)] + ["5.0"] + [f"6.{m}" for m in range(6)] + [f"7.{m}" for m in range(9)]
    + [f"8.{m}" for m in range(9)] + ["9.0"])
KNOWN_SM = frozenset({10, 11, 12, 13, 20, 21, 30, 32, 35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 88, 89,
                      90, 100, 101, 103, 110, 120, 121})
# the first PTX ISA version of each target (PTX ISA release notes; ptxas refuses older .version)
MIN_VERSION = {50: (4, 0), 52: (4, 1), 53: (4, 2), 60: (5, 0), 61: (5, 0), 62: (5, 0), 70: (6, 0), 72: (6, 1),
               75: (6, 3), 80: (7, 0), 86: (7, 1), 87: (7, 4), 89: (7, 8), 90: (7, 8), 100: (8, 6), 101: (8, 6),
               103: (8, 8), 120: (8, 7), 121: (8, 8)}
MIN_VERSION_SUFFIX = {"a": (8, 0), "f": (8, 8)}  # sm_90a needs 8.0; family targets (sm_100f) 8.8
TARGET_OPTIONS = frozenset({"texmode_unified", "texmode_independent", "debug", "map_f64_to_f32"})
_TARGET = re.compile(r"^(?:sm|compute)_(\d+)([af]?)$")
CONST_BANK_BYTES = 64 * 1024
MAX_QUOTE = 200  # characters of a source line quoted in an error message

# opcode -> operand roles: "t" the instruction type, "p" a predicate, "p?" an optional predicate, "dp" a predicate
# destination or a p|q pair, "dt" a destination of the type or a d|p pair, "a" an address (not checked here), "w" a
# data register at least as wide as the type (ld/st; vectors element-wise). Only instructions whose every operand has
# one of these roles.
_SAME = ("t", "t", "t")
ROLES = {
    "add": _SAME, "sub": _SAME, "min": _SAME, "max": _SAME, "and": _SAME, "or": _SAME, "xor": _SAME,
    "addc": _SAME, "subc": _SAME, "div": _SAME, "rem": _SAME, "copysign": _SAME,
    "mul": _SAME, "mad": ("t", "t", "t", "t"), "fma": ("t", "t", "t", "t"),
    "neg": ("t", "t"), "abs": ("t", "t"), "not": ("t", "t"), "cnot": ("t", "t"), "rcp": ("t", "t"),
    "sqrt": ("t", "t"), "rsqrt": ("t", "t"), "sin": ("t", "t"), "cos": ("t", "t"), "lg2": ("t", "t"),
    "ex2": ("t", "t"), "tanh": ("t", "t"), "mov": ("t", "t"),
    "setp": ("dp", "t", "t", "p?"), "selp": ("t", "t", "t", "p"),
    "atom": ("t", "a", "t", "t"), "red": ("a", "t"),
    "ld": ("w", "a"), "ldu": ("w", "a"), "st": ("a", "w"),
    "shfl": ("dt", "t", "t", "t", "t"),
}
_LOGIC = {"pred", "b16", "b32", "b64"}
_MEMORY = {"b8", "b16", "b32", "b64", "b128", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "f16", "f16x2",
           "bf16", "bf16x2", "f32", "f64"}
ALLOWED_TYPES = {"shfl": {"b32"}, "and": _LOGIC, "or": _LOGIC, "xor": _LOGIC, "not": _LOGIC,
                 "cnot": {"b16", "b32", "b64"}, "ld": _MEMORY, "ldu": _MEMORY, "st": _MEMORY}  # the types they take
_COMPATIBLE = {"b": None, "u": {"b", "u", "s"}, "s": {"b", "u", "s"}, "f": {"b", "f"}}


def quote(text: str) -> str:
    """A source line shortened to at most MAX_QUOTE characters for an error message."""
    text = text.strip()
    return text if len(text) <= MAX_QUOTE else text[:MAX_QUOTE - 3] + "..."


def check_module(ast) -> None:
    """Raise DecodeError for a module ptxas would refuse as a whole."""
    if ast.version and ast.version not in KNOWN_VERSIONS:
        raise DecodeError(f".version {ast.version} is not a PTX ISA version ptxsim knows "
                          f"(known: 1.0 ... {max(KNOWN_VERSIONS, key=lambda v: tuple(map(int, v.split('.'))))})")
    for name in filter(None, ast.target.split(",")):
        m = _TARGET.match(name)
        if name not in TARGET_OPTIONS and (m is None or int(m.group(1)) not in KNOWN_SM):
            known = ", ".join(map(str, sorted(KNOWN_SM)))
            raise DecodeError(f".target {name} is not a target ptxsim knows (expected sm_XX / compute_XX with XX in "
                              f"{known}, or one of {', '.join(sorted(TARGET_OPTIONS))})")
        if m is not None and ast.version in KNOWN_VERSIONS:
            need = max(MIN_VERSION.get(int(m.group(1)), (1, 0)), MIN_VERSION_SUFFIX.get(m.group(2), (1, 0)))
            have = tuple(int(x) for x in ast.version.split("."))
            if have < need:
                raise DecodeError(f"PTX .version {ast.version} does not support .target {name} (it needs .version "
                                  f"{need[0]}.{need[1]} or later)")
    const = [v for v in ast.variables if v.space == "const"]
    total = sum(max(v.nbytes, v.elem_bytes) for v in const if v.count is not None)
    if total > CONST_BANK_BYTES:
        biggest = max(const, key=lambda v: v.nbytes)
        raise DecodeError(f".const variables take {total} bytes (largest: {biggest.name}, {biggest.nbytes} bytes at "
                          f"line {biggest.line}); the constant bank holds {CONST_BANK_BYTES} bytes")


def label_blocks(f) -> tuple[dict, dict]:
    """Labels of a function body by `{ }` block: ({block: {label: pc}}, {block: enclosing block}); block 0 is the body.

    Labels are block-scoped in PTX (ptxas resolves a branch to the label of the innermost enclosing block that defines
    it; a label of a nested block is invisible outside it), so inlined asm such as CUTLASS's mbarrier wait may define
    the same label in each copy. Raises DecodeError for a label defined twice in one block, as ptxas does."""
    from ptxsim import ast as A

    labels: dict = {0: {}}
    parent: dict = {0: -1}
    first_line: dict = {}
    stack, pc = [0], 0
    for stmt in f.body:
        if isinstance(stmt, A.Scope):
            if stmt.opening:
                b = len(parent)
                parent[b] = stack[-1]
                labels[b] = {}
                stack.append(b)
            elif len(stack) > 1:
                stack.pop()
        elif isinstance(stmt, A.Label):
            here = labels[stack[-1]]
            if stmt.name in here:
                raise DecodeError(f"line {stmt.line}: label {stmt.name} is already defined at line "
                                  f"{first_line[stack[-1], stmt.name]} in the same block of {f.name}")
            here[stmt.name] = pc
            first_line[stack[-1], stmt.name] = stmt.line
        elif isinstance(stmt, A.Instr):
            pc += 1
    return labels, parent


def check_instruction(ins, reg_types: list) -> None:
    """Operand types of one decoded instruction (reg_types: declared type name per register index)."""
    if ins.op == "st" and ins.aux.space == "kparam":
        raise DecodeError(f"line {ins.line}: `{quote(ins.text)}` stores to the kernel parameter space; kernel "
                          ".param variables are read-only (copy the value to a register or .local first)")
    if ins.op == "cvt" and len(ins.types) == 2 and len(ins.ops) == 2:
        d, s = ins.types
        if ".sat" in ins.mods and d.name == "bf16":
            raise DecodeError(f"line {ins.line}: `{quote(ins.text)}`: .sat is not a modifier of cvt to .bf16 "
                              "(ptxas refuses it)")
        for t in (d, s):
            if t.kind == "b":
                raise DecodeError(f"line {ins.line}: `{quote(ins.text)}`: cvt does not take .{t.name} (use a .u, .s, "
                                  ".f or .bf16 type)")
        _check_operand(ins, 0, ins.ops[0], "w", d, d.bits, reg_types)
        _check_operand(ins, 1, ins.ops[1], "w", s, s.bits, reg_types)
        return
    roles = ROLES.get(ins.op)
    if roles is None:
        return
    if not ins.types:
        raise DecodeError(f"line {ins.line}: `{quote(ins.text)}`: {ins.op} needs a type modifier (.u32, .f32, ...)")
    allowed = ALLOWED_TYPES.get(ins.op)
    if allowed and any(t.name not in allowed for t in ins.types):
        raise DecodeError(f"line {ins.line}: `{quote(ins.text)}`: {ins.op} takes only "
                          f"{', '.join('.' + a for a in sorted(allowed))}")
    t = ins.types[-1] if ins.op in ("setp",) else ins.types[0]
    wide = ".wide" in ins.mods
    for k, op in enumerate(ins.ops):
        role = roles[min(k, len(roles) - 1)]
        if ins.op == "mov" and op.kind not in (REG, IMM):
            return  # vector packing, symbols and special registers have their own forms
        bits = t.bits * 2 if wide and (k == 0 or (ins.op == "mad" and k == 3)) else t.bits
        _check_operand(ins, k, op, role, t, bits, reg_types)


def _where(ins, k) -> str:
    return f"line {ins.line}: operand {k + 1} of `{quote(ins.text)}`"


def _check_operand(ins, k, op, role, t, bits, reg_types) -> None:
    if op.kind == NOT:
        op = op.items[0]
    if role == "a":
        return
    if role == "w":
        for item in (op.items if op.kind == VEC else (op,)):
            if item.kind == REG and (item.bits == 1 or item.bits < min(t.bits, 64)):
                what = "a predicate" if item.bits == 1 else f"{item.bits}-bit"
                raise DecodeError(f"{_where(ins, k)}: {item.name} is {what} .{reg_types[item.idx]} register; "
                                  f"a .{t.name} {ins.op} needs data registers of at least {t.bits} bits")
            if item.kind == REG:
                _check_kind(ins, k, item, t, item.bits, reg_types)
        return
    if op.kind == PAIR and role in ("dp", "dt"):  # p|q of setp; d|p of shfl
        for j, item in enumerate(op.items):
            _check_operand(ins, k, item, "p" if role == "dp" or j else "t", t, bits, reg_types)
        return
    if role == "dt":
        role = "t"
    want_pred = role in ("p", "p?", "dp") or t.kind == "pred"
    if op.kind == REG:
        rt = reg_types[op.idx]
        if want_pred != (op.bits == 1):
            what = "a predicate register" if want_pred else f"a .{t.name} value"
            raise DecodeError(f"{_where(ins, k)}: {op.name} is a .{rt} register where {what} is expected")
        if want_pred:
            return
        if op.bits != bits:
            raise DecodeError(f"{_where(ins, k)}: {op.name} is a {op.bits}-bit .{rt} register; the instruction "
                              f"needs {bits}-bit operands")
        _check_kind(ins, k, op, t, bits, reg_types)
    elif op.kind == IMM and op.sym is None and op.name == "int" and t.kind in ("u", "s", "b") and not want_pred:
        v = int(op.value)
        if not -(1 << (bits - 1)) <= v < (1 << bits):
            raise DecodeError(f"{_where(ins, k)}: immediate {v} does not fit a {bits}-bit .{t.name} operand "
                              f"(range {-(1 << (bits - 1))} ... {(1 << bits) - 1})")
    elif op.kind == IMM and op.name in ("f32", "f64") and t.kind in ("u", "s") and not want_pred:
        raise DecodeError(f"{_where(ins, k)}: floating-point immediate {op.value!r} in a .{t.name} instruction")


def _check_kind(ins, k, op, t, bits, reg_types) -> None:
    """.u/.s instructions take .b/.u/.s registers, .f instructions .b/.f ones (.b instructions any)."""
    rt = reg_types[op.idx]
    ok = _COMPATIBLE.get(t.kind)
    kind = rt[0] if rt[0] in "busf" else "b"
    if ok is not None and kind not in ok:
        raise DecodeError(f"{_where(ins, k)}: {op.name} is a .{rt} register; a .{t.name} instruction takes "
                          f".{'/.'.join(sorted(k_ + str(bits) for k_ in ok))} registers")

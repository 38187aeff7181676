"""What element type each pointer parameter of a PTX entry is read and written as: a static dataflow over the PTX.

An untyped `.u64` parameter (hand PTX, or an `extern "C"` CUDA C++ kernel, whose name carries no types) says nothing
of what it points to; the loads and stores it reaches do. The flow follows a pointer from its `ld.param` through
`cvta` and address arithmetic (`mov`, `add`, `sub`, `mad`, `and`) to the `[address]` of each `ld`/`st`/`atom`/`red`
in global (or generic) space and records the type those name (`ld.global.v4.f32`: f32). A register assigned from
something else stops pointing; arithmetic mixing two parameters' pointers points at neither. Two passes in text
order let a loop's back edge carry a pointer to the code above it.

`expected_element(accesses)` turns what reached one pointer into a verdict: float accesses of one type name the
dtype (f32: float32, bf16: bfloat16); integer accesses of one scalar width name an integer width; bit copies
(`.b32`, `cp.async`), vector integer loads and mixed float types say nothing (a kernel may move any type as bits).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_ENTRY_HEAD = re.compile(r"\.entry\s+([A-Za-z_$][\w$]*)\s*\(([^)]*)\)", re.DOTALL)
_PARAM_NAME = re.compile(r"\.param\s+\.\w+\s+(?:\.ptr\s+\S+\s+)?(?:\.align\s+\d+\s+)?([\w$]+)")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_DIRECTIVE_LINE = re.compile(r"^[ \t]*\.[^\n]*$", re.MULTILINE)
_LABEL = re.compile(r"^\s*[\w$]+:\s*")
_PRED = re.compile(r"^@!?%?[\w$]+\s+")
_ADDRESS = re.compile(r"\[\s*([%\w$]+)\s*(?:[+-][^\]]*)?\]")
_REGISTER = re.compile(r"%[\w$]+")
# ops whose result points where their pointer operand does
_ADDRESS_OPS = frozenset({"mov", "cvta", "add", "sub", "mad", "and"})
_ACCESS_OPS = frozenset({"ld", "ldu", "st", "atom", "red"})
_OTHER_SPACES = frozenset({"param", "shared", "local", "const"})
_FLOATS = {"f16": "float16", "f16x2": "float16", "bf16": "bfloat16", "bf16x2": "bfloat16", "f32": "float32",
           "f64": "float64", "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}
_TYPE = re.compile(r"^(?:[usb](?:8|16|32|64|128)|f16x2|bf16x2|f16|bf16|f32|f64|e4m3x?\d*|e5m2x?\d*)$")


@dataclass(frozen=True)
class Access:
    """One load/store/atomic a pointer reaches: its type (PTX name), vector width (1 for a scalar), PTX line."""

    ptype: str
    vector: int
    line: int
    text: str


@dataclass(frozen=True)
class Expected:
    """What the accesses say a pointer's elements are: a dtype name (float32...), or an integer width in bits."""

    dtype: str | None
    int_bits: int | None
    evidence: Access

    def matches(self, dtype) -> bool:
        import numpy as np

        dtype = np.dtype(dtype)
        if self.dtype is not None:
            return dtype.name == self.dtype
        return dtype.kind not in "iu" or dtype.itemsize * 8 == self.int_bits

    def __str__(self) -> str:
        what = self.dtype if self.dtype is not None else f"a {self.int_bits}-bit integer"
        return f"{what} (it is accessed by `{self.evidence.text}` at PTX line {self.evidence.line})"


def entry_body(ptx: str, entry: str) -> tuple[list[str], str, int] | None:
    """(parameter names, body text, line of the body's start) of `.entry entry`, None when absent."""
    for m in _ENTRY_HEAD.finditer(ptx):
        if m.group(1) != entry:
            continue
        start = ptx.find("{", m.end())
        depth, i = 0, start
        while i < len(ptx):
            if ptx[i] == "{":
                depth += 1
            elif ptx[i] == "}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        names = [p.group(1) for p in _PARAM_NAME.finditer(m.group(2))]
        return names, ptx[start + 1:i], ptx.count("\n", 0, start) + 1
    return None


def _statements(body: str, first_line: int):
    """(line, opcode parts, operand text) of each instruction, comments, labels and predicates stripped."""
    body = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), body)
    # NOTE: directives (.reg, .loc, .pragma) sit one a line, and .loc ends with no ';': blanked, lines kept
    body = _DIRECTIVE_LINE.sub("", body)
    line = first_line
    for raw in body.split(";"):
        here = line + raw[: len(raw) - len(raw.lstrip())].count("\n")
        line += raw.count("\n")
        text = _PRED.sub("", _LABEL.sub("", raw.strip()))
        while _LABEL.match(text):
            text = _LABEL.sub("", text)
        if not text or text.startswith((".", "{", "}")):
            continue
        text = " ".join(text.split())
        head, _, operands = text.partition(" ")
        yield here, head.split("."), operands.strip(), text


def pointer_accesses(ptx: str, entry: str) -> dict[str, list[Access]] | None:
    """{parameter name: the global/generic accesses its pointer reaches}, every parameter present; None when the
    entry is not in the text."""
    found = entry_body(ptx, entry)
    if found is None:
        return None
    names, body, first_line = found
    statements = list(_statements(body, first_line))
    accesses: dict[str, list[Access]] = {n: [] for n in names}
    points: dict[str, str] = {}  # register -> the parameter it points into
    for final in (False, True):
        for line, parts, operands, text in statements:
            op = parts[0]
            if op in _ACCESS_OPS:
                space = next((p for p in parts[1:] if p in _OTHER_SPACES or p == "global"), "")
                address = _ADDRESS.search(operands)
                if op in ("ld", "ldu") and space == "param" and address is not None:
                    dest = _REGISTER.match(operands)
                    if dest is not None:
                        if address.group(1) in accesses:
                            points[dest.group(0)] = address.group(1)
                        else:
                            points.pop(dest.group(0), None)
                    continue
                if final and space not in _OTHER_SPACES and address is not None and address.group(1) in points:
                    types = [p for p in parts[1:] if _TYPE.match(p)]
                    vector = next((int(p[1:]) for p in parts[1:] if re.fullmatch(r"v\d", p)), 1)
                    if types:
                        accesses[points[address.group(1)]].append(Access(types[-1], vector, line, text))
                if op in ("ld", "ldu") or (op == "atom"):
                    dest = _REGISTER.match(operands)
                    if dest is not None:
                        points.pop(dest.group(0), None)
                continue
            regs = _REGISTER.findall(operands)
            if not regs or operands.startswith("["):
                continue
            dest, sources = regs[0], regs[1:]
            pointed = {points[r] for r in sources if r in points}
            if op in _ADDRESS_OPS and len(pointed) == 1:
                points[dest] = pointed.pop()
            else:
                points.pop(dest, None)
    return accesses


def expected_element(accesses: list[Access]) -> Expected | None:
    """What `accesses` say one pointer's elements are, or None when they say nothing (see the module doc)."""
    floats = {_FLOATS[a.ptype] for a in accesses if a.ptype in _FLOATS}
    if len(floats) == 1:
        dtype = floats.pop()
        return Expected(dtype, None, next(a for a in accesses if _FLOATS.get(a.ptype) == dtype))
    if floats:
        return None
    ints = [a for a in accesses if a.ptype[0] in "us"]
    if ints and len(ints) == len(accesses) and all(a.vector == 1 for a in ints):
        widths = {int(a.ptype[1:]) for a in ints}
        if len(widths) == 1:
            return Expected(None, widths.pop(), ints[0])
    return None

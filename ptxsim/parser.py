"""Lexer and parser: PTX text -> ModuleAst. Modifiers are generic tokens; opcodes validate them in decode."""
from __future__ import annotations

import re
import struct

from ptxsim.ast import (
    Addr,
    Function,
    Ident,
    Imm,
    Instr,
    Label,
    ModuleAst,
    Not,
    Pair,
    ParenList,
    RegDecl,
    Scope,
    VarDecl,
)
from ptxsim.errors import PtxSyntaxError
from ptxsim.ptxtypes import is_type

_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\f\v]+|//[^\n]*|/\*.*?\*/)
  | (?P<nl>\n)
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<f32>0[fF][0-9A-Fa-f]{8}(?![0-9A-Za-z_]))
  | (?P<f64>0[dD][0-9A-Fa-f]{16}(?![0-9A-Za-z_]))
  | (?P<hex>0[xX][0-9A-Fa-f]+[uU]?)
  | (?P<bin>0[bB][01]+[uU]?)
  | (?P<float>[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)
  | (?P<int>[0-9]+[uU]?)
  | (?P<mod>\.[A-Za-z0-9_:$]+)
  | (?P<ident>[A-Za-z_$%][A-Za-z0-9_$]*)
  | (?P<punct>[{}()\[\],;:+\-!@|<>=*])
""", re.VERBOSE | re.DOTALL)

_SPECIAL_SUFFIX = {".x", ".y", ".z", ".w"}
_LINKAGE = {".visible", ".extern", ".weak", ".common"}
_SPACES = {".global": "global", ".shared": "shared", ".const": "const", ".local": "local", ".param": "param"}
_PERF = {".maxntid", ".reqntid", ".minnctapersm", ".maxnctapersm", ".maxnreg", ".noreturn", ".pragma",
         ".explicitcluster", ".reqnctapercluster", ".maxclusterrank", ".blocksareclusters"}


class Tok:
    __slots__ = ("kind", "text", "line", "col")

    def __init__(self, kind, text, line, col):
        self.kind, self.text, self.line, self.col = kind, text, line, col

    def __repr__(self):
        return f"{self.kind}:{self.text}@{self.line}:{self.col}"


def tokenize(text: str) -> list[Tok]:
    toks, pos, line, line_start, n = [], 0, 1, 0, len(text)
    while pos < n:
        m = _TOKEN.match(text, pos)
        if m is None:
            col = pos - line_start + 1
            ch = text[pos]
            msg = f"non-ASCII character {ch!r} (PTX is ASCII text)" if ord(ch) > 127 else f"unexpected character {ch!r}"
            raise PtxSyntaxError(msg, line, col, _line_text(text, line))
        kind = m.lastgroup
        s = m.group()
        if kind == "nl":
            line += 1
            line_start = m.end()
        elif kind == "ws":
            if "\n" in s:
                line += s.count("\n")
                line_start = pos + s.rfind("\n") + 1
        else:
            toks.append(Tok(kind, s, line, pos - line_start + 1))
        pos = m.end()
    toks.append(Tok("eof", "", line, pos - line_start + 1))
    return toks


def _line_text(text: str, line: int) -> str:
    lines = text.split("\n")
    return lines[line - 1].rstrip() if 0 < line <= len(lines) else ""


def _int(tok: Tok) -> int:
    s = tok.text.rstrip("uU")
    if tok.kind == "hex":
        return int(s, 16)
    if tok.kind == "bin":
        return int(s[2:], 2)
    if len(s) > 1 and s.startswith("0"):
        return int(s, 8)
    return int(s)


class Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = tokenize(text)
        self.i = 0

    # -- token helpers -------------------------------------------------------------------------------------------
    def peek(self, k=0) -> Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self) -> Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def error(self, msg: str, tok: Tok | None = None):
        tok = tok or self.peek()
        got = tok.text or "end of input"
        got = got if len(got) <= 60 else got[:57] + "..."
        raise PtxSyntaxError(f"{msg} (got {got!r})", tok.line, tok.col, _line_text(self.text, tok.line))

    def expect(self, text: str) -> Tok:
        t = self.peek()
        if t.text != text:
            self.error(f"expected {text!r}")
        return self.next()

    def accept(self, text: str) -> bool:
        if self.peek().text == text:
            self.i += 1
            return True
        return False

    def ident(self) -> str:
        t = self.peek()
        if t.kind != "ident":
            self.error("expected an identifier")
        self.i += 1
        return t.text

    def integer(self) -> int:
        neg = self.accept("-")
        t = self.peek()
        if t.kind not in ("int", "hex", "bin"):
            self.error("expected an integer")
        self.i += 1
        return -_int(t) if neg else _int(t)

    # -- module --------------------------------------------------------------------------------------------------
    def parse(self) -> ModuleAst:
        mod = ModuleAst()
        while self.peek().kind != "eof":
            t = self.peek()
            if t.text == ".version":
                self.next()
                v = self.next()
                mod.version = v.text
                if v.kind not in ("float", "int"):
                    self.error("expected a version number", v)
            elif t.text == ".target":
                self.next()
                names = [self.ident()]
                while self.accept(","):
                    names.append(self.ident())
                mod.target = ",".join(names)
            elif t.text == ".address_size":
                self.next()
                mod.address_size = self.integer()
            elif t.text == ".file":
                self.next()
                self.integer()
                while self.peek().kind == "str" or self.peek().text == ",":
                    self.next()
                while self.peek().kind in ("int", "hex"):
                    self.next()
                    self.accept(",")
            elif t.text in (".pragma", ".section"):
                self._skip_statement()
            elif t.text == ";":
                self.next()
            else:
                self._top_decl(mod)
        return mod

    def _skip_statement(self):
        depth = 0
        while True:
            t = self.next()
            if t.kind == "eof":
                self.error("unterminated statement", t)
            if t.text == "{":
                depth += 1
            elif t.text == "}":
                depth -= 1
                if depth == 0:
                    return
            elif t.text == ";" and depth == 0:
                return

    def _top_decl(self, mod: ModuleAst):
        linkage = []
        while self.peek().text in _LINKAGE:
            linkage.append(self.next().text)
        t = self.peek()
        if t.text == ".entry" or t.text == ".func":
            fn = self._function(tuple(linkage))
            if fn is not None:
                mod.functions.append(fn)
        elif t.text in _SPACES:
            mod.variables.append(self._var_decl(tuple(linkage)))
        else:
            self.error("expected a directive, .entry, .func or variable declaration")

    def _param_list(self) -> list:
        params = []
        self.expect("(")
        if self.accept(")"):
            return params
        while True:
            params.append(self._var_decl((), in_params=True))
            if self.accept(")"):
                return params
            self.expect(",")

    def _function(self, linkage) -> Function | None:
        kind_tok = self.next()
        kind = "entry" if kind_tok.text == ".entry" else "func"
        rets = []
        while self.peek().text in (".attribute",):
            self.next()
            self._skip_parens()
        if kind == "func" and self.peek().text == "(":
            rets = self._param_list()
        name = self.ident()
        params = self._param_list() if self.peek().text == "(" else []
        directives = {}
        while self.peek().text in _PERF:
            d = self.next().text
            vals = []
            while self.peek().kind in ("int", "hex") or self.peek().text == ",":
                t = self.next()
                if t.text != ",":
                    vals.append(_int(t))
            directives[d.lstrip(".")] = tuple(vals)
        if self.accept(";"):
            return Function(name, kind, params, rets, None, kind_tok.line, directives)  # prototype
        body = self._body()
        return Function(name, kind, params, rets, body, kind_tok.line, directives)

    def _skip_parens(self):
        self.expect("(")
        depth = 1
        while depth:
            t = self.next()
            depth += {"(": 1, ")": -1}.get(t.text, 0)

    def _var_decl(self, linkage, in_params=False, space=None) -> VarDecl:
        line = self.peek().line
        if space is None:
            t = self.next()
            if t.text not in _SPACES:
                self.error("expected a state space", t)
            space = _SPACES[t.text]
        align, vec, typ = 0, 1, None
        while self.peek().kind == "mod":
            m = self.next().text
            if m == ".align":
                align = self.integer()
            elif m in (".v2", ".v4", ".v8"):
                vec = int(m[2:])
            elif is_type(m):
                typ = m.lstrip(".")
            # .ptr .global .const etc. of kernel pointer params are attributes: ignored
        if typ is None:
            self.error("expected a type in the declaration")
        name = self.ident()
        count, dims = None, []
        if self.peek().text == "<":  # .reg-style range in a .param? not legal, but be lenient
            self.error("ranges <N> are only allowed on .reg")
        while self.accept("["):
            if self.accept("]"):
                dims.append(None)
                continue
            dims.append(self.integer())
            self.expect("]")
        if dims:
            if None in dims:
                count = None
            else:
                count = 1
                for d in dims:
                    count *= d
        else:
            count = 1
        init = ()
        if self.accept("="):
            init = tuple(self._initializer())
            if count is None:
                count = len(init)
        if not in_params:
            self.expect(";")
        return VarDecl(space, name, typ, align, count, init, line, tuple(linkage), vec)

    def _initializer(self) -> list:
        if self.accept("{"):
            out = []
            if self.accept("}"):
                return out
            while True:
                out.extend(self._initializer())
                if self.accept("}"):
                    return out
                self.expect(",")
        return [self._init_scalar()]

    def _init_scalar(self):
        t = self.peek()
        if t.kind == "ident" and t.text in ("generic",):
            self.next()
            self.expect("(")
            name = self.ident()
            self.expect(")")
            return Ident(name)
        if t.kind == "ident":
            self.next()
            return Ident(t.text)
        op = self._number()
        return op.value

    # -- function bodies -----------------------------------------------------------------------------------------
    def _body(self) -> list:
        stmts = []
        open_tok = self.expect("{")
        depth = 1
        stmts.append(Scope(True, open_tok.line))
        while depth:
            t = self.peek()
            if t.kind == "eof":
                self.error("unterminated function body (missing '}')", t)
            if t.text == "{":
                self.next()
                depth += 1
                stmts.append(Scope(True, t.line))
            elif t.text == "}":
                self.next()
                depth -= 1
                stmts.append(Scope(False, t.line))
            elif t.text == ";":
                self.next()
            elif t.text == ".reg":
                stmts.append(self._reg_decl())
            elif t.text in (".local", ".shared", ".param", ".global", ".const"):
                stmts.append(self._var_decl(()))
            elif t.text in (".loc", ".pragma", ".file", ".section", ".maxnreg") or t.text.startswith(".dwarf"):
                self._skip_line_directive()
            elif t.kind == "ident" and self.peek(1).text == ":":
                self.next()
                self.next()
                stmts.append(Label(t.text, t.line))
            elif t.text == "@" or t.kind == "ident":
                stmts.append(self._instruction())
            else:
                self.error("expected an instruction, label or declaration")
        return stmts

    def _skip_line_directive(self):
        t = self.next()
        if t.text == ".pragma":
            while self.next().text != ";":
                pass
            return
        line = t.line
        while self.peek().line == line and self.peek().text not in (";", "}") and self.peek().kind != "eof":
            self.next()
        self.accept(";")

    def _reg_decl(self) -> RegDecl:
        line = self.next().line
        vec, typ = 1, None
        while self.peek().kind == "mod":
            m = self.next().text
            if m in (".v2", ".v4"):
                vec = int(m[2:])
            elif is_type(m):
                typ = m.lstrip(".")
            else:
                self.error("unexpected modifier in .reg declaration")
        if typ is None:
            self.error("expected a type after .reg")
        names = []
        while True:
            name = self.ident()
            count = None
            if self.accept("<"):
                count = self.integer()
                self.expect(">")
            names.append((name, count))
            if not self.accept(","):
                break
        self.expect(";")
        return RegDecl(typ, tuple(names), line, vec)

    def _instruction(self) -> Instr:
        guard = None
        start = self.peek()
        if self.accept("@"):
            neg = self.accept("!")
            guard = (self.ident(), neg)
        t = self.peek()
        if t.kind != "ident":
            self.error("expected an opcode")
        self.next()
        mods = []
        while self.peek().kind == "mod" and self.peek().line == t.line:
            mods.append(self.next().text)
        operands = []
        if self.peek().text != ";":
            while True:
                operands.append(self._operand())
                if not self.accept(","):
                    break
        if self.peek().text != ";":
            self.error(f"expected ',' or ';' after operand of {t.text}")
        self.next()
        return Instr(t.text, tuple(mods), tuple(operands), guard, start.line, start.col)

    def _operand(self):
        first = self._operand1()
        if self.peek().text == "|":
            self.next()
            return Pair(first, self._operand1())
        return first

    def _operand1(self):
        t = self.peek()
        if t.text == "[":
            return self._address()
        if t.text == "{":
            self.next()
            items = []
            while True:
                items.append(self._operand1())
                if self.accept("}"):
                    break
                self.expect(",")
            from ptxsim.ast import Vec

            return Vec(tuple(items))
        if t.text == "(":
            self.next()
            items = []
            if not self.accept(")"):
                while True:
                    items.append(self._operand1())
                    if self.accept(")"):
                        break
                    self.expect(",")
            return ParenList(tuple(items))
        if t.text == "!":
            self.next()
            return Not(self._operand1())
        if t.kind == "ident":
            self.next()
            name = t.text
            if name.startswith("%") and self.peek().kind == "mod" and self.peek().text in _SPECIAL_SUFFIX:
                name += self.next().text
            if self.peek().text == "+" and self.peek(1).kind in ("int", "hex"):  # sym+offset
                self.next()
                return Addr(name, _int(self.next()))
            return Ident(name)
        return self._number()

    def _number(self) -> Imm:
        neg = self.accept("-")
        t = self.next()
        if t.kind == "f32":
            v = struct.unpack(">f", bytes.fromhex(t.text[2:]))[0]
            return Imm(-v if neg else v, "f32")
        if t.kind == "f64":
            v = struct.unpack(">d", bytes.fromhex(t.text[2:]))[0]
            return Imm(-v if neg else v, "f64")
        if t.kind == "float":
            v = float(t.text)
            return Imm(-v if neg else v, "f64")
        if t.kind in ("int", "hex", "bin"):
            v = _int(t)
            return Imm(-v if neg else v, "int")
        self.i -= 1
        self.error("expected an operand")

    def _address(self) -> Addr:
        self.expect("[")
        base, off = None, 0
        t = self.peek()
        if t.kind == "ident":
            base = self.next().text
        elif t.kind in ("int", "hex", "bin") or t.text == "-":
            off = self.integer()
        else:
            self.error("expected a register, symbol or integer address")
        while self.peek().text in ("+", "-"):
            sign = -1 if self.next().text == "-" else 1
            off += sign * self.integer()
        if self.accept(","):  # NOTE: a tensor address [tensorMap, {c0, ..}] becomes Vec((Addr, Vec(coordinates)))
            from ptxsim.ast import Vec

            coords = self._operand1()
            self.expect("]")
            return Vec((Addr(base, off), coords))
        self.expect("]")
        return Addr(base, off)


def parse(text: str) -> ModuleAst:
    """Parse PTX text into a ModuleAst.

    Raises:
        PtxSyntaxError: with line:column and the source line.
    """
    p = Parser(text)
    try:
        return p.parse()
    except RecursionError:
        t = p.peek()
        raise PtxSyntaxError("operands or initialisers nested too deeply", t.line, t.col,
                             _line_text(text, t.line)) from None

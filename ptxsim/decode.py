"""AST -> Program: a flat list of decoded instructions with operand descriptors and resolved branch targets.

Parse and decode happen once per kernel; the executor's hot loop does no string work.
"""
from __future__ import annotations

import re

from ptxsim import ast as A
from ptxsim.errors import DecodeError, ResourceLimitError, UnsupportedInstruction
from ptxsim.ops.fast import specialise
from ptxsim.program import (
    ADDR,
    FUNC,
    IMM,
    LABEL,
    LIST,
    NOT,
    PAIR,
    REG,
    SINK,
    SREG,
    SYM,
    VEC,
    FuncFrame,
    Ins,
    Opnd,
    ParamSlot,
    Program,
)
from ptxsim.ptxtypes import TYPES, is_type, type_bits
from ptxsim.validate import check_instruction, label_blocks, quote

_SREG_BASES = {"%tid", "%ntid", "%ctaid", "%nctaid", "%laneid", "%warpid", "%nwarpid", "%smid", "%nsmid", "%gridid",
               "%clock", "%clock64", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi", "%lanemask_eq",
               "%lanemask_le", "%lanemask_lt", "%lanemask_ge", "%lanemask_gt", "%dynamic_smem_size",
               "%total_smem_size", "%cluster_ctarank", "%cluster_nctarank", "%clusterid", "%nclusterid",
               "%cluster_ctaid", "%cluster_nctaid", "%is_explicit_cluster", "%clock_hi", "%aggr_smem_size",
               "%reserved_smem_offset_begin", "%reserved_smem_offset_end", "%reserved_smem_offset_cap"}
MAX_LOCAL_BYTES = 512 * 1024  # per thread (CUDA's local-memory limit)
MAX_PARAM_BYTES = 32764  # ptxas: "uses too much parameter space (0x8000 bytes, 0x7ffc max)"
MAX_STATIC_SHARED = 48 * 1024  # ptxas: "uses too much shared data (0xc004 bytes, 0xc000 max)"
_RANGE_NAME = re.compile(r"^(.*?)(\d+)$")
_SPACE_MODS = {".global": "global", ".shared": "shared", ".shared::cta": "shared", ".shared::cluster": "shared",
               ".local": "local", ".param": "param", ".param::entry": "param", ".param::func": "param",
               ".const": "const"}


def _entry_registers(directives) -> int:
    """Registers per thread a kernel holds at entry when ptxas can tell: `.maxnreg N`, else the bound `.maxntid` and
    `.minnctapersm` set together (the 64K-register file over the CTAs' threads, down to the 8-register allocation
    unit, at most 255: CUTLASS's warp-specialised kernels declare `.maxntid 384` and `.minnctapersm 1`, which ptxas
    compiles to 168 registers and setmaxnreg then moves); 0 when neither says (setmaxnreg has no pool)."""
    explicit = directives.get("maxnreg")
    if explicit:
        return int(explicit[0])
    threads, ctas = directives.get("maxntid"), directives.get("minnctapersm")
    if not threads or not ctas:
        return 0
    total = int(ctas[0])
    for t in threads:
        total *= int(t)
    return min(255, 65536 // total // 8 * 8) if total else 0


def _align_up(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def _natural_align(decl: A.VarDecl) -> int:
    return decl.align or max(type_bits(decl.type) // 8, 1) * decl.vec


def is_sreg(name: str) -> bool:
    return name.split(".")[0] in _SREG_BASES or name.startswith("%envreg") or name.startswith("%pm")


class _Scopes:
    """Nested declaration scopes of a function body: name -> (kind, payload)."""

    def __init__(self):
        self.stack = [{}]
        self.ranges = [{}]
        self.memo = {}

    def push(self):
        self.stack.append({})
        self.ranges.append({})
        self.memo = {}

    def pop(self):
        self.stack.pop()
        self.ranges.pop()
        self.memo = {}

    def declare(self, name, value):
        self.stack[-1][name] = value
        self.memo = {}

    def declare_range(self, prefix, count, value):
        self.ranges[-1][prefix] = (count, value)
        self.memo = {}

    def lookup(self, name):
        try:
            return self.memo[name]
        except KeyError:
            r = self.memo[name] = self._lookup(name)
            return r

    def _lookup(self, name):
        for d in reversed(self.stack):
            if name in d:
                return d[name]
        m = _RANGE_NAME.match(name)
        if m:
            prefix, num = m.group(1), int(m.group(2))
            for r in reversed(self.ranges):
                if prefix in r and num < r[prefix][0]:
                    return r[prefix][1]
        return None


class Decoder:
    """Lowers one kernel (and every .func it calls) of a ModuleAst into a Program."""

    def __init__(self, mod: A.ModuleAst, table: dict):
        self.mod = mod
        self.table = table
        self.funcs = {}
        for f in mod.functions:
            if f.body is not None or f.name not in self.funcs:
                self.funcs[f.name] = f
        self.module_vars = {v.name: v for v in mod.variables}

    # -- layout --------------------------------------------------------------------------------------------------
    def decode_kernel(self, name: str) -> Program:
        kernel = self.funcs[name]
        self.calls: dict = {}  # caller name -> set of callee names
        order = self._reachable(kernel)
        self.instrs: list[Ins] = []
        self.reg_bits: list[int] = []
        self.reg_names: list[str] = []
        self.reg_types: list[str] = []  # declared type per register (operand type checks)
        self.reg_index: dict = {}
        self.global_syms: set = set()
        self.shared_off = 0
        self.shared_vars: dict = {}
        self.extern_shared: list = []
        self.extern_align: dict = {}  # .extern .shared name -> its alignment
        self.local_off = 0
        self.frame_off = 0
        self.func_entry: dict = {}
        self.func_frames: dict = {}  # name -> (param slots, ret slots)
        self.func_ranges: dict = {}  # name -> {"fparam": [(off, nbytes)], "local": [(off, nbytes)]} (recursion)
        self.pending_calls: list = []
        # kernel params
        params, off = [], 0
        for p in kernel.params:
            a = _natural_align(p)
            off = _align_up(off, a)
            nbytes = p.elem_bytes * (p.count or 1)
            params.append(ParamSlot(p.name, p.type, off, nbytes, a))
            off += nbytes
        self.kparams = {p.name: p for p in params}
        for v in self.mod.variables:
            if v.space == "shared":
                self._place_shared(v)
        # frames of every callee before decoding any body (calls need them)
        for f in order[1:]:
            self.func_frames[f.name] = (self._frame_slots(f.params, f.name), self._frame_slots(f.rets, f.name))
        for f in order:
            self.func_entry[f.name] = len(self.instrs)
            self._decode_function(f, is_kernel=(f is kernel))
        for ins in self.pending_calls:
            ins.target = self.func_entry[ins.aux.callee]
        # NOTE: ptxas starts dynamic shared memory at the strictest alignment of the module's .extern .shared
        # variables, used or not (8 static bytes and `.extern .align 1024` -> "1024 bytes smem"), which swizzled TMA
        # boxes and wgmma operands rely on
        dyn = _align_up(self.shared_off, max([16, *self.extern_align.values()]))
        for v in self.extern_shared:
            self.shared_vars[v] = dyn
        self._patch_shared(dyn)
        prog = Program(name=name, instrs=self.instrs, params=params, param_bytes=off, reg_bits=self.reg_bits,
                       reg_names=self.reg_names, shared_static=self.shared_off, shared_dyn_offset=dyn,
                       local_bytes=_align_up(self.local_off, 16), frame_bytes=_align_up(self.frame_off, 16),
                       global_syms=sorted(self.global_syms), ntid_hint=kernel.directives.get("reqntid", ()),
                       maxntid=kernel.directives.get("maxntid", ()),
                       maxnreg=_entry_registers(kernel.directives))
        if prog.param_bytes > MAX_PARAM_BYTES:
            raise DecodeError(f"kernel {name} declares {prog.param_bytes} bytes of parameters; ptxas allows "
                              f"{MAX_PARAM_BYTES}")
        if prog.shared_static > MAX_STATIC_SHARED:
            raise DecodeError(f"kernel {name} declares {prog.shared_static} bytes of static .shared memory; ptxas "
                              f"allows {MAX_STATIC_SHARED} (use .extern .shared and dynamic shared memory beyond)")
        if prog.local_bytes > MAX_LOCAL_BYTES:
            raise ResourceLimitError(f"kernel {name} needs {prog.local_bytes} bytes of .local memory per thread; "
                                     f"the limit is {MAX_LOCAL_BYTES} bytes (512 KiB)")
        prog.lines = {i.pc: i.line for i in self.instrs}
        prog.recursive = self._recursive()
        prog.frames = {f: self._frame_of(f) for f in prog.recursive}
        for ins in self.pending_calls:
            ins.aux.save = prog.frames.get(ins.aux.callee)
        return prog

    def _reachable(self, kernel):
        order, seen = [kernel], {kernel.name}
        stack = [kernel]
        while stack:
            f = stack.pop()
            for st in f.body or ():
                if isinstance(st, A.Instr) and st.opcode == "call":
                    callee = next((o.name for o in st.operands if isinstance(o, A.Ident)), None)
                    if callee is None or callee not in self.funcs:
                        raise UnsupportedInstruction("call", st.mods, st.line,
                                                     f"callee {callee!r} is not a function of this module "
                                                     "(indirect calls are not supported)")
                    self.calls.setdefault(f.name, set()).add(callee)
                    g = self.funcs[callee]
                    if g.body is None:
                        raise UnsupportedInstruction("call", st.mods, st.line, f"{callee} is declared but not defined")
                    if callee not in seen:
                        seen.add(callee)
                        order.append(g)
                        stack.append(g)
        return order

    def _recursive(self) -> frozenset:
        """Functions that can call themselves (directly or through others): their calls save and restore frames."""
        out = set()
        for f in self.calls:
            seen, todo = set(), list(self.calls.get(f, ()))
            while todo:
                g = todo.pop()
                if g == f:
                    out.add(f)
                    break
                if g not in seen:
                    seen.add(g)
                    todo.extend(self.calls.get(g, ()))
        return frozenset(out)

    def _frame_of(self, name: str) -> FuncFrame:
        regs = tuple(idx for key, idx in self.reg_index.items() if key[0] == name)
        r = self.func_ranges.get(name, {})
        return FuncFrame(name, regs, tuple(r.get("fparam", ())), tuple(r.get("local", ())))

    def _add_range(self, fname, kind, off, nbytes):
        self.func_ranges.setdefault(fname, {}).setdefault(kind, []).append((off, nbytes))

    def _frame_slots(self, decls, fname):
        slots = []
        for p in decls:
            a = _natural_align(p)
            self.frame_off = _align_up(self.frame_off, a)
            nbytes = p.elem_bytes * (p.count or 1)
            slots.append(ParamSlot(p.name, p.type, self.frame_off, nbytes, a))
            self._add_range(fname, "fparam", self.frame_off, nbytes)
            self.frame_off += nbytes
        return slots

    def _place_shared(self, v: A.VarDecl):
        if v.name in self.shared_vars:
            return
        if ".extern" in v.linkage or v.count is None:
            self.extern_shared.append(v.name)
            self.extern_align[v.name] = _natural_align(v)
            self.shared_vars[v.name] = None
            return
        self.shared_off = _align_up(self.shared_off, _natural_align(v))
        self.shared_vars[v.name] = self.shared_off
        self.shared_off += v.nbytes

    def _patch_shared(self, dyn):
        for ins in self.instrs:
            for op in _walk(ins.ops):
                if op.kind in (IMM, ADDR) and op.sym is not None and op.sym.startswith("\0dyn:"):
                    if op.kind == IMM:
                        op.value += dyn
                    else:
                        op.offset += dyn
                    op.sym = None

    # -- bodies --------------------------------------------------------------------------------------------------
    def _decode_function(self, f: A.Function, is_kernel: bool):
        scopes = _Scopes()
        base_pc = len(self.instrs)
        labels, parent = label_blocks(f)
        for block in labels.values():
            for name in block:
                block[name] += base_pc
        if is_kernel:
            for p in self.kparams.values():
                scopes.declare(p.name, ("kparam", p.offset))
        else:
            pslots, rslots = self.func_frames[f.name]
            for s in pslots + rslots:
                scopes.declare(s.name, ("fparam", s.offset))
        ctx = _FnCtx(f, labels, parent, scopes, is_kernel)
        opened = 0
        for st in f.body:
            if isinstance(st, A.Scope):
                if st.opening:
                    scopes.push()
                    opened += 1
                    ctx.enter(opened)
                else:
                    scopes.pop()
                    ctx.leave()
            elif isinstance(st, A.RegDecl):
                for name, count in st.names:
                    payload = ("reg", (f.name, name, id(st)), type_bits(st.type), name, st.type)
                    if count is None:
                        scopes.declare(name, payload)
                    else:
                        scopes.declare_range(name, count, ("regrange", f.name, name, type_bits(st.type), id(st),
                                                           st.type))
            elif isinstance(st, A.VarDecl):
                self._declare_var(st, scopes, f)
            elif isinstance(st, A.Instr):
                self.instrs.append(self._decode_instr(st, ctx))
        if not self.instrs or len(self.instrs) == base_pc or not self.instrs[-1].control:
            # falling off the end of a body is an implicit ret/exit
            self.instrs.append(self._decode_instr(A.Instr("ret", (), (), None, f.body[-1].line), ctx))

    def _declare_var(self, v: A.VarDecl, scopes: _Scopes, f: A.Function):
        if v.space == "shared":
            uniq = f"{f.name}::{v.name}" if v.name in self.shared_vars else v.name
            self._place_shared(A.VarDecl(v.space, uniq, v.type, v.align, v.count, v.init, v.line, v.linkage, v.vec))
            scopes.declare(v.name, ("shared", uniq))
        elif v.space == "local":
            if v.init:
                raise DecodeError(f"line {v.line}: .local variable {v.name} cannot have an initialiser")
            self.local_off = _align_up(self.local_off, _natural_align(v))
            scopes.declare(v.name, ("local", self.local_off))
            self._add_range(f.name, "local", self.local_off, v.nbytes)
            self.local_off += v.nbytes
        elif v.space == "param":
            a = _natural_align(v)
            self.frame_off = _align_up(self.frame_off, a)
            scopes.declare(v.name, ("fparam", self.frame_off))
            self._add_range(f.name, "fparam", self.frame_off, v.elem_bytes * (v.count or 1))
            self.frame_off += v.elem_bytes * (v.count or 1)
        else:
            raise DecodeError(f"line {v.line}: .{v.space} variable {v.name} declared inside a function body "
                              "is not supported (declare it at module scope)")

    def _reg(self, key, bits, name, typ) -> Opnd:
        idx = self.reg_index.get(key)
        if idx is None:
            idx = len(self.reg_bits)
            self.reg_index[key] = idx
            self.reg_bits.append(bits)
            self.reg_names.append(name)
            self.reg_types.append(typ)
        return Opnd(REG, idx=idx, bits=bits, name=name)

    def _resolve_ident(self, name: str, ctx, line: int) -> Opnd:
        found = ctx.scopes.lookup(name)
        if found is not None:
            kind = found[0]
            if kind == "reg":
                return self._reg(found[1], found[2], found[3], found[4])
            if kind == "regrange":
                _, fname, _prefix, bits, sid, typ = found
                return self._reg((fname, name, sid), bits, name, typ)
            if kind in ("kparam", "fparam", "local"):
                return Opnd(IMM, value=found[1], name=name, sym=None)
            if kind == "shared":
                return self._shared_imm(found[1], name)
        if is_sreg(name):
            return Opnd(SREG, name=name)
        target = ctx.label(name)
        if target is not None:
            return Opnd(LABEL, value=target, name=name)
        if name in self.shared_vars:
            return self._shared_imm(name, name)
        if name in self.module_vars:
            v = self.module_vars[name]
            if v.space in ("global", "const"):
                self.global_syms.add(name)
                return Opnd(SYM, name=name)
            if v.space == "local":
                raise DecodeError(f"line {line}: module-scope .local variable {name} is not supported")
        if name in self.funcs:
            return Opnd(FUNC, name=name)
        if name == "_":
            return Opnd(SINK, name="_")
        raise DecodeError(f"line {line}: unknown identifier {quote(name)!r} in {ctx.f.name} (not a declared register, "
                          "label, variable or function)")

    def _shared_imm(self, uniq, name):
        off = self.shared_vars[uniq]
        if off is None:
            return Opnd(IMM, value=0, name=name, sym="\0dyn:" + uniq)
        return Opnd(IMM, value=off, name=name)

    def _operand(self, o, ctx, line) -> Opnd:
        if isinstance(o, A.Ident):
            return self._resolve_ident(o.name, ctx, line)
        if isinstance(o, A.Imm):
            return Opnd(IMM, value=o.value, name=o.kind)
        if isinstance(o, A.Addr):
            if o.base is None:
                return Opnd(ADDR, base=None, offset=o.offset)
            b = self._resolve_ident(o.base, ctx, line)
            if b.kind == REG:
                return Opnd(ADDR, base=b, offset=o.offset)
            if b.kind == IMM:  # param/local/shared symbol: a constant offset in its space
                found = ctx.scopes.lookup(o.base)
                space = found[0] if found else ("shared" if o.base in self.shared_vars else "")
                return Opnd(ADDR, base=None, offset=b.value + o.offset, sym=b.sym, name=space, value=o.base)
            if b.kind == SYM:
                v = self.module_vars[o.base]
                return Opnd(ADDR, base=None, offset=o.offset, sym=o.base, name=v.space, value=o.base)
            raise DecodeError(f"line {line}: {o.base!r} cannot be used as an address base")
        if isinstance(o, A.Vec):
            return Opnd(VEC, items=tuple(self._operand(x, ctx, line) for x in o.items))
        if isinstance(o, A.ParenList):
            return Opnd(LIST, items=tuple(self._operand(x, ctx, line) for x in o.items),
                        name=",".join(getattr(x, "name", "?") for x in o.items))
        if isinstance(o, A.Pair):
            return Opnd(PAIR, items=(self._operand(o.first, ctx, line), self._operand(o.second, ctx, line)))
        if isinstance(o, A.Not):
            return Opnd(NOT, items=(self._operand(o.inner, ctx, line),))
        raise DecodeError(f"line {line}: unexpected operand {o!r}")

    def _decode_instr(self, st: A.Instr, ctx) -> Ins:
        spec = self.table.get(st.opcode)
        if spec is None:
            raise UnsupportedInstruction(st.opcode, st.mods, st.line, "no handler for this opcode")
        types = tuple(TYPES[m[1:]] for m in st.mods if is_type(m))
        modlist = tuple(m for m in st.mods if not is_type(m))
        bad = [m for m in modlist if m not in spec.mods and not _generic_ok(m, spec)]
        if bad:
            raise UnsupportedInstruction(st.opcode, st.mods, st.line, f"modifier(s) {' '.join(bad)} not supported "
                                         f"for {st.opcode} (known: {' '.join(sorted(spec.mods)) or 'none'})")
        ops = tuple(self._operand(o, ctx, st.line) for o in st.operands)
        guard = None
        if st.guard is not None:
            g = self._resolve_ident(st.guard[0], ctx, st.line)
            if g.kind != REG or g.bits != 1:
                raise DecodeError(f"line {st.line}: guard {st.guard[0]} is not a predicate register")
            guard = (g.idx, st.guard[1])
        text = f"{'@' + ('!' if st.guard[1] else '') + st.guard[0] + ' ' if st.guard else ''}" \
               f"{st.opcode}{''.join(st.mods)} " + ", ".join(_fmt(o) for o in st.operands)
        text = quote(text)  # messages quote at most ~200 characters of a source line
        ins = Ins(len(self.instrs), st.opcode, modlist, types, ops, guard, st.line, text)
        ins.func = ctx.f.name
        ins.handler, ins.klass, ins.control = spec.handler, spec.klass, spec.control
        for m in modlist:
            if m in _SPACE_MODS:
                ins.space = _SPACE_MODS[m]
        if spec.prepare is not None:
            try:
                spec.prepare(ins, self, ctx)
            except UnsupportedInstruction:
                raise
            except DecodeError as e:
                raise DecodeError(f"line {st.line}: `{quote(text)}`: {e}") from None
        check_instruction(ins, self.reg_types)
        fast = specialise(ins)  # all-lanes fast path of a hot simple form (ptxsim/ops/fast.py)
        if fast is not None:
            ins.handler = fast
        return ins


def _generic_ok(mod: str, spec) -> bool:
    """Cache and eviction hints are accepted on every memory op that lists `hints`."""
    return spec.hints and (mod.startswith(".L1::") or mod.startswith(".L2::") or mod in
                           (".ca", ".cg", ".cs", ".lu", ".cv", ".wb", ".wt", ".nc", ".weak", ".relaxed", ".acquire",
                            ".release", ".volatile", ".mmio", ".gpu", ".cta", ".sys", ".cluster", ".acq_rel",
                            ".sc", ".relaxed", ".L2::cache_hint", ".unified"))


class _FnCtx:
    def __init__(self, f, labels, parent, scopes, is_kernel):
        self.f, self.labels, self.parent, self.scopes, self.is_kernel = f, labels, parent, scopes, is_kernel
        self.block = 0  # the `{ }` block being decoded (0: the body); blocks are numbered in order of opening

    def enter(self, block: int) -> None:
        self.block = block

    def leave(self) -> None:
        self.block = max(self.parent[self.block], 0)

    def label(self, name: str) -> int | None:
        """pc of label `name` as seen from the current block: its own, else the nearest enclosing block's."""
        b = self.block
        while b >= 0:
            pc = self.labels[b].get(name)
            if pc is not None:
                return pc
            b = self.parent[b]
        return None


def _walk(ops):
    for op in ops:
        yield op
        if op.kind in (VEC, LIST, PAIR, NOT):
            yield from _walk(op.items)
        if op.kind == ADDR and op.base is not None:
            yield op.base


def _fmt(o) -> str:
    if isinstance(o, A.Ident):
        return o.name
    if isinstance(o, A.Imm):
        return repr(o.value)
    if isinstance(o, A.Addr):
        return f"[{o.base or ''}{'+' if o.base and o.offset else ''}{o.offset if o.offset or not o.base else ''}]"
    if isinstance(o, A.Vec):
        return "{" + ", ".join(_fmt(x) for x in o.items) + "}"
    if isinstance(o, A.ParenList):
        return "(" + ", ".join(_fmt(x) for x in o.items) + ")"
    if isinstance(o, A.Pair):
        return _fmt(o.first) + "|" + _fmt(o.second)
    if isinstance(o, A.Not):
        return "!" + _fmt(o.inner)
    return str(o)


__all__ = ["Decoder", "is_sreg", "FUNC", "LABEL", "SINK"]

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


@dataclass(slots=True, eq=False)
class Decoded:
    """What decode works out once for an instruction (Ins.aux), as named attributes: each family's `prepare` sets the
    ones its handlers read (None: not worked out for this instruction). Slots, so a misspelt name fails at decode
    instead of making a new key, and a handler's read is an attribute load, not a string lookup."""

    # shared by several families
    mode: str | None = None  # rounding / shuffle / vote / reduction mode (".rn", ".bfly", ".all", ...)
    n: int | None = None  # wait_group depth, wgmma N, setmaxnreg count
    space: str | None = None  # state space of a memory instruction ("global", "shared", "" generic, ...)
    op: str | None = None  # atomic / redux / vote operation
    class_units: int | None = None  # counter units one instruction stands for (None: 1)
    action: str | None = None  # mbarrier / wmma action
    count_op: object = None  # barrier thread-count operand (Opnd) or, for mbarrier.arrive, whether it has one (bool)
    # alu
    cmp: str | None = None  # setp comparison
    combine: object = None  # setp / set: the boolean combination with the predicate operand (.and/.or/.xor)
    # sync (bar, barrier, bar.warp.sync, vote-likes)
    red: bool | None = None  # bar.red
    redop: str | None = None
    dst: object = None  # bar.red's destination operand (Opnd)
    pred_op: object = None  # bar.red's predicate operand (Opnd)
    has_id: bool | None = None
    members: int | None = None  # bar.warp.sync's immediate member mask
    # memory (ld/st/cp.async/prefetch/cvta)
    regs: object = None  # the data operands (list of Opnd)
    nc: bool | None = None  # ld.global.nc
    noinc: bool | None = None  # cp.async.mbarrier.arrive.noinc: the arrive counts against the expected arrivals
    generic: bool | None = None  # generic addressing
    uniform: bool | None = None  # ld.param of one value for every lane
    kparam_value: tuple | None = None  # (launch serial, value): a uniform ld.param's value, cached per launch
    to: bool | None = None  # cvta.to
    size: int | None = None  # cp.async copy size
    wait_all: bool | None = None  # cp.async.wait_all
    fn: object = None  # the cp.async variant's handler
    # convert
    packed: object = None
    # tensor (mma / wmma / ldmatrix)
    gather: tuple | None = None
    x: int | None = None  # ldmatrix .x1/.x2/.x4
    trans: bool | None = None
    frag: object = None  # a wmma fragment shape
    frags: object = None
    satfinite: bool | None = None
    # wgmma
    regs_named: frozenset | None = None
    atype: str | None = None
    btype: str | None = None
    f16_acc: bool | None = None
    trans_a: bool | None = None
    trans_b: bool | None = None
    a_regs: bool | None = None  # A from registers
    scale_a: int | None = None
    scale_b: int | None = None
    d_rows: object = None
    d_cols: object = None
    a_layout: object = None
    # asynccheck's per-instruction caches (ptxsim/asyncrules.py)
    wg_touch: tuple | None = None
    wg_regs: tuple | None = None
    # mbarrier
    parity: bool | None = None
    expect_tx: bool | None = None
    drop: bool | None = None
    no_complete: bool | None = None
    # bulk (cp.async.bulk{.tensor}, cp.async.bulk.commit/wait_group)
    group_op: str | None = None  # "commit" or "wait"
    multicast: bool | None = None
    src_space: str | None = None
    rank: int | None = None
    tmap: object = None  # the tensor-map operand (Opnd)
    coords: tuple | None = None
    # setmaxnreg
    inc: bool | None = None
    # tensormap.replace (ptxsim/ops/tmapreplace.py) and fence.proxy.tensormap::generic
    field: str | None = None  # the replaced field's PTX name
    vtype: object = None  # its value's PTX type
    bias: int | None = None  # added to the value before the store (rank: rank - 1 -> rank)
    limits: tuple | None = None  # (low, high) values ptxsim takes, or None: checked when a copy uses the map
    dtype: object = None  # the field's NumPy type in ptxsim's 128 bytes
    offset: int | None = None  # its byte offset there
    tmap_fence: bool | None = None  # fence.proxy.tensormap::generic
    # control (call)
    args: object = None  # [(kind, src, dst, nbytes)]
    rets: object = None
    callee: str | None = None
    save: object = None  # FuncFrame of a recursive callee

    def update(self, **fields) -> None:
        """Set several fields at once (at decode)."""
        for name, value in fields.items():
            setattr(self, name, value)


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
        self.aux = Decoded()
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

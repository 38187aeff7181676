"""Per-kernel quantities the timing model takes from the simulated instruction stream instead of fixed constants.

`stream_metrics(instrs, warp_counts)` reads the decoded program (ptxsim.program.Ins: op, klass, ops, guard, control,
target) and the simulator's per-pc warp-instruction counts and returns:

  ptxsim__model_ilp.ratio   instructions one warp issues per clock on its own (0 < ilp <= 1): each basic block is
                            put through an in-order scoreboard (an instruction issues one clock after the previous
                            one, and not before its source registers are ready: producer issue + LATENCY_CLK of the
                            producer's class); ilp = dynamic instructions / dynamic scoreboard clocks. A block that
                            branches to itself is scored on its second iteration, so loop-carried dependencies count.
                            16 independent FMAs -> ~1; a chain of dependent FMAs -> 1 / 4.
  ptxsim__model_mlp.ratio   global loads one warp keeps in flight (>= 1): per block, the most loads issued and not
                            yet consumed (an in-order warp stalls at the first use of a pending load; loads issued
                            before it are taken as returned), averaged over the dynamic load count.
                            A pointer chase -> 1; four independent loads before their first use -> 4.

Global loads have no scoreboard latency here: their latency is the timing model's memory-latency term (which uses
the mlp above), so counting it twice would be wrong. Registers written before a block are ready at its entry.
"""
from __future__ import annotations

from collections.abc import Sequence

# Dependent-issue latency in clocks of a producer's class (what a consumer waits after the producer issues).
# [S1], [S6] = docs/model-validation.md sources (H100 SXM5 / H800 microbenchmarks); [EST] = this project's estimate.
LATENCY_CLK: dict[str, float] = {
    "int": 4.0,        # [EST] ALU dependent-issue latency, ~4 clk on Volta..Hopper (no Hopper figure found)
    "fp32": 4.0,       # [EST] as int
    "fp16": 4.0,       # [EST] as int
    "other": 4.0,      # [EST] as int
    "convert": 8.0,    # [EST] conversions run on the XU pipe; half the SFU latency assumed
    "sfu": 18.0,       # [EST] MUFU latency (S1's one-chain __sinf loop: 29 clk including loop overhead)
    "fp64": 8.0,       # [EST]
    "tensor": 24.1,    # [S6] mma.sync m16n8k16 FP16 completion latency on H800: 24.1 clk (wgmma: tensor_bound.py)
    "ld_shared": 28.6,  # [S1] shared-memory load-to-use latency 28.6 clk
    "warp": 24.0,      # [EST] shuffle/vote through the MIO path, a little under a shared load
    "ld_local": 40.0,  # [S1] local memory hits L1: 40.2 clk
    "ld_param": 0.0,   # folded into constant-bank operands
    "ld_const": 0.0,
    "ld_global": 0.0,  # modelled by the memory-latency term instead
    "atom": 0.0,       # likewise
}
_NO_DEST = {"st", "red", "bar", "barrier", "bra", "ret", "exit", "prefetch", "cp", "membar", "fence", "trap",
            "call", "brkpt", "nanosleep", "griddepcontrol", "mbarrier"}


def _regs(op, out: set) -> None:
    """Register indices an operand names. Duck-typed on ptxsim.program.Opnd (the model imports nothing from the
    simulator core): only register operands carry an index >= 0; vectors/pairs have items, addresses a base."""
    if op is None:
        return
    for item in getattr(op, "items", ()) or ():
        _regs(item, out)
    if getattr(op, "base", None) is not None:
        _regs(op.base, out)
    if getattr(op, "idx", -1) >= 0:
        out.add(op.idx)


def _dest_src(ins) -> tuple[set, set]:
    """(registers written, registers read) of one instruction."""
    dst, src = set(), set()
    ops = list(ins.ops)
    if ins.op in _NO_DEST or ins.klass in ("st_global", "st_shared", "st_local", "barrier", "control") or not ops:
        for op in ops:
            _regs(op, src)
    else:
        _regs(ops[0], dst)
        for op in ops[1:]:
            _regs(op, src)
    if ins.guard is not None:
        src.add(ins.guard[0])
    return dst, src


def _blocks(instrs: Sequence) -> list[tuple[int, int]]:
    """[start, end) pc ranges of the basic blocks."""
    n = len(instrs)
    leaders = {0}
    for ins in instrs:
        if ins.control:
            if ins.pc + 1 < n:
                leaders.add(ins.pc + 1)
            if 0 <= ins.target < n:
                leaders.add(ins.target)
    starts = sorted(leaders)
    return list(zip(starts, starts[1:] + [n], strict=True))


def _score(block: Sequence, info: list, passes: int) -> float:
    """Clocks one warp spends issuing `block` (the last of `passes` back-to-back passes)."""
    ready: dict[int, float] = {}
    clock, span = -1.0, 0.0
    for _ in range(passes):
        begin = clock + 1
        for ins, (dst, src) in zip(block, info, strict=True):
            issue = max([clock + 1] + [ready.get(r, 0.0) for r in src])
            lat = LATENCY_CLK.get(ins.klass, 4.0)
            for r in dst:
                ready[r] = issue + lat
            clock = issue
        span = clock + 1 - begin
    return max(span, float(len(block)))


def _mlp(block: Sequence, info: list) -> tuple[int, float]:
    """(global loads in the block, most of them in flight at once)."""
    pending: list[tuple[int, set]] = []
    loads, most = 0, 0
    for i, (ins, (dst, src)) in enumerate(zip(block, info, strict=True)):
        used = [k for k, (_, regs) in enumerate(pending) if regs & src]
        if used:
            pending = pending[max(used) + 1:]
        if ins.klass == "ld_global" and dst:
            loads += 1
            pending.append((i, dst))
            most = max(most, len(pending))
    return loads, float(max(most, 1))


def stream_metrics(instrs: Sequence, warp_counts) -> dict[str, float]:
    """ILP and MLP of one launch (see the module docstring); {} when nothing ran."""
    ilp_num = ilp_den = mlp_num = mlp_den = 0.0
    for start, end in _blocks(instrs):
        count = float(warp_counts[start]) if start < len(warp_counts) else 0.0
        if count <= 0:
            continue
        block = instrs[start:end]
        info = [_dest_src(ins) for ins in block]
        loops = block[-1].control and block[-1].target == start
        ilp_num += count * len(block)
        ilp_den += count * _score(block, info, 2 if loops else 1)
        loads, most = _mlp(block, info)
        mlp_num += count * loads * most
        mlp_den += count * loads
    out = {}
    if ilp_den:
        out["ptxsim__model_ilp.ratio"] = min(1.0, ilp_num / ilp_den)
    if mlp_den:
        out["ptxsim__model_mlp.ratio"] = max(1.0, mlp_num / mlp_den)
    return out

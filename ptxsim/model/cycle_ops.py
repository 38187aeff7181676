"""Model v2's instructions and memory rates (cycle.py): each decoded PTX instruction as one _Op (kind, pipe, clocks it
holds the pipe, dependent-issue latency, registers), and the launch's per-request memory averages and per-SM server
rates as one _Memory. Kept apart from the schedule (cycle.py) so that file is the scheduler alone.

mbarrier operations (issue #29 item 1, warp-specialised kernels): a test/try_wait is MBAR_WAIT whose `arg` says what
completes the barrier it waits on, as the functional simulation saw it (stats.WarpCounts.mbarrier_waits): WAIT_TX
(async-copy bytes: a ring's full slot), WAIT_ARRIVE (thread arrivals only: an empty slot) or WAIT_ANY (not known:
the CTA's bulk copies, as before); an arrive is MBAR_ARRIVE (`arg` 1 for arrive.expect_tx, which opens a full slot
the warp's next bulk copies complete).
"""
from __future__ import annotations

from dataclasses import dataclass

from ptxsim.model.costs import class_cycles
from ptxsim.model.cycle_table import GLOBAL_LOADS, GLOBAL_STORES, LATENCY_CLK
from ptxsim.model.stream import _dest_src
from ptxsim.model.tensor_counts import EIGHT_BIT, _type_name, _warp_mma, _wgmma
from ptxsim.model.timing import _L1, CLASS_METRICS, CP_ASYNC_SECTORS, SECTOR_BYTES

# Instruction kinds of the simulation.
(ALU, LOAD, STORE, SHARED, MMA, WGMMA, COMMIT, WAIT_WG, BAR, ASYNC_COPY, ASYNC_WAIT, NOP, MBAR_WAIT,
 MBAR_ARRIVE) = range(14)
# What completes the barrier an MBAR_WAIT waits on (its `arg`).
WAIT_ANY, WAIT_TX, WAIT_ARRIVE = 0.0, 1.0, 2.0
# A bulk store (cp.async.bulk{.tensor} to global, .bulk_group): an ASYNC_COPY's `arg`; the waits of its bulk groups
# (cp.async.bulk.wait_group, .read): an ASYNC_WAIT's. Bulk copies into shared memory (arg 1) complete on mbarriers.
BULK_STORE, BULK_WAIT, BULK_WAIT_READ = 2.0, 1.0, 2.0


@dataclass(frozen=True)
class _Op:
    kind: int
    pipe: str
    busy: float        # clocks the op holds its SMSP pipe
    latency: float     # clocks until its destinations are ready (ALU-like ops)
    dst: tuple
    src: tuple
    arg: object = 0.0  # wait_group N; tensor completion; mbarrier kinds; bar: (id, warps or 0)


@dataclass(frozen=True)
class _Memory:
    """Per-request averages of the launch, and the per-SM server rates (bytes or wavefronts per clock)."""

    load_l2_bytes: float
    load_dram_bytes: float
    load_latency: float
    store_l2_bytes: float
    store_dram_bytes: float
    copy_l2_bytes: float
    copy_dram_bytes: float
    shared_wavefronts: float
    dram_rate: float
    l2_rate: float
    shared_rate: float
    wgmma_shared_wavefronts: float


def _wait_kind(kinds) -> float:
    """WAIT_TX / WAIT_ARRIVE by the majority of a wait pc's non-free waits (free, tx, arrive, false: stats.WarpCounts);
    WAIT_ANY unknown."""
    if not kinds or kinds[1] + kinds[2] == 0:
        return WAIT_ANY
    return WAIT_TX if kinds[1] >= kinds[2] else WAIT_ARRIVE


def _bar_args(ins) -> tuple:
    """(barrier id, warps it waits for or 0: every live warp of the CTA) of a bar/barrier, from immediates."""
    vals = []
    for op in list(ins.ops)[:2]:
        vals.append(int(op.value) if getattr(op, "idx", -1) < 0 and isinstance(getattr(op, "value", None), int)
                    else None)
    ident = vals[0] if vals and vals[0] is not None else 0
    count = vals[1] if len(vals) > 1 and vals[1] is not None else 0
    return (ident, (count + 31) // 32)


def _ops(instrs, spec, k, mbarrier_waits=None) -> list[_Op]:
    """One _Op per instruction; `mbarrier_waits` (stats.WarpCounts.mbarrier_waits) tells mbarrier waits' kinds."""
    waits = mbarrier_waits or {}
    cycles = class_cycles(spec)
    out = []
    for ins in instrs:
        dst, src = _dest_src(ins)
        klass = ins.klass
        pipe, busy = cycles.get(klass, ("alu", 2.0))
        mods = ins.mods
        lat = LATENCY_CLK.get(klass, 4.0)
        if ins.op == "wgmma":
            if ".mma_async" in mods:
                per = _wgmma(ins)
                flops = sum(v for key, v in per.items() if "flops" in key)
                width = "8bit" if any("8bit" in key for key in per) else "16bit"
                peak = spec.tensor_fp8_flop_per_clk_per_sm if width == "8bit" else spec.tensor_bf16_flop_per_clk_per_sm
                pipe_clk = flops / (peak * k["wgmma_fraction_of_peak"])   # the warpgroup's time = each warp's share
                out.append(_Op(WGMMA, "tensor", pipe_clk, 0.0, (), tuple(src),
                               max(pipe_clk, k["wgmma_latency_clk"])))
            elif ".commit_group" in mods:
                out.append(_Op(COMMIT, "", 0.0, 0.0, (), ()))
            elif ".wait_group" in mods:
                out.append(_Op(WAIT_WG, "", 0.0, 0.0, (), (), float(ins.aux.n or 0)))
            else:
                out.append(_Op(NOP, "", 0.0, 0.0, (), ()))
        elif klass == "tensor":
            per = _warp_mma(ins)
            flops = sum(v for key, v in per.items() if "flops" in key)
            names = [_type_name(t) for t in ins.types]
            eight = len(names) > 1 and names[1] in EIGHT_BIT
            peak = spec.tensor_fp8_flop_per_clk_per_sm if eight else spec.tensor_bf16_flop_per_clk_per_sm
            busy = flops / (peak / spec.sub_partitions_per_sm * k["mma_sync_fraction_of_peak"])
            out.append(_Op(MMA, "tensor", busy, max(lat, busy), tuple(dst), tuple(src)))
        elif klass in GLOBAL_LOADS:
            out.append(_Op(LOAD, pipe, busy, 0.0, tuple(dst), tuple(src)))
        elif klass in GLOBAL_STORES:
            out.append(_Op(STORE if klass == "st_global" or not dst else LOAD, pipe, busy, 0.0, tuple(dst),
                           tuple(src)))
        elif klass in ("ld_shared", "st_shared"):
            out.append(_Op(SHARED, pipe, busy, lat if klass == "ld_shared" else 0.0, tuple(dst), tuple(src)))
        elif ins.op == "mbarrier" and (".try_wait" in mods or ".test_wait" in mods):
            out.append(_Op(MBAR_WAIT, "", 0.0, 0.0, tuple(dst), tuple(src), _wait_kind(waits.get(ins.pc))))
        elif ins.op == "mbarrier" and (".arrive" in mods or ".arrive_drop" in mods or ".expect_tx" in mods):
            out.append(_Op(MBAR_ARRIVE, pipe, busy, lat, tuple(dst), tuple(src),
                           1.0 if ".expect_tx" in mods else 0.0))
        elif ins.op == "cp" and ".async" in mods and (".wait_group" in mods or ".wait_all" in mods):
            # arg: 0 cp.async's wait; a bulk group's wait: BULK_WAIT (the stores' writes), BULK_WAIT_READ (.read)
            bulk = 0.0 if ".bulk" not in mods else BULK_WAIT_READ if ".read" in mods else BULK_WAIT
            out.append(_Op(ASYNC_WAIT, "", 0.0, 0.0, tuple(dst), tuple(src), bulk))
        elif klass == "cp_async" and ".commit_group" in mods:     # cp.async[.bulk].commit_group: bookkeeping only
            out.append(_Op(NOP, pipe, busy, 0.0, (), ()))
        elif klass == "cp_async":
            # arg: 0 cp.async, 1 a bulk copy completing on an mbarrier, BULK_STORE one completing in a bulk group
            kind = 0.0 if ".bulk" not in mods else BULK_STORE if ".bulk_group" in mods else 1.0
            out.append(_Op(ASYNC_COPY, pipe, busy, 0.0, (), tuple(src), kind))
        elif klass == "barrier" and ins.op in ("bar", "barrier") and ".arrive" not in mods:
            out.append(_Op(BAR, pipe, busy, 0.0, (), tuple(src), _bar_args(ins)))
        else:
            out.append(_Op(ALU, pipe, busy, lat, tuple(dst), tuple(src)))
    return out


def _memory(m, spec, k, active, sms, clock, share, copies: float | None = None) -> _Memory:
    """`copies`: the launch's copy instructions (cp.async, bulk, TMA; not their commits and waits, which share the
    cp_async class counter); default the class counter."""
    inst = {name: m[key] for name, key in CLASS_METRICS.items()}
    ld_sectors = m[_L1.format("sectors", "ld")]
    l1_hits = min(m["ptxsim__l1_hit_sectors_global_op_ld.sum"], ld_sectors)
    dram_read = m["dram__bytes_read.sum"]
    loads = inst["ld_global"]
    stores = inst["st_global"] + inst["atom"]
    copies = inst["cp_async"] if copies is None else copies
    l2_ld_bytes = SECTOR_BYTES * (ld_sectors - l1_hits)
    dram_ld_bytes = min(dram_read, l2_ld_bytes)
    copy_bytes = SECTOR_BYTES * m[CP_ASYNC_SECTORS]
    dram_copy = min(max(dram_read - dram_ld_bytes, 0.0), copy_bytes)
    if ld_sectors:
        dram_sectors = dram_ld_bytes / SECTOR_BYTES
        latency_s = (l1_hits * k["l1_latency_s"] + dram_sectors * k["dram_latency_s"]
                     + (ld_sectors - l1_hits - dram_sectors) * k["l2_latency_s"]) / ld_sectors
    else:
        latency_s = k["l2_latency_s"]
    shared_inst = inst["ld_shared"] + inst["st_shared"]
    wavefronts = m["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] + \
        m["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"]
    fill = spec.l1_fill_bytes_per_clk_per_sm
    dram_rate = min(spec.memory_bandwidth * k["dram_achievable_fraction"] * share / active / clock, fill)
    l2_rate = min(spec.l2_bytes_per_clk_per_sm * sms * k["l2_achievable_fraction"] / active, fill)
    wg_inst = m["ptxsim__wgmma_inst.sum"]
    return _Memory(
        load_l2_bytes=l2_ld_bytes / loads if loads else 0.0,
        load_dram_bytes=dram_ld_bytes / loads if loads else 0.0,
        load_latency=latency_s * clock,
        store_l2_bytes=SECTOR_BYTES * (m[_L1.format("sectors", "st")] + m[_L1.format("sectors", "atom")]) / stores
        if stores else 0.0,
        store_dram_bytes=m["dram__bytes_write.sum"] / stores if stores else 0.0,
        copy_l2_bytes=copy_bytes / copies if copies else 0.0,
        copy_dram_bytes=dram_copy / copies if copies else 0.0,
        shared_wavefronts=wavefronts / shared_inst if shared_inst else 1.0,
        dram_rate=dram_rate, l2_rate=l2_rate,
        shared_rate=spec.shared_bytes_per_clk_per_sm / 128.0 * k["shared_achievable_fraction"],
        wgmma_shared_wavefronts=m["ptxsim__wgmma_shared_bytes.sum"] / 128.0 / wg_inst / 4 if wg_inst else 0.0,
    )

"""Execution state of one batch of CTAs: registers as structure-of-arrays, special registers, lane geometry.

`lanes` everywhere is either `slice(None)` (every lane of the batch) or a sorted int64 index array.
"""
from __future__ import annotations

import numpy as np

from ptxsim.errors import DecodeError
from ptxsim.program import ADDR, IMM, NOT, REG, SINK, SREG, SYM
from ptxsim.ptxtypes import TYPES, UINT

U64 = TYPES["u64"]
U32 = TYPES["u32"]
_MASK64 = (1 << 64) - 1
FULL = slice(None)


def _imm_value(op, ty):
    v = op.value
    if ty.kind == "pred":
        return np.bool_(bool(v))
    if ty.kind == "f":
        return ty.dtype.type(v)
    if op.name == "f32" or (isinstance(v, float) and ty.bits == 32):
        raw = int(np.float32(v).view(np.uint32))
    elif op.name == "f64" or isinstance(v, float):
        if ty.bits == 32:
            raw = int(np.float32(v).view(np.uint32))
        else:
            raw = int(np.float64(v).view(np.uint64))
    else:
        raw = int(v)
    bits = 64 if ty.bits > 64 else ty.bits
    raw &= (1 << bits) - 1
    return np.array(raw, dtype=UINT[bits]).view(ty.dtype)[()]


class ExecState:
    """Registers, special registers and memories of one batch of `nctas` CTAs of `block_threads` (padded) each."""

    def __init__(self, prog, launch, cta_ids: np.ndarray):
        self.prog = prog
        self.launch = launch
        bx, by, bz = launch.block
        self.block_threads = bx * by * bz
        self.padded = (self.block_threads + 31) // 32 * 32
        self.nctas = len(cta_ids)
        self.cta_ids = cta_ids  # linear CTA index per batch slot
        n = self.nctas * self.padded
        self.nlanes = n
        cache = launch.reg_cache.get(n)
        if cache is None:  # NOTE: register files are reused across batches (no page-fault cost per batch);
            # registers start with unspecified values, like on hardware (zero in the first batch).
            cache = launch.reg_cache[n] = [np.zeros(n, np.bool_ if b == 1 else UINT[b]) for b in prog.reg_bits]
        self.regs = cache
        lane = np.arange(n, dtype=np.int64)
        self.lane_index = lane
        self.slot = lane // self.padded  # batch slot (CTA) of each lane
        self.tlin = lane % self.padded  # linear thread id within its CTA
        self.laneid = (lane & 31).astype(np.uint32)
        self.warp = lane >> 5  # global warp index within the batch
        self.valid = self.tlin < self.block_threads
        gx, gy, gz = launch.grid
        self.sregs = {"%laneid": self.laneid}
        self.uniform = {"%ntid.x": bx, "%ntid.y": by, "%ntid.z": bz, "%nctaid.x": gx, "%nctaid.y": gy,
                        "%nctaid.z": gz, "%nwarpid": 64, "%nsmid": 132, "%gridid": 1,
                        "%dynamic_smem_size": launch.shared_bytes,
                        "%total_smem_size": prog.shared_dyn_offset + launch.shared_bytes,
                        "%cluster_ctarank": 0, "%cluster_nctarank": 1, "%is_explicit_cluster": 0,
                        "%nclusterid.x": gx, "%nclusterid.y": gy, "%nclusterid.z": gz,
                        "%cluster_ctaid.x": 0, "%cluster_ctaid.y": 0, "%cluster_ctaid.z": 0,
                        "%cluster_nctaid.x": 1, "%cluster_nctaid.y": 1, "%cluster_nctaid.z": 1,
                        "%aggr_smem_size": prog.shared_dyn_offset + launch.shared_bytes}
        self.clock = 0  # advanced by the executor (one tick per warp-instruction)
        self.symaddr = launch.symaddr
        self.carry = np.zeros(n, np.bool_)  # CC.CF of add.cc / addc
        self.mem_writes = 0  # stores/atomics executed (spin-loop detection)
        # memories
        self.shared_size = prog.shared_dyn_offset + launch.shared_bytes
        self.smem_stride = (self.shared_size + 15) // 16 * 16
        self.smem = np.full(max(self.nctas * self.smem_stride, 16), launch.shared_fill, np.uint8)
        self.smem_base = (self.slot * self.smem_stride).astype(np.uint64)
        self.local_size = prog.local_bytes
        self.lmem = np.zeros(max(n * prog.local_bytes, 16), np.uint8)
        self.lmem_base = (lane * prog.local_bytes).astype(np.uint64)
        self.frame_size = prog.frame_bytes
        self.fmem = np.zeros(max(n * prog.frame_bytes, 16), np.uint8)
        self.fmem_base = (lane * prog.frame_bytes).astype(np.uint64)
        self.call_stack = []  # list of per-lane int arrays (return call-site pc, -1 = none)
        self.depth = np.zeros(n, np.int32)
        self.saved = {}  # recursive .func name -> saved activations (ops/control.py)
        self.async_pending = []  # cp.async copies not yet waited for
        self.async_committed = np.zeros(n, np.int64)  # commit-group counter per lane
        self.cluster = None  # Clusters (ptxsim/clusters.py) when the launch has a cluster shape
        if launch.cluster is not None:
            from ptxsim.clusters import Clusters

            self.cluster = Clusters(self, launch.cluster)
        self.mbars = None  # MbarrierTable, made by the first mbarrier instruction (ptxsim/mbarriers.py)
        self.wgmma = None  # WgmmaQueue: wgmma.mma_async results not yet waited for (ptxsim/ops/wgmma.py)
        self.warp_syncs = None  # WarpSyncs: threads held at bar.warp.sync (ptxsim/warpsync.py)
        self.regpools = None  # RegisterPools: setmaxnreg's per-CTA register pools (ptxsim/regpool.py)
        # pending wgmma results whose accumulator registers no other instruction may touch (asynccheck only)
        self.reg_watch = [] if any(getattr(h, "tool", "") == "asynccheck" for h in launch.hooks) else None
        self.hooks = launch.hooks  # counters / sanitizers (objects with on_* methods), may be empty
        self.strict = launch.strict_async  # adversarial async timing (launch's strict_async)
        self.wait_timeouts = launch.wait_timeouts  # blocked mbarrier waits time out at a would-be deadlock
        self.bulk_stores = []  # strict: cp.async.bulk stores not yet retired by their wait_group (ops/bulk.py)
        self.bulk_committed = np.zeros(n, np.int64)  # strict: bulk groups committed per lane
        self.rules = None  # asynccheck's fence / proxy / cluster rules (ptxsim/asyncrules.py), when it is on
        if self.reg_watch is not None:
            from ptxsim.asyncrules import AsyncRules

            self.rules = AsyncRules(self)

    # -- operands ------------------------------------------------------------------------------------------------
    def count(self, lanes) -> int:
        return self.nlanes if isinstance(lanes, slice) else len(lanes)

    def read(self, op, lanes, ty):
        k = op.kind
        if k == REG:
            v = self.regs[op.idx][lanes]
            if op.bits == ty.bits or ty.bits > 64:
                return v if v.dtype == ty.dtype else v.view(ty.dtype)
            if ty.kind == "pred" or op.bits == 1:
                return v.astype(ty.dtype)
            return v.astype(ty.uint).view(ty.dtype)  # wider register truncated / narrower zero-extended
        if k == IMM:
            c = op.cache.get(ty.name)
            if c is None:
                c = op.cache[ty.name] = _imm_value(op, ty)
            return c
        if k == SREG:
            return self.sreg(op.name, lanes).astype(ty.dtype)
        if k == SYM:
            return np.array(self.symaddr[op.name] & ((1 << ty.bits) - 1), ty.uint).view(ty.dtype)[()]
        if k == NOT:
            return ~self.read(op.items[0], lanes, ty)
        raise DecodeError(f"operand {op!r} cannot be read as a value")

    def write(self, op, lanes, val, ty) -> None:
        if op.kind == SINK:
            return
        if op.kind != REG:
            raise DecodeError(f"destination {op!r} is not a register")
        arr = self.regs[op.idx]
        if op.bits == ty.bits or ty.bits > 64:
            arr[lanes] = val if val.dtype == arr.dtype else val.view(arr.dtype)
        elif op.bits == 1 or ty.kind == "pred":
            arr[lanes] = val.astype(arr.dtype) if op.bits > 1 else (val != 0)
        elif op.bits > ty.bits:
            if ty.kind == "s":
                arr[lanes] = val.view(ty.dtype).astype(np.int64).astype(arr.dtype)
            else:
                arr[lanes] = val.view(ty.uint).astype(arr.dtype)
        else:
            arr[lanes] = val.view(ty.uint).astype(arr.dtype)

    def _make_sreg(self, name: str):
        bx, by, bz = self.launch.block
        gx, gy, gz = self.launch.grid
        t = self.tlin
        cid = self.cta_ids[self.slot]
        base = name.replace("%clusterid", "%ctaid")
        make = {
            "%tid.x": lambda: t % bx, "%tid.y": lambda: (t // bx) % by, "%tid.z": lambda: t // (bx * by),
            "%ctaid.x": lambda: cid % gx, "%ctaid.y": lambda: (cid // gx) % gy, "%ctaid.z": lambda: cid // (gx * gy),
            "%warpid": lambda: self.tlin >> 5, "%smid": lambda: cid % 132,
            "%lanemask_eq": lambda: np.uint32(1) << self.laneid,
            "%lanemask_le": lambda: ((np.uint64(2) << self.laneid.astype(np.uint64)) - np.uint64(1)),
            "%lanemask_lt": lambda: ((np.uint64(1) << self.laneid.astype(np.uint64)) - np.uint64(1)),
            "%lanemask_ge": lambda: ~((np.uint64(1) << self.laneid.astype(np.uint64)) - np.uint64(1)),
            "%lanemask_gt": lambda: ~((np.uint64(2) << self.laneid.astype(np.uint64)) - np.uint64(1)),
        }.get(base)
        if make is None:
            return None
        a = (np.asarray(make()).astype(np.uint64) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        self.sregs[name] = a
        return a

    def sreg(self, name: str, lanes):
        a = self.sregs.get(name)
        if a is None:
            a = self._make_sreg(name)
        if a is not None:
            return a[lanes]
        if name in self.uniform:
            return np.full(self.count(lanes), self.uniform[name], np.uint32)
        if name in ("%clock", "%clock_hi", "%clock64", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi"):
            c = self.clock * (32 if "timer" in name else 1)
            if name in ("%clock", "%globaltimer_lo"):
                c &= 0xFFFFFFFF
            elif name in ("%clock_hi", "%globaltimer_hi"):
                c >>= 32
            return np.full(self.count(lanes), c, np.uint64)
        if name.startswith("%envreg") or name.startswith("%pm") or name.startswith("%reserved"):
            return np.zeros(self.count(lanes), np.uint32)
        raise DecodeError(f"special register {name} is not supported")

    def address(self, op, lanes):
        """Address (in the instruction's state space) of an ADDR operand, as a uint64 array or scalar."""
        if op.kind != ADDR:
            raise DecodeError(f"operand {op!r} is not an address [..]")
        off = np.uint64(op.offset & _MASK64)
        if op.base is None:
            base = np.uint64(self.symaddr[op.sym]) if op.sym is not None else np.uint64(0)
            return np.full(self.count(lanes), base + off, np.uint64)
        b = op.base
        v = self.regs[b.idx][lanes]
        if b.bits != 64:  # NOTE: a 32-bit register plus an offset wraps modulo 2**32, as on hardware (nvcc folds
            # negative offsets into 32-bit shared/local address registers, then adds a positive immediate)
            v = v.astype(np.uint64)
            return (v + off) & np.uint64(0xFFFFFFFF) if op.offset else v
        return v + off if op.offset else v

    # -- geometry for messages -----------------------------------------------------------------------------------
    def where(self, lane: int) -> tuple:
        """((ctaid.x,y,z), (tid.x,y,z)) of a batch lane."""
        return (tuple(int(self.sreg(f"%ctaid.{a}", lane)) for a in "xyz"),
                tuple(int(self.sreg(f"%tid.{a}", lane)) for a in "xyz"))

    def lane_array(self, lanes) -> np.ndarray:
        return self.lane_index if isinstance(lanes, slice) else lanes

"""cycle_sched: model v2 issues a loop iteration in the order ptxas schedules it (global loads and their address
arithmetic first, on true dependences; memory and synchronisation keep their order)."""
from __future__ import annotations

import ptxsim
from ptxsim.model.cycle_sched import schedule

HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"


def program(body: str):
    src = HEAD + """.visible .entry k(.param .u64 p)
{
  .reg .pred %p<4>; .reg .b32 %r<16>; .reg .b64 %rd<8>; .reg .f32 %f<16>;
  ld.param.u64 %rd1, [p];
""" + body + "\n  ret;\n}\n"
    return ptxsim.load_ptx(src).kernel("k").program


def texts(prog, order):
    return [prog.instrs[pc].text.split()[0] + " " + prog.instrs[pc].text.split()[1].rstrip(",") for pc in order]


def test_loads_and_their_addresses_go_before_the_first_use_of_a_load():
    # as written: each load next to its use, the address register reused (PTX registers are virtual: ptxas renames)
    prog = program("""
  ld.global.nc.f32 %f1, [%rd1];
  mul.rn.f32 %f2, %f1, %f1;
  add.s64 %rd1, %rd1, 4;
  ld.global.nc.f32 %f3, [%rd1];
  mul.rn.f32 %f4, %f3, %f3;""")
    unit = list(range(1, 6))
    order = schedule(prog.instrs, unit)
    assert sorted(order) == unit
    first_mul = order.index(2)
    assert order.index(1) < first_mul and order.index(4) < first_mul and order.index(3) < order.index(4)
    assert order.index(2) < order.index(5)          # the uses keep their order


def test_a_plain_global_load_does_not_pass_a_barrier_or_a_store_but_an_nc_load_does():
    prog = program("""
  st.global.f32 [%rd1], %f9;
  bar.sync 0;
  ld.global.f32 %f1, [%rd1+8];
  ld.global.nc.f32 %f2, [%rd1+16];
  add.f32 %f3, %f1, %f2;""")
    order = schedule(prog.instrs, list(range(1, 6)))
    assert order.index(1) < order.index(2) < order.index(3)      # store, barrier, then the plain load
    assert order.index(4) < order.index(2)                       # the read-only load goes above the barrier


def test_a_guarded_branch_is_a_fence_but_a_try_wait_retry_is_not():
    prog = program("""
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra SKIP;
  mov.f32 %f5, 0f00000000;
  ld.global.nc.f32 %f1, [%rd1];
SKIP:
  add.f32 %f2, %f1, %f1;""")
    instrs = prog.instrs
    unit = list(range(1, len(instrs) - 1))
    order = schedule(instrs, unit)
    branch = next(pc for pc in unit if instrs[pc].op == "bra")
    load = next(pc for pc in unit if instrs[pc].klass == "ld_global")
    assert order.index(branch) < order.index(load)               # no load speculated past the condition


def test_a_read_only_load_moves_above_a_try_wait_retry_loop_as_ptxas_moved_the_scale_loads():
    prog = program("""
  mov.u32 %r1, 0;
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r1], 0;
  @!%p2 bra WAIT;
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.nc.f32 %f1, [%rd3];
  add.f32 %f2, %f1, %f1;""")
    instrs = prog.instrs
    unit = list(range(2, len(instrs) - 1))           # one pass: the wait, its retry branch, then the body
    order = schedule(instrs, unit)
    wait = next(pc for pc in unit if instrs[pc].op == "mbarrier")
    load = next(pc for pc in unit if instrs[pc].klass == "ld_global")
    assert order.index(load) < order.index(wait)

"""The mutation table: single faults of the Hopper rungs (2-12) of the PTX FP8 ladder, as data.

Each mutation is a precise edit of one rung's generated PTX (tests.mutations.edits: a regex, its replacement and the
number of matches it must have) that breaks the PTX ISA's rules and that ptxas accepts (for a missing wgmma.fence or
wait_group it inserts the synchronisation itself, with an info line: docs/mutations.md). The suite
(tests.mutations.suite) runs every one on ptxsim with every sanitizer on, at a K that refills every ring stage at least
twice, on fresh random data; each must be caught by an error, a sanitizer finding, a hang or deadlock report, or a
failed check against the float64 reference. `wants` says which mechanism the fault should trip (issue 26's items:
1 adversarial async timing, 2 fence and proxy rules, 3 setmaxnreg, 4 exited cluster peers, 5 alignment).
"""
from __future__ import annotations

from dataclasses import dataclass

from ptx_impl import gemm_fp8_ws_template as ws
from tests.mutations.edits import Edit, delete, insert_after, move_after, move_before, replace

# fault classes: id -> what goes wrong (the docs table's legend)
CLASSES = {
    "wgmma-fence": "wgmma.fence missing or after the first wgmma",
    "proxy-fence": "fence.proxy.async missing, misplaced or of the wrong state space",
    "release-early": "a stage released (or refilled) before the wgmma reading it retired",
    "retry": "the mbarrier.try_wait retry branch dropped",
    "wait-order": "wgmma issued before the wait for its stage's data",
    "expect-tx": "arrive.expect_tx byte count 16 bytes off",
    "parity": "wrong mbarrier phase parity",
    "cluster-barrier": "barrier.cluster missing after init or before exit",
    "mbarrier-init": "fence.mbarrier_init missing, or a barrier used before its initialisation is visible",
    "peer-release": "a cluster stage released on the wrong CTA's empty barrier",
    "setmaxnreg": "setmaxnreg in part of a warpgroup, beyond the register pool, or without .maxnreg",
    "alignment": "a 128B-swizzle stage or descriptor off its 1024-byte boundary",
    "wait-group": "wgmma.wait_group missing, too shallow, or before the commit",
    "acc-read": "wgmma accumulators read or written before wgmma.wait_group",
    "barrier-count": "an mbarrier's arrival count, target or arrival wrong",
    "cta-barrier": "a bar.sync the shared-memory ring or epilogue needs missing",
    "cp-async-group": "cp.async group accounting wrong (wait depth, commit missing)",
    "scale-d": "the first wgmma of a stage accumulates instead of overwriting",
    "bulk-store": "a TMA store's buffer reused before its bulk group read it, a box outside the run, or unswizzled",
    "promotion-scale": "a promotion multiplies by another K group's token or weight scales",
    "pair-decode": "a cluster's pair of token tiles decoded wrong: their blocks, or whether they share the weights",
}

# the mechanisms issue 26 assigns (the `wants` column)
TIMING = "item 1: adversarial async timing"
FENCES = "item 2: fence/proxy rules"
REGS = "item 3: setmaxnreg rules"
PEERS = "item 4: exited cluster peer"
ALIGN = "item 5: alignment"
EXISTING = "existing sanitizers / check"


@dataclass(frozen=True)
class Mutation:
    name: str  # unique: r<rung>-<short>
    rung: int
    cls: str  # a key of CLASSES
    edits: tuple[Edit, ...]
    wants: str  # the mechanism that should catch it
    why: str  # the hardware rule it breaks


def _m(rung: int, short: str, cls: str, edits, wants: str, why: str) -> Mutation:
    return Mutation(f"r{rung}-{short}", rung, cls, tuple(edits) if isinstance(edits, (list, tuple)) else (edits,),
                    wants, why)


WAIT0 = r"wgmma\.wait_group\.sync\.aligned 0;"
ACC_LAST = r"fma\.rn\.f32\s+%acc7,"  # the last promotion fma of the 16-token tile (8 accumulators)
ALIGN_LINE = r"and\.b32\s+%sbase, %sbase, 0xFFFFFC00;"
PLUS128 = "    add.u32             %sbase, %sbase, 128;\n"
DESC_B = replace(r"add\.u32(\s+)%tmp2, %tmp, 1024;", r"add.u32\1%tmp2, %tmp, 1032;")  # token operand + 128 B


def _wgmma_common(rung: int) -> list[Mutation]:
    """Faults of the wgmma issue / retire protocol every Hopper rung shares."""
    zero, one = ("%p_zd", "%p_acc") if rung < 4 else ("%p_zero", "%p_one")  # scale-d false / true
    return [
        _m(rung, "no-wgmma-fence", "wgmma-fence", delete(r"wgmma\.fence\.sync\.aligned;"), FENCES,
           "wgmma.fence must precede the first wgmma and follow register writes to its accumulators"),
        _m(rung, "wgmma-fence-late", "wgmma-fence", move_after(r"wgmma\.fence", r"wgmma\.mma_async"), FENCES,
           "the first wgmma of a stage runs before the fence that orders the promotion's accumulator reads"),
        _m(rung, "no-wait-group", "wait-group", delete(WAIT0), EXISTING,
           "accumulators are undefined until wgmma.wait_group retires their group"),
        _m(rung, "wait-group-1", "wait-group", replace(WAIT0, "wgmma.wait_group.sync.aligned 1;"), EXISTING,
           "wait_group 1 leaves the newest group (this stage's) in flight"),
        _m(rung, "wait-before-commit", "wait-group", move_before(WAIT0, r"wgmma\.commit_group"), EXISTING,
           "a wait before the commit does not cover the uncommitted wgmmas"),
        _m(rung, "acc-read-before-wait", "acc-read", move_after(WAIT0, ACC_LAST), EXISTING,
           "the promotion reads the accumulators while the wgmma still writes them"),
        _m(rung, "acc-write-in-flight", "acc-read",
           insert_after(r"wgmma\.commit_group", "    mov.f32             %part0, 0f00000000;\n"), EXISTING,
           "writing an accumulator register of an in-flight wgmma is undefined"),
        _m(rung, "scale-d-accumulates", "scale-d", replace(rf"(wgmma\.mma_async[^\n]*), {zero}, 1, 1;",
                                                           rf"\1, {one}, 1, 1;"), EXISTING,
           "the stage's first wgmma adds the previous stage's partial sums"),
    ]


def _rung2() -> list[Mutation]:
    ring_bar = r"bar\.sync\s+0;\s+// \.\.\. everyone's"
    fence = r"fence\.proxy\.async\.shared::cta;"
    return _wgmma_common(2) + [
        _m(2, "no-fence-proxy", "proxy-fence", delete(fence), FENCES,
           "cp.async writes are generic-proxy; wgmma reads through the async proxy: fence.proxy.async between"),
        _m(2, "fence-proxy-global", "proxy-fence", replace(fence, "fence.proxy.async.global;"), FENCES,
           "a proxy fence of global memory does not order the shared-memory stage"),
        _m(2, "fence-proxy-before-wait", "proxy-fence", move_before(fence, r"cp\.async\.wait_group 2;"), FENCES,
           "a fence before the copies land orders nothing"),
        _m(2, "cp-wait-after-bar", "wait-order", move_after(r"cp\.async\.wait_group 2;", r"bar\.sync"), TIMING,
           "each thread waits for its own copies after the barrier: the others' may still be in flight"),
        _m(2, "cp-wait-3", "wait-order", replace(r"cp\.async\.wait_group 2;", "cp.async.wait_group 3;"), TIMING,
           "wait_group 3 leaves this slab's copies in flight when the wgmma reads it"),
        _m(2, "no-cp-wait", "wait-order", delete(r"cp\.async\.wait_group 2;"), TIMING,
           "the wgmma reads a slab whose copies were never waited for"),
        _m(2, "no-loop-commit", "cp-async-group", Edit(r"^(\$L_no_issue:\n)[ \t]*cp\.async\.commit_group;\n", r"\1"),
           TIMING, "uncommitted copies join later groups: wait_group 2 no longer covers the slab"),
        _m(2, "no-first-commit", "cp-async-group", Edit(r"^(\$L_pro0:\n)[ \t]*cp\.async\.commit_group;\n", r"\1"),
           TIMING, "slabs 0 and 1 in one group: the first wait_group 2 waits for nothing"),
        _m(2, "no-ring-bar", "cta-barrier", delete(ring_bar), EXISTING,
           "other threads' copies of the slab are not known to have landed; the refilled stage may still be read"),
        _m(2, "ring-bar-arrive", "cta-barrier", replace(r"bar\.sync(\s+)0;(\s+// \.\.\. everyone's)",
                                                        r"bar.arrive\g<1>0, 256;\2"), EXISTING,
           "bar.arrive does not wait for the other threads"),
        _m(2, "refill-before-bar", "release-early", move_after(ring_bar, r"\$L_no_issue:"), TIMING,
           "the refill overwrites the previous slab's stage before every warpgroup is done with it"),
        _m(2, "refill-next-stage", "release-early",
           replace(r"and\.b32(\s+)%stage, %tmp, 3;", r"sub.u32\1%stage, %tmp, 1;\n    and.b32\1%stage, %stage, 3;"),
           EXISTING, "slab kt + 3 lands in the stage of slab kt + 2, still in flight and not yet read"),
        _m(2, "refill-current-stage", "release-early",
           replace(r"and\.b32(\s+)%stage, %tmp, 3;", r"and.b32\1%stage, %kt, 3;"), EXISTING,
           "the refill overwrites the stage the wgmma is about to read"),
        _m(2, "misaligned-stage", "alignment", insert_after(ALIGN_LINE, PLUS128), ALIGN,
           "128B-swizzle operands must start 1024-byte aligned"),
        _m(2, "misaligned-desc-b", "alignment", DESC_B, ALIGN,
           "the token operand's descriptor starts 128 bytes off its 1024-byte swizzle atom"),
        _m(2, "no-epilogue-bar", "cta-barrier", delete(r"bar\.sync\s+[\d, ]+;\s+// every warpgroup is done"), EXISTING,
           "stmatrix overwrites stage 0 while the other warpgroup may still read it"),
        _m(2, "no-store-bar", "cta-barrier", Edit(r"^([ \t]*stmatrix[^\n]*\n)[ \t]*bar\.sync\s+0;\n", r"\1"), EXISTING,
           "the coalesced loads read rows other warps have not stored yet"),
    ]


def _rung3() -> list[Mutation]:
    full_wait = r"^\$L_wait_full:\n[^\n]*\n[^\n]*\n"
    arrive = r"@%p_lead mbarrier\.arrive\.shared::cta\.b64 %tok, \[%bempty\];"
    return _wgmma_common(3) + [
        _m(3, "release-before-wait", "release-early", move_before(arrive, WAIT0), TIMING,
           "the producer may refill the stage while the wgmma still reads it (per-warp wait_group rule)"),
        _m(3, "release-before-wgmma", "release-early", move_before(arrive, r"wgmma\.fence"), TIMING,
           "the stage is released before the wgmma that reads it is even issued"),
        _m(3, "no-full-retry", "retry", delete(r"@!%p_ok bra\s+\$L_wait_full;"), TIMING,
           "try_wait may return false: the consumer would read a stage that has not landed"),
        _m(3, "no-empty-retry", "retry", delete(r"@!%p_ok bra\s+\$L_wait_empty;"), TIMING,
           "try_wait may return false: the producer would refill a stage still being read"),
        _m(3, "wgmma-before-full-wait", "wait-order",
           Edit(f"({full_wait})((?:[^\n]*\n)*?[ \t]*wgmma\\.commit_group[^\n]*\n)", r"\2\1"), TIMING,
           "the wgmma reads the stage before its TMA bytes are known to have landed"),
        _m(3, "expect-tx-plus16", "expect-tx", replace(r"(\[%bfull\]), 18432;", r"\1, 18448;", 5), EXISTING,
           "the full barrier waits for 16 bytes that never come"),
        _m(3, "expect-tx-minus16", "expect-tx", replace(r"(\[%bfull\]), 18432;", r"\1, 18416;", 5), EXISTING,
           "the phase completes 16 bytes early (tx-count underflow)"),
        _m(3, "parity-full", "parity", [insert_after(r"and\.b32\s+%par, %par, 1;\s+// phase parity",
                                                     "    xor.b32             %tmp2, %par, 1;\n"),
                                        replace(r"(\[%bfull\]), %par;", r"\1, %tmp2;")], TIMING,
           "waiting on the other parity passes at once (the preceding phase), before the stage landed"),
        _m(3, "parity-empty", "parity", [Edit(r"^(\$L_wait_empty:\n)", "    xor.b32             %tmp2, %par, 1;\n\\1"),
                                         replace(r"(\[%bempty\]), %par;", r"\1, %tmp2;")], TIMING,
           "the producer's empty wait passes at once and refills a stage still being read"),
        _m(3, "no-mbarrier-init-fence", "mbarrier-init", delete(r"fence\.mbarrier_init"), FENCES,
           "mbarrier.init must be fenced before other threads or the async proxy use the barrier"),
        _m(3, "no-init-bar", "mbarrier-init", Edit(r"^(\$L_inited:\n)[ \t]*bar\.sync\s+0;\n", r"\1"), EXISTING,
           "the consumers may wait on barriers thread 0 has not initialised yet"),
        _m(3, "empty-count-7", "barrier-count", replace(r"(\[%bars\+(?:32|40|48|56)\]), 8;", r"\1, 7;", 4), TIMING,
           "the empty phase completes one warp early: the refill races the last warp's wgmma"),
        _m(3, "empty-count-9", "barrier-count", replace(r"(\[%bars\+(?:32|40|48|56)\]), 8;", r"\1, 9;", 4), EXISTING,
           "the empty phase never completes"),
        _m(3, "full-count-2", "barrier-count", replace(r"(\[%bars\+(?:0|8|16|24)\]), 1;", r"\1, 2;", 4), EXISTING,
           "the full phase never completes"),
        _m(3, "no-empty-wait", "release-early", Edit(r"^\$L_wait_empty:\n[^\n]*\n[^\n]*\n", ""), TIMING,
           "the producer refills without waiting for the consumers"),
        _m(3, "empty-wait-on-full", "barrier-count", replace(r"(try_wait[^\n]*)\[%bempty\], %par;",
                                                             r"\1[%bfull], %par;"), TIMING,
           "the producer waits on the (completed) full barrier instead of the empty one"),
        _m(3, "release-on-full", "barrier-count", replace(arrive, "@%p_lead mbarrier.arrive.shared::cta.b64 %tok, "
                                                                  "[%bfull];"), EXISTING,
           "arrivals on the full barrier beyond its count; the empty one never completes"),
        _m(3, "no-release", "barrier-count", delete(arrive), EXISTING, "the empty phase never completes"),
        _m(3, "misaligned-stage", "alignment", insert_after(ALIGN_LINE, PLUS128), ALIGN,
           "TMA 128B-swizzle destinations and wgmma descriptors must be 1024-byte aligned"),
        _m(3, "misaligned-desc-b", "alignment", DESC_B, ALIGN,
           "the token operand's descriptor starts 128 bytes off its 1024-byte swizzle atom"),
        _m(3, "no-epilogue-bar", "cta-barrier", delete(r"bar\.sync\s+[\d, ]+;\s+// every warpgroup is done"), EXISTING,
           "stmatrix overwrites stage 0 while the other warpgroup may still read it"),
    ]


def _rungs45(rung: int) -> list[Mutation]:
    cluster = rung == 5
    stage = 18432
    own_arrive = r"@%p_lead mbarrier\.arrive\.shared::cta\.b64 %tok, \[%bar\];"
    last_arrive = r"@%p_lead mbarrier\.arrive\.release\.cluster" if cluster else own_arrive
    c_wait = r"^\$C_wait:\n[^\n]*\n[^\n]*\n"
    empty = ws.empty_count(cluster)
    out = _wgmma_common(rung) + [
        _m(rung, "release-before-wait", "release-early", move_after(WAIT0, last_arrive), TIMING,
           "the producer may refill the stage while the wgmma still reads it"),
        _m(rung, "no-full-retry", "retry", delete(r"@!%p_wait bra\s+\$C_wait;"), TIMING,
           "try_wait may return false: the consumers would read a stage that has not landed"),
        _m(rung, "no-empty-retry", "retry", delete(r"@!%p_wait bra\s+\$P_wait;"), TIMING,
           "try_wait may return false: the producer would refill a stage still being read"),
        _m(rung, "wgmma-before-full-wait", "wait-order",
           Edit(f"({c_wait})((?:[^\n]*\n)*?[ \t]*wgmma\\.commit_group[^\n]*\n)", r"\2\1"), TIMING,
           "the wgmma reads the stage before its TMA bytes are known to have landed"),
        _m(rung, "expect-tx-plus16", "expect-tx", replace(rf"(\[%bar\]), {stage};", rf"\1, {stage + 16};"), EXISTING,
           "the full barrier waits for 16 bytes that never come"),
        _m(rung, "expect-tx-minus16", "expect-tx", replace(rf"(\[%bar\]), {stage};", rf"\1, {stage - 16};"), EXISTING,
           "the phase completes 16 bytes early (tx-count underflow)"),
        _m(rung, "parity-consumer", "parity",
           Edit(r"^([ \t]*and\.b32\s+%ph, %ph, 1;\n)([ \t]*mad\.lo\.u32\s+%bar, %stage, 8, %sfull;\n\$C_wait:)",
                "\\1    xor.b32             %ph, %ph, 1;\n\\2"), TIMING,
           "waiting on the other parity passes at once (the preceding phase), before the stage landed"),
        _m(rung, "parity-producer", "parity", delete(r"xor\.b32\s+%ph, %ph, 1;"), EXISTING,
           "the producer waits for a phase of the empty barrier that cannot complete"),
        _m(rung, "no-init-fences", "mbarrier-init",
           Edit(r"^[ \t]*fence\.mbarrier_init[^\n]*\n[ \t]*fence\.proxy\.async[^\n]*\n", ""), FENCES,
           "the barriers' init is never fenced: TMA's complete_tx (async proxy) may not see it (either fence alone, "
           "fence.mbarrier_init as CUTLASS or fence.proxy.async as the CUDA guide's TMA example, would do)"),
        _m(rung, "empty-count-minus1", "barrier-count",
           replace(rf"(\[%sempty\+\d+\]), {empty};", rf"\1, {empty - 1};", 4), TIMING,
           "the empty phase completes one arrival early: the refill races a consumer's wgmma"),
        _m(rung, "full-count-2", "barrier-count", replace(r"(\[%sfull\+\d+\]), 1;", r"\1, 2;", 4), EXISTING,
           "the full phase never completes"),
        _m(rung, "no-empty-wait", "release-early", Edit(r"^\$P_wait:\n[^\n]*\n[^\n]*\n", ""), TIMING,
           "the producer refills without waiting for the consumers"),
        _m(rung, "empty-wait-on-full", "barrier-count",
           Edit(r"%sempty;\n\$P_wait:", "%sfull;\n$P_wait:"), TIMING,
           "the producer waits on a full barrier (which its own TMA completes) instead of the empty one"),
        _m(rung, "no-release", "barrier-count", delete(own_arrive), EXISTING, "the empty phase never completes"),
        _m(rung, "setmaxnreg-dec-2of4", "setmaxnreg",
           replace(r"(setmaxnreg\.dec\.sync\.aligned\.u32 40;)",
                   r"setp.lt.u32         %p_q, %thr, 64;\n    @%p_q \1"), REGS,
           "setmaxnreg must be executed by all warps of the warpgroup (here 2 of 4)"),
        _m(rung, "setmaxnreg-inc-2of4", "setmaxnreg",
           replace(r"(setmaxnreg\.inc\.sync\.aligned\.u32 232;)",
                   r"and.b32             %tmp, %thr, 127;\n    setp.lt.u32         %p_q, %tmp, 64;\n    @%p_q \1"),
           REGS, "setmaxnreg must be executed by all warps of the warpgroup (here 2 of 4)"),
        _m(rung, "setmaxnreg-inc-256", "setmaxnreg", replace(r"setmaxnreg\.inc\.sync\.aligned\.u32 232;",
                                                              "setmaxnreg.inc.sync.aligned.u32 256;"), REGS,
           "2 x 128 x 256 + 128 x 40 registers exceed the CTA's 384 x 168: the inc never completes"),
        _m(rung, "no-maxnreg", "setmaxnreg", delete(r"\.maxnreg 168"), REGS,
           "without .maxnreg ptxas allocates fewer registers per thread: the pool cannot supply the inc"),
        _m(rung, "no-setmaxnreg-dec", "setmaxnreg", delete(r"setmaxnreg\.dec"), REGS,
           "the producer never frees registers: the consumers' inc waits forever"),
        _m(rung, "misaligned-stage", "alignment", insert_after(ALIGN_LINE, PLUS128), ALIGN,
           "TMA 128B-swizzle destinations and wgmma descriptors must be 1024-byte aligned"),
    ]
    if not cluster:
        out += [
            _m(rung, "no-init-bar", "mbarrier-init", Edit(r"^(\$L_inited:\n)[ \t]*bar\.sync\s+0;\n", r"\1"), EXISTING,
               "the consumers may wait on barriers thread 0 has not initialised yet"),
            _m(rung, "release-before-wgmma", "release-early", move_before(own_arrive, r"wgmma\.fence"), TIMING,
               "the stage is released before the wgmma that reads it is even issued"),
        ]
    else:
        out += [
            _m(rung, "no-cluster-bar-start", "cluster-barrier",
               Edit(r"^(\$L_inited:\n)[ \t]*barrier\.cluster\.arrive[^\n]*\n[ \t]*barrier\.cluster\.wait[^\n]*\n",
                    r"\1"), FENCES,
               "the peer may arrive on (or multicast into) barriers not yet initialised"),
            _m(rung, "no-cluster-bar-exit", "cluster-barrier",
               Edit(r"^(\$L_end:\n)[ \t]*barrier\.cluster\.arrive[^\n]*\n[ \t]*barrier\.cluster\.wait[^\n]*\n",
                    r"\1"), PEERS, "a CTA exits while its peer may still arrive on its barriers or multicast to it"),
            _m(rung, "no-cluster-wait-exit", "cluster-barrier",
               Edit(r"^(\$L_end:\n[ \t]*barrier\.cluster\.arrive[^\n]*\n)[ \t]*barrier\.cluster\.wait[^\n]*\n",
                    r"\1"), PEERS, "arriving without waiting: the CTA still exits before its peer is done"),
            _m(rung, "release-own-only", "peer-release",
               [delete(r"@%p_lead mbarrier\.arrive\.release\.cluster"),
                replace(rf"(\[%sempty\+\d+\]), {empty};", rf"\1, {empty // 2};", 4)], TIMING,
               "the peer's producer multicasts into this CTA's stage while its consumers still read it"),
            _m(rung, "release-mapa-own", "peer-release",
               replace(r"(mapa\.shared::cluster\.u32 %rbar, %sempty), %peer;", r"\1, %rank;"), TIMING,
               "both releases go to the own barrier: the peer's multicast races this CTA's readers"),
            _m(rung, "multicast-mask-1", "expect-tx", replace(r"mov\.u16(\s+)%mask, 3;", r"mov.u16\1%mask, 1;"),
               EXISTING, "rank 1 never receives its weight half: its full barrier waits forever"),
            _m(rung, "dead-no-arrive", "barrier-count",
               delete(r"mbarrier\.arrive\.shared::cta\.b64 %tok, \[%bar\];\s+//"), EXISTING,
               "a dead tile's consumers wait on a full barrier nobody arrives on"),
        ]
    return out


def _tma_store(rung: int) -> list[Mutation]:
    """Rung 8's TMA-store epilogue: the buffer's write / read ordering and the boxes it stores (each edit in every
    64-column span: 2 of a 128-column tile, 4 of rung 11's 256)."""
    spans = 4 if rung >= 11 else 2
    bar = r"bar\.sync\s+%bid, 128;"
    read_wait = r"@%p_el cp\.async\.bulk\.wait_group\.read 0;"
    return [
        _m(rung, "st-no-proxy-fence", "proxy-fence",
           delete(r"fence\.proxy\.async\.shared::cta;\s+// my stmatrix", spans), FENCES,
           "the TMA store (async proxy) reads shared memory the stmatrix (generic proxy) wrote, unfenced"),
        _m(rung, "st-no-read-wait", "bulk-store", delete(read_wait, spans), TIMING,
           "stmatrix overwrites the buffer while the last bulk store may still read it"),
        _m(rung, "st-no-bar-before", "cta-barrier", Edit(rf"^([ \t]*{read_wait}[^\n]*\n)[ \t]*{bar}\n", r"\1", spans),
           TIMING, "warps overwrite the buffer before the storing thread has seen the last store read it"),
        _m(rung, "st-no-bar-after", "cta-barrier",
           Edit(rf"^([ \t]*fence\.proxy\.async\.shared::cta;[^\n]*\n)[ \t]*{bar}\n", r"\1", spans), TIMING,
           "the storing thread stores the buffer before its warpgroup's other warps have written it"),
        _m(rung, "st-every-box", "bulk-store", replace(r"@%p_q (cp\.async\.bulk\.tensor\.2d\.global)", r"\1", spans),
           EXISTING, "boxes outside the run are stored: other experts' rows, rows past total_padded"),
        _m(rung, "st-no-swizzle", "bulk-store", replace(r"and\.b32(\s+)%cx, %lane, 7;", r"mov.u32\1%cx, 0;"), EXISTING,
           "stmatrix writes an unswizzled image that the 128B-swizzled tensor map reads back permuted"),
    ]


def _rungs67(rung: int) -> list[Mutation]:
    """Rungs 6 to 9 (token-major tiles, 7 / 6 / 6 / 6 stages, token-tile multicast; 7: scales by TMA and in shared
    memory; 8: + the TMA-store epilogue; 9: + grouped rasterisation, the same protocol on another item order):
    rung 5's protocol faults where their lines differ (a 32 KB stage, 7 / 6 barriers of each kind, the phase kept in
    a register), and their own paths: the idle warpgroup and the rank past an odd N-tile count (the suite's shape for
    them has N = 384), which must still release and arrive; rung 7's token-scale row and weight-scale barriers;
    rung 8's store buffer.
    """
    from ptx_impl import gemm_fp8_tm_template as tm

    ts, to = rung >= 7, rung >= 8
    stage, stages, empty = tm.STAGE_BYTES + ts * tm.S_BYTES, tm.stages(ts, to), tm.EMPTY_COUNT
    tokens_only = tm.A_BYTES + ts * tm.S_BYTES
    own_arrive = r"@%p_lead mbarrier\.arrive\.shared::cta\.b64 %tok, \[%bar\];"
    peer_arrive = r"@%p_lead mbarrier\.arrive\.release\.cluster"
    c_wait = r"^\$C_wait:\n[^\n]*\n[^\n]*\n"
    own: list[Mutation] = []
    if ts:
        bar = r"bar\.sync\s+%bid, 128;"
        # NOTE: rung 8 has no barrier before the copy: its epilogue's barriers order the last item's reads
        own = [] if to else [
            _m(rung, "ws-no-bar-before", "cta-barrier", Edit(rf"^[ \t]*{bar}\n([ \t]*and\.b32\s+%tmp2, %thr, 127;)",
                                                             r"\1"), TIMING,
               "a warp refills the weight-scale area while its warpgroup's other warps still read the last item's"),
        ]
        own += [
            _m(rung, "ws-no-bar-after", "cta-barrier", Edit(rf"^[ \t]*{bar}\n(\$C_wsdone:)", r"\1"), TIMING,
               "a warp reads weight scales its warpgroup's other warps have not stored yet"),
            _m(rung, "scale-read-after-release", "release-early",
               [move_after(r"ld\.shared\.f32\s+%sa0", peer_arrive), move_after(r"ld\.shared\.f32\s+%sa1", peer_arrive)],
               TIMING, "the stage's token scales are read after it was released: the next TMA may overwrite them"),
        ]
    if to:
        own += _tma_store(rung)
    return own + _wgmma_common(rung) + [
        _m(rung, "release-before-wait", "release-early", move_after(WAIT0, peer_arrive), TIMING,
           "the producer may refill the stage while the wgmma still reads it"),
        _m(rung, "no-full-retry", "retry", delete(r"@!%p_wait bra\s+\$C_wait;"), TIMING,
           "try_wait may return false: the consumers would read a stage that has not landed"),
        _m(rung, "no-empty-retry", "retry", delete(r"@!%p_wait bra\s+\$P_wait;"), TIMING,
           "try_wait may return false: the producer would refill a stage still being read"),
        _m(rung, "wgmma-before-full-wait", "wait-order",
           Edit(f"({c_wait})((?:[^\n]*\n)*?[ \t]*wgmma\\.commit_group[^\n]*\n)", r"\2\1"), TIMING,
           "the wgmma reads the stage before its TMA bytes are known to have landed"),
        _m(rung, "expect-tx-plus16", "expect-tx", replace(rf"(\[%bar\]), {stage};", rf"\1, {stage + 16};"), EXISTING,
           "the full barrier waits for 16 bytes that never come"),
        _m(rung, "expect-tx-minus16", "expect-tx", replace(rf"(\[%bar\]), {stage};", rf"\1, {stage - 16};"), EXISTING,
           "the phase completes 16 bytes early (tx-count underflow)"),
        _m(rung, "expect-tx-tokens-only-plus16", "expect-tx",
           replace(rf"(\[%bar\]), {tokens_only};", rf"\1, {tokens_only + 16};"), EXISTING,
           "the rank past the last N tile (tokens only) waits for 16 bytes that never come"),
        _m(rung, "parity-consumer", "parity",
           Edit(r"^(\$C_wait:\n[ \t]*mbarrier\.try_wait\.parity\.shared::cta\.b64 %p_wait, \[%bar\]), %ph;",
                "    xor.b32             %pw, %ph, 1;\n\\1, %pw;"), TIMING,
           "waiting on the other parity passes at once (the preceding phase), before the stage landed"),
        _m(rung, "parity-producer", "parity", replace(r"xor\.b32(\s+)%pw, %ph, 1;", r"mov.b32\1%pw, %ph;"), EXISTING,
           "the producer waits for a phase of the empty barrier that cannot complete"),
        _m(rung, "no-init-fences", "mbarrier-init",
           Edit(r"^[ \t]*fence\.mbarrier_init[^\n]*\n[ \t]*fence\.proxy\.async[^\n]*\n", ""), FENCES,
           "the barriers' init is never fenced: TMA's complete_tx (async proxy) may not see it"),
        _m(rung, "empty-count-minus1", "barrier-count",
           replace(rf"(\[%sempty\+\d+\]), {empty};", rf"\1, {empty - 1};", stages), TIMING,
           "the empty phase completes one arrival early: the refill races a consumer's wgmma"),
        _m(rung, "full-count-2", "barrier-count", replace(r"(\[%sfull\+\d+\]), 1;", r"\1, 2;", stages), EXISTING,
           "the full phase never completes"),
        _m(rung, "no-empty-wait", "release-early", Edit(r"^\$P_wait:\n[^\n]*\n[^\n]*\n", ""), TIMING,
           "the producer refills without waiting for the consumers"),
        _m(rung, "empty-wait-on-full", "barrier-count", Edit(r"%sempty;\n\$P_wait:", "%sfull;\n$P_wait:"), TIMING,
           "the producer waits on a full barrier (which its own TMA completes) instead of the empty one"),
        _m(rung, "no-release", "barrier-count", delete(own_arrive), EXISTING, "the empty phase never completes"),
        _m(rung, "idle-skips-release", "barrier-count",
           replace(r"@%p_idle bra\.uni(\s+)\$C_release;", r"@%p_idle bra.uni\1$C_kdone;"), EXISTING,
           "an idle warpgroup's warps never release their stages: the empty phase never completes"),
        _m(rung, "tokens-only-no-arrive", "barrier-count",
           delete(rf"@%p_nodd mbarrier\.arrive\.expect_tx\.shared::cta\.b64 %tok, \[%bar\], {tokens_only};"),
           EXISTING, "the rank past the last N tile never arrives on its full barrier: its consumers wait forever"),
        _m(rung, "setmaxnreg-dec-2of4", "setmaxnreg",
           replace(r"(setmaxnreg\.dec\.sync\.aligned\.u32 40;)",
                   r"setp.lt.u32         %p_q, %thr, 64;\n    @%p_q \1"), REGS,
           "setmaxnreg must be executed by all warps of the warpgroup (here 2 of 4)"),
        _m(rung, "setmaxnreg-inc-2of4", "setmaxnreg",
           replace(r"(setmaxnreg\.inc\.sync\.aligned\.u32 232;)",
                   r"and.b32             %tmp, %thr, 127;\n    setp.lt.u32         %p_q, %tmp, 64;\n    @%p_q \1"),
           REGS, "setmaxnreg must be executed by all warps of the warpgroup (here 2 of 4)"),
        _m(rung, "setmaxnreg-inc-256", "setmaxnreg", replace(r"setmaxnreg\.inc\.sync\.aligned\.u32 232;",
                                                              "setmaxnreg.inc.sync.aligned.u32 256;"), REGS,
           "2 x 128 x 256 + 128 x 40 registers exceed the CTA's 384 x 168: the inc never completes"),
        _m(rung, "no-maxnreg", "setmaxnreg", delete(r"\.maxnreg 168"), REGS,
           "without .maxnreg ptxas allocates fewer registers per thread: the pool cannot supply the inc"),
        _m(rung, "no-setmaxnreg-dec", "setmaxnreg", delete(r"setmaxnreg\.dec"), REGS,
           "the producer never frees registers: the consumers' inc waits forever"),
        _m(rung, "misaligned-stage", "alignment", insert_after(ALIGN_LINE, PLUS128), ALIGN,
           "TMA 128B-swizzle destinations and wgmma descriptors must be 1024-byte aligned"),
        _m(rung, "no-cluster-bar-start", "cluster-barrier",
           Edit(r"^(\$L_inited:\n)[ \t]*barrier\.cluster\.arrive[^\n]*\n[ \t]*barrier\.cluster\.wait[^\n]*\n",
                r"\1"), FENCES,
           "the peer may arrive on (or multicast into) barriers not yet initialised"),
        _m(rung, "no-cluster-bar-exit", "cluster-barrier",
           Edit(r"^(\$L_end:\n)[ \t]*barrier\.cluster\.arrive[^\n]*\n[ \t]*barrier\.cluster\.wait[^\n]*\n",
                r"\1"), PEERS, "a CTA exits while its peer may still arrive on its barriers or multicast to it"),
        _m(rung, "no-cluster-wait-exit", "cluster-barrier",
           Edit(r"^(\$L_end:\n[ \t]*barrier\.cluster\.arrive[^\n]*\n)[ \t]*barrier\.cluster\.wait[^\n]*\n",
                r"\1"), PEERS, "arriving without waiting: the CTA still exits before its peer is done"),
        _m(rung, "release-own-only", "peer-release",
           [delete(peer_arrive), replace(rf"(\[%sempty\+\d+\]), {empty};", rf"\1, {empty // 2};", stages)], TIMING,
           "the peer's producer multicasts into this CTA's stage while its consumers still read it"),
        _m(rung, "release-mapa-own", "peer-release",
           replace(r"(mapa\.shared::cluster\.u32 %rbar, %sempty), %peer;", r"\1, %rank;"), TIMING,
           "both releases go to the own barrier: the peer's multicast races this CTA's readers"),
        _m(rung, "multicast-mask-1", "expect-tx", replace(r"mov\.u16(\s+)%mask, 3;", r"mov.u16\1%mask, 1;"),
           EXISTING, "rank 1 never receives rank 0's token half: its full barrier waits forever"),
    ]


# rung 9's faults of the producer, the barriers' setup, the registers, the cluster and the TMA-store epilogue, which
# rung 10 shares line for line (its consumer loop has its own list below)
# (no ws-no-bar-before: rungs 8 and up have no barrier before the weight-scale copy)
OVERLAP_SHARED = ("ws-no-bar-after", "no-empty-retry", "expect-tx-plus16", "expect-tx-minus16",
                  "expect-tx-tokens-only-plus16", "parity-producer", "no-init-fences", "empty-count-minus1",
                  "full-count-2", "no-empty-wait", "empty-wait-on-full", "tokens-only-no-arrive",
                  "setmaxnreg-dec-2of4", "setmaxnreg-inc-2of4", "setmaxnreg-inc-256", "no-maxnreg",
                  "no-setmaxnreg-dec", "misaligned-stage", "no-cluster-bar-start", "no-cluster-bar-exit",
                  "no-cluster-wait-exit", "release-mapa-own", "multicast-mask-1", "st-no-proxy-fence",
                  "st-no-read-wait", "st-no-bar-before", "st-no-bar-after", "st-every-box", "st-no-swizzle")


def _rung_overlap(rung: int) -> list[Mutation]:
    """Rung 10 (rung 9 with two partial-sum sets, %part for even K groups and %part_b for odd, and
    wgmma.wait_group 1): rung 9's shared faults, and its consumer loop's: the depth of each wait, which set a
    promotion reads, when a stage is released (%sprev, after the wait that retires its wgmmas), the drains."""
    from ptx_impl import gemm_fp8_tm_template as tm

    wait1 = r"wgmma\.wait_group\.sync\.aligned 1;"
    own_arrive = r"@%p_lead mbarrier\.arrive\.shared::cta\.b64 %tok, \[%bar\];"
    peer_arrive = r"@%p_lead mbarrier\.arrive\.release\.cluster"
    line = r"^[ \t]*{}[^\n]*\n".format
    commit = line(r"wgmma\.commit_group")
    shared = [m for m in _rungs67(rung) if m.name.split("-", 1)[1] in OVERLAP_SHARED]
    return shared + [
        _m(rung, "no-wgmma-fence", "wgmma-fence", delete(r"wgmma\.fence\.sync\.aligned;", 2), FENCES,
           "wgmma.fence must order the promotion's reads of a set before the wgmmas that overwrite it"),
        _m(rung, "wgmma-fence-late", "wgmma-fence",
           Edit(r"^([ \t]*wgmma\.fence[^\n]*\n)([ \t]*wgmma\.mma_async[^\n]*\{%part_b0,[^\n]*\n)", r"\2\1"),
           FENCES, "the odd set's first wgmma runs before the fence that orders its last promotion's reads"),
        _m(rung, "wait-depth-2", "wait-group", replace(wait1, "wgmma.wait_group.sync.aligned 2;", 2), EXISTING,
           "wait_group 2 leaves the previous group in flight: its promotion reads registers still being written"),
        _m(rung, "drain-wait-1", "wait-group", replace(WAIT0, "wgmma.wait_group.sync.aligned 1;", 2), EXISTING,
           "the last group drains with depth 1: it stays in flight while promoted"),
        _m(rung, "no-drain-wait", "wait-group", delete(WAIT0, 2), EXISTING,
           "without the drain's wait the last group's partial sums are undefined when promoted"),
        _m(rung, "wait-before-commit", "wait-group",
           Edit(rf"({commit}(?:[^\n]*\n)*?)({line(wait1)})", r"\2\1", 2), EXISTING,
           "a wait before the commit does not cover the uncommitted wgmmas"),
        _m(rung, "promote-in-flight", "acc-read", replace(r"(fma\.rn\.f32\s+%acc0), %part0,", r"\1, %part_b0,", 2),
           EXISTING, "the even group's promotion reads the odd set, whose wgmmas were just issued"),
        _m(rung, "promote-before-wait", "acc-read", move_after(wait1, r"fma\.rn\.f32\s+%acc63, %part63,"),
           EXISTING, "the odd set is promoted before the wait that retires its wgmmas"),
        _m(rung, "acc-write-in-flight", "acc-read",
           insert_after(r"wgmma\.commit_group", "    mov.f32             %part0, 0f00000000;\n", 2), EXISTING,
           "writing an accumulator register of an in-flight wgmma is undefined"),
        _m(rung, "scale-d-accumulates", "scale-d",
           replace(r"(wgmma\.mma_async[^\n]*), %p_zero, 1, 1;", r"\1, %p_one, 1, 1;", 2), EXISTING,
           "each set's first wgmma adds the partial sums of two groups before"),
        _m(rung, "weight-scale-of-next-group", "promotion-scale", delete(r"sub\.u32\s+%tmp, %kt, 1;", 4), EXISTING,
           "group k - 1 is promoted with group k's weight scale"),
        _m(rung, "token-scales-of-other-set", "promotion-scale",
           replace(r"mul\.rn\.f32(\s+)%s0, %sa0, %ws;", r"mul.rn.f32\1%s0, %sb0, %ws;", 2), EXISTING,
           "the even group's promotion takes the odd group's token scale"),
        _m(rung, "release-in-flight-stage", "release-early",
           replace(r"%sprev, 8, %(sempty|rbar);", r"%stage, 8, %\1;", 8), TIMING,
           "the stage just issued is released while its wgmmas still read it"),
        _m(rung, "release-before-retire", "release-early",
           Edit(rf"({line(wait1)})((?:[^\n]*\n)*?{line(peer_arrive)})", r"\2\1", 2), TIMING,
           "group k - 1's stage is released before the wait that retires its wgmmas"),
        _m(rung, "no-full-retry", "retry", delete(r"@!%p_wait bra\s+\$C_wait[01];", 2), TIMING,
           "try_wait may return false: the consumers would read a stage that has not landed"),
        _m(rung, "wgmma-before-full-wait", "wait-order",
           Edit(r"(^\$C_wait1:\n[^\n]*\n[^\n]*\n)((?:[^\n]*\n)*?[ \t]*wgmma\.commit_group[^\n]*\n)", r"\2\1"),
           TIMING, "the odd group's wgmmas read the stage before its TMA bytes are known to have landed"),
        _m(rung, "parity-consumer", "parity",
           Edit(r"^(\$C_wait[01]:\n[ \t]*mbarrier\.try_wait\.parity\.shared::cta\.b64 %p_wait, \[%bar\]), %ph;",
                "    xor.b32             %pw, %ph, 1;\n\\1, %pw;", 2), TIMING,
           "waiting on the other parity passes at once (the preceding phase), before the stage landed"),
        _m(rung, "no-release", "barrier-count", delete(own_arrive, 5), EXISTING, "the empty phase never completes"),
        _m(rung, "idle-skips-release", "barrier-count",
           replace(r"@%p_idle bra\.uni(\s+)\$C_idle;", r"@%p_idle bra.uni\1$C_kend;"), EXISTING,
           "an idle warpgroup's warps never release their stages: the empty phase never completes"),
        _m(rung, "release-own-only", "peer-release",
           [delete(peer_arrive, 5), replace(rf"(\[%sempty\+\d+\]), {tm.EMPTY_COUNT};",
                                            rf"\1, {tm.EMPTY_COUNT // 2};", tm.stages(True, True, True, True))], TIMING,
           "the peer's producer multicasts into this CTA's stage while its consumers still read it"),
    ]


# rung 9's faults that rung 11 shares line for line (its ring has other byte and stage counts, and its own K loop:
# those are written again below); the TMA-store epilogue's are here, its lower spans being rung 9's
WIDE_SHARED = tuple(n for n in OVERLAP_SHARED if n not in ("expect-tx-plus16", "expect-tx-minus16",
                                                            "empty-count-minus1", "full-count-2")) + (
    "no-full-retry", "parity-consumer", "wgmma-before-full-wait", "release-before-wait", "scale-read-after-release",
    "no-release")


def _rung_wide(rung: int) -> list[Mutation]:
    """Rung 11 (rung 9 with 128 x 256 tiles: two 128-row weight boxes a stage, two m64n128 halves through one
    partial-sum set, a narrow last tile whose upper half lies past N): rung 9's shared faults, its ring's counts
    (49,664-byte stages, 4 of them), and the wide loop's own: each half's fence and wait, which accumulators and
    weight scale the upper half's promotion uses, the upper weight box and the narrow tile's arrival and scale copy.
    The suite's shape for it has N = 640 (PRESET_N640): a pair of whole tiles, then a narrow tile and a rank past
    the last tile."""
    from ptx_impl import gemm_fp8_tm_template as tm
    from ptx_impl import gemm_fp8_tm_wide as wide

    features = {"tma_scales": True, "tma_store": True, "raster": True, "wide": True}
    stages, empty = tm.stages(**features), tm.EMPTY_COUNT
    stage = tm.STAGE_BYTES + wide.HALF_W_BYTES + tm.S_BYTES
    narrow = tm.A_BYTES + wide.HALF_W_BYTES + tm.S_BYTES
    peer_arrive = r"@%p_lead mbarrier\.arrive\.release\.cluster"
    upper = r"@%p_nar bra\.uni\s+\$C_release;[^\n]*\n"  # the narrow tile's skip of the upper half
    line = r"^[ \t]*{}[^\n]*\n".format
    fence, commit, sa1 = line(r"wgmma\.fence"), line(r"wgmma\.commit_group"), line(r"ld\.shared\.f32\s+%sa1")
    shared = [m for m in _rungs67(rung) if m.name.split("-", 1)[1] in WIDE_SHARED]
    return shared + [
        _m(rung, "expect-tx-plus16", "expect-tx", replace(rf"(\[%bar\]), {stage};", rf"\1, {stage + 16};"), EXISTING,
           "the full barrier waits for 16 bytes that never come"),
        _m(rung, "expect-tx-minus16", "expect-tx", replace(rf"(\[%bar\]), {stage};", rf"\1, {stage - 16};"),
           EXISTING, "the phase completes 16 bytes early (tx-count underflow)"),
        _m(rung, "expect-tx-narrow-plus16", "expect-tx", replace(rf"(\[%bar\]), {narrow};", rf"\1, {narrow + 16};"),
           EXISTING, "the narrow tile's full barrier waits for 16 bytes that never come"),
        _m(rung, "narrow-no-arrive", "barrier-count", delete(r"@%p_h0 mbarrier\.arrive\.expect_tx"), EXISTING,
           "the narrow tile's producer never arrives on its full barrier: its consumers wait forever"),
        _m(rung, "empty-count-minus1", "barrier-count",
           replace(rf"(\[%sempty\+\d+\]), {empty};", rf"\1, {empty - 1};", stages), TIMING,
           "the empty phase completes one arrival early: the refill races a consumer's wgmma"),
        _m(rung, "full-count-2", "barrier-count", replace(r"(\[%sfull\+\d+\]), 1;", r"\1, 2;", stages), EXISTING,
           "the full phase never completes"),
        _m(rung, "release-own-only", "peer-release",
           [delete(peer_arrive), replace(rf"(\[%sempty\+\d+\]), {empty};", rf"\1, {empty // 2};", stages)], TIMING,
           "the peer's producer multicasts into this CTA's stage while its consumers still read it"),
        _m(rung, "upper-box-missing", "expect-tx", delete(r"@!%p_nar cp\.async\.bulk\.tensor"), EXISTING,
           "the upper weight box is never loaded: the full barrier waits for its 16 KB"),
        _m(rung, "upper-box-lower-rows", "expect-tx",
           replace(r"add\.u32(\s+)%tmp, %wrow, 128;", r"mov.u32\1%tmp, %wrow;"), EXISTING,
           "the upper box loads the lower 128 weight rows again: the upper columns are wrong"),
        _m(rung, "no-wgmma-fence", "wgmma-fence", delete(r"wgmma\.fence\.sync\.aligned;", 2), FENCES,
           "wgmma.fence must order the promotion's reads of %part before the wgmmas that overwrite it"),
        _m(rung, "upper-no-fence", "wgmma-fence", Edit(rf"({upper}(?:[^\n]*\n)*?){fence}", r"\1"),
           FENCES, "the upper half's wgmmas overwrite %part right after the lower half's promotion read it"),
        _m(rung, "lower-no-wait", "wait-group",
           Edit(rf"({sa1}){line(WAIT0)}", r"\1"), EXISTING,
           "the lower half is promoted while its wgmmas still write %part"),
        _m(rung, "upper-no-wait", "wait-group",
           Edit(rf"({upper}(?:[^\n]*\n)*?{commit}){line(WAIT0)}", r"\1"), EXISTING,
           "the upper half is promoted while its wgmmas still write %part"),
        _m(rung, "upper-wait-1", "wait-group",
           Edit(rf"({upper}(?:[^\n]*\n)*?{commit}[ \t]*wgmma\.wait_group\.sync\.aligned) 0;",
                r"\1 1;"), EXISTING, "wait_group 1 leaves the upper half's group in flight while it is promoted"),
        _m(rung, "acc-read-before-wait", "acc-read", move_after(WAIT0, r"fma\.rn\.f32\s+%acc63,"), EXISTING,
           "the lower half's promotion reads %part while the wgmma still writes it"),
        _m(rung, "acc-write-in-flight", "acc-read",
           insert_after(r"wgmma\.commit_group", "    mov.f32             %part0, 0f00000000;\n", 2), EXISTING,
           "writing an accumulator register of an in-flight wgmma is undefined"),
        _m(rung, "scale-d-accumulates", "scale-d",
           replace(r"(wgmma\.mma_async[^\n]*), %p_zero, 1, 1;", r"\1, %p_one, 1, 1;", 2), EXISTING,
           "each half's first wgmma adds the partial sums of the half before"),
        _m(rung, "upper-into-lower-acc", "promotion-scale",
           replace(r"fma\.rn\.f32(\s+)%acc64, %part0, %s0, %acc64;", r"fma.rn.f32\1%acc0, %part0, %s0, %acc0;"),
           EXISTING, "the upper half's first column is promoted into the lower half's sum"),
        _m(rung, "upper-weight-scale-of-lower", "promotion-scale", delete(r"shl\.b32\s+%tmp2, %ktiles, 2;"), EXISTING,
           "the upper half is promoted with the lower 128-column block's weight scale"),
        _m(rung, "narrow-copies-two-blocks", "promotion-scale", delete(r"@%p_nar mov\.u32\s+%kws, %ktiles;"),
           EXISTING, "the narrow tile copies a second weight-scale block that is not its own (past the expert's "
                     "blocks, past the array for the last expert)"),
    ]


# rung 11's faults whose lines rung 12 does not have (its producer's arrivals and loads are its own, below)
MCW_DROPPED = ("expect-tx-tokens-only-plus16", "tokens-only-no-arrive", "narrow-no-arrive", "upper-box-missing")


def _rung_mcw(rung: int) -> list[Mutation]:
    """Rung 12 (rung 11 with the cluster on two token tiles of one N tile, each CTA multicasting one 128-row weight box
    where both blocks are heads of one expert, else loading alone or idling): rung 11's faults on the lines it shares
    (the consumers' loop, ring, epilogue, registers, cluster barriers; multicast-mask-1 now starves rank 1 of box 0),
    and the producer's and the pair decode's own. The suite's shape (PRESET_N640_BM64) runs all four kinds of slot."""
    from ptx_impl import gemm_fp8_tm_template as tm
    from ptx_impl import gemm_fp8_tm_wide as wide

    tma = r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.tile\.mbarrier::complete_tx::bytes"
    half = tm.A_BYTES + wide.HALF_W_BYTES + tm.S_BYTES
    # NOTE: st-every-box is left out: at the suite's BM = 64 (a pair needs R = 2 to fit its shape) a consumer
    # warpgroup's 64 rows are one routing block and an idle warpgroup stores nothing, so dropping the box predicate
    # changes no store (an equivalent mutant there); rung 11's, at BM = 16, covers the same epilogue lines
    shared = [m for m in _rung_wide(rung) if m.name.split("-", 1)[1] not in MCW_DROPPED + ("st-every-box",)]
    return shared + [
        _m(rung, "half-no-arrive", "barrier-count", delete(r"@%p_half mbarrier\.arrive\.expect_tx"), EXISTING,
           "the narrow tile's producer never arrives on its full barrier: its consumers wait forever"),
        _m(rung, "expect-tx-half-minus16", "expect-tx", replace(rf"(\[%bar\]), {half};", rf"\1, {half - 16};"),
           EXISTING, "the narrow tile's phase completes 16 bytes early (tx-count underflow)"),
        _m(rung, "idle-no-arrive", "barrier-count", delete(r"@%p_nodd mbarrier\.arrive\.shared::cta\.b64"), EXISTING,
           "the CTA whose block is not a head never arrives on its full barriers: its consumers wait forever"),
        _m(rung, "idle-loads-tokens", "expect-tx", replace(rf"@!%p_nodd ({tma} \[%dst\])", r"\1"), EXISTING,
           "the idle CTA's token copy lands in a stage whose phase expects no bytes"),
        _m(rung, "token-upper-rows-missing", "expect-tx", delete(rf"@!%p_nodd {tma} \[%tmp2\], \[%ptma"), EXISTING,
           "the tile's upper 64 token rows are never loaded: the full barrier waits for their 8 KB"),
        _m(rung, "box1-not-multicast", "expect-tx",
           replace(rf"(@%p_mc1 {tma})\.multicast::cluster( \[%tmp2\], \[%ptmw, \{{%kc, %tmp\}}\], \[%bar\]), %mask;",
                   r"\1\2;"), EXISTING, "rank 1 keeps its weight box: rank 0 waits for 16 KB that never come"),
        _m(rung, "alone-lower-box-missing", "expect-tx", delete(r"@%p_uc cp\.async\.bulk\.tensor"), EXISTING,
           "a CTA alone never loads its lower weight box: the full barrier waits for its 16 KB"),
        _m(rung, "alone-upper-box-missing", "expect-tx", delete(r"@%p_uc1 cp\.async\.bulk\.tensor"), EXISTING,
           "a CTA alone never loads its upper weight box: the full barrier waits for its 16 KB"),
        _m(rung, "shared-across-experts", "pair-decode",
           replace(r"setp\.eq\.and\.s32(\s+)%p_sh, %e0, %e1, %p_hb0;", r"setp.ge.and.s32\1%p_sh, %e0, 0, %p_hb0;",
                   2),
           EXISTING, "two experts' heads share one weight tile: half of each CTA's tile uses the other's weights"),
        _m(rung, "partner-same-block", "pair-decode", delete(r"mad\.lo\.u32\s+%b, %rank, %rblk, %b;", 2),
           EXISTING, "rank 1 computes rank 0's block: the partner blocks' rows are never written"),
        _m(rung, "slot-is-block", "pair-decode", delete(r"mad\.lo\.u32\s+%b, %tmp, %rblk, %b;", 2), EXISTING,
           "slot s taken as block s: the pairs overlap and some blocks' rows are never written"),
    ]


MUTATIONS: tuple[Mutation, ...] = tuple(_rung2() + _rung3() + _rungs45(4) + _rungs45(5) + _rungs67(6) + _rungs67(7)
                                  + _rungs67(8) + _rungs67(9) + _rung_overlap(10) + _rung_wide(11) + _rung_mcw(12))

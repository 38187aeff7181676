"""Rung 10's overlapped promotion (issue #30, finding (c)) as gemm_fp8_tm_template renders it: the consumer's K loop.

Each consumer warpgroup keeps two sets of wgmma partial sums, %part (even K groups) and %part_b (odd), and waits with
wgmma.wait_group 1: the promotion of K group k - 1 runs on the CUDA cores while K group k's wgmmas run on the tensor
cores. The stage of group k - 1 is released after that wait (one stage longer held than in the lockstep loop).
`Ring` says what the loop needs of the kernel around it: the stage layout, the tile's width and the ring's advance.
"""
from __future__ import annotations

from dataclasses import dataclass

from ptx_impl.gemm_fp8_tm_stage import stage_wgmmas

OV_SETS = ("part", "part_b")  # the partial-sum register sets of even and odd K groups
OV_SCALES = (("%sa0", "%sa1"), ("%sb0", "%sb1"))  # their token scales (rows trow and trow + 8)

# the kernel header's paragraph
OVERLAP_HEADER = """
// Rung 10 (promotion overlap): two sets of partial sums a thread, %part for even K groups and %part_b for odd.
//   Stage of group k: wait full; wgmma.fence; 4 wgmmas into the set of k; commit; read its token scales; then
//   wgmma.wait_group 1 retires group k - 1 only (group k stays in flight), its stage is released, and its promotion
//   (64 fma from the other set) runs on the CUDA cores while group k's wgmmas run. The fence before the next wgmmas
//   orders that promotion's reads before they overwrite the set. After the last group: wait_group 0, release,
//   promote. An idle warpgroup only waits for and releases each stage."""


@dataclass(frozen=True)
class Ring:
    """What the overlapped loop needs of its kernel: bytes of a stage (operands), of a stage's token-scale row, the
    tile's width (wgmma N) and the lines that advance the ring by one stage (the template's _advance)."""
    stage_bytes: int
    s_bytes: int
    tile_n: int
    advance: tuple[str, ...]

    @property
    def acc(self) -> int:
        """fp32 registers a consumer thread holds per set (m64nN: 64 x N / 128 threads)."""
        return self.tile_n // 2


def overlap_regs(acc: int) -> tuple[str, ...]:
    return (f"    .reg .f32   %part_b<{acc}>, %sb0, %sb1;", "    .reg .b32   %sprev;")


def _issue(ring: Ring, x: int) -> list[str]:
    """Wait for the stage of group kt, its 4 wgmmas into set x (0: %part, 1: %part_b), commit, then read its 2 token
    scales into %sa0/%sa1 (x = 0) or %sb0/%sb1 (x = 1) while they run."""
    parts = ", ".join(f"%{OV_SETS[x]}{i}" for i in range(ring.acc))
    sa0, sa1 = OV_SCALES[x]
    L = [f"$C_k{x}:",
         "    mad.lo.u32          %bar, %stage, 8, %sfull;",
         f"$C_wait{x}:",
         "    mbarrier.try_wait.parity.shared::cta.b64 %p_wait, [%bar], %ph;",
         f"    @!%p_wait bra       $C_wait{x};"]
    L += stage_wgmmas(ring.stage_bytes, ring.tile_n, parts,
                      fence_note="                       // the last promotion's reads of this set come first")
    return L + [f"    mad.lo.u32          %tmp, %stage, {ring.s_bytes}, %ssc;",
                "    shl.b32             %tmp2, %trow, 2;",
                "    add.u32             %tmp, %tmp, %tmp2;",
                f"    ld.shared.f32       {sa0}, [%tmp];",
                f"    ld.shared.f32       {sa1}, [%tmp+32];           // token row + 8"]


def _retire(ring: Ring, x: int, depth: int) -> list[str]:
    """Wait until at most `depth` groups are in flight (1: the one just issued), release the stage of group kt - 1
    (%sprev), and promote group kt - 1 from set x with its token scales and weight scale kt - 1."""
    sa0, sa1 = OV_SCALES[x]
    L = [f"    wgmma.wait_group.sync.aligned {depth};",
         "    mad.lo.u32          %bar, %sprev, 8, %sempty;",
         "    @%p_lead mbarrier.arrive.shared::cta.b64 %tok, [%bar];",
         "    mad.lo.u32          %bar, %sprev, 8, %rbar;",
         "    @%p_lead mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%bar];",
         "    sub.u32             %tmp, %kt, 1;               // the group being promoted",
         "    shl.b32             %tmp, %tmp, 2;",
         "    add.u32             %tmp, %tmp, %sws;",
         "    ld.shared.f32       %ws, [%tmp];",
         f"    mul.rn.f32          %s0, {sa0}, %ws;",
         f"    mul.rn.f32          %s1, {sa1}, %ws;"]
    return L + [f"    fma.rn.f32          %acc{i}, %{OV_SETS[x]}{i}, %s{(i >> 1) & 1}, %acc{i};"
                for i in range(ring.acc)]


def overlap_loop(ring: Ring) -> list[str]:
    """Groups alternate between the two partial-sum sets (the loop is unrolled by two); each one's promotion follows
    the issue of the next group's wgmmas. An idle warpgroup takes $C_idle instead."""
    advance = list(ring.advance)
    L = ["    @%p_idle bra.uni    $C_idle;"]
    L += _issue(ring, 0)
    L += ["    setp.eq.u32         %p_q, %kt, 0;",
          "    @%p_q bra.uni       $C_first;                   // group 0: nothing to promote yet"]
    L += _retire(ring, 1, 1)
    L += ["$C_first:", "    mov.u32             %sprev, %stage;"]
    L += advance
    L += ["    @!%p_more bra.uni   $C_drain0;"]
    L += _issue(ring, 1)
    L += _retire(ring, 0, 1)
    L += ["    mov.u32             %sprev, %stage;"]
    L += advance
    L += ["    @%p_more bra.uni    $C_k0;"]
    L += _retire(ring, 1, 0)  # the last group was odd
    L += ["    bra.uni             $C_kend;", "$C_drain0:"]
    L += _retire(ring, 0, 0)  # the last group was even
    L += ["    bra.uni             $C_kend;",
          "    // an idle warpgroup (my rows hold none of the run): wait for and release each stage",
          "$C_idle:",
          "    mad.lo.u32          %bar, %stage, 8, %sfull;",
          "$C_iwait:",
          "    mbarrier.try_wait.parity.shared::cta.b64 %p_wait, [%bar], %ph;",
          "    @!%p_wait bra       $C_iwait;",
          "    mad.lo.u32          %bar, %stage, 8, %sempty;",
          "    @%p_lead mbarrier.arrive.shared::cta.b64 %tok, [%bar];",
          "    mad.lo.u32          %bar, %stage, 8, %rbar;",
          "    @%p_lead mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%bar];"]
    L += advance
    return L + ["    @%p_more bra.uni    $C_idle;", "$C_kend:"]

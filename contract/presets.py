"""Problem sizes (kernels.md "Shapes and presets") and routing skews."""
from __future__ import annotations

import re
from dataclasses import dataclass

from contract.errors import InputError, UnknownNameError


@dataclass(frozen=True)
class Preset:
    """One row of kernels.md's preset table."""

    name: str
    T: int  # tokens
    H: int  # hidden size
    E: int  # routed experts
    K: int  # experts per token
    G: int  # expert groups
    TG: int  # groups kept per token
    I: int  # noqa: E741 - expert intermediate size, named as in kernels.md
    BM: int  # row block of the grouped GEMM (the routing block align pads each expert to; see ROUTING_BLOCK_NOTES)
    route_scale: float = 2.5
    # A GEMM shape (gemm_shape): "contiguous" or "masked" (DeepGEMM's two MoE layouts), E groups of T rows each
    # (K = 1: one slot per row); "routed" (every named preset): rows come from the gate's top-K routing.
    layout: str = "routed"

    @property
    def is_gemm_shape(self) -> bool:
        return self.layout != "routed"

    @property
    def group_rows(self) -> int:
        """Rows each group of a GEMM shape holds (M of GxMxNxK); routed presets: 0."""
        return self.T // self.E if self.is_gemm_shape else 0

    @property
    def P_max(self) -> int:
        """Bound on padded rows: T*K + E*(BM-1) rounded up to a multiple of BM; a GEMM shape: its G groups of
        M rows each rounded up to BM (exactly the rows its layout holds)."""
        if self.is_gemm_shape:
            return self.E * -(-self.group_rows // self.BM) * self.BM
        raw = self.T * self.K + self.E * (self.BM - 1)
        return -(-raw // self.BM) * self.BM

    @property
    def n_blocks(self) -> int:
        return self.P_max // self.BM

    @property
    def experts_per_group(self) -> int:
        return self.E // self.G

    @property
    def useful_fraction(self) -> float:
        """Routed rows over the worst-case padded rows, T*K / P_max: the share of grouped-GEMM work that is useful
        when every expert pads its last block (balanced routing gets close to it with E*BM >> T*K)."""
        return self.slots / self.P_max

    @property
    def slots(self) -> int:
        """T*K routed (token, expert) slots; also the sentinel value in sorted_ids."""
        return self.T * self.K


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset("tiny", T=64, H=256, E=16, K=4, G=4, TG=2, I=128, BM=16),
        Preset("small", T=256, H=1024, E=32, K=8, G=8, TG=4, I=256, BM=32),
        Preset("dsv3-decode", T=128, H=7168, E=256, K=8, G=8, TG=4, I=2048, BM=16),
        Preset("dsv3-prefill", T=4096, H=7168, E=256, K=8, G=8, TG=4, I=2048, BM=64),
    )
}

# NOTE: the routing block per preset follows what production MoE kernels pick for the batch size (docs/tiling.md):
# vLLM's tuned fused_moe table for E=256 on an H200 uses BLOCK_SIZE_M=16 up to 512 tokens and 64 from 1024 tokens
# on. A block larger than the rows an expert gets is padding: at decode (128 tokens, 1,024 routed rows over 256
# experts, ~4 rows each) BM=64 pads to ~17k rows (6 % useful), BM=16 to ~4.9k (21 %).
ROUTING_BLOCK_NOTES = {
    "tiny": "test size: the smallest mma-friendly block",
    "small": "test size",
    "dsv3-decode": "vLLM fused_moe E=256 H200: BLOCK_SIZE_M=16 for M <= 512 tokens",
    "dsv3-prefill": "vLLM fused_moe E=256 H200: BLOCK_SIZE_M=64 for M >= 1024 tokens",
}

SKEWS = ("balanced", "imbalanced", "extreme")

# --- GEMM shapes (issue 28): DeepGEMM's MoE layouts at any size ------------------------------------------------------
# A shape GxMxNxK is G groups (experts) of M rows, each multiplied by its own N x K weight: C[g] = A[g] @ W[g]^T.
# "contiguous": the G groups' rows back to back in one [G*M, K] tensor (DeepGEMM's m_grouped "contiguous" layout,
# prefill); "masked": a [G, M, K] tensor of which each group's first M rows are valid (DeepGEMM's "masked" layout,
# decode under CUDA graphs; its published benchmark sets every group's valid rows to M, tests/test_core.py). The
# project's GEMMs address both through block_expert (one group per BM-row block), so the two layouts run the same
# kernels; what differs is the name and, in DeepGEMM, the schedule. As a preset the shape is E = G, T = G*M, K = 1,
# H = K and I = N/2, so the GEMM is the "up" variant (Kd = H, N = 2I); only the GEMM kernels accept it.
GEMM_LAYOUTS = ("contiguous", "masked")
GEMM_SHAPE_KERNELS = ("grouped_gemm", "grouped_gemm_fp8")
_SHAPE_RE = re.compile(r"^(?:(contiguous|masked)[-:])?(\d+)x(\d+)x(\d+)x(\d+)$")

# DeepGEMM README, "Performance" (commit 55ab91f of 2025-03-25, H800 SXM5, NVCC 12.8): the grouped-GEMM rows.
DEEPGEMM_TABLE = (
    "contiguous-4x8192x4096x7168", "contiguous-4x8192x7168x2048",
    "contiguous-8x4096x4096x7168", "contiguous-8x4096x7168x2048",
    "masked-1x1024x4096x7168", "masked-1x1024x7168x2048",
    "masked-2x512x4096x7168", "masked-2x512x7168x2048",
    "masked-4x256x4096x7168", "masked-4x256x7168x2048",
)
PRESET_GROUPS = {"deepgemm-table": DEEPGEMM_TABLE}


def gemm_shape(G: int, M: int, N: int, K: int, layout: str = "contiguous") -> Preset:  # noqa: N803 - GEMM names
    """The preset of a GEMM shape GxMxNxK in one of DeepGEMM's MoE layouts (see the note above).

    Raises:
        InputError: a size not positive, N odd, K not a multiple of 16, or an unknown layout.
    """
    if layout not in GEMM_LAYOUTS:
        raise UnknownNameError("GEMM layout", layout, GEMM_LAYOUTS)
    sizes = {"G": G, "M": M, "N": N, "K": K}
    bad = {k: v for k, v in sizes.items() if not isinstance(v, int) or isinstance(v, bool) or v <= 0}
    if bad:
        raise InputError(f"GEMM shape {G}x{M}x{N}x{K}: {bad} not positive integers; expected GxMxNxK with G groups "
                         f"of M rows, N output columns and K the reduction depth")
    if N % 2 or K % 16:
        raise InputError(f"GEMM shape {G}x{M}x{N}x{K}: N={N} must be even and K={K} a multiple of 16 (the "
                         f"tensor-core k step; the kernels' own tiles may ask more, and say so)")
    # NOTE: the routing block follows the presets' rule (ROUTING_BLOCK_NOTES): 64 rows once a group fills it
    BM = 64 if M >= 64 else 16
    return Preset(f"{layout}-{G}x{M}x{N}x{K}", T=G * M, H=K, E=G, K=1, G=1, TG=1, I=N // 2, BM=BM, layout=layout)


def parse_gemm_shape(text: str) -> Preset | None:
    """The preset of "GxMxNxK" (contiguous), "contiguous-GxMxNxK" or "masked-GxMxNxK"; None when text is not one."""
    match = _SHAPE_RE.match(text.strip().lower()) if isinstance(text, str) else None
    if match is None:
        return None
    layout, *dims = match.groups()
    G, M, N, K = (int(d) for d in dims)  # noqa: N806
    return gemm_shape(G, M, N, K, layout or "contiguous")


def expand_presets(names) -> list[str]:
    """Preset names with groups (deepgemm-table) expanded and shapes in their canonical name, each once."""
    out: list[str] = []
    for name in names:
        if name in PRESET_GROUPS:
            out.extend(PRESET_GROUPS[name])
        else:
            shape = parse_gemm_shape(name) if name not in PRESETS else None
            out.append(shape.name if shape is not None else name)
    return list(dict.fromkeys(out))


def get_preset(name: str | Preset) -> Preset:
    if isinstance(name, Preset):
        return name
    try:
        return PRESETS[name]
    except KeyError:
        shape = parse_gemm_shape(name)
        if shape is not None:
            return shape
        raise UnknownNameError("preset", name, [*PRESETS, *PRESET_GROUPS, "GxMxNxK", "masked-GxMxNxK"]) from None


def check_skew(name: str) -> str:
    if name not in SKEWS:
        raise UnknownNameError("skew", name, SKEWS)
    return name

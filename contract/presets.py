"""Problem sizes (kernels.md "Shapes and presets") and routing skews."""
from __future__ import annotations

from dataclasses import dataclass

from contract.errors import UnknownNameError


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

    @property
    def P_max(self) -> int:
        """Bound on padded rows: T*K + E*(BM-1) rounded up to a multiple of BM."""
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


def get_preset(name: str | Preset) -> Preset:
    if isinstance(name, Preset):
        return name
    try:
        return PRESETS[name]
    except KeyError:
        raise UnknownNameError("preset", name, PRESETS) from None


def check_skew(name: str) -> str:
    if name not in SKEWS:
        raise UnknownNameError("skew", name, SKEWS)
    return name

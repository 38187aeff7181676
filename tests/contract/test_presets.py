"""contract/presets.py: the routing block per preset, as documented and as production MoE kernels choose it."""
from __future__ import annotations

import re
from pathlib import Path

from contract.presets import PRESETS, ROUTING_BLOCK_NOTES

ROOT = Path(__file__).resolve().parents[2]


def test_decode_block_keeps_padding_down():
    """dsv3-decode (~4 routed rows per expert) must not pad to a 64-row block: at worst 21% useful, not 6%."""
    p = PRESETS["dsv3-decode"]
    assert p.BM == 16 and p.P_max == 4864
    assert abs(p.useful_fraction - 1024 / 4864) < 1e-12
    assert PRESETS["dsv3-prefill"].BM == 64


def test_every_preset_says_why_its_block():
    assert set(ROUTING_BLOCK_NOTES) == set(PRESETS)


def test_kernels_md_table_matches_the_presets():
    text = (ROOT / "docs" / "kernels.md").read_text()
    header = re.search(r"^\|[^|\n]*\|[^|\n]*\|(.*)\|$", text, re.MULTILINE)  # first table row: the preset names
    names = [c.strip().strip("`") for c in header.group(1).split("|")]
    bm_row = re.search(r"^\| BM \|[^|]*\|(.*)\|$", text, re.MULTILINE)
    values = [int(c) for c in bm_row.group(1).split("|")]
    assert dict(zip(names, values, strict=True)) == {name: p.BM for name, p in PRESETS.items()}

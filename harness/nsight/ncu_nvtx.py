"""The NVTX cells ncu adds with --nvtx.

A push/pop cell is a thread id followed by quoted entries, outermost first, each
`domain:range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg`, e.g.
`1  "<default domain>:outer:none:none:none:none:none:none"  "ptxmoe:gate/cuda/tiny/balanced:none:...:none"`.
Range names may hold ':' themselves, so the six trailing attribute fields are cut from the right.
"""
from __future__ import annotations

import functools
import re

from harness.nsight.table import PTXMOE_DOMAIN

DEFAULT_DOMAIN_NAMES = frozenset({"<default domain>", "<default>", "default"})
_QUOTED = re.compile(r'"([^"]*)"')
_TRAILING = 6  # PL_Type, PL_Value, CLR_Type, Color, Msg_Type, Msg


def is_nvtx_column(name: str) -> bool:
    return "Push/Pop_Range" in name or "Start/Stop_Range" in name


def is_push_pop_column(name: str) -> bool:
    return "Push/Pop_Range" in name


def domain_name(name: str) -> str:
    """"" for the default domain, the name otherwise."""
    name = name.strip()
    return "" if name in DEFAULT_DOMAIN_NAMES else name


def parse_entry(entry: str) -> tuple[str, str]:
    """(domain, range name) of one quoted push/pop entry."""
    domain, _, rest = entry.partition(":")
    fields = rest.split(":")
    if len(fields) > _TRAILING:
        name = ":".join(fields[:-_TRAILING])
        msg_type = fields[-2]
        if msg_type not in ("none", "") and fields[-1] != name:
            # the message itself may hold ':'; prefer the split where the message repeats the range name
            for cut in range(1, len(fields) - _TRAILING + 1):
                candidate = ":".join(fields[:cut])
                if ":".join(fields[cut + _TRAILING - 1:]) == candidate:
                    name = candidate
                    break
    else:
        name = rest
    return domain_name(domain), name


@functools.lru_cache(maxsize=4096)  # the same cell repeats on every metric row of a launch
def parse_push_pop_cell(cell: str) -> tuple[tuple[str, str], ...]:
    """Every (domain, range) in a push/pop cell, outermost first; () for an empty cell."""
    return tuple(parse_entry(entry) for entry in _QUOTED.findall(cell or ""))


def innermost(stack: tuple[tuple[str, str], ...]) -> tuple[str, str]:
    """(domain, name) to report: the innermost ptxmoe-domain range if any, else the last entry; ("", "") if none."""
    for domain, name in reversed(stack):
        if domain == PTXMOE_DOMAIN:
            return domain, name
    return stack[-1] if stack else ("", "")

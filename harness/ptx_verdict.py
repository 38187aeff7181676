"""Whose fault is PTX the simulator cannot load: ptxas's verdict tells invalid PTX from a simulator gap.

ptxsim refuses what it cannot decode ("no handler for this opcode") without knowing whether the instruction exists:
a misspelled `fmaa` and a valid but unsupported `vabsdiff` read the same. ptxas, assembling the same text for the
module's own target, knows: its refusal (with its line) makes the error InvalidPtx, its acceptance a SimulatorGap.
"""
from __future__ import annotations

import re

from harness.errors import InvalidPtx, SimulatorGap, ToolchainError

_TARGET = re.compile(r"^\s*\.target\s+(sm_\w+)", re.MULTILINE)
PTXAS_LINES = 4  # lines of ptxas's refusal kept in the message


def ptx_arch(ptx: str) -> str:
    """The module's `.target` (sm_90a, ...), sm_90 when it names none."""
    m = _TARGET.search(ptx)
    return m.group(1) if m else "sm_90"


def classify_refusal(ptx: str, refusal: Exception) -> Exception:
    """InvalidPtx (ptxas refuses `ptx`) or SimulatorGap (ptxas assembles it) for the simulator's `refusal`;
    `refusal` itself when ptxas is not installed to ask."""
    from harness.toolchain import assemble, ptxas_path

    try:
        ptxas_path()
    except ToolchainError:
        return refusal
    arch = ptx_arch(ptx)
    try:
        assemble(ptx, arch=arch, name="kernel.ptx")
    except ToolchainError as exc:
        said = [line for line in str(exc).splitlines()[1:] if line.strip() and "aborted" not in line]
        said = [re.sub(r"^ptxas \S+, ", "", line) for line in said][:PTXAS_LINES]
        return InvalidPtx(f"invalid PTX: ptxas ({arch}) refuses it: {'; '.join(said) or str(exc)} "
                          f"(the simulator said: {refusal})")
    return SimulatorGap(f"simulator gap: ptxas ({arch}) accepts this PTX but ptxsim does not support it: {refusal}")

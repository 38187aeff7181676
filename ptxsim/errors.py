"""One exception hierarchy for ptxsim; every message names the bad value, where it is and what was expected."""
from __future__ import annotations


class PtxSimError(Exception):
    """Base of every error ptxsim raises."""


class PtxSyntaxError(PtxSimError):
    """PTX text that does not parse: carries line, column and the offending source line."""

    def __init__(self, message: str, line: int, col: int, text: str = ""):
        self.line, self.col, self.text = line, col, text
        where = f"line {line}:{col}: {message}"
        if text:
            shown, caret = _excerpt(text, col)
            where += f"\n    {shown}\n    {' ' * max(caret - 1, 0)}^"
        super().__init__(where)


def _excerpt(text: str, col: int, width: int = 200) -> tuple:
    """At most `width` characters of a source line around column col, and col's position in the excerpt."""
    if len(text) <= width:
        return text, col
    start = max(0, min(col - width // 2, len(text) - width))
    head = "..." if start else ""
    tail = "..." if start + width < len(text) else ""
    return head + text[start:start + width] + tail, col - start + len(head)


class UnsupportedInstruction(PtxSimError):
    """An opcode or modifier combination the simulator does not implement (never silently skipped)."""

    def __init__(self, opcode: str, modifiers, line: int, why: str = ""):
        self.opcode, self.modifiers, self.line = opcode, tuple(modifiers), line
        mods = "".join(self.modifiers)
        mods = mods if len(mods) <= 160 else mods[:157] + "..."
        opcode = opcode if len(opcode) <= 40 else opcode[:37] + "..."
        super().__init__(f"unsupported instruction `{opcode}{mods}` at PTX line {line}" + (f": {why}" if why else ""))


class DecodeError(PtxSimError):
    """Well-formed PTX that cannot be decoded: unknown register or label, wrong operand count, bad type."""


class KernelNotFound(PtxSimError, KeyError):
    """module.kernel(name) for a name that is not an entry of the module."""

    def __str__(self):  # KeyError would quote the message
        return self.args[0]


class ParamTypeError(PtxSimError, TypeError):
    """A launch argument that does not fit the kernel's .param declaration."""


class LaunchError(PtxSimError, ValueError):
    """Bad launch configuration (grid/block shape, shared memory size, argument count)."""


class MemoryFault(PtxSimError):
    """Out-of-bounds or misaligned access; names kernel, PTX line, CTA, thread, address and nearest allocation."""

    def __init__(self, message: str, *, space: str = "", addr: int = 0, size: int = 0, cta=None, thread=None,
                 line: int = 0, kernel: str = ""):
        self.space, self.addr, self.size, self.cta, self.thread, self.line, self.kernel = (
            space, addr, size, cta, thread, line, kernel)
        super().__init__(message)


class RegisterPoolError(PtxSimError):
    """setmaxnreg without a defined register pool (.maxnreg), or an .inc that would lower / .dec that would raise the
    warp's register count; names the instruction, line, CTA and thread."""


class DeadlockError(PtxSimError):
    """No thread can make progress while some have not exited (barrier never satisfied)."""


class InstructionBudgetExceeded(PtxSimError):
    """The launch ran more warp-instructions than its budget (a runaway loop?)."""


class TimeLimitExceeded(InstructionBudgetExceeded):
    """The launch ran longer than its wall-clock limit (a runaway loop?); names the kernel and the loop's PTX line."""


class ResourceLimitError(PtxSimError, ValueError):
    """A request beyond a hardware or simulator limit (grid size, .local / .global bytes, call depth); the message
    gives what was asked and the limit."""


class CallDepthExceeded(ResourceLimitError):
    """Nested .func calls (recursion) deeper than the call-depth limit."""


class PtxasError(DecodeError):
    """load_ptx(..., validate=True): ptxas rejected the module; carries ptxas's messages with PTX line numbers."""

    def __init__(self, message: str, diagnostics=()):
        self.diagnostics = tuple(diagnostics)  # ((line, message), ...)
        super().__init__(message)


class SanitizerError(PtxSimError):
    """Base of sanitizer findings (memcheck, racecheck, initcheck, synccheck, nc hazard)."""

    def __init__(self, message: str, report=None):
        self.report = report
        super().__init__(message)


class MemcheckError(SanitizerError):
    """memcheck: out-of-bounds, misaligned or use-after-free access."""


class RacecheckError(SanitizerError):
    """racecheck: shared-memory hazard between warps with no barrier between."""


class InitcheckError(SanitizerError):
    """initcheck: read of global or shared bytes never written."""


class SynccheckError(SanitizerError):
    """synccheck: barrier reached in divergent code."""


class NcHazardError(SanitizerError):
    """nc: a write in the same launch to an address read through ld.global.nc."""


class PtxSimWarning(UserWarning):
    """Behaviour the simulator runs but hardware leaves undefined (an .aligned barrier in divergent code)."""


class MbarrierError(PtxSimError):
    """An mbarrier used wrongly: not initialised, more arrivals than its pending count, tx-count out of range."""


class AsynccheckError(SanitizerError):
    """asynccheck: mbarrier tx-count underflow, wgmma accumulators read before wgmma.wait_group."""

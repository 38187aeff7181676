"""load_ptx -> Module; module.kernel(name) -> Kernel (decoded once, cached)."""
from __future__ import annotations

import itertools

from ptxsim.errors import KernelNotFound, PtxSyntaxError
from ptxsim.parser import parse
from ptxsim.validate import check_module

_IDS = itertools.count(1)


class Kernel:
    """One decoded .entry: its Program plus the module it came from."""

    def __init__(self, module, prog):
        self.module = module
        self.program = prog
        self.name = prog.name

    @property
    def params(self):
        return self.program.params

    def __repr__(self):
        return f"<ptxsim.Kernel {self.name} ({len(self.program.instrs)} instructions, {len(self.params)} params)>"


class Module:
    """A parsed PTX module."""

    def __init__(self, ast, text: str):
        self.ast = ast
        self.text = text
        self.id = next(_IDS)
        self._kernels = {}
        self.ptxas_checked = False

    @property
    def entries(self) -> list[str]:
        return [f.name for f in self.ast.functions if f.kind == "entry" and f.body is not None]

    @property
    def variables(self):
        return self.ast.variables

    def kernel(self, name: str) -> Kernel:
        """The entry `name`, decoded (once).

        Raises:
            KernelNotFound: naming the entries the module has.
            UnsupportedInstruction / DecodeError: when the body uses something the simulator lacks.
        """
        k = self._kernels.get(name)
        if k is not None:
            return k
        if name not in self.entries:
            close = [e for e in self.entries if name in e or e in name]
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise KernelNotFound(f"no .entry named {name!r} in this module; entries: "
                                 f"{', '.join(self.entries) or '(none)'}{hint}")
        from ptxsim.decode import Decoder
        from ptxsim.ops import table

        prog = Decoder(self.ast, table()).decode_kernel(name)
        k = self._kernels[name] = Kernel(self, prog)
        return k


_CACHE: dict = {}
_CACHE_SIZE = 64


def load_ptx(text, validate: bool = False, ptxas=None) -> Module:
    """Parse PTX text into a Module. The same text gives the same (immutable) Module, parsed and decoded once.

    Args:
        text: PTX as str, or bytes (UTF-8; PTX itself is ASCII).
        validate: also assemble the module with ptxas (the nvidia-cuda-nvcc-cu12 wheel's, or `ptxas`) and raise its
            errors; warns and skips when no ptxas is available.
        ptxas: path of a ptxas executable to use instead of the wheel's.

    Raises:
        PtxSyntaxError: with line:column and the offending text (also for bytes that are not UTF-8).
        DecodeError: a .version / .target ptxsim does not know, .const data beyond 64 KB.
        PtxasError: validate=True and ptxas rejected the module (PTX line numbers in the message).
    """
    text = _as_text(text)
    mod = _CACHE.get(text)
    if mod is None:
        ast = parse(text)
        check_module(ast)
        mod = Module(ast, text)
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[text] = mod
    if validate and not mod.ptxas_checked:
        from ptxsim import ptxas as ptxas_mod

        if ptxas_mod.check(text, mod.ast.target, ptxas):
            mod.ptxas_checked = True
        else:
            import warnings

            from ptxsim.errors import PtxSimWarning

            warnings.warn(PtxSimWarning("load_ptx(validate=True): no ptxas found (install nvidia-cuda-nvcc-cu12 or "
                                        "pass ptxas=path); the module was not checked by ptxas"), stacklevel=2)
    return mod


def _as_text(text) -> str:
    if isinstance(text, str):
        return text
    if isinstance(text, (bytes, bytearray, memoryview)):
        raw = bytes(text)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            line = raw.count(b"\n", 0, e.start) + 1
            col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
            src = raw.split(b"\n")[line - 1].decode("utf-8", "replace")
            raise PtxSyntaxError(f"byte {raw[e.start]:#04x} is not UTF-8 text (PTX is ASCII)", line, col,
                                 src) from None
    raise PtxSyntaxError(f"expected PTX text as str or bytes, got {type(text).__name__}", 0, 0)

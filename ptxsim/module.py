"""load_ptx -> Module; module.kernel(name) -> Kernel (decoded once, cached)."""
from __future__ import annotations

import itertools

from ptxsim.errors import KernelNotFound
from ptxsim.parser import parse

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


def load_ptx(text: str) -> Module:
    """Parse PTX text into a Module. The same text gives the same (immutable) Module, parsed and decoded once.

    Raises:
        PtxSyntaxError: with line:column and the offending text.
    """
    if isinstance(text, bytes):
        text = text.decode()
    mod = _CACHE.get(text)
    if mod is None:
        mod = Module(parse(text), text)
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[text] = mod
    return mod

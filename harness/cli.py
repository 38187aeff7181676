"""ptxmoe command line: one sub-command per module, each exposing `register(subparsers)`.

Every module listed in COMMAND_MODULES defines `register(subparsers)`, which adds its parser and sets
`func=<callable(args) -> int>` on it. User errors (PtxmoeError) exit 2 with the message and no traceback; so does a
file-system error a command did not turn into one (a path it cannot read or write), naming the path. Ctrl-C exits
130, SIGTERM (as harness.interrupts.Terminated) 143.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from harness.errors import PtxmoeError

# Sub-command modules, in the order `ptxmoe --help` lists them. Imports are lazy so `--help` stays fast.
COMMAND_MODULES = (
    "harness.commands.list_cmd",
    "harness.commands.compare_cmd",
    "harness.commands.profile_cmd",
    "harness.commands.import_cmd",
    "harness.nsight.commands",
    "harness.dashboard.commands",
    "harness.commands.export_cmd",
    "harness.commands.partition_cmd",
    "harness.commands.calibrate_cmd",
)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own exit code for usage errors is 2 as well; keep its message short
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ptxmoe", description="Is hand-written PTX worth it over CUDA? Measure it.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for module_name in COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and module_name.startswith(exc.name):
                continue  # a sub-command not built yet; `ptxmoe list` says what is missing
            raise
        module.register(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except PtxmoeError as exc:
        print(f"ptxmoe {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # NOTE: a safety net; commands should raise PtxmoeError naming the option at fault
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"ptxmoe {args.command}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        from harness.interrupts import exit_code, signal_name

        print(f"ptxmoe: interrupted ({signal_name(exc)})", file=sys.stderr)
        return exit_code(exc)


if __name__ == "__main__":
    sys.exit(main())

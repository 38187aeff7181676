"""`ptxmoe list`: kernels, implementations present, presets, skews, and what this machine has."""
from __future__ import annotations


def register(subparsers) -> None:
    parser = subparsers.add_parser("list", help="kernels, implementations present, presets, toolchain and GPU")
    parser.set_defaults(func=run)


def _probe(fn) -> str:
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - a missing tool is a line of the report, not a crash
        return f"NOT FOUND ({exc})"


def print_ladders() -> None:
    """The kernels written as ablation ladders (issue #16), one line per rung: `compare` runs a row per rung."""
    from harness.implementations import IMPLS, implementation_ladders

    ladders = [(impl, kernel, ladder) for impl in IMPLS for kernel, ladder in implementation_ladders(impl).items()]
    if not ladders:
        return
    print("ladders (a row per rung in `compare`; the plain row is the top rung):")
    for impl, kernel, ladder in ladders:
        print(f"  {impl} {kernel}:")
        for number, name in enumerate(ladder.names, start=1):
            print(f"    rung {number}  {name:<40} row {ladder.slot(number)}" + ("  (top)" if number == ladder.top
                                                                              else ""))


def run(args) -> int:
    from contract.kernels import KERNELS
    from contract.presets import PRESETS, SKEWS
    from harness import toolchain
    from harness.implementations import IMPL_NAMES, IMPLS, implementation_table

    tables = {impl: implementation_table(impl) for impl in IMPLS}
    print("kernels (kernels.md):")
    for name, spec in KERNELS.items():
        present = [impl for impl, (table, _) in tables.items() if name in table]
        missing = [impl for impl in IMPLS if impl not in present]
        status = ", ".join(present) or "-"
        note = f"   missing: {', '.join(missing)}" if missing else ""
        print(f"  {name:<16} {spec.summary:<48} impls: {status}{note}")
    print("implementations:")
    for impl, (table, problem) in tables.items():
        print(f"  {impl:<6} {IMPL_NAMES[impl]:<11} {IMPLS[impl]:<9} {len(table)} kernel(s)"
              + (f"   note: {problem}" if problem else ""))
    print_ladders()
    print("presets:")
    for p in PRESETS.values():
        print(f"  {p.name:<13} T={p.T} H={p.H} E={p.E} K={p.K} G={p.G} TG={p.TG} I={p.I} BM={p.BM} P_max={p.P_max}")
    print(f"skews: {', '.join(SKEWS)}")
    print("backends: sim (ptxsim on the CPU), gpu (numba-cuda + cuda-python), auto")
    print("toolchain (from the PyPI wheels):")
    print(f"  ptxas     {_probe(lambda: f'{toolchain.ptxas_version()}  {toolchain.ptxas_path()}')}")
    print(f"  NVVM      {_probe(lambda: f'IR {toolchain.nvvm_version()}  {toolchain.nvvm_path()}')}")
    print(f"  NVRTC     {_probe(toolchain.nvrtc_version)}")
    print(f"  nvdisasm  {_probe(lambda: f'{toolchain.nvdisasm_version()}  {toolchain.nvdisasm_path()}')}")
    ok, why = toolchain.gpu_visible()
    print(f"GPU: {why if ok else 'none (' + why + ')'}")
    print(f"default backend here: {'gpu' if ok else 'sim'}")
    return 0

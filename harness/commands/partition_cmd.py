"""`ptxmoe partition`: communication on N SMs next to the grouped GEMM on the rest (issue #9), modelled or measured."""
from __future__ import annotations

from pathlib import Path

from harness.backends.kinds import backend_kind

DEFAULT_OUT = Path("profiles")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "partition", help="sweep the SMs given to dispatch/combine next to the grouped GEMM (DeepSeek-V3's 20 of 132)",
        description="For N SMs of communication (persistent dispatch + combine, plain vs ld.global.nc.L1::no_allocate "
                    "loads) next to the grouped GEMM on the other SMs: communication bandwidth, GEMM throughput, "
                    "overlapped vs back-to-back step time and the GEMM's slowdown from interference. sim: modelled "
                    "from ptxsim counters and ptxsim.model (interference constants are model assumptions); gpu: "
                    "measured with CUDA events on two streams. Writes profiles/<run-id>/partition.json.")
    parser.add_argument("--backend", default="auto", help="auto (gpu when one is visible, else sim), sim or gpu")
    parser.add_argument("--device", default="h800", help="modelled device for sim (h800, h100, h200; default h800)")
    parser.add_argument("--sms", default="0,4,8,12,16,20,24,28,32", metavar="LIST",
                        help="SMs for communication: comma-separated or start:stop:step (default 0,4,...,32)")
    parser.add_argument("--series", default="ptx/plain,ptx/no_allocate,numba/plain", metavar="LIST",
                        help="comm kernels, impl/loads (default ptx/plain,ptx/no_allocate,numba/plain)")
    parser.add_argument("--preset", default="dsv3-prefill", help="target shapes (default dsv3-prefill)")
    parser.add_argument("--ep", type=int, default=32, help="expert parallelism: the GEMM holds E/ep experts (32)")
    parser.add_argument("--out", metavar="DIR", default=str(DEFAULT_OUT), help="profiles folder (default profiles/)")
    parser.add_argument("--seed", type=int, help="seed of the simulated inputs (default: fresh, recorded)")
    parser.add_argument("--pp", type=int, default=8, help="schedule table: pipeline stages (default 8)")
    parser.add_argument("--microbatches", type=int, default=20, help="schedule table: micro-batches (default 20)")
    parser.add_argument("--json", action="store_true", help="print the document as JSON instead of tables")
    parser.set_defaults(func=run)


def run(args) -> int:
    import json
    import sys

    from contract.presets import get_preset
    from harness.backends.select import resolve_backend_name
    from harness.commands.compare_cmd import check_out_dir
    from harness.partition.report import render
    from harness.partition.sweep import PartitionSettings, parse_sms, run_sweep, write_doc
    from harness.results import jsonable

    backend = resolve_backend_name(args.backend)
    if backend_kind(backend).simulated:
        from harness.errors import InputError
        from ptxsim.model import ModelError, get_device

        try:
            get_device(args.device)
        except ModelError as exc:
            raise InputError(f"--device: {exc}") from None
    get_preset(args.preset)
    settings = PartitionSettings(backend=backend, device=args.device, preset=args.preset, ep=args.ep,
                                 sms=parse_sms(args.sms), seed=args.seed,
                                 series=tuple(x.strip() for x in args.series.split(",") if x.strip()), pp=args.pp,
                                 microbatches=args.microbatches)
    out = check_out_dir(args.out)  # before the sweep: a bad --out should not cost a whole run
    doc = run_sweep(settings)
    path = write_doc(doc, out)
    if args.json:
        print(json.dumps(jsonable(doc), indent=1))
        print(f"wrote {path}", file=sys.stderr)  # stdout stays one JSON document
    else:
        print(render(doc))
        print(f"\nwrote {path}")
    return 0

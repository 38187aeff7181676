"""How close is ptxsim's timing model to real Hopper GPUs? Each microbenchmark of ptxsim/model/microbench.py runs on
ptxsim, its time is estimated with the model of the device the published figure was measured on, and the modelled
quantity is set beside the published one (ptxsim/model/published.py; sources in docs/model-validation.md).

    python benchmarks/model_validation.py [--only NAME,...] [--no-record] [--device-profile FILE]

Prints `quantity | modelled | published | ratio` and a summary line; the goal is every ratio within 0.85-1.15.
Unless --no-record (or --only), records the rows and the model's error figure in ptxsim/model/validation.json,
which sets the interval of every modelled time. Runs in under a minute on 2 cores (the wgmma benches most of it).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated bench names (default: all)")
    parser.add_argument("--no-record", action="store_true", help="do not update ptxsim/model/validation.json")
    parser.add_argument("--device-profile", default=None, help="a device profile from `ptxmoe calibrate`")
    args = parser.parse_args(argv)

    from harness.static import analyse_ptx  # ptxas registers and SASS mix of each microbenchmark
    from ptxsim.model.errors import ModelError
    from ptxsim.model.profile import load_profile
    from ptxsim.model.validation import table, validate, write_record

    names = [n for n in args.only.split(",") if n]
    try:
        constants = load_profile(args.device_profile).constants if args.device_profile else None
        rows = validate(constants, names or None, static_facts=analyse_ptx)
    except ModelError as exc:
        print(f"model_validation: {exc}", file=sys.stderr)
        return 2
    print(table(rows))
    if not names and not args.no_record and not args.device_profile:
        write_record(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

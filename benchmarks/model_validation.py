"""How close is ptxsim's timing model to real Hopper GPUs? Each microbenchmark of ptxsim/model/microbench.py runs on
ptxsim, its time is estimated with the model of the device the published figure was measured on, and the modelled
quantity is set beside the published one (ptxsim/model/published.py; sources in docs/model-validation.md).

    python benchmarks/model_validation.py [--only NAME,...] [--no-record] [--device-profile FILE]

Prints `quantity | modelled | published | ratio` with each row's role (fit: a model constant was set from it;
predicted: out of sample) and the error over each; then the PAIRED rows (ptxsim/model/paired.py: published ratios of
two variants, all predicted) with the geometric RMS of their ratio error, split by same/different limiters, and the
95% prediction-interval parameters fitted to them (ptxsim/model/intervals.py). Goals (issue 29): predicted paired
rows <= 10%, predicted absolute rows <= 20%; the figures are printed as they are.
Model v1 (analytic bounds, timing.py) and v2 (per-SM cycle-approximate schedule, cycle.py) both run (one functional
simulation per launch, shared) and print side by side; --model picks the version printed in full and recorded as
`model_version` (the other's errors and ratios go under `other_models`).
Unless --no-record (or --only), records everything in ptxsim/model/validation.json, and each version's interval fits
(the paired rows in speedup orientation, and the fit of the predicted absolute rows' time errors that every modelled
row's 95% interval uses: ptxsim/model/interval_table.py) in ptxsim/model/interval_table.json. Runs in about
a minute on 2 cores (the wgmma benches and the copies most of it).
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated bench names (default: all)")
    parser.add_argument("--no-record", action="store_true", help="do not update ptxsim/model/validation.json")
    parser.add_argument("--device-profile", default=None, help="a device profile from `ptxmoe calibrate`")
    parser.add_argument("--model", default="v1", choices=("v1", "v2"),
                        help="the model version whose rows are printed in full and recorded (default v1; the other "
                             "is run too and printed side by side)")
    args = parser.parse_args(argv)

    from harness.static import analyse_ptx  # ptxas registers and SASS mix of each microbenchmark
    from ptxsim.model.errors import ModelError
    from ptxsim.model.interval_table import pair_errors, version_entry, write_table
    from ptxsim.model.intervals import decidable_spread, fit_by_limiter
    from ptxsim.model.microbench import BENCHES
    from ptxsim.model.paired import PAIRS, validate_pairs
    from ptxsim.model.profile import load_profile
    from ptxsim.model.published import PREDICTED
    from ptxsim.model.validation import (
        error_figure,
        model_errors,
        pair_table,
        side_by_side,
        table,
        validate,
        write_record,
    )

    names = [n for n in args.only.split(",") if n]
    bench_names = [n for n in names if n in BENCHES]
    pair_names = [n for n in names if n in {pair.name for pair in PAIRS}]
    try:
        constants = load_profile(args.device_profile).constants if args.device_profile else None
        results = {}
        for version in (args.model, *(v for v in ("v1", "v2") if v != args.model)):
            rows = validate(constants, bench_names, static_facts=analyse_ptx, model=version) \
                if bench_names or not names else []
            pairs = validate_pairs(constants, pair_names, static_facts=analyse_ptx, model=version) \
                if pair_names or not names else []
            results[version] = (rows, pairs)
        rows, pairs = results[args.model]
    except ModelError as exc:
        print(f"model_validation: {exc}", file=sys.stderr)
        return 2
    if rows:
        print(table(rows))
        print(f"predicted absolute rows: geometric RMS error {error_figure(rows, PREDICTED):.1%} (goal <= 20%)")
    if pairs:
        print()
        print(pair_table(pairs))
        predicted = pair_errors(pairs)   # speedup orientation, faster over slower (interval_table.py)
        if len(predicted) >= 2:
            for key, fit in fit_by_limiter(predicted).items():
                print(f"95% prediction interval, {key} (fitted on {fit.basis}, n = {fit.n}): bias "
                      f"{math.expm1(fit.bias):+.1%} (> 0: the model exaggerates effects), spread "
                      f"{math.expm1(fit.spread):.1%}, t = {fit.t_quantile:.3f}, "
                      f"interval r x/ exp(b) x/ {math.exp(fit.half_width):.3f}")
            print(f"a modelled 10% effect is decidable at 95% with {len(predicted)} rows when the spread is below "
                  f"{decidable_spread(len(predicted)):.1%}")
    print()
    print(f"model versions side by side (v1: analytic bounds, timing.py; v2: per-SM cycle-approximate schedule, "
          f"cycle.py); rows printed above: {args.model}")
    print(side_by_side(results))
    if not names and not args.no_record and not args.device_profile:
        write_record(rows, pairs=pairs, model=args.model,
                     others={v: r for v, r in results.items() if v != args.model})
        write_table({version: version_entry(v_pairs, model_errors(v_rows, v_pairs), v_rows)
                     for version, (v_rows, v_pairs) in results.items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""`python -m tests.mutations` (`make mutations`): run the mutation suite and fail unless every mutant is caught, the
unmutated rungs run clean, and docs/mutations.md says what this run found.

Options: --jobs N (worker processes; default: the CPUs), --seed S (base seed; default PTXMOE_SEED or fresh; mutant i
runs on seed S + i), --only REGEX (mutants whose name matches; the clean runs of their rungs too), --write-docs
(rewrite docs/mutations.md from this run), --no-ptxas (skip assembling each mutant with ptxas).
"""
from __future__ import annotations

import argparse
import os
import re
import secrets
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed


def _task(name: str, seed: int, ptxas: bool):
    from tests.mutations.suite import MUTATIONS_BY_NAME, assemble_notes, run_by_name

    verdict = assemble_notes(MUTATIONS_BY_NAME[name]) if ptxas and not name.endswith("-clean") else ("", ())
    return run_by_name(name, seed), verdict


def main(argv=None) -> int:
    from tests.mutations import report
    from tests.mutations.suite import BACKSTOP_S, BUDGET, BUDGET_MARGIN, RUNGS, WALL_CLOCK
    from tests.mutations.table import MUTATIONS

    ap = argparse.ArgumentParser(prog="python -m tests.mutations", description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--only", default=None)
    ap.add_argument("--write-docs", action="store_true")
    ap.add_argument("--no-ptxas", action="store_true")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else int(os.environ.get("PTXMOE_SEED", secrets.randbits(31)))
    chosen = [m for m in MUTATIONS if args.only is None or re.search(args.only, m.name)]
    if not chosen:
        print(f"FAIL --only {args.only!r} matches no mutant (names: r<rung>-<fault>, e.g. r4-no-release)")
        return 1
    rungs = sorted({m.rung for m in chosen}) if args.only else list(RUNGS)
    names = [f"r{r}-clean" for r in rungs] + [m.name for m in chosen]
    print(f"[seed] mutation suite: PTXMOE_SEED={seed} ({len(chosen)} mutants, {len(rungs)} clean runs, "
          f"{args.jobs} jobs)", flush=True)
    # NOTE: every edit must apply before anything runs: a stale table is an error, not a pass
    from tests.mutations.suite import mutated_ptx

    for m in chosen:
        mutated_ptx(m)
    t0 = time.perf_counter()
    outcomes, invalid, notes = {}, {}, {}
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(_task, n, (seed + i) % 2**32, not args.no_ptxas): n for i, n in enumerate(names)}
        for fut in as_completed(futures):
            outcome, (bad, codes) = fut.result()
            outcomes[outcome.name] = outcome
            notes[outcome.name] = codes
            if bad:
                invalid[outcome.name] = bad
            shown = "clean" if outcome.name.endswith("-clean") and outcome.silent else report.caught_text(outcome)
            print(f"  {outcome.name:34s} {shown:40s} {outcome.seconds:6.1f} s  "
                  f"seed={outcome.seed}  {outcome.detail[:160]}", flush=True)
    failures = []
    for r in rungs:
        o = outcomes[f"r{r}-clean"]
        if not o.silent:
            failures.append(f"r{r}-clean: the unmutated rung is not clean: {report.caught_text(o)}: {o.detail}")
        elif o.warp_instructions * BUDGET_MARGIN > BUDGET:
            failures.append(f"r{r}-clean: a launch ran {o.warp_instructions:,} warp-instructions, within "
                            f"{BUDGET_MARGIN}x of the hang budget {BUDGET:,} (tests/mutations/suite.py): raise BUDGET")
    for name, o in sorted(outcomes.items()):
        if WALL_CLOCK in o.caught:
            failures.append(f"{name}: stopped by the {BACKSTOP_S:g} s wall-clock backstop before its {BUDGET:,} "
                            f"warp-instruction budget: an outcome that depends on the machine's load, not a catch")
    for m in chosen:
        o = outcomes[m.name]
        if o.crash:
            failures.append(f"{m.name}: crashed: {o.crash}")
        elif o.silent:
            failures.append(f"{m.name}: SILENT ({m.cls}; wants {m.wants})")
        if m.name in invalid:
            failures.append(f"{m.name}: ptxas rejects the mutant: {invalid[m.name]}")
    if args.write_docs:
        report.DOC.write_text(report.render(outcomes, seed, notes))
        print(f"wrote {report.DOC}")
    elif args.only is None:
        rows = report.read_rows(report.DOC.read_text()) if report.DOC.exists() else {}
        for m in chosen:
            got = report.caught_text(outcomes[m.name])
            if rows.get(m.name, (0, "", ""))[2] != got:
                failures.append(f"{m.name}: docs/mutations.md says {rows.get(m.name, (0, '', 'nothing'))[2]!r}, "
                                f"this run {got!r} (rerun with --write-docs if the change is right)")
    silent = sum(1 for m in chosen if outcomes[m.name].silent)
    crashed = sum(1 for m in chosen if outcomes[m.name].crash)
    print(f"{len(chosen)} mutants: {len(chosen) - silent - crashed} caught, {silent} silent, {crashed} crashed; "
          f"{time.perf_counter() - t0:.0f} s; seed {seed}")
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""Load a run folder (from `ptxmoe compare` or `Result.save`) and analyse it with pandas.

    python examples/analyse_run.py profiles/<run-id>   # any run folder
    python examples/analyse_run.py                     # makes one first: the saxpy example, saved to a temp dir
"""
import sys
import tempfile
from pathlib import Path

import ptxmoe


def analyse(run_dir) -> None:
    result = ptxmoe.load(run_dir)
    table = result.to_dataframe()  # one row per kernel x implementation x preset x skew
    print(f"{run_dir}: {len(table)} rows, backend {result.backend}, times {result.basis}")

    ok = table[table["status"] == "ok"]
    times = ok.pivot_table(index=["label", "preset", "skew"], columns="impl", values="time_us")
    print("\ntime (us) per implementation:")
    print(times.round(3).to_string())

    speedups = [c for c in table.columns if c.startswith("speedup_vs_")]
    if speedups:
        judged = table.dropna(subset=speedups, how="all")
        print("\nverdicts (speedup = baseline time / this row's time):")
        print(judged[["label", "impl", "preset", "skew", *speedups]].round(3).to_string(index=False))

    statics = ["registers_max", "spills_bytes", "sass_instructions"]
    print("\nstatic facts, worst per implementation:")
    print(table.groupby("impl")[statics].max().to_string())


def main(argv=()):
    if argv:
        analyse(argv[0])
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from saxpy_numba_vs_ptx import main as saxpy

    with tempfile.TemporaryDirectory() as tmp:
        saxpy("sim").save(Path(tmp) / "saxpy-run")
        analyse(Path(tmp) / "saxpy-run")


if __name__ == "__main__":
    main(sys.argv[1:])

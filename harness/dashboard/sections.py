"""The dashboard's sections, in page order: each takes the loaded run(s) and returns (html, {fig id: fig JSON}).

Strings from files are escaped here (html.esc / html.table) or in figures.t(); subtitle and note HTML is built only
from escaped parts.
"""
from __future__ import annotations

from harness.dashboard import data, figures
from harness.dashboard.html import Raw, badge, esc, figure_div, filter_bar, section, table
from harness.dashboard.sweep import sweep_section
from harness.errors import PtxmoeError
from harness.implementations import CPP_SIDE, impl_name
from harness.timing.stats import VERDICTS

_EMPTY = '<p class="note">Nothing to show for this run.</p>'


def _fig(fig_id: str, fig, figs: dict) -> str:
    if fig is None:
        return _EMPTY
    figs[fig_id] = fig.to_json()
    return figure_div(fig_id)


def _cell_attrs(r: dict) -> dict:
    return {"preset": r.get("preset"), "skew": r.get("skew")}


def basis_badge(basis: str, device: str | None) -> str:
    if basis == "modelled":
        return (f'<span class="modelled">MODELLED times: ptxsim timing model of {esc(device or "?")}, '
                f'not measured on a GPU</span>')
    return f'<span class="measured">MEASURED times: CUDA events on {esc(device or "?")}</span>'


def row_status_html(run: data.Run) -> str:
    """Row counts by status, and the failed/error rows named plainly (a fast wrong kernel is no win)."""
    rows = data.row_records(run.sweep)
    counts: dict = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    text = ", ".join(f"{n} {esc(status)}" for status, n in sorted(counts.items(), key=lambda kv: str(kv[0])))
    out = f'<div class="note">rows: {text}</div>'
    bad = [r for r in rows if r["status"] in ("failed", "error")]
    if bad:
        names = "; ".join(f"{r['key']} ({r['status']}: {str(r['reason'] or '')[:120]})" for r in bad[:10])
        out += f'<p class="plain SLOWER">{len(bad)} row(s) FAILED or raised: {esc(names)}</p>'
    too_big = [r for r in rows if r["status"] == "skipped"]
    if too_big:
        names = "; ".join(f"{r['key']} ({str(r['reason'] or '')[:160]})" for r in too_big[:10])
        out += (f'<p class="note">{len(too_big)} row(s) skipped (memory, or a launch too slow to simulate): '
                f'{esc(names)}</p>')
    sampled = [r for r in rows if r.get("sampled_fraction") is not None]
    if sampled:
        names = "; ".join(f"{r['key']} ({r['sampled_fraction']:.2%} of CTAs"
                          + (f", check covered {r['coverage']:.2%}" if r.get("coverage") is not None else "") + ")"
                          for r in sampled[:10])
        out += (f'<p class="note">{len(sampled)} row(s) simulated in part (--sample: big GEMM launches ran a few '
                f'waves, counters extrapolated, checks on what ran): {esc(names)}</p>')
    return out


def ratio_text(value) -> str:
    """A speedup or interval end as shown: two decimals (the model's interval is wide, a GPU interval ~1 %: more
    digits would claim precision nobody has); run.json keeps the full numbers."""
    return "–" if value is None else f"{value:.2f}"


def _headline_words(h: dict) -> str:
    """One plain sentence of a pair's headline: who is faster, by how much."""
    g, a, b = h["geomean"], h["impl_name"], h["baseline_name"]
    return {"FASTER": f"{a} is FASTER than {b}: {g:.2f}x on the geometric mean.",
            "SLOWER": f"{a} is SLOWER than {b}: {g:.2f}x on the geometric mean, i.e. {b} is {1 / g:.2f}x faster."
                      + (" Hand-written PTX does not pay off here." if h["impl"] == "ptx" else ""),
            "SAME": f"{a} and {b} are the SAME: {g:.2f}x on the geometric mean, and the 95% interval excludes a "
                    "10% gain either way.",
            "UNDECIDED": f"UNDECIDED between {a} and {b}: {g:.2f}x on the geometric mean, but the 95% interval holds "
                         "both 1.0 and a 10% gain or loss.",
            "NOT_MODELLED": f"{a} and {b} differ only in what the model does not represent.",
            None: f"Geometric mean {g:.2f}x (no verdict)."}[h["verdict"]]


def _counts_text(counts: dict) -> str:
    """"3 / 0 / 1 / 2 / 0" in harness.timing.stats.VERDICTS order."""
    return " / ".join(str(counts.get(k, 0)) for k in VERDICTS)


def _named(h: dict) -> dict:
    return {**h, "impl_name": impl_name(h["impl"]), "baseline_name": impl_name(h["baseline"])}


def pairs_table(run: data.Run) -> str:
    """Every pair's geometric-mean speedup and verdict beside the headline (one row per pair with verdicts)."""
    rows, attrs = [], []
    for h in map(_named, data.pair_headlines(run.sweep)):
        counts = h["counts"]
        rows.append([h["title"] + (" (headline)" if h["pair"] == data.headline_pair(run.sweep).name else ""),
                     ratio_text(h["geomean"]), ratio_text(h["lo"]), ratio_text(h["hi"]), badge(h["verdict"]), h["n"],
                     _counts_text(counts),
                     _headline_words(h) if h["geomean"] is not None else
                     f"no verdict ({len(h['no_verdict'])} cell(s) without both paths timed)"])
        attrs.append({"pair": h["pair"]})
    if not rows:
        return ""
    return table(["pair (speedup of the first over the second)", "geomean speedup", "CI low", "CI high", "verdict",
                  "kernel cells", " / ".join(k.lower().replace("_", " ") for k in VERDICTS), "in words"], rows,
                 attrs, cls="pairs")


def headline_section(run: data.Run) -> str:
    h = _named(data.headline(run.sweep))
    ceil = data.device_ceilings(run)
    tag = basis_badge(run.basis, ceil["name"] if ceil else None) + row_status_html(run)
    if run.basis == "modelled":
        tag += f'<p class="note model-error">{esc(_error_words(run.sweep.settings.timing_model))}</p>'
    best = _best_cpp_words(run)
    if best:
        tag += f'<p class="note best-cpp">{esc(best)}</p>'
    pairs = pairs_table(run)
    if h["geomean"] is None:
        reasons = "; ".join(f"{v['label']} {v['preset']}/{v['skew']}: {v['reason']}" for v in h["no_verdict"][:8])
        body = (f'<div class="headline">{tag}<p class="plain SAME">No verdict: no kernel has two paths timed.'
                f'</p><p class="note">{esc(reasons)}</p>{pairs}</div>')
        return section("headline", "Headline", body)
    g, lo, hi, verdict = h["geomean"], h["lo"], h["hi"], h["verdict"]
    interval = f"[{lo:.2f}, {hi:.2f}]" if lo is not None and lo != hi else ""
    counts = h["counts"]
    slower = ""
    if h["slower"]:
        slower = (f'<p class="plain SLOWER">{esc(h["impl_name"])} is SLOWER than {esc(h["baseline_name"])} in '
                  f'{len(h["slower"])} cell(s): {esc(", ".join(h["slower"]))}.</p>')
    layer = "".join(f'<li>end-to-end layer {esc(v["preset"])}/{esc(v["skew"])}: {v["speedup"]:.2f}x '
                    f'{badge(v["verdict"]).html}</li>' for v in h["layer"])
    apart = ", the layer apart" if h["layer"] else ""
    no_verdict = f" &nbsp; no verdict: {len(h['no_verdict'])}" if h["no_verdict"] else ""
    layer_html = f"<ul>{layer}</ul>" if layer else ""
    body = (f'<div class="headline">{tag}'
            f'<div><span class="big">{g:.2f}x</span> {esc(interval)} geometric-mean speedup of '
            f'{esc(h["impl_name"])} over {esc(h["baseline_name"])} ({esc(run.basis)}; over {h["n"]} kernel cell(s)'
            f'{apart}; interval: {esc(h["interval"])})</div>'
            f'<p class="plain {esc(verdict or "SAME")}">{esc(_headline_words(h))}</p>{slower}'
            f'<div>cells: {" &nbsp; ".join(f"{badge(k).html} {counts.get(k, 0)}" for k in VERDICTS)}'
            f'{no_verdict}</div>{layer_html}{pairs}</div>')
    return section("headline", "Headline", body)


def verdict_section(run: data.Run, figs: dict) -> str:
    vs = data.verdict_records(run.sweep)
    rows = [[v["label"], v["preset"], v["skew"], v["title"], ratio_text(v["speedup"]), ratio_text(v["ci_lo"]),
             ratio_text(v["ci_hi"]), badge(v["verdict"]), _interval_words(v), v["limiters"], v["reason"]]
            for v in vs]
    tbl = table(["kernel", "preset", "skew", "pair", "speedup (x)", "CI low", "CI high", "verdict", "interval",
                 "limiters (baseline / impl)", "reason"], rows, [{**_cell_attrs(v), "pair": v["pair"]} for v in vs],
                cls="verdicts")
    rule = (" FASTER / SLOWER when the interval excludes 1; SAME when it lies within [1/1.1, 1.1] (no 10% effect "
            "either way); UNDECIDED when it holds both 1 and a 10% gain or loss.")
    note = ("Speedup of A over B = B's time / A's time (&gt; 1: A faster). Modelled: the 95% prediction interval of "
            "the timing model's errors on paired ratios (bias-corrected, same or different limiters; "
            "ptxsim/model/interval_table.json), " + interval_basis_words(run) + "; NOT_MODELLED when both paths have "
            "the same modelled time and the same simulator counters." + rule if run.basis == "modelled" else
            "Speedup of A over B = ratio of median device times (B / A), 95% bootstrap interval." + rule)
    headline = data.headline_pair(run.sweep)
    pairs = sorted(data.pairs_present(run.sweep), key=lambda pair: pair != headline)  # the headline pair first
    # NOTE: the headline pair's figure keeps the id "fig-speedup"; the others are "fig-speedup-<pair>"
    fig_html = "".join(_fig("fig-speedup" if pair == headline else f"fig-speedup-{pair.name}",
                            figures.speedup_bars(vs, run.basis, pair), figs) for pair in pairs) or _EMPTY
    return section("verdicts", "Per-kernel verdicts, every pair", tbl + fig_html, note)


def _best_cpp_words(run: data.Run) -> str:
    """Which C++ path was the best present, in how many cells, when it was not the same one everywhere (the
    headline is then of the pair most often best; the answer table gives each cell's)."""
    flagged: dict[str, int] = {}
    for v in data.verdict_records(run.sweep):
        if v["headline"]:
            flagged[v["baseline"]] = flagged.get(v["baseline"], 0) + 1
    if len(flagged) < 2:
        return ""
    return ("The best C++ present differs between cells: " + ", ".join(
        f"{impl_name(b)} in {n}" for b, n in sorted(flagged.items(), key=lambda kv: -kv[1]))
        + " cell(s); the headline is PTX vs the one most often best, the answer table above gives every cell's.")


def interval_basis_words(run: data.Run) -> str:
    """What the run's modelled 95% intervals were fitted on (Verdict.interval_basis: "published paired rows", or a
    device profile's measured pairs), escaped; runs before it was recorded: the published rows."""
    bases = list(dict.fromkeys(v.interval_basis for v in run.sweep.verdicts if v.interval_basis))
    return "fitted on " + esc("; ".join(bases) if bases else "published paired rows")


def _interval_words(v: dict) -> str:
    """"95% prediction, v1" / "95% bootstrap" / "" (a verdict from a run before the confidence was recorded)."""
    if not v.get("confidence") or not v.get("interval"):
        return ""
    return f"{v['confidence']:.0%} {v['interval']}" + (f", {v['model_version']}" if v.get("model_version") else "")


def answer_section(run: data.Run) -> str:
    """The answer first: per kernel cell, hand PTX (its top rung) against the best C++ present, its 95% interval,
    measured or modelled, the model version and each side's limiter (harness.answer)."""
    from harness.answer import answer_rows, interval_words

    answers = answer_rows(run.sweep)
    if not answers:
        return ""
    rows, attrs = [], []
    for a in answers:
        ptx = "PTX" + (f" ({a.ptx_rung})" if a.ptx_rung else "")
        rows.append([a.label, a.preset, a.skew, ptx, impl_name(a.best_cpp) if a.best_cpp else "–",
                     ", ".join(impl_name(c) for c in a.cpp_present) or "–", ratio_text(a.speedup),
                     ratio_text(a.ci_lo), ratio_text(a.ci_hi), badge(a.verdict), interval_words(a),
                     a.ptx_limiter, a.cpp_limiter, a.reason])
        attrs.append({"kernel": a.label, "preset": a.preset, "skew": a.skew})
    tbl = table(["kernel", "preset", "skew", "PTX", "best C++ present", "C++ rows ok", "speedup of PTX (x)",
                 "95% low", "95% high", "verdict", "interval", "PTX limiter", "C++ limiter", "why no ratio"],
                rows, attrs, cls="answer")
    note = ("Speedup = the best C++ time / the PTX time (&gt; 1: PTX faster); the best C++ present is the fastest of "
            + ", ".join(impl_name(c) for c in CPP_SIDE) + " that ran ok in the cell. "
            + (_error_words(run.sweep.settings.timing_model) + " Modelled 95% intervals "
               + interval_basis_words(run) + "." if run.basis == "modelled" else ""))
    return section("answer", "The answer: hand PTX vs the best C++ present", tbl, note)


def _error_words(version: str = "v1") -> str:
    """The model's one error figure and what it can decide, in the words the README and docs/api.md quote for v1
    (ptxsim.model.interval_table, scripts/refresh_docs.py); a run modelled with v2 gets v2's."""
    from ptxsim.model.interval_table import decides_text, error_figure_text

    return f"The timing model's error: {error_figure_text(version)}; {decides_text(version)}."


def _speedup_cell(s: dict | None) -> Raw:
    """"1.23x [1.05, 1.45] FASTER" (the verdict as a badge), or why there is none."""
    if s is None:
        return Raw("–")
    if s["speedup"] is None:
        return Raw(f'{badge(None).html} <span class="note">{esc(s["reason"] or "")}</span>')
    interval = f" [{ratio_text(s['ci_lo'])}, {ratio_text(s['ci_hi'])}]" if s["ci_lo"] is not None else ""
    return Raw(f"{esc(ratio_text(s['speedup']))}x{esc(interval)} {badge(s['verdict']).html}")


def ladder_section(run: data.Run, figs: dict) -> str:
    """Where the gain comes from (issue #16): per rung of each ladder its time and interval, and its speedups over
    the rung below, over CUDA C++ and over Numba; rungs slower than the one below are said plainly."""
    from harness.dashboard.ladder import ladder_cells, slower_rungs

    cells = ladder_cells(run.sweep)
    if not cells:
        return ""
    bases = list(dict.fromkeys(b for c in cells for b in c["baselines"]))
    rows, attrs = [], []
    for c in cells:
        for r in c["rungs"]:
            rows.append([c["label"], c["preset"], c["skew"], f"{r['number']} of {r['of']}", r["name"],
                         r["status"], r["time_us"], r["lo_us"], r["hi_us"], r["limiter"], _speedup_cell(r["below"]),
                         *(_speedup_cell(r["vs"].get(b)) for b in bases)])
            attrs.append({**_cell_attrs(c), "rung": r["number"]})
    tbl = table(["kernel", "preset", "skew", "rung", "adds", "status", f"{run.basis} time (µs)", "95% low", "95% high",
                 "limiter (model)", "speedup over the rung below", *(f"speedup over {impl_name(b)}" for b in bases)],
                rows, attrs, cls="ladder")
    slower = slower_rungs(cells)
    plain = (f'<p class="plain SLOWER">{len(slower)} rung(s) SLOWER than the rung below: {esc("; ".join(slower))}.'
             f'</p>' if slower else "")
    fig = _fig("fig-ladder", figures.ladder_figure(cells, run.basis), figs)
    note = ("Each rung adds one hardware feature and passes the same kernels.md check; the top rung is the path's "
            "plain row (its headline). Speedup of a rung over X = X's time / the rung's time (&gt; 1: the rung "
            "faster), with its interval and verdict.")
    return section("ladder", "Where the gain comes from: the ablation ladder", plain + tbl + fig, note)


def timing_section(run: data.Run, figs: dict) -> str:
    rows = data.row_records(run.sweep)
    # NOTE: a wrong answer's time is no result: failed rows stay in the table (with why), out of the chart
    # NOTE: a ladder's lower rungs are in the table and the ladder section; the chart keeps one series per path
    fig = _fig("fig-timing", figures.timing_distributions([r for r in rows if r["status"] == "ok" and
                                                           not r["lower_rung"]], run.basis), figs)
    tbl_rows = [[r["key"], r["status"], r["time_us"], r["lo_us"], r["hi_us"], len(r["samples_us"]) or None,
                 r["launch_us"], r["limiter"], r["reason"]] for r in rows]
    tbl = table(["row", "status", f"{run.basis} kernel time (µs)", "95% low", "95% high", "samples",
                 "launch/gap (µs, modelled)", "limiter (model)", "problem"], tbl_rows, [_cell_attrs(r) for r in rows])
    note = ("Kernel time and launch cost are apart: verdicts compare kernel times; the launch/gap column is what each "
            "launch adds on top (what fusing kernels would save)." if run.basis == "modelled" else "")
    return section("timing", "Timing", fig + tbl, note)


def roofline_section(run: data.Run, figs: dict) -> str:
    rows = [r for r in data.row_records(run.sweep) if r["status"] == "ok" and not r["lower_rung"]]
    ceil = data.device_ceilings(run)
    body = _fig("fig-roofline", figures.roofline(rows, ceil), figs) + \
        _fig("fig-bandwidth", figures.bandwidth_bars(rows, ceil), figs)
    note = ("Achieved throughput from the kernels' minimum DRAM bytes and FLOPs (kernels.md) divided by the "
            f"{esc(run.basis)} time, against {esc(ceil['name']) if ceil else 'unknown'} ceilings.")
    return section("roofline", "Roofline", body, note)


GEMM_WORK_COLUMNS = ("label", "preset", "skew", "BM", "routed_rows", "padded_rows", "useful (GFLOP)",
                     "padded (GFLOP)", "useful (%)")


def gemm_work_section(run: data.Run) -> str:
    """Useful vs padded FLOPs of each GEMM cell: how much tensor-core work the routing block pads away."""
    recs = data.gemm_work_records(run.sweep)
    if not recs:
        return ""
    rows = [[r[c] for c in GEMM_WORK_COLUMNS] for r in recs]
    note = ("Useful FLOPs count the T*K routed rows; padded FLOPs every row the kernel computes (each expert padded "
            "to a multiple of the routing block BM, docs/tiling.md). Roofline and TFLOP/s use the useful FLOPs.")
    return section("gemm", "GEMM work: useful vs padded FLOPs",
                   table(["GEMM", "preset", "skew", "BM", "routed rows", "padded rows", "useful (GFLOP)",
                          "padded (GFLOP)", "useful (%)"], rows, [_cell_attrs(r) for r in recs]), note)


def stage_section(run: data.Run, figs: dict) -> str:
    stages = data.stage_records(run.sweep)
    return section("layer", "End-to-end layer: per-stage breakdown",
                   _fig("fig-stages", figures.stage_breakdown(stages, run.basis), figs))


def sim_section(run: data.Run, figs: dict) -> str:
    recs = data.sim_counter_records(run.sweep)
    if not recs:
        return section("sim", "Simulator counters", '<p class="note">No simulator counters (not a sim run).</p>')
    impls, pairs = _side_by_side_columns(recs, run.sweep)
    rows = [[r["label"], r["preset"], r["skew"], r["counter"], *(r[i] for i in impls),
             *(r["ratios"][p.name] for p in pairs)] for r in recs]
    tbl = table(["kernel", "preset", "skew", "counter", *_impl_headers(impls, run.sweep),
                 *(_ratio_header(p) for p in pairs)],
                rows, [_cell_attrs(r) for r in recs])
    fig = _fig("fig-mix", figures.instruction_mix_figure(data.instruction_mix(run.sweep)), figs)
    return section("sim", "Simulator counters, side by side", tbl + fig,
                   "ptxsim counters summed over each row's launches; limiting resource from the timing model.")


def static_section(run: data.Run, figs: dict) -> str:
    recs = data.static_records(run.sweep)
    if not recs:
        return section("static", "Static facts", '<p class="note">No static analysis in this run.</p>')
    rows = [[r["label"], _impl_name(r["impl"]), r["launch"], r["registers"], r["spills_bytes"], r["shared_bytes"],
             r["ptx_instructions"], r["sass_instructions"],
             ", ".join(f"{k} {v}" for k, v in list(r["sass_histogram"].items())[:5]) or None,
             "; ".join(r["errors"])[:300] or None] for r in recs]
    tbl = table(["kernel", "path", "launch", "registers", "spills (B)", "shared (B)", "PTX instr.", "SASS instr.",
                 "top SASS", "toolchain errors"], rows)
    fig = _fig("fig-sass", figures.sass_mix_figure(recs), figs)
    return section("static", "Static facts (ptxas -v, nvdisasm)", tbl + fig)


def _impl_name(impl) -> str:
    return impl_name(impl)


def _side_by_side_columns(recs: list[dict], sweep) -> tuple[list[str], list]:
    """The implementations with a value in `recs` and the pairs among them: the columns of a side-by-side table, so
    a two-implementation run (or one whose cpp rows are all missing) shows two columns and one ratio; a user's run
    (ptxmoe.compare) has its own implementations and pairs (data.table_impls, table_pairs)."""
    names = data.table_impls(sweep)
    present = {i for r in recs for i in names if r.get(i) is not None}
    impls = [i for i in names if i in present]
    return impls, [p for p in data.table_pairs(sweep) if p.impl in present and p.baseline in present]


def _ratio_header(pair) -> str:
    if pair.own:  # a user's implementations, as they named them
        return f"{pair.impl} / {pair.baseline}"
    return f"{impl_name(pair.impl)} / {impl_name(pair.baseline)}"


def _impl_headers(impls: list[str], sweep) -> list[str]:
    """Column titles: the built-in paths' names ("CUDA C++"), or a user's run's implementations as named."""
    return list(impls) if sweep.settings.source == "ptxmoe.compare" else [impl_name(i) for i in impls]


def nsight_section(run: data.Run) -> str:
    if not run.nsight_files and not run.nsight_errors:
        return _sim_nsight_section(run) if run.basis == "modelled" else ""
    recs = data.nsight_metric_records(run)
    side = [r for r in recs if any(r.get(i) is not None for i in data.table_impls(run.sweep))]
    impls, pairs = _side_by_side_columns(side, run.sweep)
    other = [r for r in recs if r["value"] is not None]
    parts = [f'<p class="note">Imported: {esc(", ".join(run.nsight_files))}</p>']
    for err in run.nsight_errors:
        parts.append(f'<p class="err">{esc(err)}</p>')
    if side:
        parts.append(table(["kernel", "preset", "skew", "metric", "unit", *_impl_headers(impls, run.sweep),
                            *(_ratio_header(p) for p in pairs), "source"],
                           [[r["label"], r["preset"], r["skew"], r["metric"], r["unit"], *(r[i] for i in impls),
                             *(r["ratios"][p.name] for p in pairs), r["source"]] for r in side],
                           [_cell_attrs(r) for r in side]))
    if other:
        parts.append('<p class="note">Rows outside ptxmoe NVTX ranges (mean over launches):</p>')
        parts.append(table(["NVTX range", "kernel", "metric", "unit", "n", "mean", "source"],
                           [[r["nvtx_range"] or "–", r["kernel"] or "–", r["metric"], r["unit"], r["n"], r["value"],
                             r["source"]] for r in other]))
    return section("nsight", "Nsight metrics", "".join(parts))


def _sim_nsight_section(run: data.Run) -> str:
    """A sim run's Nsight table: ptxsim's counters under the ncu metrics `ptxmoe profile` captures on a GPU."""
    recs = data.sim_ncu_records(run.sweep)
    if not recs:
        return ""
    impls, pairs = _side_by_side_columns(recs, run.sweep)
    tbl = table(["kernel", "preset", "skew", "metric", "unit", *_impl_headers(impls, run.sweep),
                 *(_ratio_header(p) for p in pairs), "source"],
                [[r["label"], r["preset"], r["skew"], r["metric"], r["unit"], *(r[i] for i in impls),
                  *(r["ratios"][p.name] for p in pairs), r["source"]] for r in recs],
                [_cell_attrs(r) for r in recs])
    return section("nsight", "Nsight metrics (ptxsim's counters, modelled)", tbl,
                   "A simulated run: ptxsim's counters under the ncu metric names that `ptxmoe profile --tool ncu` "
                   "captures on a GPU, in the same table.")


def timeline_section(run: data.Run, figs: dict) -> str:
    source, bars = data.timeline_records(run)
    return section("timeline", "NVTX timeline", _fig("fig-timeline", figures.timeline_figure(source, bars), figs),
                   f"Source: {esc(source)}.")


def vs_section(run: data.Run, other: data.Run, figs: dict) -> str:
    pairs = data.compare_runs(run, other)
    name_a, name_b = f"{run.run_id} ({run.basis})", f"{other.run_id} ({other.basis})"
    pair = data.headline_pair(run.sweep)  # both runs on the same pair: this run's headline one
    h_a, h_b = data.headline(run.sweep, pair), data.headline(other.sweep, pair)
    summary = table(["run", "backend", "basis", "pair", "geomean speedup", "CI low", "CI high", "verdict"],
                    [[name_a, run.backend, run.basis, h_a["title"], h_a["geomean"], h_a["lo"], h_a["hi"],
                      badge(h_a["verdict"])],
                     [name_b, other.backend, other.basis, h_b["title"], h_b["geomean"], h_b["lo"], h_b["hi"],
                      badge(h_b["verdict"])]])
    rows = [[p["key"], p["a_us"], p["b_us"], p["b_over_a"], p["a_speedup"], p["b_speedup"]] for p in pairs]
    tbl = table(["row", f"{name_a} (µs)", f"{name_b} (µs)", "B / A", f"speedup A ({pair.title})",
                 f"speedup B ({pair.title})"], rows,
                [_cell_attrs(p) for p in pairs])
    fig = _fig("fig-vs", figures.vs_figure(pairs, name_a, name_b), figs)
    return section("vs", f"Compared with {other.run_id}", summary + fig + tbl,
                   f"A = this run, B = {esc(other.run_dir)}; {len(pairs)} rows in both.")


def partition_section(run: data.Run, figs: dict) -> str:
    """The SM-partition study's figures when the run folder holds a partition.json (harness.partition)."""
    try:
        from harness.partition.figures import dashboard_section
    except ImportError:
        return ""
    try:
        extra = dashboard_section(run.run_dir)
    except PtxmoeError as exc:
        return section("partition", "SM partition (modelled)", f'<p class="err">{esc(exc)}</p>')
    if not extra:
        return ""
    body = "".join(_fig(f"fig-partition-{i}", fig, figs) for i, fig in enumerate(extra))
    return section("partition", "SM partition: communication vs GEMM (modelled)", body,
                   "From the run folder's partition.json (harness.partition).")


PIPELINE_SIZES = (8, 20)  # PP ranks, micro-batches: DeepSeek-V3 Table 2's comparison at a readable size


def pipeline_section(figs: dict) -> str:
    try:
        from harness.pipeline import ChunkTimes, schedule_table

        times = ChunkTimes(F=1, B=2, W=1, FB=2.5)
        recs = schedule_table(*PIPELINE_SIZES, times)
        fig = figures.pipeline_figure()
    except Exception as exc:  # noqa: BLE001 - an optional section must not break the page
        return section("dualpipe", "DualPipe schedules", f'<p class="err">not available: {esc(exc)}</p>')
    tbl = table(["method", "devices", "PP", "micro-batches", "makespan", "bubble", "bubble formula", "formula value",
                 "parameters (x)", "activation (first device)"],
                [[r["method"], r["devices"], r["pp"], r["microbatches"], r["makespan"], r["bubble"], r["formula"],
                  r["formula_bubble"], r["parameter_x"], r["activation"]] for r in recs])
    return section("dualpipe", "DualPipe schedules (simulated)", tbl + _fig("fig-dualpipe", fig, figs),
                   "Pipeline-parallel schedules from harness.pipeline (chunk times F=1, B=2, W=1, FB=2.5), for "
                   "context; not derived from this run.")


def environment_section(run: data.Run) -> str:
    pairs = data.environment_records(run.doc)
    return section("environment", "Environment", table(["key", "value"], [[k, v] for k, v in pairs], cls="env"))


NAV = (("answer", "answer"), ("headline", "headline"), ("verdicts", "verdicts"), ("sweep", "sweep"),
       ("ladder", "ladder"), ("timing", "timing"), ("roofline", "roofline"),
       ("gemm", "gemm work"), ("layer", "layer"), ("sim", "sim counters"), ("static", "static"), ("nsight", "nsight"),
       ("timeline", "timeline"), ("partition", "partition"), ("vs", "vs"), ("dualpipe", "dualpipe"),
       ("environment", "environment"))


def build_sections(run: data.Run, other: data.Run | None = None) -> tuple[str, dict, list]:
    """(body HTML, figures {id: JSON}, nav entries present)."""
    figs: dict = {}
    parts = [answer_section(run), headline_section(run), filter_bar(data.filters(run.sweep)),
             verdict_section(run, figs),
             sweep_section(run.sweep, figs, run.basis), ladder_section(run, figs), timing_section(run, figs),
             roofline_section(run, figs), gemm_work_section(run), stage_section(run, figs), sim_section(run, figs),
             static_section(run, figs), nsight_section(run), timeline_section(run, figs)]
    parts.append(partition_section(run, figs))
    if other is not None:
        parts.append(vs_section(run, other, figs))
    parts += [pipeline_section(figs), environment_section(run)]
    body = "".join(p for p in parts if p)
    nav = [(a, label) for a, label in NAV if f'id="{a}"' in body]
    return body, figs, nav


__all__ = ["basis_badge", "build_sections"]

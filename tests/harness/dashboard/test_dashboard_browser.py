"""The dashboards in headless Chromium (Debian's, driven by Playwright): they render, filter, and cannot be injected.

One browser per module. Skipped with the reason when /usr/bin/chromium or playwright is absent.
"""
import tempfile
from pathlib import Path

import pytest
from dashboard_runs import XSS_KERNEL, XSS_VARIANT, copy_run, make_xss_run, nsys_fixture

from harness import dashboard
from harness.nsight.importer import import_into_run

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# every Plotly plot on the page, with how many traces carry points (x/y/base arrays with at least one value)
PLOTS_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(el => ({
    id: el.id, traces: (el.data || []).length,
    withPoints: (el.data || []).filter(t => ['x', 'y'].some(k => t[k] && t[k].length > 0)).length,
    svgMarks: el.querySelectorAll('.point, .bars path, .scatterlayer path, .boxlayer path').length}))"""


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.is_file():
        pytest.skip(f"{CHROMIUM} not installed (apt-get install chromium; .ci/run installs it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    with tempfile.TemporaryDirectory(prefix="ptxmoe-chromium-") as profile, sync_api.sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(profile, executable_path=str(CHROMIUM), args=ARGS, headless=True,
                                                    viewport={"width": 1400, "height": 1000})
        yield ctx
        ctx.close()


def open_page(ctx, path: Path):
    """Load a dashboard from file://; returns (page, console errors, dialogs) once every figure is drawn."""
    page = ctx.new_page()
    errors, dialogs = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("request", lambda r: errors.append(f"network request {r.url}") if not r.url.startswith(
        ("file:", "data:", "blob:", "about:")) else None)
    page.goto(path.as_uri(), wait_until="load")
    page.wait_for_function("document.querySelectorAll('.fig').length === "
                           "document.querySelectorAll('.fig.js-plotly-plot').length", timeout=20000)
    return page, errors, dialogs


def check_rendered(page, errors, dialogs, expected_ids):
    plots = page.evaluate(PLOTS_JS)
    assert errors == [] and dialogs == []
    ids = {p["id"] for p in plots}
    assert set(expected_ids) <= ids
    for p in plots:
        assert p["traces"] > 0 and p["withPoints"] > 0 and p["svgMarks"] > 0, p
    return plots


SIM_FIGS = ("fig-speedup", "fig-timing", "fig-roofline", "fig-bandwidth", "fig-stages", "fig-mix", "fig-sass",
            "fig-timeline")


def test_sim_dashboard_renders_and_filters(browser, tmp_path):
    out = dashboard.build(copy_run("sim-real", tmp_path))  # a real `ptxmoe compare --backend sim` run
    page, errors, dialogs = open_page(browser, out)
    check_rendered(page, errors, dialogs, SIM_FIGS)
    assert "MODELLED times" in page.inner_text("#headline")
    assert ("PTX is SLOWER than Numba CUDA in 2 cell(s): gate tiny/balanced, gate tiny/imbalanced"
            in page.inner_text("#headline"))
    page.screenshot(path=str(tmp_path / "sim.png"))

    # filter to one skew: other skews' table rows hide and their traces turn invisible
    page.select_option("#filter-skew", "imbalanced")
    hidden = page.evaluate("""() => Array.from(document.querySelectorAll('tr[data-skew]')).map(
        tr => [tr.dataset.skew, getComputedStyle(tr).display === 'none'])""")
    assert hidden and all(h == (skew != "imbalanced") for skew, h in hidden)
    vis = page.evaluate("""() => document.getElementById('fig-speedup').data.map(t => [t.meta.skew, t.visible])""")
    assert sorted(vis) == [["balanced", False], ["imbalanced", True]]
    page.select_option("#filter-skew", "*")
    assert page.evaluate("document.getElementById('fig-speedup').data.every(t => t.visible === true)")
    assert errors == []


def test_nsys_imported_dashboard_draws_the_nsys_timeline(browser, tmp_path):
    run_dir = copy_run("gpu-measured", tmp_path)
    import_into_run(nsys_fixture(), run_dir)
    out = dashboard.build(run_dir, vs=copy_run("sim-tiny", tmp_path))
    page, errors, dialogs = open_page(browser, out)
    check_rendered(page, errors, dialogs, ("fig-speedup", "fig-timing", "fig-timeline", "fig-vs"))
    assert "nsys" in page.inner_text("#timeline") and "saxpy" in page.inner_text("#nsight")
    bars = page.evaluate("document.getElementById('fig-timeline').data.map(t => t.x.length)")
    assert sum(bars) == 5  # the fixture's five saxpy kernels
    assert "MEASURED times" in page.inner_text("#headline")
    page.screenshot(path=str(tmp_path / "nsys.png"))


def test_script_bearing_names_render_as_text_and_run_nothing(browser, tmp_path):
    out = dashboard.build(make_xss_run(tmp_path))
    page, errors, dialogs = open_page(browser, out)
    check_rendered(page, errors, dialogs, SIM_FIGS)
    page.evaluate("Plotly.Fx.hover('fig-speedup', [{curveNumber: 0, pointNumber: 0}])")  # hover labels: text too
    hover = page.evaluate("document.querySelector('#fig-speedup .hoverlayer').textContent")
    assert XSS_KERNEL in hover
    assert dialogs == [] and page.evaluate("window.__xss") is None
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    assert page.evaluate("document.querySelectorAll('script').length") == 3  # plotly.js, figure JSON, page JS
    cells = page.evaluate("Array.from(document.querySelectorAll('td')).map(td => td.textContent)")
    assert XSS_KERNEL in cells and f"grouped_gemm[{XSS_VARIANT}]" in cells
    ticks = page.evaluate("Array.from(document.querySelectorAll('#fig-speedup .xtick text')).map(t => t.textContent)")
    assert XSS_KERNEL in ticks  # Plotly shows the escaped label as the original characters
    legend = page.evaluate("Array.from(document.querySelectorAll('#fig-stages .legendtext')).map(t => t.textContent)")
    assert XSS_VARIANT in legend  # quotes included (no stray entities)
    page.screenshot(path=str(tmp_path / "xss.png"))


def test_three_implementation_dashboard_draws_every_pair(browser, tmp_path):
    """A run of numba, cpp and ptx: the headline is PTX vs CUDA C++, and each pair's speedup figure is drawn with its
    bars, the timing chart holding all three series."""
    import json

    from test_dashboard_three import three_impl_doc

    run_dir = copy_run("sim-tiny", tmp_path, "three")
    (run_dir / "run.json").write_text(json.dumps(three_impl_doc("sim-tiny")))
    page, errors, dialogs = open_page(browser, dashboard.build(run_dir))
    check_rendered(page, errors, dialogs, ("fig-speedup", "fig-speedup-ptx-vs-numba", "fig-speedup-cpp-vs-numba",
                                           "fig-timing"))
    assert "UNDECIDED between PTX and CUDA C++" in page.inner_text("#headline")  # a modelled 1.2x: undecidable
    assert "best C++ present" in page.inner_text("#answer")
    series = page.evaluate("Array.from(new Set(document.getElementById('fig-timing').data.map(t => t.name)))")
    assert {name.rsplit(" ", 1)[0] for name in series} == {"Numba CUDA", "CUDA C++", "PTX"}, series  # "<impl> <cell>"
    page.screenshot(path=str(tmp_path / "three.png"))


def test_ladder_section_renders_its_figure_and_filters(browser, tmp_path):
    """A run whose PTX grouped_gemm is a three-rung ladder: the ladder figure draws a bar group per cell, the table
    a row per rung, the top rung SLOWER than the rung below is said, and the skew filter reaches both."""
    import json

    from test_dashboard_ladder import ladder_doc

    run_dir = copy_run("sim-tiny", tmp_path, "ladder")
    (run_dir / "run.json").write_text(json.dumps(ladder_doc("sim-tiny")))
    page, errors, dialogs = open_page(browser, dashboard.build(run_dir))
    check_rendered(page, errors, dialogs, ("fig-ladder", "fig-speedup", "fig-timing"))
    assert "SLOWER than the rung below" in page.inner_text("#ladder")
    assert page.evaluate("document.querySelectorAll('#ladder tr[data-rung]').length") == 12
    page.select_option("#filter-skew", "imbalanced")
    vis = page.evaluate("document.getElementById('fig-ladder').data.map(t => [t.meta.skew, t.visible])")
    assert sorted(set(map(tuple, vis))) == [("balanced", False), ("imbalanced", True)]
    assert errors == []
    page.screenshot(path=str(tmp_path / "ladder.png"))

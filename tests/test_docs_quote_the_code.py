"""Docs that cannot drift (issue 31 item 7): the examples in docs/api.md and README.md run here, what they print is
the output the docs quote, and the model's error figure and what it can decide, as the docs quote them, are the code's
(ptxsim/model/interval_table.json, the same words as the dashboard's).
A failure names scripts/refresh_docs.py, which rewrites the quoted text from the code."""
import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
API, README = ROOT / "docs" / "api.md", ROOT / "README.md"


def _refresh_module():
    spec = importlib.util.spec_from_file_location("refresh_docs", ROOT / "scripts" / "refresh_docs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("refresh_docs", module)
    spec.loader.exec_module(module)
    return module


refresh = _refresh_module()
FIX = "run `python scripts/refresh_docs.py` (it rewrites what the docs quote from the code)"

SAXPY_CU = r"""
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
"""


@pytest.fixture(scope="module")
def api_run():
    text = API.read_text()
    sources = refresh.examples(text)
    assert list(sources) == ["saxpy", "saxpy-results", "sweep"]
    namespace = {}
    outputs = refresh.run_examples(sources, namespace)
    return text, outputs


@pytest.mark.sim
def test_api_examples_run_and_print_what_the_docs_quote(api_run):
    text, outputs = api_run
    quoted = refresh.quoted_outputs(text)
    assert set(quoted) == {"saxpy", "sweep"}
    assert outputs["saxpy"].startswith("<ptxmoe.Result saxpy on sim: 2 rows")
    assert outputs["sweep"].split("\n")[0].split() == ["n", "impl", "time_us", "achieved_gbps"]
    for name in quoted:
        assert quoted[name] == outputs[name], f"docs/api.md quotes a stale output of {name}; {FIX}"


@pytest.mark.sim
def test_readme_example_runs_with_the_api_examples_names():
    names = {}
    refresh.run_examples(refresh.examples(API.read_text())
                         | {"readme": "SAXPY_CU = " + repr(SAXPY_CU)}, names)
    readme = refresh.examples(README.read_text())
    assert list(readme) == ["readme-three-ways"]
    out = refresh.run_examples(readme, names)["readme-three-ways"]
    for impl in ("numba", "cpp", "ptx"):
        assert re.search(rf"saxpy \[default\] {impl} +ok ", out), out


def test_the_model_error_figure_is_the_codes_and_the_only_one():
    figure, decides = refresh.model_error_text(), refresh.model_decides_text()
    for doc in (API, README):
        text = doc.read_text()
        quoted = refresh.FIGURE.findall(text)
        assert quoted and set(quoted) == {figure}, f"{doc.name} quotes {quoted}, the code says {figure}; {FIX}"
        said = refresh.DECIDES.findall(text)
        assert said and set(said) == {decides}, f"{doc.name} says {said}, the code says {decides}; {FIX}"
        outside = refresh.DECIDES.sub("", refresh.FIGURE.sub("", text))
        # no other error figure for the model (the old "±2 %", "about 23 %", "25.2%")
        assert not re.search(r"±\s*\d+(\.\d+)?\s*%", outside)
        assert not re.search(r"(model'?s? error|geometric RMS)[^.]{0,40}\d+(\.\d+)?\s*%", outside)


def test_the_error_figure_is_the_interval_tables_and_the_dashboard_prints_it():
    """One source: the committed interval table's figures, in the words the docs quote and the dashboard prints."""
    from harness.dashboard.sections import _error_words
    from ptxsim.model.interval_table import error_figures

    figure, e = refresh.model_error_text(), error_figures("v1")
    assert f"{e['error_pairs_predicted']:.1%} on predicted paired ratios" in figure
    assert f"{e['error_predicted']:.1%} on predicted absolute figures" in figure
    decides = refresh.model_decides_text()
    assert f"below {e['decidable_spread']:.1%}" in decides and f"with {e['n']} predicted paired rows" in decides
    assert figure in _error_words() and decides in _error_words()


def test_refresh_rewrites_only_the_quoted_parts():
    text = ("a <!-- model-error -->1%<!-- /model-error --> b\n<!-- example: x -->\n```python\nprint('hi')\n```\n"
            "<!-- output: x -->\n```text\nold\n```\n<!-- /output -->\n")
    new = refresh.refreshed(text, {"x": "hi\n"}, "25.0%")
    assert new == text.replace("1%", "25.0%").replace("old\n", "hi\n")
    said = "x <!-- model-decides -->old words<!-- /model-decides --> y"
    assert refresh.refreshed(said, {}, "", "new words") == said.replace("old words", "new words")
    assert refresh.run_examples(refresh.examples(text)) == {"x": "hi\n"}

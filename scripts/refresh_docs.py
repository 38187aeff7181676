"""Rewrite what docs/api.md and README.md quote from the code, so they cannot drift from it.

Two kinds of quoted text, each between HTML comment markers that do not render:

    <!-- model-error -->59.8% on predicted paired ratios and ...<!-- /model-error -->
        the model's one error figure (ptxsim.model.interval_table.error_figure_text: its geometric RMS error on the
        predicted paired ratios and on the predicted absolute figures, from the committed interval table), the same
        words the dashboard prints;
    <!-- model-decides -->with 22 predicted paired rows, a 10% effect ...<!-- /model-decides -->
        what the model can decide today (interval_table.decides_text: the ratio error at which a 10% effect becomes
        decidable with the rows there are, and the modelled speedups its 95% intervals can call);
    <!-- output: NAME -->```text ... ```<!-- /output -->
        what the python block NAME (the block right after `<!-- example: NAME -->`) prints when run on the simulator
        in a folder holding tests/ptxmoe/saxpy.ptx (the inputs are drawn with the fixed default seed: the same text
        every run).

`python scripts/refresh_docs.py` rewrites both in place; tests/docs/test_docs_quote_the_code.py runs every example,
compares, and fails naming this script when the model or the API changed what they print.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = (ROOT / "docs" / "api.md", ROOT / "README.md")
SAXPY_PTX = ROOT / "tests" / "ptxmoe" / "saxpy.ptx"

FIGURE = re.compile(r"<!-- model-error -->(.*?)<!-- /model-error -->", re.DOTALL)
DECIDES = re.compile(r"<!-- model-decides -->(.*?)<!-- /model-decides -->", re.DOTALL)
EXAMPLE = re.compile(r"<!-- example: ([\w-]+) -->\s*```python\n(.*?)```", re.DOTALL)
OUTPUT = re.compile(r"(<!-- output: ([\w-]+) -->\s*```text\n)(.*?)(```\s*<!-- /output -->)", re.DOTALL)


def model_error_text() -> str:
    """The model's one error figure as the docs (and the dashboard) quote it."""
    from ptxsim.model.interval_table import error_figure_text

    return error_figure_text("v1")


def model_decides_text() -> str:
    """What the model can decide today, as the docs quote it."""
    from ptxsim.model.interval_table import decides_text

    return decides_text("v1")


def examples(text: str) -> dict[str, str]:
    """{name: python source} of the marked examples of one document."""
    return {m.group(1): m.group(2) for m in EXAMPLE.finditer(text)}


def quoted_outputs(text: str) -> dict[str, str]:
    """{name: the output quoted for that example}."""
    return {m.group(2): m.group(3) for m in OUTPUT.finditer(text)}


def run_examples(sources: dict[str, str], namespace: dict | None = None) -> dict[str, str]:
    """{name: stdout} of each example, run in order in one namespace (a later block may use an earlier one's names;
    `namespace`, when given, is that namespace: its names are seen and it keeps theirs), in a scratch folder holding
    saxpy.ptx (what the examples `open`)."""
    namespace = {} if namespace is None else namespace
    namespace.setdefault("__name__", "__doc_example__")
    outputs = {}
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="ptxmoe-docs-") as tmp:
        shutil.copy(SAXPY_PTX, Path(tmp) / "saxpy.ptx")
        os.chdir(tmp)
        try:
            for name, source in sources.items():
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    exec(compile(source, f"<doc example {name}>", "exec"), namespace)  # noqa: S102 - our own docs
                outputs[name] = out.getvalue()
        finally:
            os.chdir(here)
    return outputs


def refreshed(text: str, outputs: dict[str, str], figure: str, decides: str = "") -> str:
    """`text` with its model-error figures, what-the-model-decides statements and example outputs replaced by the
    code's."""
    text = FIGURE.sub(lambda m: f"<!-- model-error -->{figure}<!-- /model-error -->", text)
    if decides:
        text = DECIDES.sub(lambda m: f"<!-- model-decides -->{decides}<!-- /model-decides -->", text)
    return OUTPUT.sub(lambda m: m.group(1) + outputs.get(m.group(2), m.group(3)) + m.group(4), text)


def main() -> int:
    figure, decides = model_error_text(), model_decides_text()
    for doc in DOCS:
        text = doc.read_text()
        # NOTE: only documents that quote outputs run their examples here (README's assumes api.md's names; the
        # docs test runs it after them)
        outputs = run_examples(examples(text)) if quoted_outputs(text) else {}
        new = refreshed(text, outputs, figure, decides)
        if new != text:
            doc.write_text(new)
            print(f"rewrote {doc.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())

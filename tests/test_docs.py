"""The project's own docs: every relative link in README.md and docs/*.md resolves inside the repository (a fresh
clone has no ../shared/), and the contract page names every kernel of the registry."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_relative_links_stay_inside_the_repository():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    bad = []
    for page in pages:
        for target in LINK.findall(page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue  # http:, https:, mailto:
            path = (page.parent / target).resolve()
            if not path.is_relative_to(ROOT) or not path.exists():
                bad.append(f"{page.relative_to(ROOT)} -> {target}")
    assert bad == []
    assert "](docs/kernels.md)" in (ROOT / "README.md").read_text()


def test_the_contract_page_covers_every_kernel():
    from contract.kernels import KERNELS

    text = (ROOT / "docs" / "kernels.md").read_text()
    headings = set(re.findall(r"^## (\w+)", text, re.MULTILINE))
    assert set(KERNELS) - {"layer"} <= headings and "The" in headings  # "## The layer"

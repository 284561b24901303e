"""The README is a short product page whose commands are the ones CI runs; its links resolve."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_is_a_short_page() -> None:
    assert len(README.splitlines()) <= 200


def test_the_readme_test_command_is_what_ci_runs() -> None:
    block = README.split("```bash\n", 1)[1].split("```", 1)[0]
    install, tests = [line for line in block.splitlines() if not line.startswith("#")]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert '-e ".[dev,trainables,bench]"' in tests and '-e ".[dev,trainables,bench]"' in ci
    command = ".venv/bin/python -m pytest -q -n 2 --dist loadfile"
    assert tests.endswith(command)
    assert ci.rstrip().endswith(command)
    assert install.endswith(".venv/bin/rmbo-tune demo")


def test_relative_links_resolve() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
            assert (page.parent / target).exists(), f"{page.name} links to missing {target}"


def test_no_placeholder_left() -> None:
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"\{[A-Z]{3,}\}|DEMO_[A-Z]+", text), page.name

"""docs/options.md is generated from MetaBOOptions and kept current."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from rmbo_tune.bench import docgen
from rmbo_tune.engine import MetaBOOptions

DOC = """Summary.

Parameters
----------
a : int
    First line
    second line.
b, c : float
    Both.

Notes
-----
Why.
"""


def test_parameters_are_parsed_with_multi_line_text_and_shared_entries() -> None:
    assert docgen.parameters(DOC) == [
        (["a"], "int", "First line second line."),
        (["b", "c"], "float", "Both."),
    ]


def test_every_option_has_a_row_with_its_default() -> None:
    text = docgen.options_markdown()
    for field in dataclasses.fields(MetaBOOptions):
        assert f"`{field.name}`" in text, field.name
    assert "| `beta_scale` | float | `0.2` |" in text


def test_the_shipped_page_is_current(tmp_path: Path) -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "options.md"
    assert docgen.main(["--check", "--out", str(page)]) == 0
    stale = tmp_path / "options.md"
    stale.write_text(page.read_text().replace("`0.2`", "`0.3`"))
    assert docgen.main(["--check", "--out", str(stale)]) == 1

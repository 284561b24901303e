"""The top-level package: lazy public names, one exception tree, the engine without Ray."""

from __future__ import annotations

import subprocess
import sys

import pytest

import rmbo_tune


@pytest.mark.parametrize("name", rmbo_tune.__all__)
def test_public_names_resolve(name: str) -> None:
    assert getattr(rmbo_tune, name).__name__ == name


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        rmbo_tune.no_such_name  # noqa: B018


def test_every_error_is_an_rmbo_error() -> None:
    from rmbo_tune import exceptions

    for name in exceptions.__all__:
        assert issubclass(getattr(exceptions, name), rmbo_tune.RMBOError), name


def test_engine_names_load_without_ray() -> None:
    code = "import sys; from rmbo_tune import MetaBO, RMBOError; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_engine_imports_numpy_scipy_and_itself_only() -> None:
    import ast
    from pathlib import Path

    third_party = {"numpy", "scipy", "threadpoolctl"}  # threadpoolctl is optional there
    engine = Path(rmbo_tune.__file__).parent / "engine"
    for path in engine.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                own = name == "rmbo_tune.engine" or name.startswith("rmbo_tune.engine.")
                ok = own or top in third_party or top in sys.stdlib_module_names
                assert ok, f"{path.relative_to(engine)} imports {name}"

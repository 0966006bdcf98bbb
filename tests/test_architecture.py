"""The import rules of docs/architecture.md hold: layers point down, no cycles anywhere.

The contracts live in pyproject.toml ([tool.importlinter]); `make check` runs the same
check as `lint-imports`. Running it here too makes CI, which runs only the tests, enforce it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parent.parent


def test_imports_follow_the_layers(capsys: pytest.CaptureFixture[str]) -> None:
    code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    assert code == 0, capsys.readouterr().out

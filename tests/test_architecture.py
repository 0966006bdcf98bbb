"""The import rules of docs/architecture.md hold: layers point down, no cycles anywhere.

The contracts live in pyproject.toml ([tool.importlinter]); `make check` runs the same
check as `lint-imports`. Running it here too makes CI, which runs only the tests, enforce it.
"""

from __future__ import annotations

import logging
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parent.parent


def test_imports_follow_the_layers(capsys: pytest.CaptureFixture[str]) -> None:
    # import-linter configures logging with disable_existing_loggers: every logger this
    # process made so far would stay silent for the tests that run after this one here.
    enabled = [logger for logger in logging.Logger.manager.loggerDict.values()
               if isinstance(logger, logging.Logger) and not logger.disabled]  # fmt: skip
    try:
        code = lint_imports(
            config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True
        )
    finally:
        for logger in enabled:
            logger.disabled = False
    assert code == 0, capsys.readouterr().out


def _contracts() -> list[dict[str, Any]]:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        contracts: list[dict[str, Any]] = tomllib.load(handle)["tool"]["importlinter"]["contracts"]
    return contracts


def _diagram() -> list[str]:
    """The rows of docs/architecture.md's layer drawing that name packages, top first: the
    names left of the descriptions (which start at column 47), joined as the contract joins
    siblings."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    drawing = text.split("## The layers", 1)[1].split("```", 2)[1]
    rows = []
    for line in drawing.splitlines():
        names = re.findall(r"[A-Za-z_]+", line[:DESCRIBED_FROM])
        if names:
            rows.append(" | ".join(names))
    return rows


DESCRIBED_FROM = 47
"""The drawing's column where each row's description starts."""


def test_the_drawing_is_the_layers_contract() -> None:
    (layers,) = [c for c in _contracts() if c.get("containers") == ["propdata"]]
    contract = [" | ".join(part.strip() for part in layer.split("|")) for layer in layers["layers"]]
    assert _diagram() == contract


def test_each_subsystem_s_layers_in_the_docs_are_its_contract_s() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    listed = text.split("Inside each subsystem", 1)[1].split("\n\n", 2)[1]
    documented = {}
    for line in listed.splitlines():
        name, layers = re.fullmatch(r"- `([\w.]+)`: (.*)", line).groups()  # type: ignore[union-attr]
        documented[name] = [layer.replace("`", "") for layer in layers.split(" → ")]
    contracts = {
        c["containers"][0].removeprefix("propdata."): [
            " | ".join(part.strip() for part in layer.split("|")) for layer in c["layers"]
        ]
        for c in _contracts()
        if len(c.get("containers", [])) == 1 and c["containers"] != ["propdata"]
    }
    assert documented == contracts
    assert all(c.get("exhaustive") for c in _contracts() if c.get("type") == "layers")

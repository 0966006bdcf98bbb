"""Every schema step of both stores, in the order they were written: one frozen module each.

A new step is a new module `sNN_<what>.py` beside this one (copy one of the same store as a
model: its statements for both dialects, `STORE`, `STEP`); `MODULES` holds every such module
in the order of their numbers. Then `make schema` writes the layout they make into
`migrations/schema.sql`.
"""

from __future__ import annotations

import pkgutil
import re
from importlib import import_module
from types import ModuleType

from propdata.kit.steps import Step
from propdata.migrations.steps.base import ACCOUNTS, DATA, Apply

MODULES: tuple[ModuleType, ...] = tuple(
    import_module(f"{__name__}.{name}")
    for name in sorted(m.name for m in pkgutil.iter_modules(__path__))
    if re.fullmatch(r"s\d\d_\w+", name)
)
"""The step modules `sNN_*.py`, by their numbers."""

STEPS: list[tuple[str, Step[Apply]]] = [(module.STORE, module.STEP) for module in MODULES]


def steps_of(store: str) -> list[Step[Apply]]:
    """The steps of one store (DATA or ACCOUNTS), in order."""
    return [step for owner, step in STEPS if owner == store]


__all__ = ["ACCOUNTS", "DATA", "STEPS", "Apply", "steps_of"]

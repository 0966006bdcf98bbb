"""HTTP endpoints of exports."""

from __future__ import annotations

HANDLERS: list[object] = []

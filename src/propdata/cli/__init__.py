"""The `propdata` command: serve, keys, accounts, data, sources."""

from __future__ import annotations

import sys

from propdata.cli import data, keys, serve, sources
from propdata.cli.base import app

__all__ = ["app", "data", "keys", "main", "serve", "sources"]


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)

"""The `propdata` command: serve, keys, accounts, data."""

from __future__ import annotations

import sys

from propdata.cli import data, keys, serve
from propdata.cli.base import app

__all__ = ["app", "data", "keys", "main", "serve"]


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)

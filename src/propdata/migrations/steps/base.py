"""What a schema step is made of: the store it belongs to, and statements run in order.

Every `sNN_*.py` beside this module is one step, frozen the day it landed: its statements are
literal text for each dialect, never built from today's code, so a store made fresh and a
store upgraded from any step end alike (tests/migrations/test_steps.py). A step that fills
rows from reference data (the city keys, the ZIP codes' places) calls the function that
makes them; what it writes is rewritten by every full rebuild anyway.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from propdata.kit.db import Database

DATA, ACCOUNTS = "data", "accounts"
"""The two stores: embedded, two SQLite files; at scale-out, one PostgreSQL database."""

Apply = Callable[[Database], Awaitable[None]]


async def run(db: Database, sqlite: Sequence[str], postgresql: Sequence[str]) -> None:
    """Execute the dialect's statements in order."""
    for statement in postgresql if db.dialect == "postgresql" else sqlite:
        await db.execute(statement)


def statements(sqlite: Sequence[str], postgresql: Sequence[str]) -> Apply:
    """A step that runs `sqlite` or `postgresql`, by the store's dialect."""

    async def apply(db: Database) -> None:
        await run(db, sqlite, postgresql)

    return apply

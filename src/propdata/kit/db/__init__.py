"""Database engines behind one small async protocol.

Repositories write SQL with `?` placeholders and call `fetch_all` / `fetch_one` /
`execute` / `executemany`; `transaction()` groups writes. The embedded engine is SQLite
(stdlib, WAL, one writer); a PostgreSQL engine implements the same protocol.

    db = await connect("var/propdata.db")
    async with db.transaction():
        await db.execute("UPDATE meta SET value = ? WHERE key = ?", ("2", "data_version"))
    rows = await db.fetch_all("SELECT id FROM properties WHERE zip_code = ?", ("50010",))
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import TypeVar

from propdata.kit.db.base import (
    Database,
    ReadSnapshot,
    Row,
    StoreBusy,
    StoreRejected,
    StoreUnavailable,
)
from propdata.kit.db.postgres import PostgresDatabase
from propdata.kit.db.sqlite import SQLiteDatabase, busy, use_wal, when_unlocked

T = TypeVar("T")
R = TypeVar("R")

__all__ = [
    "Database", "PostgresDatabase", "ReadSnapshot", "Row", "SQLiteDatabase", "StoreBusy",
    "StoreRejected", "StoreUnavailable", "address", "busy", "connect", "in_lists",
    "optimistic", "use_wal", "when_unlocked",
]  # fmt: skip

IN_LIST = 500
"""Values bound in one `IN (...)` list at the most: far below SQLite's and PostgreSQL's
parameter limits."""


def in_lists(values: Sequence[T], size: int = IN_LIST) -> Iterator[tuple[list[T], str]]:
    """`values` `size` at a time, each part with its placeholders (`?, ?, ?`), for one
    statement a part:

        for part, marks in in_lists(ids):
            rows += await db.fetch_all(f"SELECT ... WHERE id IN ({marks})", part)
    """
    for at in range(0, len(values), size):
        part = list(values[at : at + size])
        yield part, ", ".join("?" * len(part))


async def optimistic(
    db: Database,
    version: Callable[[], Awaitable[object]],
    compute: Callable[[], Awaitable[T]],
    write: Callable[[T], Awaitable[R]],
    attempts: int = 3,
) -> R:
    """Compute from the store without its write lock, then write in one transaction if
    `version` has not moved meanwhile; otherwise throw the result away and try again. After
    `attempts` such passes, compute and write inside the transaction, where nothing can
    interleave. Long rebuilds use it so that a load committing meanwhile never mixes with
    them, and writers are held up only for the write.
    """
    for _ in range(attempts):
        before = await version()
        result = await compute()
        async with db.transaction():
            if await version() == before:
                return await write(result)
    async with db.transaction():
        return await write(await compute())


def address(db: Database) -> str | None:
    """What another process opens this store by with `connect` (None: it cannot, as for
    `:memory:`): the SQLite file's path, or the PostgreSQL URL with its search_path. It may
    hold a password: give it to a child process in its environment, never in argv."""
    if isinstance(db, SQLiteDatabase):
        return None if db.path == ":memory:" else db.path
    if isinstance(db, PostgresDatabase):
        return db.url
    return None


async def connect(url: str, *, lazy: bool = False, private: bool = False) -> Database:
    """Open the database a PROPDATA_DATABASE_URL names: a SQLite path or sqlite:/// URL, or
    a postgresql:// URL (query parameters such as ?search_path=... become server settings).
    `private`: a SQLite file only this user may read (the accounts store)."""
    if url.startswith(("postgresql://", "postgres://")):
        db = PostgresDatabase(url)
        return db if lazy else await db.open()
    path = url.removeprefix("sqlite:///").removeprefix("sqlite://")
    return SQLiteDatabase(path, private=private)

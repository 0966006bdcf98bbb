"""Numbered schema steps: an ordered list, each step run once and recorded in the store.

A store records the steps applied to it in `schema_steps` (number, name). `upgrade` runs
the given steps the store has not recorded, in order, each in its own transaction together
with its record: a step is applied whole or not at all, and never twice. Workers starting
together take turns (SQLite's write lock, a PostgreSQL advisory lock) and each checks the
record again once it holds the lock. A store whose record is complete is only read: a
server starting never waits on a data load that holds the write lock.

Steps are never edited once landed; a change to the schema is a new step at the end.
A record of a step this code does not know (a store upgraded by a newer version) is left
alone.

    steps = [Step(1, "the tables", create_tables), Step(2, "an index", add_index)]
    await upgrade(db, steps)

`upgrade_file` is the same for a SQLite file held on a plain `sqlite3` connection (the
embedded limiter's), whose steps are SQL statements.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from propdata.kit.db import Database, StoreUnavailable

A = TypeVar("A")

RECORD_TABLE = """CREATE TABLE IF NOT EXISTS schema_steps (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL
)"""
_DONE = "SELECT version FROM schema_steps"
_RECORD = "INSERT INTO schema_steps (version, name) VALUES (?, ?)"
_LOCK = "SELECT pg_advisory_xact_lock(7231001)"
"""One advisory lock for every step list of a PostgreSQL database."""


@dataclass(frozen=True, slots=True)
class Step(Generic[A]):
    version: int
    name: str
    apply: A
    """What the step does: a coroutine function of the store, or SQL statements."""


def pending(steps: Sequence[Step[A]], done: Iterable[int]) -> list[Step[A]]:
    """The steps not yet recorded, in order; the list must be numbered in increasing order."""
    versions = [step.version for step in steps]
    if versions != sorted(set(versions)):
        raise ValueError(f"steps must be numbered in increasing order: {versions}")
    recorded = set(done)
    return [step for step in steps if step.version not in recorded]


async def _recorded(db: Database) -> list[int]:
    try:
        return [int(row[0]) for row in await db.fetch_all(_DONE)]
    except StoreUnavailable:
        raise
    except Exception:  # no record table yet: a new store (or one made before it)
        return []


async def upgrade(
    db: Database, steps: Sequence[Step[Callable[[Database], Awaitable[None]]]]
) -> list[int]:
    """Apply the steps the store has not recorded; returns the numbers of those applied."""
    todo = pending(steps, await _recorded(db))
    if not todo:
        return []
    if db.dialect == "postgresql":
        row = await db.fetch_one("SELECT pg_is_in_recovery()")
        if row and row[0]:
            return []  # a read replica: the primary is upgraded, and a standby cannot write
    applied: list[int] = []
    for step in todo:
        async with db.transaction():
            if db.dialect == "postgresql":
                await db.execute(_LOCK)
            await db.execute(RECORD_TABLE)
            if not pending([step], await _recorded(db)):
                continue  # another worker applied it while this one waited
            await step.apply(db)
            await db.execute(_RECORD, (step.version, step.name))
        applied.append(step.version)
    return applied


def upgrade_file(conn: sqlite3.Connection, steps: Sequence[Step[Sequence[str]]]) -> list[int]:
    """`upgrade` for a SQLite file on a connection in autocommit mode (isolation_level=None),
    with steps of SQL statements."""
    applied: list[int] = []
    for step in pending(steps, _recorded_in(conn)):
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(RECORD_TABLE)
            if pending([step], _recorded_in(conn)):
                for statement in step.apply:
                    conn.execute(statement)
                conn.execute(_RECORD, (step.version, step.name))
                applied.append(step.version)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return applied


def _recorded_in(conn: sqlite3.Connection) -> list[int]:
    try:
        return [int(row[0]) for row in conn.execute(_DONE)]
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        return []

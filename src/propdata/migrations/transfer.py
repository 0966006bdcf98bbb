"""Copy a whole store to another (SQLite -> PostgreSQL, or back) and prove nothing was lost.

Every table is read in primary-key order in pages (keyset, never OFFSET), written in one
transaction on the target, then both sides are counted and hashed in the same order; the
copy fails loudly when any count or checksum differs.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from propdata.kit.db import Database, Row
from propdata.migrations import layout
from propdata.migrations.schema import COPIED_ACCOUNTS, COPIED_DATA

PAGE = 5_000
Tables = dict[str, tuple[tuple[str, ...], tuple[str, ...]]]

_ONLY = {"meta": "key <> 'portal_secret'"}
"""Rows a copy leaves where they are: the accounts store's own secret (PostgreSQL holds it
in the one `meta` both stores share)."""


async def data_tables(db: Database) -> Tables:
    """The data store's tables a copy moves (`schema.COPIED_DATA`), with the columns `db`
    holds."""
    return {table: await layout.columns(db, table) for table in COPIED_DATA}


async def account_tables(db: Database) -> Tables:
    """The accounts store's tables a copy moves (`schema.COPIED_ACCOUNTS`)."""
    return {table: await layout.columns(db, table) for table in COPIED_ACCOUNTS}


@dataclass(frozen=True, slots=True)
class TableReport:
    table: str
    source_rows: int
    target_rows: int
    source_sha256: str
    target_sha256: str

    @property
    def equal(self) -> bool:
        return self.source_rows == self.target_rows and self.source_sha256 == self.target_sha256


class TransferError(RuntimeError):
    """The target is not empty, or what arrived differs from what left."""


def _canonical(row: Row) -> bytes:
    """One row as bytes both stores agree on (floats by repr, so 0.1 stays 0.1)."""
    return repr(tuple(float(v) if isinstance(v, float) else v for v in row)).encode()


async def _pages(
    db: Database, table: str, key: tuple[str, ...], columns: tuple[str, ...]
) -> AsyncIterator[list[Row]]:
    select = f"SELECT {', '.join(columns)} FROM {table}"
    only = _ONLY.get(table)
    order = f" ORDER BY {', '.join(key)} LIMIT {PAGE}"
    after: tuple[object, ...] | None = None
    positions = [columns.index(k) for k in key]
    while True:
        if after is None:
            rows = await db.fetch_all(select + (f" WHERE {only}" if only else "") + order)
        else:
            marks = ", ".join("?" for _ in key)
            also = f" AND {only}" if only else ""
            rows = await db.fetch_all(
                f"{select} WHERE ({', '.join(key)}) > ({marks}){also}{order}", after
            )
        if not rows:
            return
        yield rows
        after = tuple(rows[-1][p] for p in positions)


async def _digest(
    db: Database, table: str, key: tuple[str, ...], columns: tuple[str, ...]
) -> tuple[int, str]:
    digest = hashlib.sha256()
    count = 0
    async for rows in _pages(db, table, key, columns):
        for row in rows:
            digest.update(_canonical(row))
        count += len(rows)
    return count, digest.hexdigest()


async def copy_store(
    source: Database,
    target: Database,
    *,
    tables: Tables | None = None,
    progress: Callable[[str, int], None] | None = None,
) -> list[TableReport]:
    """Copy every table (of the data store, or `tables`) of `source` into the empty
    `target` (migrated), then verify both. Numbered keys keep their numbers, and the
    target's numbering goes on after the highest."""
    tables = await data_tables(source) if tables is None else tables
    for table in tables:
        row = await target.fetch_one(f"SELECT count(*) FROM {table}")
        if table not in ("meta", "plans") and row and row[0]:
            raise TransferError(f"the target already holds {row[0]} rows in {table}")
    async with target.transaction():
        for table, (key, rest) in tables.items():
            columns = key + rest
            marks = ", ".join("?" for _ in columns)
            insert = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"
            if table in ("meta", "plans"):  # made by migrate: the source's values win
                insert += f" ON CONFLICT ({', '.join(key)}) DO UPDATE SET " + ", ".join(
                    f"{c} = excluded.{c}" for c in rest
                )
            async for rows in _pages(source, table, key, columns):
                await target.executemany(insert, rows)
                if progress is not None:
                    progress(table, len(rows))
            if target.dialect == "postgresql" and len(key) == 1:
                await _number_after(target, table, key[0])
    reports = []
    for table, (key, rest) in tables.items():
        columns = key + rest
        source_rows, source_sha = await _digest(source, table, key, columns)
        target_rows, target_sha = await _digest(target, table, key, columns)
        reports.append(TableReport(table, source_rows, target_rows, source_sha, target_sha))
    return reports


async def _number_after(db: Database, table: str, column: str) -> None:
    """A PostgreSQL identity column given numbers by the copy goes on after the highest
    (SQLite's INTEGER PRIMARY KEY does by itself)."""
    row = await db.fetch_one("SELECT pg_get_serial_sequence(?, ?)", (table, column))
    if row is None or row[0] is None:
        return
    await db.execute(
        f"SELECT setval(?, (SELECT max({column}) FROM {table}))"
        f" WHERE EXISTS (SELECT 1 FROM {table})",
        (row[0],),
    )


async def copy_stores(
    source: tuple[Database, Database],
    target: tuple[Database, Database],
    *,
    progress: Callable[[str, int], None] | None = None,
) -> list[TableReport]:
    """Copy a whole install, its (data, accounts) stores, into an empty one (`data copy`).

    Embedded the two are SQLite files; at scale-out one PostgreSQL database holds both."""
    reports = await copy_store(source[0], target[0], progress=progress)
    reports += await copy_store(
        source[1], target[1], tables=await account_tables(source[1]), progress=progress
    )
    return reports

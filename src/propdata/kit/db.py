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

import contextlib
import sqlite3
from collections.abc import AsyncIterator, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

Row = tuple[Any, ...]


class StoreUnavailable(RuntimeError):
    """A backing store cannot be reached; the API answers 503 service_unavailable."""


class Database(Protocol):
    dialect: str

    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...

    async def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> Row | None: ...

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int: ...

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...

    def transaction(self) -> contextlib.AbstractAsyncContextManager[None]: ...

    async def close(self) -> None: ...


class SQLiteDatabase:
    """SQLite on one connection per process: WAL so readers never wait for the writer.

    Queries run inline on the event loop: point reads take microseconds, and each server
    worker is its own process with its own connection.
    """

    dialect = "sqlite"

    def __init__(self, path: str, *, readonly: bool = False) -> None:
        self.path = path
        if path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(
            path, isolation_level=None, check_same_thread=False, cached_statements=256
        )
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA busy_timeout=30000")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._conn.execute("PRAGMA cache_size=-65536")
        self._conn.execute("PRAGMA mmap_size=1073741824")
        self._conn.execute("PRAGMA temp_store=MEMORY")
        if readonly:
            self._conn.execute("PRAGMA query_only=ON")
        self._depth = 0

    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        try:
            return self._conn.execute(sql, params).fetchall()
        except sqlite3.OperationalError as exc:
            raise _unavailable(exc) from exc

    async def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        try:
            row: Row | None = self._conn.execute(sql, params).fetchone()
        except sqlite3.OperationalError as exc:
            raise _unavailable(exc) from exc
        return row

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._conn.execute(sql, params).rowcount

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self._conn.executemany(sql, rows)

    async def executescript(self, script: str) -> None:
        self._conn.executescript(script)

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """BEGIN IMMEDIATE ... COMMIT; nested calls join the outer transaction."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self._conn.execute("BEGIN IMMEDIATE")
        self._depth = 1
        try:
            yield
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        else:
            self._conn.execute("COMMIT")
        finally:
            self._depth = 0

    async def close(self) -> None:
        self._conn.close()


def _unavailable(exc: sqlite3.OperationalError) -> Exception:
    message = str(exc)
    if "unable to open" in message or "disk I/O" in message or "locked" in message:
        return StoreUnavailable(message)
    return exc


async def connect(url: str) -> Database:
    """Open the database a PROPDATA_DATABASE_URL names (a path or sqlite:/// URL)."""
    if url.startswith(("postgresql://", "postgres://")):
        raise StoreUnavailable("PostgreSQL support is not built yet")
    path = url.removeprefix("sqlite:///").removeprefix("sqlite://")
    return SQLiteDatabase(path)

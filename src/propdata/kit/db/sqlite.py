"""The embedded engine: SQLite, WAL, one writer; write locks waited for on the event loop."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import os
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from propdata.kit.db.base import ReadSnapshot, Row, StoreBusy, StoreUnavailable

T = TypeVar("T")


class _SQLiteSnapshot:
    """A read transaction on a connection of its own, its statements run on a thread (the
    event loop keeps serving while a long read goes on)."""

    dialect = "sqlite"

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return await asyncio.to_thread(lambda: self._conn.execute(sql, params).fetchall())

    async def stream(
        self, sql: str, params: Sequence[Any] = (), size: int = 5_000
    ) -> AsyncIterator[list[Row]]:
        cursor = await asyncio.to_thread(self._conn.execute, sql, params)
        try:
            while rows := await asyncio.to_thread(cursor.fetchmany, size):
                yield rows
        finally:
            cursor.close()


BULK_PARAMS = 6_000
"""Values bound by one multi-row INSERT of `SQLiteDatabase.copy_into` (SQLite allows 32,766
since 3.32); a thousand price events or 139 property rows a statement."""


LOCK_WAIT = 30.0
"""Seconds a SQLite write waits for another process's write lock before a 503."""
BUSY_TIMEOUT_MS = 50
"""SQLite's own (blocking) busy wait for a statement, once a connection is open: a backstop
for the rare busy read; waits for a write lock happen on the event loop (`when_unlocked`)."""
SPIN = 0.001
"""Seconds `when_unlocked` tries again after each turn of the event loop before it sleeps."""
OFFLOAD_THREADS = 2
"""Threads per SQLite store for the queries that may take long (`fetch_all(slow=True)`)."""


def busy(exc: sqlite3.OperationalError) -> bool:
    """Whether the error is another connection's lock (try again), not a failure."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return bool(code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED))
    return "locked" in str(exc) or "busy" in str(exc)


async def when_unlocked(attempt: Callable[[], T], what: str, wait: float = LOCK_WAIT) -> T:
    """Call `attempt` (which begins a SQLite write transaction) until it gets the lock.

    Between tries the event loop goes on serving other requests: a write lock another
    process holds (a load, a backup, another worker's admission) stalls only the requests
    that need it, never the whole worker, as SQLite's own busy wait would. For the first
    `SPIN` seconds a try follows each turn of the event loop (another worker's admission
    holds the lock for tens of microseconds, less than any timer), then after growing
    sleeps. After `wait` seconds, StoreBusy (a 503).
    """
    delay = 0.0002
    deadline: float | None = None
    spin_until: float | None = None
    while True:
        try:
            return attempt()
        except sqlite3.OperationalError as exc:
            if not busy(exc):
                raise
            now = time.monotonic()
            deadline = deadline or now + wait
            if now >= deadline:
                raise StoreBusy(f"{what}: the write lock stayed taken for {wait:g} s") from exc
            spin_until = spin_until or now + SPIN
        if now < spin_until:
            await asyncio.sleep(0)
            continue
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.01)


def use_wal(conn: sqlite3.Connection, wait: float = 30.0) -> None:
    """Put the connection's file in WAL mode. Where processes open a new file together (the
    workers of `propdata serve` at their first start), the switch can answer "database is
    locked" at once, without SQLite's busy wait (it needs the file to itself): so it is tried
    again every 10 ms until `wait` seconds have passed."""
    deadline = time.monotonic() + wait
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if not busy(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


def _connect_sqlite(path: str, *, readonly: bool) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False,
                           cached_statements=256)  # fmt: skip
    # A long busy wait first: workers opening one file together wait instead of failing.
    conn.execute("PRAGMA busy_timeout=30000")
    use_wal(conn)
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    # No memory map: mapped pages of a large file count as each worker's resident memory;
    # SQLite's own page cache (16 MB a connection) and the OS cache serve reads instead.
    # 16 MB, not 32: searches come from the in-memory index now, and the bench's by-id
    # and search figures were the same with half the cache (docs/performance.md). A
    # server's workers take less still (`limit_page_cache`); this is what commands use.
    conn.execute("PRAGMA cache_size=-16384")
    conn.execute("PRAGMA mmap_size=0")
    conn.execute("PRAGMA temp_store=MEMORY")
    if readonly:
        conn.execute("PRAGMA query_only=ON")
        # The offload threads' connections read through a table once (the index build) or
        # run the odd slow query: a small cache each keeps a worker's memory where it was.
        conn.execute("PRAGMA cache_size=-2048")
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    return conn


class SQLiteDatabase:
    """SQLite: WAL, so readers never wait for the writer; one connection a process on the
    event loop, and a few read-only ones on threads for the queries that may take long.

    Point reads run inline: they take microseconds, and a hop to a thread costs about
    120 µs here. A query that can take long (a search in SQL, a page of the search index's
    build) passes `slow=True` and runs on a thread with its own connection, so the worker
    keeps answering meanwhile (datasette's way). A write transaction waits for the lock on
    the event loop (`when_unlocked`).
    """

    dialect = "sqlite"

    def __init__(self, path: str, *, readonly: bool = False, private: bool = False) -> None:
        self.path = path
        if path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            if private and not readonly:
                _make_private(path)
        self._conn = _connect_sqlite(path, readonly=readonly)
        self._depth = 0
        self._owner: asyncio.Task[Any] | None = None
        self._turn: asyncio.Lock | None = None
        """One transaction at a time on the connection (made in the running loop)."""
        self._threads: concurrent.futures.ThreadPoolExecutor | None = None
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._writes = 0
        """Statements this process ran that may have written (see `changes`)."""

    def _reader(self) -> sqlite3.Connection:
        """This thread's read-only connection."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = _connect_sqlite(self.path, readonly=True)
            self._readers.append(conn)
        return conn

    def _read_apart(self, sql: str, params: Sequence[Any]) -> list[Row]:
        return self._reader().execute(sql, params).fetchall()

    async def fetch_all(
        self, sql: str, params: Sequence[Any] = (), *, slow: bool = False
    ) -> list[Row]:
        try:
            if slow and not self._depth and self.path != ":memory:":
                if self._threads is None:
                    self._threads = concurrent.futures.ThreadPoolExecutor(
                        OFFLOAD_THREADS, thread_name_prefix="sqlite"
                    )
                loop = asyncio.get_running_loop()
                return await loop.run_in_executor(self._threads, self._read_apart, sql, params)
            return self._conn.execute(sql, params).fetchall()
        except sqlite3.OperationalError as exc:
            raise _unavailable(exc) from exc

    async def fetch_one(
        self, sql: str, params: Sequence[Any] = (), *, slow: bool = False
    ) -> Row | None:
        if slow:
            rows = await self.fetch_all(sql, params, slow=True)
            return rows[0] if rows else None
        try:
            row: Row | None = self._conn.execute(sql, params).fetchone()
        except sqlite3.OperationalError as exc:
            raise _unavailable(exc) from exc
        return row

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        self._writes += 1
        return self._conn.execute(sql, params).rowcount

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self._writes += 1
        self._conn.executemany(sql, rows)

    def limit_page_cache(self, kib: int) -> None:
        self._conn.execute(f"PRAGMA cache_size=-{int(kib)}")

    def changes(self) -> tuple[int, int]:
        """SQLite's `data_version` of this connection, which moves when another connection
        (any process) commits, with this process's own writes, which it does not count:
        about 1 µs, no transaction."""
        row = self._conn.execute("PRAGMA data_version").fetchone()
        return int(row[0]), self._writes

    def notices(self, topic: str) -> tuple[int, int]:
        """`changes()`: every commit moves it, that of a notice's write with the rest."""
        return self.changes()

    async def copy_into(
        self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]
    ) -> None:
        """Multi-row INSERTs of about BULK_PARAMS values each; the remainder in statements of
        a power of two rows (a few statement shapes a table, all kept in the statement cache).

        One statement of a thousand rows binds and steps at less than half the cost a row of
        `executemany` of one-row INSERTs (measured: 0.65 µs against 1.4 µs a price event).
        """
        self._writes += 1
        insert = f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
        one = f"({', '.join('?' for _ in columns)})"
        chain = itertools.chain.from_iterable
        per = max(1, BULK_PARAMS // len(columns))
        start = 0
        while start < len(rows):
            size = per if len(rows) - start >= per else 1 << ((len(rows) - start).bit_length() - 1)
            end = start + size * ((len(rows) - start) // size)
            self._conn.executemany(
                insert + ", ".join([one] * size),
                (list(chain(rows[i : i + size])) for i in range(start, end, size)),
            )
            start = end

    async def executescript(self, script: str) -> None:
        self._writes += 1
        self._conn.executescript(script)

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """BEGIN IMMEDIATE ... COMMIT on this process's connection; a nested call from the
        same task joins the outer transaction, another task's waits for it to end."""
        task = asyncio.current_task()
        if self._depth and self._owner is task:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        if self._turn is None:
            self._turn = asyncio.Lock()
        async with self._turn:
            await when_unlocked(lambda: self._conn.execute("BEGIN IMMEDIATE"), self.path)
            self._owner, self._depth = task, 1
            try:
                yield
            except BaseException:
                # SQLite rolls back by itself after some errors (a full disk, for one): a
                # second ROLLBACK would fail and hide the error that matters.
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("COMMIT")
            finally:
                self._owner, self._depth = None, 0
                self._writes += 1

    @contextlib.asynccontextmanager
    async def read_snapshot(self) -> AsyncIterator[ReadSnapshot]:
        """BEGIN on a read-only connection of its own; the snapshot is taken by the first
        read (WAL keeps it while writers commit). An in-memory store has no second
        connection: its reads go to this one, outside a transaction."""
        if self.path == ":memory:":
            yield _SQLiteSnapshot(self._conn)
            return
        conn = await asyncio.to_thread(_connect_sqlite, self.path, readonly=True)
        try:
            conn.execute("BEGIN")
            yield _SQLiteSnapshot(conn)
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            conn.close()

    async def close(self) -> None:
        if self._threads is not None:
            self._threads.shutdown(wait=True)
            self._threads = None
        for conn in self._readers:
            conn.close()
        self._readers.clear()
        self._conn.close()


def _unavailable(exc: sqlite3.OperationalError) -> Exception:
    message = str(exc)
    if "unable to open" in message or "disk I/O" in message or "locked" in message:
        return StoreUnavailable(message)
    return exc


def _make_private(path: str) -> None:
    """Let only this user read the file (SQLite gives its -wal and -shm files the same mode).

    A file that exists is never opened here: SQLite's locks are POSIX locks, which closing
    any descriptor of the file drops for the whole process, so another process closing the
    file last would delete the WAL under this process's open connections."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
    os.chmod(path, 0o600)
    for extra in (path + "-wal", path + "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.chmod(extra, 0o600)

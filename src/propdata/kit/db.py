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

import asyncio
import concurrent.futures
import contextlib
import contextvars
import itertools
import os
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    import asyncpg

Row = tuple[Any, ...]
T = TypeVar("T")
R = TypeVar("R")


class StoreUnavailable(RuntimeError):
    """A backing store cannot be reached; the API answers 503 service_unavailable."""


class StoreBusy(StoreUnavailable):
    """The store answers, but no pooled connection came free in time (still a 503)."""


class StoreRejected(ValueError):
    """The store refused a value it was given (PostgreSQL: a NUL byte, text it cannot
    encode, a number out of range); the API answers 400, never 500. The request guard
    refuses such values first; this is the backstop."""


class Database(Protocol):
    dialect: str

    async def fetch_all(
        self, sql: str, params: Sequence[Any] = (), *, slow: bool = False
    ) -> list[Row]:
        """All rows. `slow`: the query may take long; SQLite runs it off the event loop."""
        ...

    async def fetch_one(
        self, sql: str, params: Sequence[Any] = (), *, slow: bool = False
    ) -> Row | None: ...

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int: ...

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...

    async def copy_into(
        self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]
    ) -> None:
        """Append rows to a table by the store's bulk path (COPY on PostgreSQL)."""
        ...

    def transaction(self) -> contextlib.AbstractAsyncContextManager[None]: ...

    def read_snapshot(self) -> contextlib.AbstractAsyncContextManager[ReadSnapshot]:
        """A read-only transaction of its own connection: every statement run through it sees
        the store as it was at its first read, whatever commits meanwhile (SQLite's WAL
        snapshot; PostgreSQL's REPEATABLE READ)."""
        ...

    def limit_page_cache(self, kib: int) -> None:
        """Cap the process's own page cache of the store at `kib` KiB (a server's workers:
        the OS cache is shared by all of them, this one is not); commands keep the larger
        default, which loads and copies use. PostgreSQL: nothing (its cache is the server's)."""
        ...

    def changes(self) -> object | None:
        """A marker that differs after any write to the store committed since it was taken,
        by this process or another, cheaply enough to call on every request; None when the
        store has no such marker (PostgreSQL: it would cost a round trip)."""
        ...

    async def close(self) -> None: ...


class ReadSnapshot(Protocol):
    """The statements of one read snapshot (`Database.read_snapshot`)."""

    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...

    def stream(
        self, sql: str, params: Sequence[Any] = (), size: int = 5_000
    ) -> AsyncIterator[list[Row]]:
        """The rows of one statement, `size` at a time, never all of them in memory."""
        ...


class _SQLiteSnapshot:
    """A read transaction on a connection of its own, its statements run on a thread (the
    event loop keeps serving while a long read goes on)."""

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


class _PostgresSnapshot:
    """A REPEATABLE READ, READ ONLY transaction on one pooled connection; streams by a
    server-side cursor."""

    def __init__(
        self, conn: asyncpg.Connection, unreachable: tuple[type[BaseException], ...]
    ) -> None:
        self._conn = conn
        self._unreachable = unreachable

    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        try:
            return [tuple(row) for row in await self._conn.fetch(_numbered(sql), *params)]
        except self._unreachable as exc:
            raise StoreUnavailable(f"PostgreSQL unreachable: {exc}") from exc

    async def stream(
        self, sql: str, params: Sequence[Any] = (), size: int = 5_000
    ) -> AsyncIterator[list[Row]]:
        try:
            cursor = await self._conn.cursor(_numbered(sql), *params)
            while rows := await cursor.fetch(size):
                yield [tuple(row) for row in rows]
        except self._unreachable as exc:
            raise StoreUnavailable(f"PostgreSQL unreachable: {exc}") from exc


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


def _busy(exc: sqlite3.OperationalError) -> bool:
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
            if not _busy(exc):
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
            if not _busy(exc) or time.monotonic() >= deadline:
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


def _pg_errors() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """What asyncpg raises when PostgreSQL cannot be reached, and when it refuses a value."""
    import asyncpg  # PostgreSQL stores only: a command on a SQLite store starts without it

    unreachable = (
        OSError,
        asyncio.TimeoutError,
        asyncpg.exceptions.ConnectionDoesNotExistError,
        asyncpg.exceptions.CannotConnectNowError,
        asyncpg.exceptions.ConnectionFailureError,
        asyncpg.exceptions.InterfaceError,
        asyncpg.exceptions.AdminShutdownError,
        asyncpg.exceptions.TooManyConnectionsError,
    )
    return unreachable, (asyncpg.exceptions.DataError, UnicodeEncodeError)


BULK_TIMEOUT = 3_600.0
"""Bulk writes (loads, copies) may take long; reads keep the pool's 60 s command timeout."""


async def _keep_session(conn: asyncpg.Connection) -> None:
    """A connection goes back to the pool without asyncpg's reset query (`RESET ALL`, `CLOSE
    ALL`, `UNLISTEN *`, advisory unlocks): one more round trip per pooled query, for session
    state we never make. Our SQL sets no session variables, opens no cursors outside a
    transaction, listens to nothing and takes only transaction-scoped advisory locks; an open
    transaction is still rolled back by the pool before this runs."""


def _numbered(sql: str) -> str:
    """`?` placeholders to PostgreSQL's `$1, $2, ...` (our SQL has no `?` inside strings)."""
    parts = sql.split("?")
    out = [parts[0]]
    for n, part in enumerate(parts[1:], 1):
        out.append(f"${n}{part}")
    return "".join(out)


class PostgresDatabase:
    """PostgreSQL through an asyncpg pool; the same `?` SQL as SQLite, numbered on the way.

    A transaction binds one pooled connection to the running task (a context variable), so
    the repository calls inside `async with db.transaction()` all use it. Connection
    failures surface as StoreUnavailable (503); the pool opens new connections on the next
    request, so the service recovers without a restart.
    """

    dialect = "postgresql"

    def __init__(
        self, url: str, *, min_size: int = 1, max_size: int = 10, acquire_timeout: float = 5.0
    ) -> None:
        self.url = url
        self._min, self._max = min_size, max_size
        self._acquire_timeout = acquire_timeout
        self._pool: asyncpg.Pool | None = None
        self._unreachable, self._rejected = _pg_errors()
        self._tx: contextvars.ContextVar[asyncpg.Connection | None] = contextvars.ContextVar(
            "propdata_pg_tx", default=None
        )
        self._sql: dict[str, str] = {}
        self._opening = asyncio.Lock()
        self.on_open: Callable[[PostgresDatabase], Awaitable[None]] | None = None
        """Run once when the pool first opens (a server started while PostgreSQL was down
        migrates when it first reaches it)."""

    async def open(self) -> PostgresDatabase:
        import asyncpg  # loaded by _pg_errors already (see there)

        async with self._opening:
            if self._pool is not None:
                return self
            try:
                pool = await asyncpg.create_pool(
                    self.url, min_size=self._min, max_size=self._max, timeout=5,
                    command_timeout=60, statement_cache_size=512, reset=_keep_session,
                )  # fmt: skip
            except self._unreachable as exc:
                raise StoreUnavailable(f"PostgreSQL unreachable: {exc}") from exc
            self._pool = pool
            hook, self.on_open = self.on_open, None
            if hook is not None:
                try:
                    await hook(self)
                except BaseException:
                    self.on_open = hook  # try again with the next connection
                    raise
        return self

    def _q(self, sql: str) -> str:
        numbered = self._sql.get(sql)
        if numbered is None:
            numbered = self._sql[sql] = _numbered(sql)
        return numbered

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[asyncpg.Connection]:
        bound = self._tx.get()
        if bound is not None:
            try:
                yield bound
            except self._rejected as exc:
                raise StoreRejected(f"PostgreSQL refused a value: {exc}") from exc
            return
        if self._pool is None:
            await self.open()
        pool = self._pool
        assert pool is not None
        try:
            conn = await pool.acquire(timeout=self._acquire_timeout)
        except TimeoutError as exc:
            if pool.get_size() >= self._max and pool.get_idle_size() == 0:
                # Every connection is in use: the server is busy, not the database down.
                raise StoreBusy(
                    f"PostgreSQL busy: all {self._max} pooled connections stayed in use for"
                    f" {self._acquire_timeout:g} s"
                ) from exc
            raise StoreUnavailable(f"PostgreSQL unreachable: {exc!r}") from exc
        except self._unreachable as exc:
            raise StoreUnavailable(f"PostgreSQL unreachable: {exc}") from exc
        try:
            yield conn
        except self._unreachable as exc:
            raise StoreUnavailable(f"PostgreSQL unreachable: {exc}") from exc
        except self._rejected as exc:
            raise StoreRejected(f"PostgreSQL refused a value: {exc}") from exc
        finally:
            await pool.release(conn)

    async def fetch_all(
        self, sql: str, params: Sequence[Any] = (), *, slow: bool = False
    ) -> list[Row]:
        async with self._connection() as conn:
            try:
                rows = await conn.fetch(self._q(sql), *params)
            except self._unreachable as exc:
                raise StoreUnavailable(f"PostgreSQL unreachable: {exc}") from exc
        return [tuple(row) for row in rows]

    async def fetch_one(
        self, sql: str, params: Sequence[Any] = (), *, slow: bool = False
    ) -> Row | None:
        async with self._connection() as conn:
            try:
                row = await conn.fetchrow(self._q(sql), *params)
            except self._unreachable as exc:
                raise StoreUnavailable(f"PostgreSQL unreachable: {exc}") from exc
        return tuple(row) if row is not None else None

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        async with self._connection() as conn:
            try:
                status = await conn.execute(self._q(sql), *params)
            except self._unreachable as exc:
                raise StoreUnavailable(f"PostgreSQL unreachable: {exc}") from exc
        last = status.rsplit(" ", 1)[-1]
        return int(last) if last.isdigit() else 0

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        batch = list(rows)
        if not batch:
            return
        async with self._connection() as conn:
            try:
                await conn.executemany(self._q(sql), batch, timeout=BULK_TIMEOUT)
            except self._unreachable as exc:
                raise StoreUnavailable(f"PostgreSQL unreachable: {exc}") from exc

    async def copy_into(
        self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]
    ) -> None:
        if not rows:
            return
        async with self._connection() as conn:
            try:
                await conn.copy_records_to_table(
                    table, records=rows, columns=list(columns), timeout=BULK_TIMEOUT
                )
            except self._unreachable as exc:
                raise StoreUnavailable(f"PostgreSQL unreachable: {exc}") from exc

    def limit_page_cache(self, kib: int) -> None:
        """Nothing: PostgreSQL's page cache is the server's."""

    def changes(self) -> None:
        """None: PostgreSQL has no marker of committed writes short of a round trip."""
        return None

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """One transaction on one connection; nested calls join the outer one."""
        if self._tx.get() is not None:
            yield
            return
        async with self._connection() as conn:
            token = self._tx.set(conn)
            try:
                async with conn.transaction():
                    yield
            except self._unreachable as exc:
                raise StoreUnavailable(f"PostgreSQL unreachable: {exc}") from exc
            finally:
                self._tx.reset(token)

    @contextlib.asynccontextmanager
    async def read_snapshot(self) -> AsyncIterator[ReadSnapshot]:
        """REPEATABLE READ, READ ONLY on a connection of its own (never the task's open
        write transaction): the snapshot is taken by its first statement."""
        if self._pool is None:
            await self.open()
        pool = self._pool
        assert pool is not None
        try:
            conn = await pool.acquire(timeout=self._acquire_timeout)
        except TimeoutError as exc:
            raise StoreBusy(f"PostgreSQL busy: no pooled connection came free: {exc!r}") from exc
        except self._unreachable as exc:
            raise StoreUnavailable(f"PostgreSQL unreachable: {exc}") from exc
        try:
            reading = conn.transaction(isolation="repeatable_read", readonly=True)
            try:
                await reading.start()
            except self._unreachable as exc:
                raise StoreUnavailable(f"PostgreSQL unreachable: {exc}") from exc
            try:
                yield _PostgresSnapshot(conn, self._unreachable)
            finally:
                with contextlib.suppress(*self._unreachable):
                    await reading.rollback()  # it only read: nothing to commit
        finally:
            await pool.release(conn)

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None


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


async def connect(url: str, *, lazy: bool = False, private: bool = False) -> Database:
    """Open the database a PROPDATA_DATABASE_URL names: a SQLite path or sqlite:/// URL, or
    a postgresql:// URL (query parameters such as ?search_path=... become server settings).
    `private`: a SQLite file only this user may read (the accounts store)."""
    if url.startswith(("postgresql://", "postgres://")):
        db = PostgresDatabase(url)
        return db if lazy else await db.open()
    path = url.removeprefix("sqlite:///").removeprefix("sqlite://")
    return SQLiteDatabase(path, private=private)

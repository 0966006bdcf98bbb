"""The scale-out engine: PostgreSQL through an asyncpg pool, the same `?` SQL numbered on
the way."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncpg

from propdata.kit.db.base import ReadSnapshot, Row, StoreBusy, StoreRejected, StoreUnavailable


class _PostgresSnapshot:
    """A REPEATABLE READ, READ ONLY transaction on one pooled connection; streams by a
    server-side cursor."""

    dialect = "postgresql"

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
        self.heard: Callable[[str], object | None] | None = None
        """What a listener of this process hears of each topic (`kit.wakeup.PostgresWakeups`
        sets it while it runs): what `notices` builds on."""
        self._writes = 0
        """Statements and transactions this process ran that may have written (`notices`)."""

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

    async def _acquire(self) -> tuple[asyncpg.Pool, asyncpg.Connection]:
        """A pooled connection (the pool opened on first use), and its pool to release it to:
        StoreBusy when every connection stayed in use, StoreUnavailable when none opens."""
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
        return pool, conn

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[asyncpg.Connection]:
        bound = self._tx.get()
        if bound is not None:
            try:
                yield bound
            except self._rejected as exc:
                raise StoreRejected(f"PostgreSQL refused a value: {exc}") from exc
            return
        pool, conn = await self._acquire()
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
        self._writes += 1
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
        self._writes += 1
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
        self._writes += 1
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

    def notices(self, topic: str) -> object | None:
        """(what the listener heard of `topic`, this process's writes): the first moves with
        each notice of `topic` from any process (and at least each `wakeup.POLL` seconds),
        the second with each statement or transaction of this one, counted once it ended,
        so this process's own commit moves it before its notice comes back. None while no
        listener hears."""
        heard = None if self.heard is None else self.heard(topic)
        return None if heard is None else (heard, self._writes)

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
                self._writes += 1  # after the commit: a marker taken inside it moves

    @contextlib.asynccontextmanager
    async def read_snapshot(self) -> AsyncIterator[ReadSnapshot]:
        """REPEATABLE READ, READ ONLY on a connection of its own (never the task's open
        write transaction): the snapshot is taken by its first statement."""
        pool, conn = await self._acquire()
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

"""The store's protocol (`Database`, `ReadSnapshot`), its row type and its errors: what
repositories and callers see of either engine."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any, Protocol

Row = tuple[Any, ...]


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

    def notices(self, topic: str) -> object | None:
        """A marker that differs after any commit that sent a notice of `topic` with it
        (`kit.wakeup.notify_in`), by this process or another, cheaply enough to call on
        every request; None when the store cannot say. SQLite: `changes()`, which every
        commit moves. PostgreSQL: the notices of `topic` that a listener of this process
        hears (`kit.wakeup.PostgresWakeups`), with this process's own writes; None while
        none listens."""
        ...

    async def close(self) -> None: ...


class ReadSnapshot(Protocol):
    """The statements of one read snapshot (`Database.read_snapshot`)."""

    dialect: str

    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...

    def stream(
        self, sql: str, params: Sequence[Any] = (), size: int = 5_000
    ) -> AsyncIterator[list[Row]]:
        """The rows of one statement, `size` at a time, never all of them in memory."""
        ...

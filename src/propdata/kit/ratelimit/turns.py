"""The embedded limiter's shared write transactions: the writing decisions (admissions,
refunds, failed requests) a worker's requests ask for in one turn of its event loop are made
in one `BEGIN IMMEDIATE` transaction, one after another, each against the counts the one
before left, under one write lock and one commit, and none is answered before that commit.

    turns = SharedTransactions(conn)
    decision = await turns.queue(lambda: decide(...), needed=False)
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

from propdata.kit.db import StoreUnavailable, busy, when_unlocked

T = TypeVar("T")


async def locked(attempt: Callable[[], T]) -> T:
    """One decision; waits for another worker's lock on the event loop, not in SQLite."""
    try:
        return await when_unlocked(attempt, "limiter store")
    except sqlite3.OperationalError as exc:  # an unreadable file
        raise StoreUnavailable(f"limiter store: {exc}") from exc


class Queued(NamedTuple):
    """A writing decision waiting for the next shared transaction."""

    step: Callable[[], Any]
    future: asyncio.Future[Any]
    needed: bool
    """Made even when its waiter was cancelled before (a refund, a failure)."""


class SharedTransactions:
    """The queue of one process's writing decisions on one connection, and its transactions."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._queued: list[Queued] = []
        """Writing decisions waiting for the next shared transaction (`_shared`)."""
        self._writing = False
        """A shared transaction is due: tried at the end of this turn of the event loop, or
        waiting for another process's lock (`_writer`)."""
        self._writer: asyncio.Task[None] | None = None
        self.transactions = 0
        """Shared transactions committed (the tests count them)."""

    def queue(self, step: Callable[[], T], needed: bool = True) -> asyncio.Future[T]:
        """`step` (statements of one writing decision, no transaction of its own) in the next
        shared transaction of this process; its future has the step's answer once that
        transaction committed. A step that is not `needed` is left out when its future was
        cancelled before the transaction began."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queued.append(Queued(step, future, needed))
        if not self._writing:
            self._writing = True
            # Behind the callbacks already ready: the requests of this turn of the event
            # loop queue their steps before it runs.
            loop.call_soon(self._write_now)
        return future

    def _write_now(self) -> None:
        """The shared transaction, unless another process holds the lock: then a task waits
        for it on the event loop (`when_unlocked`), steps queued meanwhile joining."""
        try:
            self._shared()
        except sqlite3.OperationalError as exc:
            if busy(exc):
                self._writer = asyncio.get_running_loop().create_task(self._write())
                return
            self._fail_all(StoreUnavailable(f"limiter store: {exc}"))
        except Exception as exc:  # a closed connection
            self._fail_all(exc)
        self._writing = False

    async def _write(self) -> None:
        try:
            while self._queued:
                try:
                    await locked(self._shared)
                except Exception as exc:  # the lock never came, or the file failed
                    self._fail_all(exc)
        finally:
            self._writing = False

    def _fail_all(self, error: Exception, taken: list[Queued] | None = None) -> None:
        """Every waiter of a transaction that did not commit gets `error` (nothing counted)."""
        if taken is None:
            taken, self._queued = self._queued, []
        for queued in taken:
            if not queued.future.done():
                queued.future.set_exception(error)

    def _shared(self) -> None:
        """One `BEGIN IMMEDIATE` transaction for every step queued when it begins, made one
        after another; answered after the commit. A step that fails rolls all of them back,
        and each waiter gets the error (nothing was counted)."""
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")  # busy: tried again, the queue kept
        taken, self._queued = self._queued, []
        answers: list[tuple[asyncio.Future[Any], Any]] = []
        try:
            for queued in taken:
                if queued.needed or not queued.future.cancelled():
                    answers.append((queued.future, queued.step()))
            conn.execute("COMMIT")
        except Exception as exc:
            conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.OperationalError):  # an unreadable or full file
                exc = StoreUnavailable(f"limiter store: {exc}")
            self._fail_all(exc, taken)
            return
        except BaseException:  # the process stopping
            conn.execute("ROLLBACK")
            self._fail_all(StoreUnavailable("limiter store: stopping"), taken)
            raise
        self.transactions += 1
        for future, answer in answers:
            if not future.done():
                future.set_result(answer)

    async def close(self) -> None:
        """Wait for a transaction waiting for another process's lock."""
        await asyncio.sleep(0)  # a transaction due at the end of this turn is made first
        if self._writer is not None:
            await asyncio.gather(self._writer, return_exceptions=True)

"""The embedded limiter: the sliding logs of `base` in a SQLite file of its own.

Its own file, so a long data load never blocks admission. Like the Redis log, a key's log
keeps the longest window the key has: the day with a daily quota, else the minute. Every decision is made inside a
`BEGIN IMMEDIATE` transaction, which makes it exact across the worker processes of one host
and keeps the counts across restarts. The decisions that write (admissions, refunds, failed
requests) a worker's requests ask for in one turn of its event loop share one transaction:
they are made one after another, each against the counts the one before left, under one
write lock and one commit (a burst of requests pays for one), and none is answered before
that commit. Opened on ":memory:", the same code is the per-process fallback of
`resilient.ResilientLimiter` while Redis is unreachable.
"""

from __future__ import annotations

import asyncio
import math
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

from propdata.kit.db import use_wal
from propdata.kit.ratelimit.base import (
    DAY,
    HOURLY_KEEP,
    MINUTE,
    Attempts,
    Clock,
    Decision,
    Window,
    attempt_digest,
    attempt_window_us,
    hour_of_us,
    hourly_range,
    lease_us,
    reset_at,
    retry_after_us,
    sum_hours,
)
from propdata.kit.ratelimit.turns import SharedTransactions, locked
from propdata.kit.steps import Step, upgrade_file

T = TypeVar("T")

STEPS: list[Step[Sequence[str]]] = [
    # IF NOT EXISTS, so a counters file that holds these tables without a record of its
    # steps (the layout this step describes) records step 1 unchanged.
    Step(1, "the keys, their logs, hour buckets and attempt guards", (
        """CREATE TABLE IF NOT EXISTS limiter_keys (
            num INTEGER PRIMARY KEY, key_id TEXT UNIQUE NOT NULL,
            day_count INTEGER NOT NULL DEFAULT 0, minute_count INTEGER NOT NULL DEFAULT 0,
            minute_floor INTEGER NOT NULL DEFAULT 0, hour_at INTEGER NOT NULL DEFAULT 0,
            hour_count INTEGER NOT NULL DEFAULT 0, fail_at INTEGER NOT NULL DEFAULT 0)""",
        """CREATE TABLE IF NOT EXISTS limiter_log (
            num INTEGER NOT NULL, at INTEGER NOT NULL, dup INTEGER NOT NULL,
            PRIMARY KEY (num, at, dup)) WITHOUT ROWID""",
        """CREATE TABLE IF NOT EXISTS limiter_failures (
            num INTEGER NOT NULL, at INTEGER NOT NULL, dup INTEGER NOT NULL,
            PRIMARY KEY (num, at, dup)) WITHOUT ROWID""",
        """CREATE TABLE IF NOT EXISTS limiter_hours (
            num INTEGER NOT NULL, hour INTEGER NOT NULL, count INTEGER NOT NULL,
            PRIMARY KEY (num, hour)) WITHOUT ROWID""",
        """CREATE TABLE IF NOT EXISTS limiter_attempts (
            name TEXT NOT NULL, at INTEGER NOT NULL, dup INTEGER NOT NULL,
            until INTEGER NOT NULL, PRIMARY KEY (name, at, dup)) WITHOUT ROWID""",
        "CREATE INDEX IF NOT EXISTS limiter_attempts_until ON limiter_attempts (until)",
    )),
    Step(2, "leases on a name's slots", (
        """CREATE TABLE IF NOT EXISTS limiter_leases (
            name TEXT NOT NULL, holder TEXT NOT NULL, until INTEGER NOT NULL,
            PRIMARY KEY (name, holder)) WITHOUT ROWID""",
        "CREATE INDEX IF NOT EXISTS limiter_leases_until ON limiter_leases (until)",
    )),
]  # fmt: skip
"""The counters file's schema steps (kit.steps), applied when a limiter opens the file."""


class SQLiteLimiter:
    """The embedded limiter. `clock` returns unix seconds; tests inject their own."""

    def __init__(self, path: str, clock: Clock = time.time) -> None:
        if path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        # busy_timeout first: workers opening one file together wait instead of failing.
        self._conn.execute("PRAGMA busy_timeout=30000")
        use_wal(self._conn)
        self._conn.execute("PRAGMA synchronous=NORMAL")
        upgrade_file(self._conn, STEPS)
        # From now on a write lock is waited for on the event loop (kit.db.when_unlocked), and
        # only there: SQLite's own busy wait sleeps 1 ms at least, blocking the worker, when
        # another worker's admission holds the lock for some 40 µs.
        self._conn.execute("PRAGMA busy_timeout=0")
        self.clock = clock
        self._nums: dict[str, int] = {}
        self._turns = SharedTransactions(self._conn)

    def _num(self, key_id: str) -> int:
        num = self._nums.get(key_id)
        if num is None:
            self._conn.execute("INSERT OR IGNORE INTO limiter_keys (key_id) VALUES (?)", (key_id,))
            row = self._conn.execute(
                "SELECT num FROM limiter_keys WHERE key_id = ?", (key_id,)
            ).fetchone()
            num = self._nums[key_id] = int(row[0])
        return num

    def _decide(
        self,
        key_id: str,
        per_minute: int,
        daily: int | None,
        record: bool,
        failures: int | None = None,
        refund: tuple[int, int] | None = None,
    ) -> Decision:
        """One decision, inside the caller's write transaction; with `refund`, that entry is
        taken back first."""
        conn = self._conn
        num = self._num(key_id)
        now_us = int(self.clock() * 1_000_000)
        day_used, minute_used, floor, hour_at, hour_count, fail_at = conn.execute(
            "SELECT day_count, minute_count, minute_floor, hour_at, hour_count, fail_at"
            " FROM limiter_keys WHERE num = ?",
            (num,),
        ).fetchone()
        # Like the Redis log, which keeps only the longest window of the key: an entry
        # past it is no longer there to take back (nor its hour's count).
        keep_from = now_us - int((MINUTE if daily is None else DAY) * 1e6)
        if (
            refund is not None
            and conn.execute(
                "DELETE FROM limiter_log WHERE num = ? AND at = ? AND dup = ? AND at > ?",
                (num, *refund, keep_from),
            ).rowcount
        ):
            day_used -= 1
            if refund[0] > floor:  # still in the running minute count
                minute_used -= 1
            hour = hour_of_us(refund[0])
            if hour == hour_at and hour_count > 0:
                hour_count -= 1
            else:  # an earlier hour (or one split by a clock step)
                conn.execute(
                    "UPDATE limiter_hours SET count = count - 1"
                    " WHERE num = ? AND hour = ? AND count > 0",
                    (num, hour),
                )
        # Both counts run: only the entries that crossed a window's edge since the last
        # decision are read, so the cost does not grow with the key's traffic.
        minute_from = now_us - int(MINUTE * 1e6)
        minute_used -= self._left_minute(num, floor, minute_from)
        floor = max(floor, minute_from)
        # The log keeps the longest window of the key, as the Redis log does: a key without
        # a daily quota keeps its last minute, not a day of entries no decision reads (its
        # "requests today" come from the hour buckets).
        day_used -= conn.execute(
            "DELETE FROM limiter_log WHERE num = ? AND at <= ?", (num, keep_from)
        ).rowcount
        failed = None
        if failures is not None:
            if fail_at > minute_from:
                conn.execute(
                    "DELETE FROM limiter_failures WHERE num = ? AND at <= ?",
                    (num, minute_from),
                )
                failed = self._failed(num, minute_from)
            else:
                # The newest failure (if any) has left the window, so all have: nothing
                # to count. The usual case, which saves three statements a decision.
                if fail_at:
                    conn.execute("DELETE FROM limiter_failures WHERE num = ?", (num,))
                    fail_at = 0
                failed = 0
        minute_full = minute_used >= per_minute
        day_full = daily is not None and day_used >= daily
        guard_full = failures is not None and failed is not None and failed >= failures
        stamp: tuple[int, int] | None = None
        if record and not (minute_full or day_full or guard_full):
            # Requests in the same microsecond keep that time; `dup` tells them apart.
            dup = conn.execute(
                "INSERT INTO limiter_log (num, at, dup) SELECT ?, ?, COALESCE(max(dup) + 1, 0)"
                " FROM limiter_log WHERE num = ? AND at = ? RETURNING dup",
                (num, now_us, num, now_us),
            ).fetchone()[0]
            stamp = (now_us, int(dup))
            minute_used += 1
            day_used += 1
            hour_at, hour_count = self._count_hour(num, now_us, hour_at, hour_count)
        conn.execute(
            "UPDATE limiter_keys SET day_count = ?, minute_count = ?, minute_floor = ?,"
            " hour_at = ?, hour_count = ?, fail_at = ? WHERE num = ?",
            (day_used, minute_used, floor, hour_at, hour_count, fail_at, num),
        )
        decision = self._describe(
            num, now_us, per_minute, daily, minute_used, day_used,
            refused=record and (minute_full or day_full or guard_full), stamp=stamp,
            failures=failures, failed=failed,
        )  # fmt: skip
        return decision

    def _left_minute(self, num: int, floor: int, minute_from: int) -> int:
        """Entries counted in the running minute count (those after `floor`) that have left
        the minute window since (at or before `minute_from`)."""
        if minute_from <= floor:
            return 0
        row = self._conn.execute(
            "SELECT count(*) FROM limiter_log WHERE num = ? AND at > ? AND at <= ?",
            (num, floor, minute_from),
        ).fetchone()
        return int(row[0])

    def _count_hour(self, num: int, now_us: int, hour_at: int, hour_count: int) -> tuple[int, int]:
        """Count one admission in its hour; returns the key's new (hour_at, hour_count).

        The current hour's count rides in the key's row, which every decision updates anyway,
        so an admission costs no extra statement; `limiter_hours` gets a row once an hour per
        key, when the hour turns (and the key's buckets past the retention go then). A
        bucket's count is its `limiter_hours` row plus `hour_count` when it is `hour_at`."""
        hour = hour_of_us(now_us)
        if hour == hour_at:
            return hour_at, hour_count + 1
        if hour < hour_at:  # the clock stepped back: count it where it belongs
            self._add_hour(num, hour, 1)
            return hour_at, hour_count
        if hour_count:
            self._add_hour(num, hour_at, hour_count)
        self._conn.execute(
            "DELETE FROM limiter_hours WHERE num = ? AND hour < ?", (num, hour - HOURLY_KEEP)
        )
        return hour, 1

    def _add_hour(self, num: int, hour: int, count: int) -> None:
        self._conn.execute(
            "INSERT INTO limiter_hours (num, hour, count) VALUES (?, ?, ?)"
            " ON CONFLICT (num, hour) DO UPDATE SET count = count + excluded.count",
            (num, hour, count),
        )

    def _nth_oldest(
        self, num: int, after_us: int, n: int, table: str = "limiter_log"
    ) -> int | None:
        row = self._conn.execute(
            f"SELECT at FROM {table} WHERE num = ? AND at > ? ORDER BY at LIMIT 1 OFFSET ?",
            (num, after_us, n),
        ).fetchone()
        return int(row[0]) if row else None

    def _failed(self, num: int, minute_from: int) -> int:
        row = self._conn.execute(
            "SELECT count(*) FROM limiter_failures WHERE num = ? AND at > ?", (num, minute_from)
        ).fetchone()
        return int(row[0])

    def _describe(
        self,
        num: int,
        now_us: int,
        per_minute: int,
        daily: int | None,
        minute_used: int,
        day_used: int,
        *,
        refused: bool,
        stamp: tuple[int, int] | None,
        failures: int | None = None,
        failed: int | None = None,
    ) -> Decision:
        now = now_us / 1e6
        minute_from = now_us - int(MINUTE * 1e6)
        day_from = now_us - int(DAY * 1e6)
        oldest_minute = self._nth_oldest(num, minute_from, 0)
        minute = Window(per_minute, minute_used, reset_at(oldest_minute, MINUTE, now))
        day: Window | None = None
        if daily is not None:
            oldest_day = self._nth_oldest(num, day_from, 0)
            day = Window(daily, day_used, reset_at(oldest_day, DAY, now))
        guard: Window | None = None
        guard_full = False
        if failures is not None and failed is not None:
            oldest_failure = (
                self._nth_oldest(num, minute_from, 0, "limiter_failures") if failed else None
            )
            guard = Window(failures, failed, reset_at(oldest_failure, MINUTE, now))
            guard_full = failed >= failures
        if not (refused or guard_full):
            return Decision(True, minute, day, stamp=stamp, failures=guard)
        waits: dict[str, float] = {}
        if refused and minute_used >= per_minute:
            # The (used - limit + 1)-th oldest entry must leave for one more to fit.
            at = self._nth_oldest(num, minute_from, minute_used - per_minute)
            waits["minute"] = (at / 1e6 + MINUTE - now) if at is not None else 0.0
        if refused and daily is not None and day_used >= daily:
            at = self._nth_oldest(num, day_from, day_used - daily)
            waits["day"] = (at / 1e6 + DAY - now) if at is not None else 0.0
        if guard_full and failures is not None and failed is not None:
            at = self._nth_oldest(num, minute_from, failed - failures, "limiter_failures")
            waits["failures"] = (at / 1e6 + MINUTE - now) if at is not None else 0.0
        exceeded = max(waits, key=lambda w: waits[w])
        retry = max(1, math.ceil(waits[exceeded] - 1e-9))
        return Decision(False, minute, day, retry_after=retry, exceeded=exceeded, failures=guard)

    async def admit(
        self, key_id: str, per_minute: int, daily: int | None, failures: int | None = None
    ) -> Decision:
        decided = self._turns.queue(
            lambda: self._decide(key_id, per_minute, daily, record=True, failures=failures),
            needed=False,  # a request cancelled before its admission is not admitted
        )
        try:
            return await decided
        except asyncio.CancelledError:
            # Cancelled once admitted: taken back, as any answer that was not a success.
            if decided.done() and not decided.cancelled() and decided.exception() is None:
                stamp = decided.result().stamp
                if stamp is not None:
                    self._turns.queue(lambda: self._refund(key_id, stamp, per_minute, daily))
            raise

    async def usage(
        self, key_id: str, per_minute: int, daily: int | None, failures: int | None = None
    ) -> Decision:
        return await locked(lambda: self._peek(key_id, per_minute, daily, failures))

    async def fail(self, key_id: str) -> None:
        await self._turns.queue(lambda: self._fail(key_id))

    def _fail(self, key_id: str) -> None:
        """Record a failed request, inside the caller's write transaction."""
        conn = self._conn
        num = self._num(key_id)
        now_us = int(self.clock() * 1_000_000)
        conn.execute(
            "INSERT INTO limiter_failures (num, at, dup) SELECT ?, ?, COALESCE(max(dup) + 1, 0)"
            " FROM limiter_failures WHERE num = ? AND at = ?",
            (num, now_us, num, now_us),
        )
        # The newest failure's time: a decision past it by a minute skips the failures.
        conn.execute(
            "UPDATE limiter_keys SET fail_at = max(fail_at, ?) WHERE num = ?", (now_us, num)
        )

    def _peek(
        self, key_id: str, per_minute: int, daily: int | None, failures: int | None = None
    ) -> Decision:
        """What `_decide` would report, from a read snapshot: no write lock, so cache hits
        and /v1/auth/status never wait for (or hold up) another worker's admission."""
        conn = self._conn
        conn.execute("BEGIN")
        try:
            num = self._nums.get(key_id)
            if num is None:
                row = conn.execute(
                    "SELECT num FROM limiter_keys WHERE key_id = ?", (key_id,)
                ).fetchone()
                num = int(row[0]) if row else -1  # never counted: no entries
            now_us = int(self.clock() * 1_000_000)
            counts = conn.execute(
                "SELECT day_count, minute_count, minute_floor FROM limiter_keys WHERE num = ?",
                (num,),
            ).fetchone()
            day_used, minute_used, floor = counts if counts else (0, 0, 0)
            minute_used -= self._left_minute(num, floor, now_us - int(MINUTE * 1e6))
            day_used -= conn.execute(
                "SELECT count(*) FROM limiter_log WHERE num = ? AND at <= ?",
                (num, now_us - int(DAY * 1e6)),
            ).fetchone()[0]
            failed = None
            if failures is not None:
                failed = self._failed(num, now_us - int(MINUTE * 1e6))
            decision = self._describe(num, now_us, per_minute, daily, minute_used, day_used,
                                      refused=False, stamp=None, failures=failures,
                                      failed=failed)  # fmt: skip
        finally:
            conn.execute("COMMIT")
        return decision

    async def refund(
        self, key_id: str, stamp: tuple[int, int], per_minute: int, daily: int | None
    ) -> Decision:
        return await self._turns.queue(lambda: self._refund(key_id, stamp, per_minute, daily))

    def _refund(
        self, key_id: str, stamp: tuple[int, int], per_minute: int, daily: int | None
    ) -> Decision:
        """The entry goes and the windows are described, in the caller's transaction."""
        return self._decide(key_id, per_minute, daily, record=False, refund=stamp)

    async def hourly(self, key_id: str, since: float) -> dict[int, int]:
        return await locked(lambda: self._hourly(key_id, since))

    def _hourly(self, key_id: str, since: float) -> dict[int, int]:
        """One statement, so one read snapshot: the stored buckets and the current one (summed
        here: a GROUP BY in SQL cost half as much again over 30 days of buckets)."""
        first, last = hourly_range(since, int(self.clock() * 1_000_000))
        rows = self._conn.execute(
            "SELECT h.hour, h.count FROM limiter_hours h JOIN limiter_keys k ON k.num = h.num"
            " WHERE k.key_id = ? AND h.hour BETWEEN ? AND ?"
            " UNION ALL SELECT hour_at, hour_count FROM limiter_keys"
            " WHERE key_id = ? AND hour_at BETWEEN ? AND ?",
            (key_id, first, last, key_id, first, last),
        ).fetchall()
        return sum_hours(rows)

    async def attempt(self, name: str, limit: int, window: float, record: bool = True) -> Attempts:
        window_us = attempt_window_us(limit, window)
        digest = attempt_digest(name)
        return await locked(lambda: self._attempt(digest, limit, window_us, record))

    def _attempt(self, digest: str, limit: int, window_us: int, record: bool) -> Attempts:
        """One `BEGIN IMMEDIATE` transaction to record; a read snapshot only to look."""
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE" if record else "BEGIN")
        try:
            now_us = int(self.clock() * 1_000_000)
            from_us = now_us - window_us
            if record:
                # Every name's entries past the window they were recorded with (the index on
                # `until` finds them), so names never seen again do not stay.
                conn.execute("DELETE FROM limiter_attempts WHERE until <= ?", (now_us,))
                conn.execute(
                    "DELETE FROM limiter_attempts WHERE name = ? AND at <= ?", (digest, from_us)
                )
            used = int(
                conn.execute(
                    "SELECT count(*) FROM limiter_attempts WHERE name = ? AND at > ?",
                    (digest, from_us),
                ).fetchone()[0]
            )
            if used < limit:
                if record:
                    conn.execute(
                        "INSERT INTO limiter_attempts (name, at, dup, until)"
                        " SELECT ?, ?, COALESCE(max(dup) + 1, 0), ? FROM limiter_attempts"
                        " WHERE name = ? AND at = ?",
                        (digest, now_us, now_us + window_us, digest, now_us),
                    )
                    used += 1
                result = Attempts(True, used, limit)
            else:
                # The (used - limit + 1)-th oldest must leave for one more to fit.
                oldest = conn.execute(
                    "SELECT at FROM limiter_attempts WHERE name = ? AND at > ?"
                    " ORDER BY at LIMIT 1 OFFSET ?",
                    (digest, from_us, used - limit),
                ).fetchone()[0]
                result = Attempts(False, used, limit, retry_after_us(oldest, window_us, now_us))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return result

    async def hold(self, name: str, holder: str, limit: int, ttl: float) -> bool:
        ttl_us = lease_us(limit, ttl)
        digest = attempt_digest(name)
        return await locked(lambda: self._hold(digest, holder, limit, ttl_us))

    def _hold(self, digest: str, holder: str, limit: int, ttl_us: int) -> bool:
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            now_us = int(self.clock() * 1_000_000)
            # Every name's leases that ran out (the index on `until` finds them).
            conn.execute("DELETE FROM limiter_leases WHERE until <= ?", (now_us,))
            held = conn.execute(
                "SELECT 1 FROM limiter_leases WHERE name = ? AND holder = ?", (digest, holder)
            ).fetchone()
            taken = int(
                conn.execute(
                    "SELECT count(*) FROM limiter_leases WHERE name = ?", (digest,)
                ).fetchone()[0]
            )
            ok = held is not None or taken < limit
            if ok:
                conn.execute(
                    "INSERT INTO limiter_leases (name, holder, until) VALUES (?, ?, ?)"
                    " ON CONFLICT (name, holder) DO UPDATE SET until = excluded.until",
                    (digest, holder, now_us + ttl_us),
                )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return ok

    async def release(self, name: str, holder: str) -> None:
        digest = attempt_digest(name)
        await locked(lambda: self._release(digest, holder))

    def _release(self, digest: str, holder: str) -> None:
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                "DELETE FROM limiter_leases WHERE name = ? AND holder = ?", (digest, holder)
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    async def forget(self, name: str) -> None:
        digest = attempt_digest(name)
        await locked(lambda: self._forget(digest))

    def _forget(self, digest: str) -> None:
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                "DELETE FROM limiter_attempts WHERE name = ? AND (at, dup) = (SELECT at, dup"
                " FROM limiter_attempts WHERE name = ? ORDER BY at DESC, dup DESC LIMIT 1)",
                (digest, digest),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def stored_bytes(self, key_id: str) -> int:
        """Bytes the log of one key takes in the file (dbstat), for the sizing report."""
        num = self._num(key_id)
        row = self._conn.execute(
            "SELECT count(*) FROM limiter_log WHERE num = ?", (num,)
        ).fetchone()
        total = self._conn.execute(
            "SELECT sum(pgsize) FROM dbstat WHERE name = 'limiter_log'"
        ).fetchone()
        everything = self._conn.execute("SELECT count(*) FROM limiter_log").fetchone()
        if not everything[0]:
            return 0
        return int(total[0] * row[0] / everything[0])

    def status(self) -> str:
        """ "ok"; a backend that can fall back (the Resilient ones) says "degraded" then."""
        return "ok"

    @property
    def transactions(self) -> int:
        """Shared transactions committed (`turns.SharedTransactions`)."""
        return self._turns.transactions

    async def close(self) -> None:
        await self._turns.close()
        self._conn.close()

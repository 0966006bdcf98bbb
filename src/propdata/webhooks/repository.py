"""The statements of webhook endpoints and deliveries (accounts store).

Claims are safe for any number of dispatchers on PostgreSQL (`FOR UPDATE SKIP LOCKED`: each
row goes to one of them); on SQLite the write lock makes each claim whole, and one
dispatcher runs per host.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from propdata.kit.db import Database, in_lists
from propdata.webhooks.schemas import DeliveryRow, Due, EndpointRow, Outcome

_ENDPOINT = ", ".join(EndpointRow._fields)
_ROOM = (
    " AND (SELECT COUNT(*) FROM webhook_deliveries d WHERE d.endpoint_id = e.id"
    " AND d.state = 'pending') < ?"
)
"""An endpoint (`e`) with room for more pending deliveries than it holds."""
_REPLAY_LOCK = 7231010
"""PostgreSQL advisory lock class of an owner's replays (with the owner's hash)."""
_CHANGEABLE = frozenset(
    {"url", "event_types", "search_ids", "description", "status", "disabled_reason"}
)


class WebhookRepository:
    def __init__(self, db: Database) -> None:
        self.db = db

    @property
    def _skip_locked(self) -> str:
        return " FOR UPDATE SKIP LOCKED" if self.db.dialect == "postgresql" else ""

    # Endpoints

    async def count(self, owner: str) -> int:
        row = await self.db.fetch_one(
            "SELECT COUNT(*) FROM webhook_endpoints WHERE owner = ?", (owner,)
        )
        return int(row[0]) if row else 0

    async def insert(self, endpoint: EndpointRow) -> None:
        marks = ", ".join("?" for _ in EndpointRow._fields)
        await self.db.execute(
            f"INSERT INTO webhook_endpoints ({_ENDPOINT}) VALUES ({marks})", tuple(endpoint)
        )

    async def get(self, owner: str, endpoint_id: str, *, lock: bool = False) -> EndpointRow | None:
        lock_sql = " FOR UPDATE" if lock and self.db.dialect == "postgresql" else ""
        row = await self.db.fetch_one(
            f"SELECT {_ENDPOINT} FROM webhook_endpoints WHERE id = ? AND owner = ?{lock_sql}",
            (endpoint_id, owner),
        )
        return EndpointRow._make(row) if row else None

    async def page(self, owner: str, limit: int, offset: int) -> tuple[int, list[EndpointRow]]:
        rows = await self.db.fetch_all(
            f"SELECT {_ENDPOINT} FROM webhook_endpoints WHERE owner = ?"
            " ORDER BY created_at, id LIMIT ? OFFSET ?",
            (owner, limit, offset),
        )
        return await self.count(owner), [EndpointRow._make(row) for row in rows]

    async def change(self, endpoint_id: str, values: dict[str, Any]) -> None:
        """Set some of an endpoint's changeable columns."""
        if not values:
            return
        assert set(values) <= _CHANGEABLE, values
        assignments = ", ".join(f"{name} = ?" for name in values)
        await self.db.execute(
            f"UPDATE webhook_endpoints SET {assignments} WHERE id = ?",
            (*values.values(), endpoint_id),
        )

    async def delete(self, endpoint_id: str) -> None:
        for table in ("webhook_deliveries", "webhook_attempts"):
            await self.db.execute(f"DELETE FROM {table} WHERE endpoint_id = ?", (endpoint_id,))
        await self.db.execute("DELETE FROM webhook_endpoints WHERE id = ?", (endpoint_id,))

    async def rotate(
        self, endpoint_id: str, secret: str, old: str | None, old_until: float | None
    ) -> None:
        await self.db.execute(
            "UPDATE webhook_endpoints SET secret = ?, old_secret = ?, old_secret_until = ?"
            " WHERE id = ?",
            (secret, old, old_until, endpoint_id),
        )

    async def move_cursor(self, endpoint_id: str, seq: int) -> None:
        await self.db.execute(
            "UPDATE webhook_endpoints SET cursor_seq = ? WHERE id = ? AND cursor_seq < ?",
            (seq, endpoint_id, seq),
        )

    async def owned_searches(self, owner: str, ids: Sequence[str]) -> set[str]:
        """Which of these saved search ids the owner has."""
        found: set[str] = set()
        for part, marks in in_lists(ids):
            rows = await self.db.fetch_all(
                f"SELECT id FROM saved_searches WHERE owner = ? AND id IN ({marks})",
                (owner, *part),
            )
            found.update(str(row[0]) for row in rows)
        return found

    async def newest_kept(self, owner: str, after: int, keep: int) -> int | None:
        """The row number of the `keep`-th newest listed event of the owner past row `after`
        (None when there are not that many)."""
        row = await self.db.fetch_one(
            "SELECT seq FROM events WHERE owner = ? AND seq > ? AND endpoint_id IS NULL"
            " ORDER BY seq DESC LIMIT 1 OFFSET ?",
            (owner, after, keep - 1),
        )
        return int(row[0]) if row else None

    async def replayable(
        self, owner: str, after: int, upto: int, limit: int
    ) -> list[tuple[int, str, str, str | None]]:
        """The owner's newest `limit` listed events past sequence `after` and at or before
        row `upto` (those fanned out to the endpoint already), oldest first: (row, id, type,
        search id)."""
        rows = await self.db.fetch_all(
            "SELECT seq, id, type, search_id FROM events WHERE owner = ? AND sequence > ?"
            " AND seq <= ? ORDER BY sequence DESC LIMIT ?",
            (owner, after, upto, limit),
        )
        return [(int(r[0]), str(r[1]), str(r[2]), r[3]) for r in reversed(rows)]

    # Replays

    async def lock_replays(self, owner: str) -> None:
        """One replay decision of an owner at a time (inside its transaction): PostgreSQL's
        advisory lock on the owner, held to the commit; SQLite's write lock already is."""
        if self.db.dialect == "postgresql":
            await self.db.execute(
                "SELECT pg_advisory_xact_lock(?, hashtext(?))", (_REPLAY_LOCK, owner)
            )

    async def replay_waiting(self, endpoint_id: str) -> bool:
        """Whether a delivery a replay queued to the endpoint is still pending."""
        row = await self.db.fetch_one(
            "SELECT 1 FROM webhook_deliveries WHERE endpoint_id = ? AND state = 'pending'"
            " AND replay = 1 LIMIT 1",
            (endpoint_id,),
        )
        return row is not None

    async def replays_since(self, owner: str, since: float) -> list[float]:
        """When the owner asked for replays from `since` on (unix seconds), oldest first."""
        rows = await self.db.fetch_all(
            "SELECT at FROM webhook_replays WHERE owner = ? AND at > ? ORDER BY at",
            (owner, since),
        )
        return [float(row[0]) for row in rows]

    async def record_replay(self, owner: str, endpoint_id: str, at: float) -> None:
        await self.db.execute(
            "INSERT INTO webhook_replays (owner, at, endpoint_id) VALUES (?, ?, ?)",
            (owner, at, endpoint_id),
        )

    async def pending(self, endpoint_id: str) -> int:
        """The endpoint's deliveries waiting for an attempt."""
        row = await self.db.fetch_one(
            "SELECT COUNT(*) FROM webhook_deliveries WHERE endpoint_id = ? AND state = 'pending'",
            (endpoint_id,),
        )
        return int(row[0]) if row else 0

    # The dispatcher's fan-out

    async def fan_out_waiting(self, most: int) -> bool:
        """Whether an enabled endpoint with fewer than `most` pending deliveries has events
        past its cursor (a read, no lock)."""
        row = await self.db.fetch_one(
            "SELECT 1 FROM webhook_endpoints e WHERE e.status = 'enabled' AND EXISTS"
            " (SELECT 1 FROM events v WHERE v.owner = e.owner AND v.seq > e.cursor_seq"
            "  AND v.endpoint_id IS NULL)" + _ROOM + " LIMIT 1",
            (most,),
        )
        return row is not None

    async def any_due(self, now: float) -> bool:
        """Whether a delivery is due (a read, no lock)."""
        row = await self.db.fetch_one(
            "SELECT 1 FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id"
            " WHERE d.state = 'pending' AND d.next_attempt_at <= ?"
            " AND (d.claimed_until IS NULL OR d.claimed_until <= ?) AND e.status = 'enabled'"
            " LIMIT 1",
            (now, now),
        )
        return row is not None

    async def claim_fan_out(self, limit: int, most: int) -> list[tuple[EndpointRow, int]]:
        """Enabled endpoints whose owner has events past their cursor and that hold fewer
        than `most` pending deliveries, with how many they hold; inside a transaction, each
        locked to this dispatcher until it commits (PostgreSQL)."""
        rows = await self.db.fetch_all(
            f"SELECT {_ENDPOINT} FROM webhook_endpoints e WHERE e.status = 'enabled' AND EXISTS"
            " (SELECT 1 FROM events v WHERE v.owner = e.owner AND v.seq > e.cursor_seq"
            "  AND v.endpoint_id IS NULL)" + _ROOM +
            f" ORDER BY e.id LIMIT ?{self._skip_locked}",
            (most, limit),
        )  # fmt: skip
        endpoints = [EndpointRow._make(row) for row in rows]
        return [(endpoint, await self.pending(endpoint.id)) for endpoint in endpoints]

    # Deliveries

    async def insert_deliveries(
        self, rows: Sequence[tuple[str, int, str, str, float]], *, replay: bool = False
    ) -> None:
        """New pending deliveries: (endpoint id, event row, event id, type, due at); an
        event already pending for the endpoint is not queued again."""
        await self.db.executemany(
            "INSERT INTO webhook_deliveries (endpoint_id, event_seq, event_id, type, state,"
            " attempt, next_attempt_at, made_at, replay)"
            " VALUES (?, ?, ?, ?, 'pending', 0, ?, ?, ?) ON CONFLICT DO NOTHING",
            [(*row, row[4], int(replay)) for row in rows],
        )

    async def is_pending(self, endpoint_id: str, event_seq: int) -> bool:
        row = await self.db.fetch_one(
            "SELECT 1 FROM webhook_deliveries WHERE endpoint_id = ? AND event_seq = ?"
            " AND state = 'pending'",
            (endpoint_id, event_seq),
        )
        return row is not None

    async def hasten(self, endpoint_id: str, event_seq: int, now: float) -> None:
        """Make the endpoint's pending delivery of that event due now."""
        await self.db.execute(
            "UPDATE webhook_deliveries SET next_attempt_at = ? WHERE endpoint_id = ?"
            " AND event_seq = ? AND state = 'pending' AND next_attempt_at > ?",
            (now, endpoint_id, event_seq, now),
        )

    async def claim(
        self, now: float, lease: float, limit: int, room: Mapping[str, int], most: int
    ) -> list[Due]:
        """Up to `limit` deliveries due at `now` to enabled endpoints, oldest first, leased to
        this dispatcher until `now + lease` (a dispatcher that dies mid-attempt loses its lease
        and the delivery is attempted again). Inside a transaction.

        At most `most` of one owner's, or `room[owner]` when given (those the dispatcher has
        under way count), and none of an owner without room: one owner's backlog never
        holds up another's deliveries."""
        full = sorted(owner for owner, left in room.items() if left <= 0)
        skip = f" AND e.owner NOT IN ({', '.join('?' for _ in full)})" if full else ""
        rows = await self.db.fetch_all(
            "SELECT d.id, e.owner FROM webhook_deliveries d JOIN webhook_endpoints e"
            " ON e.id = d.endpoint_id WHERE d.state = 'pending' AND d.next_attempt_at <= ?"
            " AND (d.claimed_until IS NULL OR d.claimed_until <= ?) AND e.status = 'enabled'"
            + skip
            + " ORDER BY d.next_attempt_at, d.id LIMIT ?"
            + (" FOR UPDATE OF d SKIP LOCKED" if self.db.dialect == "postgresql" else ""),
            (now, now, *full, limit),
        )
        left = dict(room)
        ids = []
        for delivery_id, owner in rows:
            turns = left.get(owner, most)
            if turns > 0:
                left[owner] = turns - 1
                ids.append(int(delivery_id))
        if not ids:
            return []
        marks = ", ".join("?" for _ in ids)
        await self.db.execute(
            f"UPDATE webhook_deliveries SET claimed_until = ? WHERE id IN ({marks})",
            (now + lease, *ids),
        )
        due = await self.db.fetch_all(
            "SELECT d.id, d.attempt, d.event_id, d.made_at, e.id, e.owner, e.url, e.secret,"
            " e.old_secret, e.old_secret_until, v.body, d.event_seq, v.created_at, d.type"
            " FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id"
            f" LEFT JOIN events v ON v.seq = d.event_seq WHERE d.id IN ({marks})"
            " ORDER BY d.next_attempt_at, d.id",
            ids,
        )
        return [Due._make(row) for row in due]

    async def finish(self, done: Sequence[tuple[Due, Outcome]]) -> None:
        """Write what attempts came to: each delivery's state and the attempt's row (inside
        a transaction)."""
        await self.db.executemany(
            "UPDATE webhook_deliveries SET state = ?, attempt = ?, next_attempt_at = ?,"
            " claimed_until = NULL, response_status = ?, error = ?, duration_ms = ?,"
            " attempted_at = ? WHERE id = ?",
            [
                (o.state, o.attempt, o.next_attempt_at, o.response_status, o.error,
                 o.duration_ms, o.attempted_at, o.delivery_id)
                for _, o in done
            ],
        )  # fmt: skip
        await self.db.executemany(
            "INSERT INTO webhook_attempts (endpoint_id, event_seq, event_id, type, attempt,"
            " status, response_status, error, duration_ms, attempted_at, at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (o.endpoint_id, d.event_seq, d.event_id, d.type, o.attempt,
                 "succeeded" if o.state == "succeeded" else "failed", o.response_status,
                 o.error, o.duration_ms, o.attempted_at, o.at)
                for d, o in done
            ],
        )  # fmt: skip

    async def cancel(self, endpoint_ids: Sequence[str], now: float, attempted_at: str) -> int:
        """Fail every pending delivery of these endpoints for good, error `owner` (their
        owner was stopped), each with its attempt's row; how many."""
        cancelled = 0
        for part, marks in in_lists(endpoint_ids):
            waiting = f"endpoint_id IN ({marks}) AND state = 'pending'"
            await self.db.execute(
                "INSERT INTO webhook_attempts (endpoint_id, event_seq, event_id, type, attempt,"
                " status, response_status, error, duration_ms, attempted_at, at)"
                " SELECT endpoint_id, event_seq, event_id, type, attempt + 1, 'failed', NULL,"
                f" 'owner', 0, ?, ? FROM webhook_deliveries WHERE {waiting}",
                (attempted_at, now, *part),
            )
            cancelled += await self.db.execute(
                "UPDATE webhook_deliveries SET state = 'failed', attempt = attempt + 1,"
                " next_attempt_at = NULL, claimed_until = NULL, response_status = NULL,"
                f" error = 'owner', duration_ms = 0, attempted_at = ? WHERE {waiting}",
                (attempted_at, *part),
            )
        return cancelled

    async def owners_waiting(self) -> list[str]:
        """The owners of endpoints with pending deliveries."""
        rows = await self.db.fetch_all(
            "SELECT DISTINCT e.owner FROM webhook_endpoints e WHERE EXISTS (SELECT 1 FROM"
            " webhook_deliveries d WHERE d.endpoint_id = e.id AND d.state = 'pending')"
        )
        return [str(row[0]) for row in rows]

    async def endpoints_of(self, owners: Sequence[str]) -> list[str]:
        """The ids of these owners' endpoints."""
        found: list[str] = []
        for part, marks in in_lists(owners):
            rows = await self.db.fetch_all(
                f"SELECT id FROM webhook_endpoints WHERE owner IN ({marks}) ORDER BY id", part
            )
            found += [str(row[0]) for row in rows]
        return found

    async def succeeded(self, endpoint_ids: Sequence[str]) -> None:
        await self.db.executemany(
            "UPDATE webhook_endpoints SET failing_since = NULL WHERE id = ?",
            [(i,) for i in endpoint_ids],
        )

    async def failed(self, endpoint_ids: Sequence[str], now: float) -> None:
        await self.db.executemany(
            "UPDATE webhook_endpoints SET failing_since = COALESCE(failing_since, ?) WHERE id = ?",
            [(now, i) for i in endpoint_ids],
        )

    async def disable(self, endpoint_id: str, reason: str, failing_before: float | None) -> bool:
        """Disable an enabled endpoint (with `failing_before`: only one failing since then);
        whether it was."""
        sql = (
            "UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = ?"
            " WHERE id = ? AND status = 'enabled'"
        )
        params: tuple[Any, ...] = (reason, endpoint_id)
        if failing_before is not None:
            sql += " AND failing_since IS NOT NULL AND failing_since <= ?"
            params += (failing_before,)
        return await self.db.execute(sql, params) > 0

    async def deliveries(
        self, endpoint_id: str, limit: int, offset: int
    ) -> tuple[int, list[DeliveryRow]]:
        """An endpoint's attempts made and deliveries waiting, newest first: an attempt by
        when it was made, a waiting delivery by when its next attempt is due (so a retried
        delivery's attempt 2, to come, lists above its failed attempt 1)."""
        rows = await self.db.fetch_all(
            "SELECT event_id, type, attempt, status, response_status, error, duration_ms,"
            " attempted_at, next_attempt_at FROM ("
            " SELECT event_id, type, attempt, status, response_status, error, duration_ms,"
            "  attempted_at, NULL AS next_attempt_at, at AS shown_at, 0 AS waiting, id"
            "  FROM webhook_attempts WHERE endpoint_id = ?"
            " UNION ALL"
            " SELECT event_id, type, attempt + 1, 'pending', NULL, NULL, NULL, NULL,"
            "  next_attempt_at, next_attempt_at, 1, id"
            "  FROM webhook_deliveries WHERE endpoint_id = ? AND state = 'pending'"
            ") AS listed ORDER BY shown_at DESC, waiting DESC, id DESC LIMIT ? OFFSET ?",
            (endpoint_id, endpoint_id, limit, offset),
        )
        total = await self.db.fetch_one(
            "SELECT (SELECT COUNT(*) FROM webhook_attempts WHERE endpoint_id = ?)"
            " + (SELECT COUNT(*) FROM webhook_deliveries WHERE endpoint_id = ?"
            " AND state = 'pending')",
            (endpoint_id, endpoint_id),
        )
        return (int(total[0]) if total else 0), [DeliveryRow._make(row) for row in rows]

    async def delivered_event(self, endpoint_id: str, event_id: str) -> tuple[int, str] | None:
        """(number, type) of an event the endpoint has a delivery of, while the event is
        kept; None otherwise."""
        row = await self.db.fetch_one(
            "SELECT d.event_seq, d.type FROM webhook_deliveries d JOIN events v"
            " ON v.seq = d.event_seq WHERE d.endpoint_id = ? AND d.event_id = ? LIMIT 1",
            (endpoint_id, event_id),
        )
        return (int(row[0]), str(row[1])) if row else None

    async def backlog(self) -> int:
        """Deliveries waiting for their first or next attempt."""
        row = await self.db.fetch_one(
            "SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'pending'"
        )
        return int(row[0]) if row else 0

    async def prune(self, before: float) -> int:
        """Forget finished deliveries made, attempts made and replays asked before `before`
        (unix seconds)."""
        pruned = await self.db.execute(
            "DELETE FROM webhook_deliveries WHERE state <> 'pending' AND made_at < ?", (before,)
        )
        pruned += await self.db.execute("DELETE FROM webhook_attempts WHERE at < ?", (before,))
        await self.db.execute("DELETE FROM webhook_replays WHERE at < ?", (before,))
        return pruned

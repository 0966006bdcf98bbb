"""The statements of webhook endpoints and deliveries (accounts store).

Claims are safe for any number of dispatchers on PostgreSQL (`FOR UPDATE SKIP LOCKED`: each
row goes to one of them); on SQLite the write lock makes each claim whole, and one
dispatcher runs per host.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from propdata.kit.db import Database
from propdata.webhooks.schemas import DeliveryRow, Due, EndpointRow, Outcome

_ENDPOINT = ", ".join(EndpointRow._fields)
_DELIVERY = ", ".join(DeliveryRow._fields)
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
        await self.db.execute(
            "DELETE FROM webhook_deliveries WHERE endpoint_id = ?", (endpoint_id,)
        )
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
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            rows = await self.db.fetch_all(
                f"SELECT id FROM saved_searches WHERE owner = ?"
                f" AND id IN ({', '.join('?' for _ in part)})",
                (owner, *part),
            )
            found.update(str(row[0]) for row in rows)
        return found

    async def newest_kept(self, owner: str, after: int, keep: int) -> int | None:
        """The number of the `keep`-th newest listed event of the owner above `after` (None
        when there are not that many)."""
        row = await self.db.fetch_one(
            "SELECT seq FROM events WHERE owner = ? AND seq > ? AND endpoint_id IS NULL"
            " ORDER BY seq DESC LIMIT 1 OFFSET ?",
            (owner, after, keep - 1),
        )
        return int(row[0]) if row else None

    async def set_event_body(self, seq: int, body: str) -> None:
        """Write a test event's JSON once its number is known (inside its transaction)."""
        await self.db.execute("UPDATE events SET body = ? WHERE seq = ?", (body, seq))

    # The dispatcher's fan-out

    async def fan_out_waiting(self) -> bool:
        """Whether an enabled endpoint has events past its cursor (a read, no lock)."""
        row = await self.db.fetch_one(
            "SELECT 1 FROM webhook_endpoints e WHERE e.status = 'enabled' AND EXISTS"
            " (SELECT 1 FROM events v WHERE v.owner = e.owner AND v.seq > e.cursor_seq"
            "  AND v.endpoint_id IS NULL) LIMIT 1"
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

    async def claim_fan_out(self, limit: int) -> list[EndpointRow]:
        """Enabled endpoints whose owner has events past their cursor; inside a transaction,
        each locked to this dispatcher until it commits (PostgreSQL)."""
        rows = await self.db.fetch_all(
            f"SELECT {_ENDPOINT} FROM webhook_endpoints e WHERE e.status = 'enabled' AND EXISTS"
            " (SELECT 1 FROM events v WHERE v.owner = e.owner AND v.seq > e.cursor_seq"
            "  AND v.endpoint_id IS NULL)"
            f" ORDER BY e.id LIMIT ?{self._skip_locked}",
            (limit,),
        )
        return [EndpointRow._make(row) for row in rows]

    # Deliveries

    async def insert_deliveries(self, rows: Sequence[tuple[str, int, str, str, float]]) -> None:
        """New pending deliveries: (endpoint id, event number, event id, type, due at)."""
        await self.db.executemany(
            "INSERT INTO webhook_deliveries (endpoint_id, event_seq, event_id, type, state,"
            " attempt, next_attempt_at, made_at) VALUES (?, ?, ?, ?, 'pending', 0, ?, ?)",
            [(*row, row[4]) for row in rows],
        )

    async def claim(self, now: float, lease: float, limit: int) -> list[Due]:
        """Up to `limit` deliveries due at `now` to enabled endpoints, oldest first, leased to
        this dispatcher until `now + lease` (a dispatcher that dies mid-attempt loses its lease
        and the delivery is attempted again). Inside a transaction."""
        rows = await self.db.fetch_all(
            "SELECT d.id FROM webhook_deliveries d JOIN webhook_endpoints e"
            " ON e.id = d.endpoint_id WHERE d.state = 'pending' AND d.next_attempt_at <= ?"
            " AND (d.claimed_until IS NULL OR d.claimed_until <= ?) AND e.status = 'enabled'"
            " ORDER BY d.next_attempt_at, d.id LIMIT ?"
            + (" FOR UPDATE OF d SKIP LOCKED" if self.db.dialect == "postgresql" else ""),
            (now, now, limit),
        )
        ids = [int(row[0]) for row in rows]
        if not ids:
            return []
        marks = ", ".join("?" for _ in ids)
        await self.db.execute(
            f"UPDATE webhook_deliveries SET claimed_until = ? WHERE id IN ({marks})",
            (now + lease, *ids),
        )
        due = await self.db.fetch_all(
            "SELECT d.id, d.attempt, d.event_id, d.made_at, e.id, e.owner, e.url, e.secret,"
            " e.old_secret, e.old_secret_until, v.body, d.event_seq, v.created_at"
            " FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id"
            f" LEFT JOIN events v ON v.seq = d.event_seq WHERE d.id IN ({marks})"
            " ORDER BY d.next_attempt_at, d.id",
            ids,
        )
        return [Due._make(row) for row in due]

    async def finish(self, outcomes: Sequence[Outcome]) -> None:
        """Write what attempts came to (inside a transaction)."""
        await self.db.executemany(
            "UPDATE webhook_deliveries SET state = ?, attempt = ?, next_attempt_at = ?,"
            " claimed_until = NULL, response_status = ?, error = ?, duration_ms = ?,"
            " attempted_at = ? WHERE id = ?",
            [
                (o.state, o.attempt, o.next_attempt_at, o.response_status, o.error,
                 o.duration_ms, o.attempted_at, o.delivery_id)
                for o in outcomes
            ],
        )  # fmt: skip

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
        """An endpoint's deliveries, newest first."""
        rows = await self.db.fetch_all(
            f"SELECT {_DELIVERY} FROM webhook_deliveries WHERE endpoint_id = ?"
            " ORDER BY id DESC LIMIT ? OFFSET ?",
            (endpoint_id, limit, offset),
        )
        total = await self.db.fetch_one(
            "SELECT COUNT(*) FROM webhook_deliveries WHERE endpoint_id = ?", (endpoint_id,)
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
        """Forget finished deliveries made before `before` (unix seconds)."""
        return await self.db.execute(
            "DELETE FROM webhook_deliveries WHERE state <> 'pending' AND made_at < ?", (before,)
        )

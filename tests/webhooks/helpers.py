"""What the webhook tests share: a key, a clock near real time, events, a service and a
dispatcher over one accounts store."""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from propdata.accounts.schemas import ApiKey
from propdata.events.repository import EventRepository, NewEvent
from propdata.kit.db import Database
from propdata.kit.wakeup import LocalWakeups
from propdata.webhooks.addresses import Gate, IPAddress, Resolver, system_resolver
from propdata.webhooks.dispatcher import Dispatcher
from propdata.webhooks.retries import Retries
from propdata.webhooks.schemas import iso
from propdata.webhooks.service import WebhookService

LOCAL = (ipaddress.ip_network("127.0.0.1/32"),)


def api_key(
    key_id: str = "key_test1", plan: str = "enterprise", account: str | None = None
) -> ApiKey:
    return ApiKey(
        id=key_id, name="test", prefix="pmd_live_abcd", plan=plan, status="active",
        per_minute=1000, daily=None, default_page_size=10, max_page_size=100,
        saved_searches=10_000, webhook_endpoints=100, events_per_day=None,
        created_at="2026-11-25T00:00:00Z", account_id=account,
    )  # fmt: skip


class Clock:
    """Unix seconds that start at the real time (signatures are checked against it) and move
    only when the test moves them."""

    def __init__(self) -> None:
        self.now = float(int(time.time()))

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Mail:
    def __init__(self) -> None:
        self.sent: list[tuple[str, str, str]] = []

    async def send(self, to: str, subject: str, text: str) -> None:
        self.sent.append((to, subject, text))


def table_resolver(table: dict[str, Sequence[str]]) -> Resolver:
    async def resolve(host: str, port: int) -> Sequence[IPAddress]:
        if host in table:
            return [ipaddress.ip_address(a) for a in table[host]]
        return await system_resolver(host, port)

    return resolve


@dataclass
class Rig:
    db: Database
    clock: Clock = field(default_factory=Clock)
    mail: Mail = field(default_factory=Mail)
    gate: Gate = field(default_factory=lambda: Gate(allowed=LOCAL))
    made: int = 0
    dispatchers: list[Dispatcher] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.wakeups = LocalWakeups()
        self.service = WebhookService(self.db, self.gate, self.wakeups, self.clock)

    def dispatcher(self, **options: Any) -> Dispatcher:
        options.setdefault("retries", Retries(random=lambda: 0.5))
        made = Dispatcher(
            self.db, self.gate, self.wakeups, self.mail, self._mail_to, clock=self.clock,
            **options,
        )  # fmt: skip
        self.dispatchers.append(made)
        return made

    async def close(self) -> None:
        for dispatcher in self.dispatchers:
            await dispatcher.close()

    async def _mail_to(self, owner: str) -> str | None:
        return f"{owner.replace(':', '-')}@example.com"

    async def events(self, owner: str, count: int = 1, type_: str = "property.listed",
                     search_id: str | None = "srch_a") -> list[str]:  # fmt: skip
        """Produce `count` events for the owner (as the producer would); their ids."""
        rows = []
        for _ in range(count):
            self.made += 1
            event_id = f"evt_{self.made:08d}{int(self.clock()):d}"
            body = {"id": event_id, "type": type_, "timestamp": iso(self.clock()),
                    "sequence": 0, "data": {"searchId": search_id}}  # fmt: skip
            rows.append(NewEvent(event_id, owner, type_, search_id, None, iso(self.clock()),
                                 msgspec.json.encode(body).decode()))  # fmt: skip
        async with self.db.transaction():
            await EventRepository(self.db).insert_events(rows)
        return [row.id for row in rows]

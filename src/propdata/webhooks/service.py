"""Webhook endpoint decisions: who may hold how many, where they may point, what they get."""

from __future__ import annotations

import base64
import math
import secrets
import time
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from propdata.accounts.keys import owner_plan
from propdata.accounts.owners import owner_of, plan_limit
from propdata.accounts.repository import AccountRepository, KeyRepository
from propdata.accounts.schemas import ApiKey
from propdata.api.body import check_text
from propdata.errors import (
    Conflict,
    InvalidParameter,
    NotFound,
    PlanLimitReached,
    RateLimitExceeded,
)
from propdata.events import cursor
from propdata.events.repository import EventRepository, NewEvent
from propdata.events.schemas import EVENT_TYPES
from propdata.kit.db import Database
from propdata.kit.wakeup import Wakeups
from propdata.plans import Plan
from propdata.webhooks.addresses import Gate, Refused, Unresolvable, parse
from propdata.webhooks.repository import WebhookRepository
from propdata.webhooks.schemas import (
    MAX_PENDING,
    Delivery,
    Endpoint,
    EndpointChange,
    EndpointRow,
    NewEndpoint,
    iso,
    passes,
)

BACKLOG_KEPT = 50_000
"""Events kept for a disabled endpoint: the newest this many are delivered when it is
enabled again (each event is also kept 30 days at most)."""
REPLAYS_PER_DAY = 10
"""Replays an owner may ask for in any 24 hours."""
REPLAY_SCAN = 50_000
"""Events one replay looks at most (the newest after its cursor)."""
DAY = 86_400.0


def new_secret() -> str:
    """`whsec_` and base64 of 32 random bytes (Standard Webhooks' form)."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


def new_id(prefix: str, length: int = 24) -> str:
    """`prefix` and `length` random letters and digits."""
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    return prefix + "".join(secrets.choice(alphabet) for _ in range(length))


def endpoints_refusal(plan: Plan, held: int) -> PlanLimitReached | None:
    """Why an owner on `plan` holding `held` endpoints may not add another, or None."""
    if held >= plan.webhook_endpoints:
        return plan_limit(plan, "webhook_endpoints", "webhook endpoint", "webhook endpoints")
    return None


def endpoint_view(row: EndpointRow) -> Endpoint:
    return Endpoint(
        id=row.id,
        url=row.url,
        event_types=msgspec.json.decode(row.event_types) if row.event_types is not None else None,
        search_ids=msgspec.json.decode(row.search_ids) if row.search_ids is not None else None,
        description=row.description,
        status="enabled" if row.status == "enabled" else "disabled",
        disabled_reason=row.disabled_reason,  # type: ignore[arg-type]
        created_at=row.created_at,
    )


class WebhookService:
    def __init__(
        self,
        db: Database,
        gate: Gate,
        wakeups: Wakeups | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.db = db
        self.repo = WebhookRepository(db)
        self.events = EventRepository(db)
        self.keys = KeyRepository(db)
        self.accounts = AccountRepository(db)
        self.gate = gate
        self.wakeups = wakeups
        self.clock = clock
        self.backlog_kept = BACKLOG_KEPT

    async def plan_of(self, key: ApiKey) -> Plan:
        """The plan whose endpoint limit the key's owner has (`accounts.keys.owner_plan`)."""
        return await owner_plan(self.keys, key)

    async def mail_to(self, owner: str) -> str | None:
        """Where mail about an owner's endpoints goes: its account's address (None: a key
        without an account)."""
        if not owner.startswith("acct:"):
            return None
        account = await self.accounts.by_id(owner.removeprefix("acct:"))
        return account.email if account is not None else None

    async def _check_url(self, url: str, owner: str) -> str:
        try:
            await self.gate.resolve(parse(url), owner)
        except Refused as exc:
            raise InvalidParameter("url", f"Deliveries cannot go to this URL: {exc}.") from exc
        except Unresolvable as exc:
            raise InvalidParameter("url", f"The URL's host does not resolve: {exc}.") from exc
        return url

    async def _check_filters(
        self, owner: str, types: Sequence[str] | None, search_ids: Sequence[str] | None
    ) -> tuple[str | None, str | None]:
        if types is not None:
            for position, name in enumerate(types):
                if name not in EVENT_TYPES:
                    raise InvalidParameter(
                        "eventTypes",
                        f"eventTypes[{position}] '{name}' is not an event type; one of "
                        + ", ".join(EVENT_TYPES) + ".",
                    )  # fmt: skip
        if search_ids:
            owned = await self.repo.owned_searches(owner, sorted(set(search_ids)))
            missing = next((i for i in search_ids if i not in owned), None)
            if missing is not None:
                raise InvalidParameter(
                    "searchIds", f"searchIds: no saved search '{missing}' of yours."
                )
        encode = msgspec.json.encode
        return (
            encode(list(dict.fromkeys(types))).decode() if types is not None else None,
            encode(list(dict.fromkeys(search_ids))).decode() if search_ids is not None else None,
        )

    async def create(self, key: ApiKey, new: NewEndpoint) -> tuple[EndpointRow, str]:
        """Make an endpoint; its secret is returned this once."""
        check_text(msgspec.to_builtins(new), "")  # the portal's form, as a body is checked
        owner = owner_of(key)
        url = await self._check_url(new.url, owner)
        types, searches = await self._check_filters(owner, new.event_types, new.search_ids)
        plan = await self.plan_of(key)
        secret = new_secret()
        async with self.db.transaction():
            refusal = endpoints_refusal(plan, await self.repo.count(owner))
            if refusal is not None:
                raise refusal
            row = EndpointRow(
                id=new_id("wh_"), owner=owner, url=url, event_types=types, search_ids=searches,
                description=new.description, status="enabled", disabled_reason=None,
                secret=secret, old_secret=None, old_secret_until=None,
                cursor_seq=await self.events.last(), created_at=iso(self.clock()),
                failing_since=None,
            )  # fmt: skip
            await self.repo.insert(row)
        return row, secret

    async def refusal(self, key: ApiKey) -> PlanLimitReached | None:
        """Why the key's owner may not add another endpoint (its plan's limit, naming the
        plan that raises it), or None: what `create` would answer for that."""
        plan = await self.plan_of(key)
        return endpoints_refusal(plan, await self.repo.count(owner_of(key)))

    async def get(self, key: ApiKey, endpoint_id: str) -> EndpointRow:
        row = await self.repo.get(owner_of(key), endpoint_id)
        if row is None:
            raise NotFound(f"No webhook endpoint {endpoint_id}.")
        return row

    async def page(self, key: ApiKey, limit: int, offset: int) -> tuple[int, list[EndpointRow]]:
        return await self.repo.page(owner_of(key), limit, offset)

    async def change(self, key: ApiKey, endpoint_id: str, change: EndpointChange) -> EndpointRow:
        """Change what the PATCH names; enabling again resumes where the endpoint stopped."""
        check_text(msgspec.to_builtins(change), "")
        owner = owner_of(key)
        values: dict[str, Any] = {}
        if change.url is not msgspec.UNSET:
            values["url"] = await self._check_url(change.url, owner)
        types = None if change.event_types is msgspec.UNSET else change.event_types
        searches = None if change.search_ids is msgspec.UNSET else change.search_ids
        encoded = await self._check_filters(owner, types, searches)
        if change.event_types is not msgspec.UNSET:
            values["event_types"] = encoded[0]
        if change.search_ids is not msgspec.UNSET:
            values["search_ids"] = encoded[1]
        if change.description is not msgspec.UNSET:
            values["description"] = change.description
        async with self.db.transaction():
            row = await self.repo.get(owner, endpoint_id, lock=True)
            if row is None:
                raise NotFound(f"No webhook endpoint {endpoint_id}.")
            if change.status == "disabled" and row.status == "enabled":
                values.update(status="disabled", disabled_reason="owner")
            elif change.status == "enabled" and row.status != "enabled":
                values.update(status="enabled", disabled_reason=None)
                await self._trim_backlog(row)
            await self.repo.change(endpoint_id, values)
            changed = await self.repo.get(owner, endpoint_id)
        assert changed is not None
        if values.get("status") == "enabled" and self.wakeups is not None:
            await self.wakeups.notify("events")
        return changed

    async def _trim_backlog(self, row: EndpointRow) -> None:
        """Keep the newest `backlog_kept` events of a disabled endpoint's backlog."""
        oldest = await self.repo.newest_kept(row.owner, row.cursor_seq, self.backlog_kept)
        if oldest is not None:
            await self.repo.move_cursor(row.id, oldest - 1)

    async def delete(self, key: ApiKey, endpoint_id: str) -> None:
        async with self.db.transaction():
            row = await self.repo.get(owner_of(key), endpoint_id, lock=True)
            if row is None:
                raise NotFound(f"No webhook endpoint {endpoint_id}.")
            await self.repo.delete(endpoint_id)

    async def rotate(self, key: ApiKey, endpoint_id: str, grace: int) -> str:
        """A new secret; the one it replaces goes on signing for `grace` seconds."""
        secret = new_secret()
        async with self.db.transaction():
            row = await self.repo.get(owner_of(key), endpoint_id, lock=True)
            if row is None:
                raise NotFound(f"No webhook endpoint {endpoint_id}.")
            if grace > 0:
                await self.repo.rotate(endpoint_id, secret, row.secret, self.clock() + grace)
            else:
                await self.repo.rotate(endpoint_id, secret, None, None)
        return secret

    async def test(self, key: ApiKey, endpoint_id: str) -> None:
        """A `webhook.test` event for this endpoint alone, and its delivery."""
        owner = owner_of(key)
        row = await self.get(key, endpoint_id)
        now = self.clock()
        event_id = new_id("evt_", 26)
        # Outside the owner's sequence (0): it is not an event of the log.
        body: dict[str, Any] = {
            "id": event_id, "type": "webhook.test", "timestamp": iso(now), "sequence": 0,
            "data": {"endpointId": row.id, "url": row.url},
        }  # fmt: skip
        async with self.db.transaction():
            await self._room(row.id)
            (made,) = await self.events.insert_events([
                NewEvent(event_id, owner, "webhook.test", None, row.id, iso(now),
                         msgspec.json.encode(body).decode())
            ])  # fmt: skip
            await self.repo.insert_deliveries([(row.id, made.seq, event_id, "webhook.test", now)])
        if self.wakeups is not None:
            await self.wakeups.notify("events")

    async def _room(self, endpoint_id: str) -> None:
        """409 when the endpoint holds as many pending deliveries as it may."""
        if await self.repo.pending(endpoint_id) >= MAX_PENDING:
            raise Conflict(
                f"This endpoint has {MAX_PENDING:,} deliveries waiting, as many as it may: wait"
                " for them to be attempted (GET its deliveries to follow them)."
            )

    async def resend(self, key: ApiKey, endpoint_id: str, event_id: str) -> None:
        """Deliver again an event the endpoint was sent (the same event id), `webhook.test`
        included: a new delivery, due now; when the event is still pending for the endpoint,
        that delivery is made due now instead (an event is never queued twice). 404 for an
        event it was never sent or that is no longer kept."""
        row = await self.get(key, endpoint_id)
        found = await self.repo.delivered_event(row.id, event_id)
        if found is None:
            raise NotFound(f"No delivery of event {event_id} to webhook endpoint {endpoint_id}.")
        seq, kind = found
        now = self.clock()
        async with self.db.transaction():
            if not await self.repo.is_pending(row.id, seq):
                await self._room(row.id)
            await self.repo.insert_deliveries([(row.id, seq, event_id, kind, now)])
            await self.repo.hasten(row.id, seq, now)
        if self.wakeups is not None:
            await self.wakeups.notify("events")

    async def deliveries(
        self, key: ApiKey, endpoint_id: str, limit: int, offset: int
    ) -> tuple[int, list[Delivery]]:
        """The endpoint's attempts made and deliveries waiting, newest first."""
        row = await self.get(key, endpoint_id)
        total, rows = await self.repo.deliveries(row.id, limit, offset)
        return total, [
            Delivery(
                event_id=d.event_id, type=d.type, attempt=d.attempt,  # type: ignore[arg-type]
                status=d.status,  # type: ignore[arg-type]
                response_status=d.response_status,
                error=d.error,  # type: ignore[arg-type]
                duration_ms=d.duration_ms, attempted_at=d.attempted_at,
                next_attempt_at=iso(d.next_attempt_at) if d.next_attempt_at is not None else None,
            )
            for d in rows
        ]  # fmt: skip

    async def replay(self, key: ApiKey, endpoint_id: str, since: str) -> int:
        """Deliver again the owner's kept events after `since` that passed to the endpoint
        already (those past its cursor are on their way) and pass its filters: the newest,
        as many as its pending deliveries leave room for, none already pending. One replay
        of an endpoint at a time (409 while one's deliveries wait), REPLAYS_PER_DAY an owner
        in any 24 hours (429)."""
        place = cursor.decode(since, "since")
        owner = owner_of(key)
        now = self.clock()
        async with self.db.transaction():
            await self.repo.lock_replays(owner)
            row = await self.repo.get(owner, endpoint_id, lock=True)
            if row is None:
                raise NotFound(f"No webhook endpoint {endpoint_id}.")
            if await self.repo.replay_waiting(row.id):
                raise Conflict(
                    f"A replay of webhook endpoint {endpoint_id} is still being delivered: ask"
                    " again once its deliveries are done (GET its deliveries to follow them)."
                )
            asked = await self.repo.replays_since(owner, now - DAY)
            if len(asked) >= REPLAYS_PER_DAY:
                wait = max(1, math.ceil(asked[len(asked) - REPLAYS_PER_DAY] + DAY - now))
                raise RateLimitExceeded(
                    f"At most {REPLAYS_PER_DAY} replays a day; retry after {wait} seconds.",
                    headers={"Retry-After": str(wait)},
                )
            room = MAX_PENDING - await self.repo.pending(row.id)
            after = await self.events.after(owner, place)
            events = await self.repo.replayable(owner, after, row.cursor_seq, REPLAY_SCAN)
            wanted = [e for e in events if passes(row, e[2], e[3])][-room:] if room > 0 else []
            before = await self.repo.pending(row.id)
            await self.repo.insert_deliveries(
                [(row.id, seq, event_id, kind, now) for seq, event_id, kind, _ in wanted],
                replay=True,
            )
            queued = await self.repo.pending(row.id) - before
            await self.repo.record_replay(owner, row.id, now)
        if queued and self.wakeups is not None:
            await self.wakeups.notify("events")
        return queued

"""The event producer: committed changes of properties and ZIP snapshots, turned into the
events of every saved search they concern, exactly once.

The data store's triggers write a change image (the row before and after, as JSON) in the
writing transaction itself while any saved search exists (`migrations/steps/s09_change_images`).
`produce`, strictly after those commits, claims the images past the accounts store's cursor
(`meta` `events_images_seq`, `events_markets_seq`), evaluates every saved search against
them at once (`search.match.Batch`: a few numpy passes a search over the changed records,
before and after), writes the events and moves the cursors in ONE accounts transaction, then
deletes the images it has read. One producer runs at a time (a PostgreSQL advisory lock;
SQLite's write transaction), so each image becomes events once, whichever process wins.

    await produce(data_db, accounts_db)      # after a load's commit: the CLI does this
    await keep_producing(data_db, accounts_db)   # a server worker's background task

Each owner's events are capped by plan in any rolling 24 h (counted by minute,
`plans.Plan.events_per_day`); past the cap none is produced, and the next one produced
carries `data.dropped`, the count missed. Events are kept 30 days (pruned once a day).
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import msgspec
import numpy as np
import numpy.typing as npt

from propdata.accounts.keys import KeyService
from propdata.events.repository import (
    EventRepository,
    ImageRepository,
    ImageRow,
    NewEvent,
    ProducerRepository,
)
from propdata.kit import meta, metrics
from propdata.kit.clock import iso_ms
from propdata.kit.db import Database, StoreUnavailable
from propdata.markets.repository import SnapshotRow
from propdata.markets.service import market_of
from propdata.plans import Plan
from propdata.properties.repository import PropertyRow
from propdata.properties.schemas import TaxRecord
from propdata.properties.service import record_of
from propdata.saved_searches import filters
from propdata.saved_searches.repository import SavedSearchRepository, SavedSearchRow, WatchedRecords
from propdata.search.filters import SearchFilters
from propdata.search.items import search_item
from propdata.search.match import Batch, matches
from propdata.search.repository import SearchRow

log = logging.getLogger("propdata")

BATCH = 20_000
"""Images a pass claims at most (of each kind); a larger backlog takes several passes."""
POLL = 0.5
"""Seconds between a server worker's passes (no data commit is announced: it polls)."""
KEEP_DAYS = 30
"""Days events are kept."""
ESTIMATE_MOVE = 0.05
"""A value or rent estimate that moves by this share or more is `property.estimateChanged`."""
LISTED = ("forSale", "forRent")
DERIVED = frozenset({
    "lastUpdated", "priceHistory", "previousListPrice", "lastPriceChangeDate",
    "originalListPrice", "removedDate", "pricePerSquareFoot", "grossYield",
})  # fmt: skip
"""Fields that follow from other changes: never named in an event's `changes` or `previous`
(so alone they are no `property.updated`)."""
OWN_TYPES = {"status": "property.statusChanged", "listPrice": "property.priceChanged"}
ESTIMATES = ("valueEstimate", "rentEstimate")
_CURSORS = {"properties": meta.EVENTS_IMAGES_SEQ, "markets": meta.EVENTS_MARKETS_SEQ}
_encode = msgspec.json.encode
_PROPERTY_FIELDS = PropertyRow._fields
_ITEM_FIELDS = SearchRow._fields


@dataclass(slots=True)
class Watch:
    """A saved search as the producer evaluates it."""

    id: str
    owner: str
    name: str
    filters: SearchFilters
    ids: list[str] | None
    zip_code: str | None


def watches(rows: Sequence[SavedSearchRow]) -> list[Watch]:
    found = []
    for row in rows:
        try:
            query = filters.query_of(json.loads(row.filters))
        except Exception:  # a search stored by an older rule: skipped, never a stuck producer
            log.warning("saved search %s has filters no search takes; skipped", row.id)
            continue
        ids = json.loads(row.property_ids) or None
        found.append(Watch(row.id, row.owner, row.name, query.filters, ids,
                           query.filters.zip_code))  # fmt: skip
    return found


@dataclass(slots=True)
class Change:
    """One record's change in a batch: its first image's before, its last image's after."""

    key: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None


@dataclass(slots=True)
class Facts:
    """What a record's change is, on the wire: its items, changed fields and their types."""

    item: dict[str, Any]
    """The search item after the change (before it, for a removed record)."""
    previous: dict[str, Any]
    changes: list[str]
    types: list[str]
    """The property types of the change (new records: `property.listed` when listed)."""

    @classmethod
    def of(cls, before: dict[str, Any] | None, after: dict[str, Any] | None) -> Facts:
        shown = after if after is not None else before
        assert shown is not None
        item = _item(shown)
        if before is None or after is None:
            listed = after is not None and after.get("status") in LISTED
            return cls(item, {}, [], ["property.listed"] if listed else [])
        old, new = _record(before), _record(after)
        changes = [name for name in new if name != "id" and _counts(name, old.get(name), new[name])]
        if TAXES in before:  # its own images: only when it changed (`collapse`)
            old["taxHistory"], new["taxHistory"] = _taxes(before[TAXES]), _taxes(after[TAXES])
            changes.append("taxHistory")
        types: list[str] = []
        if "status" in changes and new["status"] in LISTED:
            types.append("property.listed")
        types += [OWN_TYPES[name] for name in ("listPrice", "status") if name in changes]
        if any(name in changes for name in ESTIMATES):
            types.append("property.estimateChanged")
        others = [n for n in changes if n not in OWN_TYPES and n not in ESTIMATES]
        if others and (others != ["daysOnMarket"] or "status" not in changes):
            types.append("property.updated")
        return cls(item, {name: old[name] for name in changes}, changes, types)


def _counts(name: str, old: Any, new: Any) -> bool:
    """Whether a field's change counts (is named in `changes` and `previous`): not a derived
    field, not the daily growth of daysOnMarket, not an estimate's move under 5 %."""
    if old == new or name in DERIVED:
        return False
    if name == "daysOnMarket":
        return not _grew(old, new)
    if name in ESTIMATES:
        return _moved(old, new)
    return True


def _record(row: dict[str, Any]) -> dict[str, Any]:
    wire: dict[str, Any] = msgspec.to_builtins(record_of(_row(row)))
    return {k: v for k, v in wire.items() if k not in ("priceHistory", "taxHistory")}


def _taxes(stored: list[list[Any]]) -> list[dict[str, Any]]:
    """A stored tax history ([year, taxPaid, assessedValue] newest first) as the API shows it."""
    shown: list[dict[str, Any]] = msgspec.to_builtins(
        [TaxRecord(year=y, tax_paid=paid, assessed_value=value) for y, paid, value in stored]
    )
    return shown


def _row(row: dict[str, Any]) -> PropertyRow:
    values: list[Any] = [row.get(name) for name in _PROPERTY_FIELDS]
    return PropertyRow(*values)


def _item(row: dict[str, Any]) -> dict[str, Any]:
    values: list[Any] = [row.get(name) for name in _ITEM_FIELDS]
    fields = SearchRow(*values)
    item: dict[str, Any] = msgspec.to_builtins(search_item(fields, msgspec.UNSET))
    return item


def _moved(old: dict[str, Any] | None, new: dict[str, Any] | None) -> bool:
    if old is None or new is None or not old.get("value"):
        return False
    return bool(abs(new["value"] - old["value"]) >= ESTIMATE_MOVE * abs(old["value"]))


def _grew(old: int | None, new: int | None) -> bool:
    return old is not None and new is not None and new > old


_UNSEEN: Any = object()
TAXES = "tax_history"
"""The one column of a tax history's image (schema step 13): `{"tax_history": [...]}`."""


def collapse(images: Sequence[ImageRow]) -> list[Change]:
    """One change per key, in the order keys first changed: the first before, the last after;
    a change that ends where it began (a row deleted and written back the same) is none.

    A property's tax history comes in images of its own (its histories row deleted, then
    written again, around the row's update): its first before and last after join the row's
    images under `tax_history`, so a change of the taxes alone is a change (and one of a
    record that was created or removed is part of that)."""
    found: dict[str, Change] = {}
    taxes: dict[str, list[Any]] = {}
    for image in images:
        before = json.loads(image.before) if image.before is not None else None
        after = json.loads(image.after) if image.after is not None else None
        shown = before if before is not None else after
        if shown is not None and len(shown) == 1 and TAXES in shown:
            held_taxes = taxes.setdefault(image.key, [_UNSEEN, _UNSEEN])
            if held_taxes[0] is _UNSEEN:
                held_taxes[0] = None if before is None else before[TAXES]
            held_taxes[1] = None if after is None else after[TAXES]
            continue
        held = found.get(image.key)
        if held is None:
            found[image.key] = Change(image.key, before, after)
        else:
            held.after = after
    for key, (was, now) in taxes.items():
        change = found.get(key)
        if change is None or change.before is None or change.after is None:
            continue  # taxes alone (the row unchanged), or a record made or removed
        if was is not _UNSEEN and now is not _UNSEEN and was != now:
            change.before = {**change.before, TAXES: was}
            change.after = {**change.after, TAXES: now}
    return [c for c in found.values() if c.before != c.after]


class Draft(NamedTuple):
    """An event to produce: its order in the batch (record, search, type), owner, search,
    type and data (shared by the events of one record and search)."""

    order: tuple[int, int, int]
    owner: str
    search_id: str
    type: str
    data: dict[str, Any]


def evaluate(searches: Sequence[Watch], changes: Sequence[Change]) -> list[Draft]:
    """Every event the changes make for the searches: for each search, the records that
    match it before or after (one Batch each side, one `matches` pass each), in order."""
    if not changes or not searches:
        return []
    empty: dict[str, Any] = {}
    before = Batch.of([c.before or empty for c in changes])
    after = Batch.of([c.after or empty for c in changes])
    had = np.fromiter((c.before is not None for c in changes), np.bool_, len(changes))
    has = np.fromiter((c.after is not None for c in changes), np.bool_, len(changes))
    position = {c.key: i for i, c in enumerate(changes)}
    facts: list[Facts | None] = [None] * len(changes)
    drafts: list[Draft] = []
    add = drafts.append
    for at, search in enumerate(searches):
        was = matches(search.filters, before) & had
        now = matches(search.filters, after) & has
        if search.ids is not None:
            watched = _watched(search.ids, position, len(changes))
            was &= watched
            now &= watched
        owner, search_id, name = search.owner, search.id, search.name
        entered, exited = (now & ~was).tolist(), (was & ~now).tolist()
        for i in np.flatnonzero(was | now).tolist():  # a few Python steps per record met
            found = facts[i]
            if found is None:
                change = changes[i]
                found = facts[i] = Facts.of(change.before, change.after)
            data = {"searchId": search_id, "searchName": name, "property": found.item,
                    "previous": found.previous, "changes": found.changes}  # fmt: skip
            n = 0
            if entered[i]:
                add(Draft((i, at, 0), owner, search_id, "search.entered", data))
                n = 1
            elif exited[i]:
                add(Draft((i, at, 0), owner, search_id, "search.exited", data))
                n = 1
            for kind in found.types:
                add(Draft((i, at, n), owner, search_id, kind, data))
                n += 1
    return drafts


def _watched(ids: list[str], position: dict[str, int], size: int) -> npt.NDArray[np.bool_]:
    mask = np.zeros(size, np.bool_)
    hits = [position[i] for i in ids if i in position]
    mask[hits] = True
    return mask


def market_drafts(searches: Sequence[Watch], changes: Sequence[Change]) -> list[Draft]:
    """`market.updated` for each search whose `zipCode` filter names a changed snapshot (a
    new date alone is no change: the statistics are what is watched)."""
    by_zip: dict[str, list[tuple[int, Watch]]] = {}
    for order, search in enumerate(searches):
        if search.zip_code is not None:
            by_zip.setdefault(search.zip_code, []).append((order, search))
    drafts: list[Draft] = []
    for i, change in enumerate(changes):
        concerned = by_zip.get(change.key)
        if not concerned or change.after is None:
            continue
        new = _snapshot(change.after)
        old = _snapshot(change.before) if change.before is not None else None
        changed = [k for k in new if k != "date" and (old is None or old.get(k) != new[k])]
        if not changed:
            continue
        previous = {k: old[k] for k in changed} if old is not None else {}
        for order, search in concerned:
            data = {"searchId": search.id, "searchName": search.name, "zipCode": change.key,
                    "snapshot": new, "previous": previous}  # fmt: skip
            drafts.append(Draft((i, order, 0), search.owner, search.id, "market.updated", data))
    return drafts


def _snapshot(row: dict[str, Any]) -> dict[str, Any]:
    market = market_of(SnapshotRow._make(row.get(name) for name in SnapshotRow._fields))
    snapshot: dict[str, Any] = msgspec.to_builtins(market.snapshot)
    return snapshot


@dataclass(slots=True)
class Pass:
    """What one pass did."""

    events: int = 0
    images: int = 0
    more: bool = False
    types: dict[str, int] = field(default_factory=dict)


async def produce(
    data: Database,
    accounts: Database,
    *,
    clock: Callable[[], float] = time.time,
    batch: int = BATCH,
) -> int:
    """Turn every committed change image into events; the number of events produced."""
    images = ImageRepository(data)
    await prune(accounts, clock)
    if not await images.pending():
        return 0
    produced = 0
    while True:
        done = await _pass(data, accounts, clock, batch)
        produced += done.events
        for kind, n in done.types.items():
            metrics.EVENTS.labels(kind).inc(n)
        if not done.more:
            return produced


async def _pass(data: Database, accounts: Database, clock: Callable[[], float], batch: int) -> Pass:
    images = ImageRepository(data)
    producer = ProducerRepository(accounts)
    done = Pass()
    reached: dict[str, int] = {}
    async with accounts.transaction():
        await producer.lock()
        store = await images.store_id()
        if await meta.get(accounts, meta.EVENTS_STORE) != store:  # a new one: images from 1
            await meta.put(accounts, meta.EVENTS_STORE, store)
            for name in _CURSORS.values():
                await meta.put(accounts, name, 0)
        claimed: dict[str, list[ImageRow]] = {}
        for kind, name in _CURSORS.items():
            after = await meta.get(accounts, name)
            claimed[kind] = await images.images(kind, after, batch)
            reached[kind] = claimed[kind][-1].seq if claimed[kind] else after
            done.more |= len(claimed[kind]) == batch
        done.images = sum(len(rows) for rows in claimed.values())
        if done.images:
            rows = await SavedSearchRepository(accounts).all()
            watched = WatchedRecords(data)
            if rows and not await watched.watching():
                await watched.set_watching(True)
            searches = watches(rows)
            drafts = evaluate(searches, collapse(claimed["properties"]))
            drafts += market_drafts(searches, collapse(claimed["markets"]))
            drafts.sort(key=lambda d: d.order)
            kept = await _capped(accounts, producer, drafts, clock())
            now = iso_ms(clock())
            await EventRepository(accounts).insert_events([_event(d, now) for d in kept])
            done.events = len(kept)
            for d in kept:
                done.types[d.type] = done.types.get(d.type, 0) + 1
            for kind, name in _CURSORS.items():
                await meta.put(accounts, name, reached[kind])
    try:
        for kind, upto in reached.items():
            await images.forget(kind, upto)
    except StoreUnavailable as exc:  # deleted by the next pass (their numbers are behind)
        log.warning("change images not deleted yet (%s)", exc)
    return done


def _event(draft: Draft, now: str) -> NewEvent:
    event_id = new_id()
    body = {"id": event_id, "type": draft.type, "timestamp": now, "sequence": 0,
            "data": draft.data}  # fmt: skip
    return NewEvent(id=event_id, owner=draft.owner, type=draft.type, search_id=draft.search_id,
                    endpoint_id=None, created_at=now, body=_encode(body).decode())  # fmt: skip


def new_id() -> str:
    """An event id: "evt_" and 26 random URL-safe characters."""
    return "evt_" + secrets.token_urlsafe(20)[:26]


async def _capped(
    accounts: Database, producer: ProducerRepository, drafts: list[Draft], now: float
) -> list[Draft]:
    """The drafts each owner's plan lets be produced (any rolling 24 h, counted by minute);
    the rest are counted as dropped, and the next event produced for the owner says so. A
    stopped owner's (`stopped_owners`) are not produced, nor counted."""
    if not drafts:
        return []
    stopped = await stopped_owners(KeyService(accounts), {d.owner for d in drafts})
    drafts = [d for d in drafts if d.owner not in stopped]
    if not drafts:
        return []
    owners = sorted({d.owner for d in drafts})
    plans = await _plans(accounts, owners)
    minute = int(now // 60)
    produced = await producer.produced_since(minute - 24 * 60 + 1)
    dropped = await producer.dropped()
    room = {
        owner: None if plans[owner].events_per_day is None
        else max(0, (plans[owner].events_per_day or 0) - produced.get(owner, 0))
        for owner in owners
    }  # fmt: skip
    kept: list[Draft] = []
    counts: dict[str, int] = {}
    changed: dict[str, int] = {}
    for d in drafts:
        left = room[d.owner]
        if left is not None and left <= 0:
            changed[d.owner] = dropped[d.owner] = dropped.get(d.owner, 0) + 1
            continue
        if left is not None:
            room[d.owner] = left - 1
        missed = dropped.get(d.owner, 0)
        if missed:
            d = d._replace(data={**d.data, "dropped": missed})
            changed[d.owner] = dropped[d.owner] = 0
        counts[d.owner] = counts.get(d.owner, 0) + 1
        kept.append(d)
    await producer.count_produced(minute, counts)
    if changed:
        await producer.set_dropped(changed)
    return kept


def _split(owners: Iterable[str]) -> tuple[list[str], list[str]]:
    """Owners (`accounts.owners.owner_of`) as account ids and ids of keys without one."""
    held = sorted(owners)
    return [o[5:] for o in held if o.startswith("acct:")], [
        o[4:] for o in held if o.startswith("key:")
    ]


async def stopped_owners(keys: KeyService, owners: Iterable[str]) -> set[str]:
    """The owners among these that stop at once: a disabled account, a revoked key without
    one. No event is produced for them and none of theirs is delivered."""
    account_ids, key_ids = _split(owners)
    accounts, revoked = await keys.stopped(account_ids, key_ids)
    return {f"acct:{a}" for a in accounts} | {f"key:{k}" for k in revoked}


async def _plans(accounts: Database, owners: Sequence[str]) -> dict[str, Plan]:
    account_ids, key_ids = _split(owners)
    by_account, by_key = await KeyService(accounts).owners_plans(account_ids, key_ids)
    return {
        owner: by_account[owner[5:]] if owner.startswith("acct:") else by_key[owner[4:]]
        for owner in owners
    }


async def prune(accounts: Database, clock: Callable[[], float] = time.time) -> None:
    """Once a day (whichever process comes first): drop events older than KEEP_DAYS and the
    counts older than a day."""
    producer = ProducerRepository(accounts)
    today = iso_ms(clock())[:10]
    if await meta.get(accounts, meta.EVENTS_PRUNED) == today:
        return
    async with accounts.transaction():
        await producer.lock()
        if await meta.get(accounts, meta.EVENTS_PRUNED) == today:
            return
        await EventRepository(accounts).prune(iso_ms(clock() - KEEP_DAYS * 86_400))
        await producer.prune_counts(int(clock() // 60) - 24 * 60)
        await meta.put(accounts, meta.EVENTS_PRUNED, today)


Wait = Callable[[float], Awaitable[None]]


async def keep_producing(
    data: Database,
    accounts: Database,
    *,
    wait: Wait | None = None,
    notify: Callable[[], Awaitable[None]] | None = None,
    every: float = POLL,
    clock: Callable[[], float] = time.time,
) -> None:
    """Produce, then wait `every` seconds, for ever (a server worker's task): the events of
    a commit come within `every` of it. `wait(timeout)` is that wait on the "changes" topic,
    which no writer announces, so the producer polls; `notify()` announces new events
    ("events", what the stream and the dispatcher wait on)."""
    pause = wait or asyncio.sleep
    failing = False  # an outage is logged when it starts and when it ends, not every pass
    while True:
        try:
            if await produce(data, accounts, clock=clock) and notify is not None:
                await notify()
            if failing:
                log.warning("the event producer works again")
            failing = False
        except StoreUnavailable as exc:
            if not failing:
                log.warning("events not produced: %s; trying again every %g s", exc, every)
            failing = True
        except Exception:
            if not failing:
                log.exception("the event producer failed; trying again every %g s", every)
            failing = True
        await pause(every)

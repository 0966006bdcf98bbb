"""Replication sources and their passes: what `propdata sources` and `data replicate` do.

A pass holds the source's lease, reads its pages (`client.FeedClient`: by
ModificationTimestamp, or the records its EntityEvent pages name), maps each record with the
one RESO mapping (`ingest.readers.reso`) and commits the page through the live-data path (`ingest.pipeline.run`, as `data import --follow` does: served within a second, the
change feed, events), the source's watermark and totals moving in the transaction of the
records they cover (`loader.load(committed=...)`). The touched ZIP codes' statistics are
recomputed together every MARKETS_EVERY seconds and at the end of the pass.
"""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from propdata.errors import Conflict, NotFound
from propdata.ingest import pipeline
from propdata.ingest.loader import Item, LoadReport, Reject, Removal
from propdata.ingest.readers.reso import json_row, listing_id, reso_item
from propdata.kit.db import Database
from propdata.properties.schemas import PropertyDetail
from propdata.replication.client import KEY, STAMP, FeedClient
from propdata.replication.repository import LeaseHeld, SourceRepository
from propdata.replication.schemas import Source, SourceConfig, Watermark, utc_now
from propdata.valuation.stored import MarketCache

TRANSACTION_RECORDS = 250
"""Records a transaction holds at most (as `data import --follow`): the write lock is never
held for long while the API serves."""
MARKETS_EVERY = 30.0
"""Seconds between a pass's recomputes of the market statistics of the ZIP codes its pages
touched, which it also does at its end (`pipeline.finish_markets`): a ZIP code that many
pages touch is recomputed once for them all. The records, their estimates, the change feed
and the events follow each page."""

__all__ = ["KEEP", "LeaseHeld", "PassTotals", "Replicator", "SourceService"]


class Keep:
    """A setting `SourceService.change` leaves as it is."""


KEEP = Keep()


class SourceService:
    """Add, list and remove sources."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.repo = SourceRepository(db)

    async def add(self, config: SourceConfig) -> Source:
        if not await self.repo.add(config, utc_now()):
            raise Conflict(f"a source named {config.name} exists; remove it first")
        found = await self.repo.get(config.name)
        assert found is not None
        return found

    async def all(self) -> list[Source]:
        return await self.repo.all()

    async def get(self, name: str) -> Source:
        found = await self.repo.get(name)
        if found is None:
            raise NotFound(f"no source named {name} (see `propdata sources list`)")
        return found

    async def change(
        self,
        name: str,
        events_url: str | Keep | None = KEEP,
        page_size: int | None = None,
        requests_per_hour: int | None = None,
        overlap: int | None = None,
    ) -> Source:
        """Change a source (under its lease: LeaseHeld while it is replicated). A new
        `events_url` makes its next pass a catch-up (`Replicator._catch_up`); None makes it
        follow timestamps again from its timestamp watermark; the same URL changes nothing."""
        source = await self.get(name)
        async with self.repo.lease(name):
            source = await self.get(name)
            config = source.config
            if not isinstance(events_url, Keep) and events_url != config.events_url:
                await self.repo.set_events(name, events_url)
            await self.repo.set_manners(
                name,
                config.page_size if page_size is None else page_size,
                config.requests_per_hour if requests_per_hour is None else requests_per_hour,
                config.overlap if overlap is None else overlap,
            )
            return await self.get(name)

    async def remove(self, name: str, as_of: dt.date, *, delete_records: bool) -> int:
        """Remove the source (under its lease); with `delete_records`, its records too,
        through the live-data path (the feed's `removed`, the ZIP codes' statistics)."""
        await self.get(name)
        removed = 0
        async with self.repo.lease(name):
            if delete_records:
                prefix = f"{name}-"
                after: str | None = None
                while ids := await self.repo.record_ids(prefix, after, 1_000):
                    after = ids[-1]
                    items: list[Item] = [(n, Removal(n, i)) for n, i in enumerate(ids, 1)]
                    outcome = await pipeline.run(
                        self.db, [pipeline.Source(name, "replicate", items, len(items), False)],
                        as_of, refit_share=math.inf,
                    )  # fmt: skip
                    removed += sum(r.removed for r in outcome.reports)
            await self.repo.remove(name)
        return removed


@dataclass(slots=True)
class PassTotals:
    """What a pass (or several) committed."""

    pages: int = 0
    read: int = 0
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    rejected: int = 0
    watermark: Watermark = field(default_factory=Watermark)
    started: float = field(default_factory=time.monotonic)
    rejects: list[Reject] = field(default_factory=list)
    """The rejects of the last page committed (the rejects file takes them)."""

    def rate(self) -> float:
        span = time.monotonic() - self.started
        return self.read / span if span > 0 else 0.0


OnPage = Callable[[PassTotals], None]


Place = tuple[str | None, str | None]
"""A record's ModificationTimestamp and key, as the feed gave them."""
Position = tuple[dt.datetime, str]


def _position(stamp: str | None, key: str | None) -> Position | None:
    if stamp is None:
        return None
    try:
        moment = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment, key or ""


@dataclass(slots=True)
class Replicator:
    """Runs passes of one source."""

    db: Database
    name: str
    env: Mapping[str, str]
    as_of: Callable[[], dt.date]
    transport: httpx.AsyncBaseTransport | None = None
    should_stop: Callable[[], bool] = lambda: False
    blocks: MarketCache | None = None
    """The stored models' training blocks kept between pages (`cli.base.training_blocks`)."""

    async def run_pass(self, totals: PassTotals, on_page: OnPage | None = None) -> bool:
        """One pass to the end of the feed (or until `should_stop`); False when stopped.
        FeedError when it cannot go on, LeaseHeld when another replicator runs."""
        repo = SourceRepository(self.db)
        source = await SourceService(self.db).get(self.name)
        async with repo.lease(self.name):
            source = await SourceService(self.db).get(self.name)  # as the last holder left it
            await repo.set_state(self.name, "running", None)
            counts: dict[str, int] = {}
            try:
                await pipeline.finish_markets(self.db, self.as_of())  # a killed pass's
                if source.config.events_url is None:
                    walk = self._pages
                elif source.watermark.sequence is None:
                    walk = self._catch_up
                else:
                    walk = self._events
                async with FeedClient(
                    source.config, self.env, self.transport, count=_counter(counts)
                ) as client:  # one a pass: its manners hold across the pass
                    finished = await walk(client, repo, source, totals, counts, on_page)
                await pipeline.finish_markets(self.db, self.as_of())
            except BaseException as exc:
                await repo.add_requests(self.name, counts)
                await repo.set_state(self.name, "failed", str(exc) or type(exc).__name__)
                raise
            await repo.add_requests(self.name, counts)
            await repo.set_state(self.name, "caught up" if finished else "stopped", None,
                                 utc_now(), caught_up=finished)  # fmt: skip
            return finished

    async def _pages(self, client: FeedClient, repo: SourceRepository, source: Source,
                     totals: PassTotals, counts: dict[str, int],
                     on_page: OnPage | None) -> bool:  # fmt: skip
        held = _position(source.watermark.timestamp, source.watermark.key)
        mark = source.watermark
        line = 0
        markets = _Markets()
        async for page in client.pages(source.watermark):
            as_of = self.as_of()
            entries: list[tuple[Item, Place]] = []
            for record in page.records:
                line += 1
                item = reso_item(line, json_row(record), as_of, self.name)
                stamp, key = record.get(STAMP), record.get(KEY)
                place = (stamp if isinstance(stamp, str) else None,
                         None if key is None else str(key))  # fmt: skip
                entries.append(((line, item), place))
            sources: list[pipeline.Source] = []
            placed: list[dict[int, Place]] = []
            for batch in _transactions(entries):
                mark = _later(mark, [place for _, place in batch])
                placed.append({entry[0]: place for entry, place in batch})
                sources.append(self._source(repo, [entry for entry, _ in batch], mark,
                                            placed[-1], held))  # fmt: skip
            await self._commit(sources, placed, held, totals, as_of)
            totals.read += len(page.records)
            totals.watermark = mark
            if await self._after_page(repo, totals, counts, on_page, as_of, markets):
                return False
        return True

    async def _catch_up(self, client: FeedClient, repo: SourceRepository, source: Source,
                        totals: PassTotals, counts: dict[str, int],
                        on_page: OnPage | None) -> bool:  # fmt: skip
        """An event source's first pass (and its first after `sources set
        --entity-events`), as RCP-27 asks: the log's newest event noted first (kept in the
        store, so a pass killed meanwhile and started again keeps the first note), then a
        pass by ModificationTimestamp from the timestamp watermark, and once that is caught
        up, the events after the noted one. A record changed during the timestamp pass is
        named by an event after the note too, and read again unchanged."""
        if source.events_from is None:
            await repo.note_events_from(self.name, await client.newest_event())
        if not await self._pages(client, repo, source, totals, counts, on_page):
            return False
        await repo.follow_events(self.name)
        source = await SourceService(self.db).get(self.name)
        return await self._events(client, repo, source, totals, counts, on_page)

    async def _events(self, client: FeedClient, repo: SourceRepository, source: Source,
                      totals: PassTotals, counts: dict[str, int],
                      on_page: OnPage | None) -> bool:  # fmt: skip
        """A pass by the feed's EntityEvent log: each page's records are asked for by key
        and committed in the order of their last event, each transaction's watermark the
        sequence up to which every event's record is committed (the page's last with its
        last transaction). A record the feed no longer returns leaves the store: deleted
        upstream, or no longer ours to show (RCP-27's "consumer visibility")."""

        mark = source.watermark
        line = 0
        markets = _Markets()
        async for events in client.events(mark.sequence):
            if events.last == mark.sequence:
                continue  # nothing after the watermark: the log's end
            keys = events.keys()
            found = {str(r.get(KEY)): r for r in await client.records(keys)} if keys else {}
            as_of = self.as_of()
            latest = {key: sequence for sequence, key in events.events}
            items: list[Item] = []
            for key in keys:
                line += 1
                record = found.get(key)
                items.append((line, Removal(line, listing_id(key, self.name)) if record is None
                              else reso_item(line, json_row(record), as_of, self.name)))  # fmt: skip
            sources: list[pipeline.Source] = []
            for start in range(0, len(items), TRANSACTION_RECORDS):
                end = start + TRANSACTION_RECORDS
                upto = events.last if end >= len(items) else latest[keys[end - 1]]
                mark = Watermark(mark.timestamp, mark.key, upto)
                sources.append(self._source(repo, items[start:end], mark, {}, None))
            if not sources:  # the page named no Property record: only the watermark moves
                mark = Watermark(mark.timestamp, mark.key, events.last)
                async with self.db.transaction():
                    await repo.advance(self.name, mark, 0, 0, 0, utc_now())
            await self._commit(sources, [{}] * len(sources), None, totals, as_of)
            totals.read += len(keys)
            totals.watermark = mark
            if await self._after_page(repo, totals, counts, on_page, as_of, markets):
                return False
        return True

    async def _commit(self, sources: list[pipeline.Source], placed: list[dict[int, Place]],
                      held: Position | None, totals: PassTotals, as_of: dt.date) -> None:  # fmt: skip
        """One run a page, as `data import --follow` runs one a commit: each transaction is
        a load of its own (with its watermark), and the estimates are computed once for them
        all; the touched ZIP codes' statistics every MARKETS_EVERY seconds and at the end of
        the pass."""
        totals.rejects = []
        if sources:
            outcome = await pipeline.run(self.db, sources, as_of, refit_share=math.inf,
                                         defer_markets=True, blocks=self.blocks)  # fmt: skip
            for report, places in zip(outcome.reports, placed, strict=True):
                totals.inserted += report.inserted
                totals.updated += report.updated
                totals.unchanged += report.unchanged
                totals.removed += report.removed
                totals.rejects += _new_rejects(report, places, held)
        totals.rejected += len(totals.rejects)
        totals.pages += 1

    async def _after_page(self, repo: SourceRepository, totals: PassTotals,
                          counts: dict[str, int], on_page: OnPage | None, as_of: dt.date,
                          markets: _Markets) -> bool:  # fmt: skip
        """The requests' counts, the statistics when due, the progress; True to stop."""
        await repo.add_requests(self.name, counts)
        counts.clear()
        if markets.due():
            await pipeline.finish_markets(self.db, as_of)
        if on_page is not None:
            on_page(totals)
        return self.should_stop()

    def _source(
        self, repo: SourceRepository, items: list[Item], mark: Watermark,
        places: dict[int, Place], held: Position | None,
    ) -> pipeline.Source:  # fmt: skip
        """One transaction's load: the watermark and the source's totals move in it."""
        name = self.name

        async def committed(report: LoadReport) -> None:
            rejects = len(_new_rejects(report, places, held))
            await repo.advance(name, mark, report.inserted + report.updated, rejects,
                               report.removed, utc_now())  # fmt: skip

        return pipeline.Source(name, "replicate", items, len(items), False,
                               committed=committed, listing_feed=True)  # fmt: skip


def _counter(counts: dict[str, int]) -> Callable[[str], None]:
    """Counts a pass's requests by status into `counts`."""

    def count(status: str) -> None:
        counts[status] = counts.get(status, 0) + 1

    return count


@dataclass(slots=True)
class _Markets:
    """When a pass's next recompute of its touched ZIP codes' statistics is due."""

    last: float = field(default_factory=time.monotonic)

    def due(self) -> bool:
        if time.monotonic() - self.last < MARKETS_EVERY:
            return False
        self.last = time.monotonic()
        return True


def _new_rejects(
    report: LoadReport, places: dict[int, Place], held: Position | None
) -> list[Reject]:
    """The rejects of records after the watermark the pass started from: one re-read in the
    overlap was counted when first read."""
    return [r for r in report.rejects if _after(places.get(r.line, (None, None)), held)]


def _after(place: Place, held: Position | None) -> bool:
    position = _position(*place)
    return held is None or position is None or position > held


def _later(mark: Watermark, places: Sequence[Place]) -> Watermark:
    """The watermark after these records: the latest position of those it has and them."""
    best = _position(mark.timestamp, mark.key)
    for stamp, key in places:
        position = _position(stamp, key)
        if position is not None and (best is None or position > best):
            best, mark = position, Watermark(stamp, key)
    return mark


def _transactions(
    entries: list[tuple[Item, Place]],
) -> Iterator[list[tuple[Item, Place]]]:
    """At most TRANSACTION_RECORDS a transaction, each id once (a later version of a record
    goes in the next one, so the versions apply in order)."""
    batch: list[tuple[Item, Place]] = []
    ids: set[str] = set()
    for entry in entries:
        item = entry[0][1]
        record_id = item.id if isinstance(item, PropertyDetail | Removal) else None
        if len(batch) >= TRANSACTION_RECORDS or (record_id is not None and record_id in ids):
            yield batch
            batch, ids = [], set()
        batch.append(entry)
        if record_id is not None:
            ids.add(record_id)
    if batch:
        yield batch


def describe(source: Source) -> dict[str, Any]:
    """A source as `sources list` shows it: never a secret (only variables' names)."""
    auth = source.config.auth
    credentials = {"none": "none", "token": f"bearer token from ${auth.token_env}",
                   "oauth": f"OAuth client {auth.client_id}, secret from ${auth.secret_env}"}  # fmt: skip
    return {
        "name": source.config.name, "url": source.config.url,
        "credentials": credentials[auth.kind], "filter": source.config.filter,
        "follows": _follows(source),
        "watermark": source.watermark.shown(), "lastPass": source.last_pass_at,
        "records": source.records, "removed": source.removed, "rejects": source.rejects,
        "state": source.state if source.error is None else f"{source.state}: {source.error}",
    }  # fmt: skip


def _follows(source: Source) -> str:
    """How a source is followed, as `sources list` and `sources set` say it."""
    events = source.config.events_url
    if events is None:
        return "ModificationTimestamp"
    if source.watermark.sequence is None:
        return f"{events} (its next pass catches up by timestamp first)"
    return events

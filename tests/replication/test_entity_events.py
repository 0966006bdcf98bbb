"""`data replicate` of a source that follows the feed's EntityEvent log (RESO RCP-27), against
the real OData 4 server (SAP CAP from npm) serving both resources, on both stores: a first
pass that catches up by timestamp from a noted event, a pass with no new event, edits, a
closing, a record deleted upstream, a record named twice in a page, another resource's
events, an event pass and a catch-up pass stopped after their first page and resumed with
exact counts, a source switched between timestamps and events, and the CLI's checks of the
events URL."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from propdata.errors import InvalidParameter
from propdata.kit.db import Database
from propdata.replication.repository import LeaseHeld, SourceRepository
from propdata.replication.schemas import check_events_url
from propdata.replication.service import PassTotals, Replicator, SourceService
from tests.replication.odata_server import ODataServer, serving
from tests.replication.test_replicate import AS_OF, add, feed, ids, listings, replicate, stamp

COUNT = 24


@pytest.fixture
async def db(empty_db: Database) -> AsyncIterator[Database]:
    yield empty_db


@pytest.fixture(params=[3, 1_000], ids=["nextLink", "sequence-paging"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ODataServer]:
    """max_page 3 < the page size 5: the server pages by nextLink; 1,000: the client pages
    by the sequence. The log: an event for each listing, and one for another resource."""
    with serving(tmp_path, listings(COUNT), max_page=request.param) as running:
        for i in range(1, COUNT + 1):
            running.event(10 * i, f"L{i:03d}")
        running.event(10 * COUNT + 5, "M001", resource="Member")
        yield running


async def sources(db: Database, server: ODataServer) -> None:
    await add(db, server.url, events_url=server.events_url, filter="City eq 'Ames'")


async def following_events(db: Database, after: int) -> None:
    """The source follows the events after `after`, as after its catch-up pass."""
    repo = SourceRepository(db)
    await repo.note_events_from("mls", after)
    await repo.follow_events("mls")


async def test_a_pass_then_edits_closings_deletes_and_no_change(
    db: Database, server: ODataServer
) -> None:
    await sources(db, server)
    first = await replicate(db)  # a catch-up by timestamp, then the events after the note
    # L007 is a reject; L009 is outside the filter, so the feed does not return it
    assert (first.read, first.inserted, first.rejected, first.removed) == (COUNT - 1, COUNT - 2,
                                                                           1, 0)  # fmt: skip
    assert "mls-L007" not in await ids(db) and "mls-L009" not in await ids(db)
    source = await SourceService(db).get("mls")
    assert source.watermark.sequence == 10 * COUNT  # the newest Property event, noted first
    assert source.watermark.timestamp is not None and source.events_from is None
    assert (source.records, source.rejects, source.state) == (COUNT - 2, 1, "caught up")
    changes = await feed(db)

    again = await replicate(db)  # no event after the watermark: nothing is asked or written
    assert (again.read, again.inserted, again.updated, again.removed) == (0, 0, 0, 0)
    assert await feed(db) == changes

    later = stamp(COUNT)
    server.patch("L002", ListPrice=95_000, ModificationTimestamp=later)
    server.patch("L003", StandardStatus="Closed", CloseDate="2024-05-31", ClosePrice=120_000,
                 DaysOnMarket=4, ModificationTimestamp=later)  # fmt: skip
    server.delete("L004")
    for sequence, key in [(1001, "L002"), (1002, "L003"), (1003, "L004"), (1004, "L005"),
                          (1005, "L005"), (1006, "L001")]:  # fmt: skip
        server.event(sequence, key)
    edits = await replicate(db)
    assert (edits.read, edits.updated, edits.removed, edits.unchanged) == (5, 2, 1, 2)
    assert (await feed(db))[len(changes) :] == [
        ("mls-L002", "updated"), ("mls-L003", "updated"), ("mls-L004", "removed"),
    ]  # fmt: skip
    sold = await db.fetch_one(
        "SELECT status, last_sale_price, last_sale_date FROM properties WHERE id = 'mls-L003'"
    )
    assert sold is not None and tuple(sold) == ("recentlySold", 120_000, "2024-05-31")
    source = await SourceService(db).get("mls")
    assert source.watermark.sequence == 1006
    assert (source.records, source.removed, source.rejects) == (COUNT, 1, 1)


async def test_a_stopped_pass_resumes_from_its_sequence(db: Database, server: ODataServer) -> None:
    await sources(db, server)
    await following_events(db, 0)  # every event of the log, from the first
    pages: list[int] = []
    stopped = PassTotals()
    replicator = Replicator(db, "mls", {}, lambda: AS_OF, should_stop=lambda: bool(pages))
    assert await replicator.run_pass(stopped, lambda t: pages.append(t.read)) is False
    held = (await SourceService(db).get("mls")).watermark.sequence
    assert held is not None and held == 10 * stopped.read  # one event a record, 10 apart
    rest = await replicate(db)
    assert stopped.read + rest.read == COUNT
    assert stopped.inserted + rest.inserted == COUNT - 2
    assert len(await ids(db)) == COUNT - 2
    assert [change for _, change in await feed(db)] == ["created"] * (COUNT - 2)


def test_the_events_url_is_on_the_host_of_the_source() -> None:
    url = "https://feed.example/odata/Property"
    assert check_events_url("https://feed.example/odata/EntityEvent", url)
    for bad in ("https://elsewhere.example/odata/EntityEvent",
                "https://feed.example:8443/odata/EntityEvent", "http://feed.example/EntityEvent",
                "not a url"):  # fmt: skip
        with pytest.raises(InvalidParameter) as caught:
            check_events_url(bad, url)
        assert caught.value.parameter == "--entity-events"


async def test_a_stopped_catch_up_keeps_the_event_it_noted(
    db: Database, server: ODataServer
) -> None:
    """Killed during its catch-up and started again, a source follows the events after the
    one it noted first, not after the newest then: a record deleted upstream between the
    two starts (which no timestamp pass can see) still leaves the store."""
    await sources(db, server)
    pages: list[int] = []
    stopped = PassTotals()
    replicator = Replicator(db, "mls", {}, lambda: AS_OF, should_stop=lambda: bool(pages))
    assert await replicator.run_pass(stopped, lambda t: pages.append(t.read)) is False
    source = await SourceService(db).get("mls")
    assert (source.events_from, source.watermark.sequence) == (10 * COUNT, None)
    assert "mls-L002" in await ids(db)  # the first page's
    server.delete("L002")
    server.event(10 * COUNT + 10, "L002")
    rest = await replicate(db)
    assert stopped.inserted + rest.inserted == COUNT - 2
    assert rest.removed == 1 and "mls-L002" not in await ids(db)
    source = await SourceService(db).get("mls")
    assert (source.events_from, source.watermark.sequence) == (None, 10 * COUNT + 10)
    assert (source.records, source.removed) == (COUNT - 2, 1)


async def test_a_source_switches_between_timestamps_and_events(
    db: Database, server: ODataServer
) -> None:
    """A timestamp source told to follow events catches up from its timestamp watermark and
    then follows them (a delete reaches it); told to follow timestamps again, it goes on from
    its timestamp watermark, which its event passes kept. Its records stay throughout."""
    await add(db, server.url, filter="City eq 'Ames'")
    first = await replicate(db)
    assert first.inserted == COUNT - 2
    service = SourceService(db)
    held = (await service.get("mls")).watermark
    changed = await service.change("mls", server.events_url)
    assert changed.config.events_url == server.events_url
    assert changed.watermark == held and changed.events_from is None
    caught = await replicate(db)  # the overlap again by timestamp, then the events after the note
    assert (caught.inserted, caught.updated, caught.removed) == (0, 0, 0)
    assert (await service.get("mls")).watermark.sequence == 10 * COUNT
    server.delete("L004")
    server.event(10 * COUNT + 10, "L004")
    followed = await replicate(db)
    assert (followed.read, followed.removed) == (1, 1) and "mls-L004" not in await ids(db)
    same = await service.change("mls", server.events_url)  # the same log: nothing changes
    assert same.watermark.sequence == 10 * COUNT + 10

    back = await service.change("mls", None, requests_per_hour=7_200)
    assert back.config.events_url is None and back.config.requests_per_hour == 7_200
    assert back.watermark == held  # the timestamp watermark the event passes kept
    server.patch("L005", ListPrice=1_000, ModificationTimestamp=stamp(COUNT))
    timed = await replicate(db)
    assert timed.updated == 1 and (await service.get("mls")).watermark.sequence is None
    assert len(await ids(db)) == COUNT - 3  # its records stayed, but the one deleted


async def test_a_source_being_replicated_is_not_changed(db: Database, server: ODataServer) -> None:
    await sources(db, server)
    async with SourceRepository(db).lease("mls"):
        with pytest.raises(LeaseHeld):
            await SourceService(db).change("mls", None)
    assert (await SourceService(db).get("mls")).config.events_url == server.events_url

"""The event producer on both stores: each event type from real loads through the pipeline,
exactly once, capped by plan, pruned after 30 days."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from propdata.accounts.keys import CustomLimits, KeyCommandError, KeyService
from propdata.accounts.repository import AccountRepository
from propdata.accounts.schemas import Account
from propdata.events.produce import KEEP_DAYS, produce, prune
from propdata.events.repository import (
    EventRepository,
    ImageRepository,
    NewEvent,
    ProducerRepository,
)
from propdata.kit.clock import iso_ms
from propdata.kit.db import Database, connect
from propdata.migrations.schema import migrate, migrate_accounts
from propdata.properties.schemas import PropertyDetail, TaxRecord
from propdata.saved_searches.repository import SavedSearchRepository, SavedSearchRow, WatchedRecords
from tests.conftest import FakeClock, Store, drop_store, new_store
from tests.factories import event, import_records, record

OWNER = "key:k-test"


@dataclass
class Stores:
    store: Store
    data: Database
    accounts: Database

    async def load(self, records: Iterable[PropertyDetail], *, replace: bool = False) -> None:
        outcome = await import_records(self.data, list(records), replace=replace)
        assert not outcome.reports[0].rejects, outcome.reports[0].rejects

    async def watch(self, name: str, filters: dict[str, Any], ids: list[str] | None = None,
                    owner: str = OWNER) -> str:  # fmt: skip
        search_id = f"srch_{name}"
        await SavedSearchRepository(self.accounts).insert(SavedSearchRow(
            search_id, owner, name, json.dumps(filters), json.dumps(ids or []),
            "2026-11-21T00:00:00.000Z"))  # fmt: skip
        await WatchedRecords(self.data).set_watching(True)
        return search_id

    async def produce(self, **kw: Any) -> int:
        return await produce(self.data, self.accounts, **kw)

    async def events(self, owner: str = OWNER) -> list[dict[str, Any]]:
        rows = await EventRepository(self.accounts).page(owner, 0, 100_000)
        return [json.loads(row.body) for row in rows]

    @staticmethod
    @contextlib.asynccontextmanager
    async def opened(backend: str, folder: Path) -> AsyncIterator[Stores]:
        """The data and accounts stores as a server has them: one PostgreSQL database, or
        two SQLite files; dropped afterwards."""
        made = await new_store(backend, folder)
        data = await connect(made.url)
        await migrate(data)
        accounts = data
        if made.schema is None:
            accounts = await connect(str(folder / "propdata-accounts.db"))
        await migrate_accounts(accounts)
        try:
            yield Stores(made, data, accounts)
        finally:
            if accounts is not data:
                await accounts.close()
            await data.close()
            await drop_store(made)


@pytest.fixture
async def stores(backend: str, tmp_path: Path) -> AsyncIterator[Stores]:
    async with Stores.opened(backend, tmp_path) as made:
        yield made


def ames(pid: str, **overrides: Any) -> PropertyDetail:
    return record(pid, **overrides)


def kinds(events: list[dict[str, Any]], pid: str | None = None) -> list[str]:
    return [
        e["type"] for e in events if pid is None or e["data"].get("property", {}).get("id") == pid
    ]


async def test_a_new_listing_enters_the_search_and_is_listed(stores: Stores) -> None:
    search = await stores.watch("ames", {"city": "Ames", "state": "IA"})
    await stores.load([ames("p-1"), ames("p-2", address={"city": "Boone", "zip_code": "50036"})])
    assert await stores.produce() >= 2
    events = await stores.events()
    assert kinds(events, "p-1") == ["search.entered", "property.listed"]
    assert kinds(events, "p-2") == []  # Boone: never in the search
    entered = events[0]
    assert entered["id"].startswith("evt_") and len(entered["id"]) == 30
    assert entered["timestamp"].endswith("Z")
    data = entered["data"]
    assert data["searchId"] == search and data["searchName"] == "ames"
    assert data["property"]["id"] == "p-1" and data["property"]["address"]["city"] == "Ames"
    assert data["previous"] == {} and data["changes"] == []
    assert [e["sequence"] for e in events] == sorted(e["sequence"] for e in events)
    rows = await EventRepository(stores.accounts).page(OWNER, 0, 100)
    assert [r.seq for r in rows] == [e["sequence"] for e in events]
    assert not await ImageRepository(stores.data).pending()  # read, then deleted
    assert await stores.produce() == 0  # nothing twice


async def loaded(stores: Stores, *records: PropertyDetail) -> int:
    """Load `records` and produce their events; the number of events already held."""
    await stores.load(records)
    await stores.produce()
    return len(await stores.events())


async def test_a_price_cut_is_price_changed(stores: Stores) -> None:
    await stores.watch("ames", {"city": "Ames"})
    start = await loaded(stores, ames("p-1"))
    history = [
        event("2026-11-10", "priceChange", 230_000),
        event("2026-10-01", "listedForSale", 250_000),
    ]
    await stores.load([ames("p-1", list_price=230_000, price_history=history)])
    await stores.produce()
    new = (await stores.events())[start:]
    assert "property.priceChanged" in kinds(new)
    changed = next(e for e in new if e["type"] == "property.priceChanged")
    assert changed["data"]["property"]["listPrice"] == 230_000
    # The fields that follow from the cut (lastUpdated, priceHistory, previousListPrice,
    # lastPriceChangeDate, pricePerSquareFoot) are not named: only what counts.
    assert changed["data"]["changes"] == ["listPrice"]
    assert changed["data"]["previous"] == {"listPrice": 250_000}
    assert "search.entered" not in kinds(new) and "property.statusChanged" not in kinds(new)


async def test_a_sale_is_status_changed_and_can_leave_a_search(stores: Stores) -> None:
    await stores.watch("for sale", {"city": "Ames", "status": "forSale"})
    start = await loaded(stores, ames("p-1"))
    sold = ames("p-1", status="recentlySold", list_price=None,
                price_history=[event("2026-11-15", "sold", 248_000, "publicRecord"),
                               event("2026-10-01", "listedForSale", 250_000)])  # fmt: skip
    await stores.load([sold])
    await stores.produce()
    new = (await stores.events())[start:]
    assert kinds(new)[:2] == ["search.exited", "property.statusChanged"]
    exited = new[0]["data"]
    assert exited["property"]["status"] == "recentlySold"
    assert exited["previous"]["status"] == "forSale"


async def test_an_estimate_that_moves_5_percent_is_estimate_changed(stores: Stores) -> None:
    await stores.watch("ames", {"city": "Ames"})
    start = await loaded(stores, ames("p-1"))
    value = 200_000
    for share, produced in ((None, False), (0.02, False), (0.06, True), (-0.05, True)):
        if share is not None:
            value = round(value * (1 + share))
        async with stores.data.transaction():  # as the valuation rebuild writes them
            await stores.data.execute(
                "UPDATE properties SET value_value = ?, value_low = ?, value_high = ?,"
                " value_as_of = '2026-11-21' WHERE id = 'p-1'",
                (value, value - 1, value + 1),
            )
        await stores.produce()
        new = (await stores.events())[start:]
        assert ("property.estimateChanged" in kinds(new)) is produced, (share, new)
        assert "property.updated" not in kinds(new)  # an estimate is no other field
        start += len(new)


async def test_any_other_served_field_is_updated(stores: Stores) -> None:
    await stores.watch("ames", {"city": "Ames"})
    start = await loaded(stores, ames("p-1"))
    await stores.load([ames("p-1", bedrooms_total=4)])
    await stores.produce()
    new = (await stores.events())[start:]
    assert kinds(new) == ["property.updated"]
    assert new[0]["data"]["changes"] == ["bedroomsTotal"]
    assert new[0]["data"]["previous"]["bedroomsTotal"] == 3
    assert new[0]["data"]["property"]["bedroomsTotal"] == 4


async def test_a_tax_history_change_alone_is_updated_and_rides_along_otherwise(
    stores: Stores,
) -> None:
    """The tax history is a served field held apart from the row (its own images): a new
    tax year alone is `property.updated` naming `taxHistory`; a price cut that leaves the
    taxes as they were does not name them."""
    await stores.watch("ames", {"city": "Ames"})
    start = await loaded(stores, ames("p-1"))
    taxes = [TaxRecord(year=2026, tax_paid=3_300, assessed_value=220_000),
             TaxRecord(year=2025, tax_paid=3_100, assessed_value=210_000)]  # fmt: skip
    await stores.load([ames("p-1", tax_history=taxes)])
    await stores.produce()
    await stores.load([ames("p-1", tax_history=taxes, list_price=240_000)])
    await stores.produce()
    new = (await stores.events())[start:]
    assert kinds(new) == ["property.updated", "property.priceChanged"]
    assert new[0]["data"]["changes"] == ["taxHistory"]
    assert new[0]["data"]["previous"]["taxHistory"] == [
        {"year": 2025, "taxPaid": 3_100, "assessedValue": 210_000}
    ]
    assert "taxHistory" not in new[1]["data"]["changes"]


async def _updated_in_place(stores: Stores, assignments: str) -> list[dict[str, Any]]:
    """The events of an UPDATE of watched `p-1` (5 days on the market) that sets
    `assignments` and a later last_updated, as a load would not write it."""
    await stores.watch("ames", {"city": "Ames"})
    start = await loaded(stores, ames("p-1", days_on_market=5))
    async with stores.data.transaction():
        await stores.data.execute(
            f"UPDATE properties SET {assignments}, last_updated = '2026-11-22T00:00:00Z'"
            " WHERE id = 'p-1'"
        )
    await stores.produce()
    return (await stores.events())[start:]


async def test_derived_fields_and_days_on_market_growth_alone_produce_nothing(
    stores: Stores,
) -> None:
    changed = "days_on_market = days_on_market + 1, original_list_price = 260000"
    assert await _updated_in_place(stores, changed) == []


async def test_days_on_market_growing_beside_a_change_is_not_named(stores: Stores) -> None:
    (updated,) = await _updated_in_place(stores, "days_on_market = 6, bedrooms = 4")
    assert updated["type"] == "property.updated"
    assert updated["data"]["changes"] == ["bedroomsTotal"]
    assert updated["data"]["previous"] == {"bedroomsTotal": 3}


async def test_growth_past_max_days_on_market_exits_the_search(stores: Stores) -> None:
    await stores.watch("fresh", {"city": "Ames", "maxDaysOnMarket": 5})
    start = await loaded(stores, ames("p-1", days_on_market=5))
    async with stores.data.transaction():
        await stores.data.execute("UPDATE properties SET days_on_market = 6 WHERE id = 'p-1'")
    await stores.produce()
    assert kinds((await stores.events())[start:]) == ["search.exited"]


async def test_a_removed_record_exits_with_the_record_it_was(stores: Stores) -> None:
    await stores.watch("ames", {"city": "Ames"})
    start = await loaded(stores, ames("p-1"), ames("p-2", bedrooms_total=5))
    await stores.load([ames("p-1")], replace=True)  # p-2 leaves the store
    await stores.produce()
    new = (await stores.events())[start:]
    assert kinds(new) == ["search.exited"]
    assert new[0]["data"]["property"]["id"] == "p-2"
    assert new[0]["data"]["property"]["bedroomsTotal"] == 5


async def test_watched_ids_only(stores: Stores) -> None:
    await stores.watch("one", {}, ids=["p-2"])
    await loaded(stores, ames("p-1"), ames("p-2"))
    assert {e["data"]["property"]["id"] for e in await stores.events()} == {"p-2"}


async def test_a_market_named_by_a_search_is_market_updated(stores: Stores) -> None:
    search = await stores.watch("zip", {"zipCode": "50010"})
    await stores.watch("other zip", {"zipCode": "10001"})
    await stores.load([ames("p-1"), ames("p-2", list_price=300_000)])
    await stores.produce()
    markets = [e for e in await stores.events() if e["type"] == "market.updated"]
    assert [e["data"]["searchId"] for e in markets] == [search]
    data = markets[0]["data"]
    assert data["zipCode"] == "50010" and data["snapshot"]["activeListings"] == 2
    assert set(data) == {"searchId", "searchName", "zipCode", "snapshot", "previous"}


async def test_a_rolled_back_load_produces_nothing(stores: Stores) -> None:
    await stores.watch("ames", {"city": "Ames"})
    start = await loaded(stores, ames("p-1"))
    with pytest.raises(RuntimeError):
        async with stores.data.transaction():
            await stores.data.execute("UPDATE properties SET bedrooms = 9 WHERE id = 'p-1'")
            raise RuntimeError("the load fails")
    assert not await ImageRepository(stores.data).pending()
    assert await stores.produce() == 0
    assert len(await stores.events()) == start


async def test_no_saved_search_no_images(stores: Stores) -> None:
    await stores.load([ames("p-1")])
    assert not await ImageRepository(stores.data).pending()


async def test_producers_racing_produce_each_event_once(stores: Stores) -> None:
    await stores.watch("ames", {"city": "Ames"})
    await stores.load([ames(f"p-{n}", living_area=1_000 + 37 * n, bedrooms_total=2 + n % 3,
                            year_built=1950 + n, list_price=200_000 + 4_000 * n)
                       for n in range(30)])  # fmt: skip
    others = [await connect(stores.store.url) for _ in range(3)]
    try:
        if stores.accounts is stores.data:
            pairs = [(db, db) for db in others]
        else:
            pairs = [(db, stores.accounts) for db in others]
        counts = await asyncio.gather(*(produce(d, a, batch=7) for d, a in pairs))
    finally:
        for db in others:
            await db.close()
    events = await stores.events()
    # Each pass claims the next 7 images whoever runs it: a record's insert and its
    # estimates' update may fall in two passes (entered and listed, then estimateChanged).
    assert sum(counts) == len(events) >= 60
    assert len({e["id"] for e in events}) == len(events)
    made = [(e["data"]["property"]["id"], e["type"]) for e in events]
    assert len(set(made)) == len(made)  # no change twice
    assert sorted(pid for pid, kind in made if kind == "search.entered") == sorted(
        f"p-{n}" for n in range(30)
    )
    assert [e["sequence"] for e in events] == sorted(e["sequence"] for e in events)


async def test_past_the_daily_cap_none_is_produced_and_the_next_says_how_many(
    stores: Stores,
) -> None:
    clock = FakeClock()
    await stores.watch("ames", {"city": "Ames"})  # owner without a key: the Free plan, 1,000
    minute = int(clock() // 60)
    await ProducerRepository(stores.accounts).count_produced(minute - 10, {OWNER: 999})
    await stores.load([ames("p-1"), ames("p-2")])  # four events: one fits
    assert await stores.produce(clock=clock) == 1
    assert "dropped" not in (await stores.events())[0]["data"]
    clock.advance(24 * 3600 - 9 * 60)  # the 999 have left the window
    await stores.load([ames("p-1", bedrooms_total=4)])
    assert await stores.produce(clock=clock) == 1
    last = (await stores.events())[-1]
    assert last["type"] == "property.updated" and last["data"]["dropped"] == 3
    await stores.load([ames("p-1", bedrooms_total=5)])
    await stores.produce(clock=clock)
    assert "dropped" not in (await stores.events())[-1]["data"]


async def test_an_operator_s_own_cap_on_an_enterprise_key_bounds_its_owner_s_events(
    stores: Stores,
) -> None:
    keys = KeyService(stores.accounts)
    capped, _ = await keys.create("enterprise", None, CustomLimits(events_per_day=2))
    owner = f"key:{capped.id}"
    await stores.watch("ames", {"city": "Ames"}, owner=owner)
    await stores.load([ames("p-1"), ames("p-2")])  # four events: two fit
    assert await stores.produce() == 2
    await keys.set_plan(capped.id, "enterprise", CustomLimits(events_per_day=10))
    await stores.load([ames("p-1", bedrooms_total=4)])
    assert await stores.produce() == 1
    last = (await stores.events(owner))[-1]
    assert last["type"] == "property.updated" and last["data"]["dropped"] == 2


async def test_an_account_s_limits_are_the_largest_among_its_keys_on_its_plan(
    stores: Stores,
) -> None:
    keys = KeyService(stores.accounts)
    await AccountRepository(stores.accounts).insert(Account(
        "acct-1", "ops@example.com", "x", "active", False, None, "2026-11-01T00:00:00Z"))  # fmt: skip

    async def cap() -> int | None:
        by_account, _ = await keys.owners_plans(["acct-1"], [])
        return by_account["acct-1"].events_per_day

    async def searches_and_hooks() -> tuple[int, int]:
        by_account, _ = await keys.owners_plans(["acct-1"], [])
        return by_account["acct-1"].saved_searches, by_account["acct-1"].webhook_endpoints

    assert await cap() == 1_000  # no key: the Free plan's
    pro, _ = await keys.create("pro", None, CustomLimits(), account_id="acct-1")
    assert await cap() == 1_000_000
    five, _ = await keys.create(
        "enterprise",
        None,
        CustomLimits(saved_searches=20, webhook_endpoints=3, events_per_day=5),
        account_id="acct-1",
    )
    await keys.create("enterprise", None, CustomLimits(events_per_day=50), account_id="acct-1")
    assert await cap() == 50  # the Enterprise keys' largest, not the Pro key's
    assert await searches_and_hooks() == (10_000, 100)  # the other key has the plan's
    await keys.set_plan(
        five.id, "enterprise", CustomLimits(saved_searches=20_000, events_per_day=5)
    )
    assert await searches_and_hooks() == (20_000, 100)
    plain, _ = await keys.create("enterprise", None, CustomLimits(), account_id="acct-1")
    assert await cap() is None  # an Enterprise key of the plan's own: unlimited
    await keys.revoke(plain.id)
    assert await cap() == 50
    listed = {k.id: k.events_per_day for k in await keys.all()}
    assert listed[five.id] == 5 and listed[pro.id] == 1_000_000 and listed[plain.id] is None
    with pytest.raises(KeyCommandError, match="enterprise plan only"):
        await keys.create("pro", None, CustomLimits(events_per_day=5))
    with pytest.raises(KeyCommandError, match="--events-per-day must be at least 1"):
        await keys.create("enterprise", None, CustomLimits(events_per_day=0))
    await keys.set_plan(five.id, "pro", CustomLimits())  # the key's own cap goes with its plan
    assert {k.id: k.events_per_day for k in await keys.all()}[five.id] == 1_000_000


async def test_events_older_than_30_days_are_pruned_once_a_day(stores: Stores) -> None:
    clock = FakeClock()
    old, recent = iso_ms(clock() - (KEEP_DAYS + 1) * 86_400), iso_ms(clock() - 86_400)
    repo = EventRepository(stores.accounts)
    async with stores.accounts.transaction():
        await repo.insert_events([
            NewEvent(f"evt_{n}", OWNER, "property.updated", "srch_a", None, at, "{}")
            for n, at in enumerate([old, old, recent])
        ])  # fmt: skip
    await prune(stores.accounts, clock)
    assert [r.id for r in await repo.page(OWNER, 0, 10)] == ["evt_2"]
    async with stores.accounts.transaction():
        await repo.insert_events([NewEvent("evt_3", OWNER, "property.updated", "srch_a", None,
                                           old, "{}")])  # fmt: skip
    await prune(stores.accounts, clock)  # the same day: not again
    assert len(await repo.page(OWNER, 0, 10)) == 2
    clock.advance(86_400)
    await prune(stores.accounts, clock)  # the newest is kept whatever its age (numbering)
    assert [r.id for r in await repo.page(OWNER, 0, 10)] == ["evt_2", "evt_3"]


async def test_a_disabled_account_or_a_revoked_key_gets_no_more_events(stores: Stores) -> None:
    keys = KeyService(stores.accounts)
    await AccountRepository(stores.accounts).insert(Account(
        "acct-off", "off@example.com", "x", "active", False, None, "2026-11-01T00:00:00Z"))  # fmt: skip
    await keys.create("developer", None, CustomLimits(), account_id="acct-off")
    revoked, _ = await keys.create("developer", None, CustomLimits())
    kept, _ = await keys.create("developer", None, CustomLimits())
    owners = ["acct:acct-off", f"key:{revoked.id}", f"key:{kept.id}"]
    for n, owner in enumerate(owners):
        await stores.watch(f"ames{n}", {"city": "Ames"}, owner=owner)
    await stores.load([ames("p-1")])
    await stores.produce()
    assert [len(await stores.events(owner)) for owner in owners] == [2, 2, 2]
    await AccountRepository(stores.accounts).set_status("acct-off", "disabled")
    await keys.revoke(revoked.id)
    await stores.load([ames("p-1", bedrooms_total=4)])
    await stores.produce()
    assert [len(await stores.events(owner)) for owner in owners] == [2, 2, 3]

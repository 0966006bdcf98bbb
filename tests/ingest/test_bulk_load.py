"""The fast load path stores exactly what the plain one stores, and checks exactly as much.

A bulk load drops the secondary indexes and builds them again before the commit, skips the
lookup of stored records when the store was empty, writes multi-row INSERTs and passes
plainly valid records by cheaper tests. Each is compared here with the path it replaces.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import msgspec
import pytest

from propdata.ingest import loader, synthetic
from propdata.ingest.loader import Item, load
from propdata.kit.db import Database, SQLiteDatabase
from propdata.kit.db import sqlite as kit_sqlite
from propdata.migrations import layout
from propdata.migrations.transfer import _digest
from propdata.properties import lifecycle
from propdata.properties.repository import PropertyRepository
from propdata.properties.schemas import EVENTS, STATUSES, PriceEvent, PropertyDetail
from tests.conftest import Store, drop_store, new_store, open_db
from tests.factories import event as make_event

AS_OF = dt.date(2026, 11, 21)
DATA_TABLES = (("properties", ("id",)), ("property_histories", ("property_id",)))


def synthetic_items(n: int, seed: int = 3, prefix: str = "") -> list[Item]:
    """n synthetic records; a `prefix` keeps their ids apart from another set's."""
    return [
        (line, msgspec.structs.replace(r, id=prefix + r.id) if prefix else r)
        for line, r in synthetic.generate(n, seed, AS_OF)
    ]


async def fingerprint(db: Database) -> dict[str, Any]:
    """Row counts and checksums of the property tables, their indexes and statistics."""
    out: dict[str, Any] = {}
    for table, _ in DATA_TABLES:
        key, rest = await layout.columns(db, table)
        out[table] = await _digest(db, table, key, key + rest)
    if db.dialect == "sqlite":
        out["indexes"] = await db.fetch_all(
            "SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index'"
            " ORDER BY tbl_name, name"
        )
        out["stat1"] = await db.fetch_all("SELECT * FROM sqlite_stat1 ORDER BY 1, 2, 3")
        out["integrity"] = await db.fetch_all("PRAGMA integrity_check")
    return out


async def load_into(
    backend: str, folder: Path, items: Sequence[Item], *, plain: bool, mp: pytest.MonkeyPatch
) -> dict[str, Any]:
    """Load `items` into a fresh store by the plain path (indexes kept, a lookup per batch,
    one-row INSERTs) or the bulk one (indexes deferred after the first batch)."""
    store: Store = await new_store(backend, folder)
    try:
        db = await open_db(store)
        with mp.context() as m:
            if plain:
                m.setattr(loader, "BULK_ROWS", 10**9)
                m.setattr(kit_sqlite, "BULK_PARAMS", 1)

                async def one(self: PropertyRepository, origin: str | None = None) -> int:
                    return 1  # as if the store held a record: look every batch up

                m.setattr(PropertyRepository, "count", one)
            else:
                m.setattr(loader, "BULK_ROWS", 0)
            report = await load(db, items, origin="synthetic", as_of=AS_OF)
        assert not report.rejects
        assert report.inserted == len(items)
        printed = await fingerprint(db)
        await db.close()
        return printed
    finally:
        await drop_store(store)


async def test_the_bulk_path_stores_the_same_tables(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    items = synthetic_items(2_500)  # two batches: one before the indexes go, one after
    plain = await load_into(backend, tmp_path / "plain", items, plain=True, mp=monkeypatch)
    bulk = await load_into(backend, tmp_path / "bulk", items, plain=False, mp=monkeypatch)
    assert plain == bulk
    assert plain["properties"][0] == 2_500
    if backend == "embedded":
        assert plain["integrity"] == [("ok",)]
        assert any(name == "ix_prop_zip" for name, _, _ in plain["indexes"])


async def index_sql(db: Database) -> list[tuple[Any, ...]]:
    """The property tables' indexes in the order they were made (which decides ties in
    SQLite's planner)."""
    return await db.fetch_all(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index'"
        " AND tbl_name IN ('properties', 'property_histories') ORDER BY rowid"
    )


async def test_a_load_into_a_filled_store_defers_once_it_is_as_big(
    db: SQLiteDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = await load(db, synthetic_items(60, seed=1), origin="import", as_of=AS_OF)
    assert first.inserted == 60  # loaded < BULK_ROWS: the indexes were never dropped
    before = await index_sql(db)
    monkeypatch.setattr(loader, "BATCH", 25)
    monkeypatch.setattr(loader, "BULK_ROWS", 0)
    seen: list[int] = []
    defer = PropertyRepository.defer_indexes

    async def spy(self: PropertyRepository) -> list[str]:
        seen.append(await self.count())
        return await defer(self)

    monkeypatch.setattr(PropertyRepository, "defer_indexes", spy)
    report = await load(db, synthetic_items(150, 2, "b"), origin="synthetic", as_of=AS_OF)
    assert report.inserted == 150
    assert seen == [60 + 75]  # after the third batch of 25: 75 written >= 60 held
    assert await index_sql(db) == before  # the same indexes, in the same order
    plan = await db.fetch_all("EXPLAIN QUERY PLAN SELECT id FROM properties WHERE zip_code = '1'")
    assert "ix_prop_zip" in str(plan)


async def test_a_load_of_a_tenth_of_the_store_refreshes_the_planner_statistics(
    db: SQLiteDatabase,
) -> None:
    """ANALYZE_SHARE of the records held before the load, counted or bounded."""
    first = await load(db, synthetic_items(100, seed=1), origin="import", as_of=AS_OF)
    assert first.analyzed  # into an empty store
    small = await load(db, synthetic_items(9, 2, "b"), origin="import", as_of=AS_OF)
    assert small.inserted == 9 and not small.analyzed  # 9 < 10 % of 100
    ten = await load(db, synthetic_items(11, 3, "c"), origin="import", as_of=AS_OF)
    assert ten.inserted == 11 and ten.analyzed  # 11 >= 10 % of 109
    ids = [f"c{r.id}" for _, r in synthetic_items(11, 3)]
    gone = await load(db, [(n, loader.Removal(n, i)) for n, i in enumerate(ids[:9], 1)],
                      origin="import", as_of=AS_OF)  # fmt: skip
    assert gone.removed == 9 and not gone.analyzed  # 9 < 10 % of 120
    more = await load(db, [(n, loader.Removal(n, i)) for n, i in enumerate(ids[9:], 1)]
                      + synthetic_items(10, 4, "d"), origin="import", as_of=AS_OF)  # fmt: skip
    assert (more.removed, more.inserted) == (2, 10) and more.analyzed  # 12 >= 10 % of 111


async def test_a_failed_bulk_load_leaves_rows_and_indexes_as_they_were(
    db: SQLiteDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    await load(db, synthetic_items(30, seed=1), origin="import", as_of=AS_OF)
    before = (await index_sql(db), await fingerprint(db))
    monkeypatch.setattr(loader, "BATCH", 10)
    monkeypatch.setattr(loader, "BULK_ROWS", 0)

    def failing() -> Iterator[Item]:
        for n, item in synthetic_items(100, 2, "b"):
            if n == 80:  # after the indexes were dropped (40 written >= 30 held)
                raise RuntimeError("disk full")
            yield n, item

    with pytest.raises(RuntimeError, match="disk full"):
        await load(db, failing(), origin="synthetic", as_of=AS_OF)
    assert (await index_sql(db), await fingerprint(db)) == before


async def test_loading_the_same_records_again_changes_nothing_after_a_bulk_load(
    db: SQLiteDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loader, "BULK_ROWS", 0)
    items = synthetic_items(300)
    assert (await load(db, items, origin="synthetic", as_of=AS_OF)).inserted == 300
    version = await PropertyRepository(db).data_version()
    again = await load(db, items, origin="synthetic", as_of=AS_OF)
    assert (again.inserted, again.updated, again.unchanged) == (0, 0, 300)
    assert await PropertyRepository(db).data_version() == version


# -- validation: the cheap tests never pass a record the exact checks refuse -------------

BAD_NUMBERS: list[Any] = [-1, -0.5, math.nan, math.inf, -math.inf, 2**53, 2**70, 1e300]
BAD_TEXT = ["", "  ", "IA ", "5001", "50010\n", "ab-cd", "2024-13-01", "2024-02-30", "20240501"]


def mutations(record: PropertyDetail, rng: random.Random) -> Iterator[PropertyDetail]:
    """The record with one or two fields broken (or bent to an edge that is still valid)."""
    r = msgspec.structs.replace
    numbers = ("list_price", "bedrooms_total", "bathrooms_total", "living_area", "lot_size",
               "days_on_market", "original_list_price", "stories", "year_built")  # fmt: skip
    for name in numbers:
        for value in [*BAD_NUMBERS, 0, 2**53 - 1, 1600, AS_OF.year + 3, AS_OF.year + 4]:
            yield r(record, **{name: value})
    for value in ["", "lookup", "search", "a" * 65, "a b", "-x", "ok.id_1-2"]:
        yield r(record, id=value)
    a = record.address
    for field in ("street_address", "city", "state", "zip_code", "fips_code"):
        for text in [*BAD_TEXT, "ia", "19169"]:
            yield r(record, address=r(a, **{field: text}))
    for text in [*BAD_TEXT, "2026-01-01T00:00:00", "2026-01-01T00:00:00.5Z"]:
        yield r(record, last_updated=text)
    if record.coordinates is not None:
        for lat in (-90.0, 90.0, 90.5, math.nan, -math.inf):
            yield r(record, coordinates=r(record.coordinates, latitude=lat))
        for lon in (-180.0, 180.1, math.nan):
            yield r(record, coordinates=r(record.coordinates, longitude=lon))
    history = record.price_history
    for i in range(len(history)):
        for value in [*BAD_NUMBERS, 0, None]:
            changed = list(history)
            changed[i] = r(history[i], price=value)
            yield r(record, price_history=changed)
        for text in BAD_TEXT:
            changed = list(history)
            changed[i] = r(history[i], date=text)
            yield r(record, price_history=changed)
    for i in range(len(record.tax_history)):
        t = record.tax_history[i]
        for value in [*BAD_NUMBERS, -5, None]:
            for field in ("tax_paid", "assessed_value"):
                changed = list(record.tax_history)
                changed[i] = r(t, **{field: value})
                yield r(record, tax_history=changed)
        yield r(record, tax_history=[*record.tax_history, t])  # a year twice
    for name in ("rent_estimate", "value_estimate"):
        estimate = getattr(record, name)
        if estimate is not None:
            for field in ("value", "low", "high"):
                for value in [*BAD_NUMBERS, -5]:
                    yield r(record, **{name: r(estimate, **{field: value})})
            for text in BAD_TEXT:
                yield r(record, **{name: r(estimate, as_of_date=text)})
    yield r(record, status=rng.choice(STATUSES))
    fields = list(msgspec.structs.asdict(record))
    for _ in range(20):  # two random breakages at once: the first check to fail must win
        first = next(m for m in mutations_of_one(record, rng, fields))
        second = next(m for m in mutations_of_one(first, rng, fields))
        yield second


def mutations_of_one(
    record: PropertyDetail, rng: random.Random, fields: list[str]
) -> Iterator[PropertyDetail]:
    while True:
        name = rng.choice(fields)
        value = getattr(record, name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            yield msgspec.structs.replace(record, **{name: rng.choice(BAD_NUMBERS)})
        elif isinstance(value, str) and name != "status":
            yield msgspec.structs.replace(record, **{name: rng.choice(BAD_TEXT)})


def exact_reason(record: PropertyDetail) -> str | None:
    """What `validate` answers with the cheap tests left out: every field check, then the
    history."""
    with mock.patch.object(loader, "_plainly_valid", return_value=False):
        return loader.validate(record, AS_OF)


def test_validation_gives_the_exact_checks_answer_for_broken_records() -> None:
    rng = random.Random(5)
    base = [r for _, r in synthetic_items(40, seed=11) if isinstance(r, PropertyDetail)]
    checked = refused = 0
    for record in base:
        for broken in mutations(record, rng):
            expected = exact_reason(broken)
            assert loader.validate(broken, AS_OF) == expected, broken
            if loader._plainly_valid(broken, AS_OF.year + 3):
                assert loader._field_reason(broken, AS_OF) is None, broken
            checked += 1
            refused += expected is not None
    assert checked > 5_000 and refused > checked // 2


def test_every_synthetic_record_is_plainly_valid() -> None:
    """The generator's records take the cheap path (else a load would not be faster)."""
    for _, record in synthetic_items(500, seed=8):
        assert isinstance(record, PropertyDetail)
        assert loader._plainly_valid(record, AS_OF.year + 3)


# -- lifecycle: the index walks equal the list-building versions they replaced --------------


def derive_by_lists(history: Sequence[PriceEvent], status: str) -> lifecycle.Derived:
    """`lifecycle.derive` as first written (copies of the listing, `next` over generators)."""
    last_sale = next((e for e in history if e.event == "sold"), None)
    removed = next((e for e in history if e.event == "delisted"), None)
    listing: list[PriceEvent] = []
    if status in ("forSale", "recentlySold", "forRent"):
        start_events = {"forRent": {"listedForRent"}}.get(status, set(lifecycle.LISTING_EVENTS))
        skip_to_sale = status == "recentlySold"
        for event in history:
            if skip_to_sale:
                if event.event == "sold":
                    skip_to_sale = False
                continue
            if event.event in ("sold", "delisted", "rentalRemoved"):
                break
            listing.append(event)
            if event.event in start_events:
                break
        if not listing or listing[-1].event not in start_events:
            listing = []
    original = listing[-1].price if listing else None
    changes = [e for e in listing if e.event == "priceChange"]
    previous_price: int | None = None
    if changes:
        older = listing[listing.index(changes[0]) + 1 :]
        previous_price = next((e.price for e in older if e.price is not None), None)
    return lifecycle.Derived(
        original_list_price=original,
        previous_list_price=previous_price,
        last_price_change_date=changes[0].date if changes else None,
        removed_date=removed.date if removed else None,
        last_sale_price=last_sale.price if last_sale else None,
        last_sale_date=last_sale.date if last_sale else None,
        listing_date=listing[-1].date if listing else None,
    )


def list_price_by_lists(history: Sequence[PriceEvent], status: str) -> int | None:
    if status == "offMarket":
        return None
    events = list(history)
    if status == "recentlySold":
        sold_at = next((i for i, e in enumerate(events) if e.event == "sold"), None)
        if sold_at is None:
            return None
        events = events[sold_at + 1 :]
    for event in events:
        if event.event in ("sold", "delisted", "rentalRemoved"):
            return None
        if event.event in lifecycle.LISTING_EVENTS or event.event == "listedForRent":
            return event.price
        if event.price is not None and event.event != "pendingSale":
            return event.price
    return None


def test_derived_fields_equal_the_list_building_versions() -> None:
    rng = random.Random(9)
    histories: list[tuple[list[PriceEvent], str]] = [
        (r.price_history, r.status)
        for _, r in synthetic_items(2_000, seed=4)
        if isinstance(r, PropertyDetail)
    ]
    for _ in range(20_000):  # random, mostly illegal, histories: derive never judges them
        days = sorted(rng.randrange(4_000) for _ in range(rng.randrange(9)))
        events = [
            make_event(
                (dt.date(2015, 1, 1) + dt.timedelta(days=d)).isoformat(),
                rng.choice(EVENTS),
                rng.choice([None, 100, 200]),
            )
            for d in days
        ]
        histories.append((events[::-1], rng.choice(STATUSES)))
    for history, status in histories:
        assert lifecycle.derive(history, status) == derive_by_lists(history, status)
        assert lifecycle.current_list_price(history, status) == list_price_by_lists(history, status)

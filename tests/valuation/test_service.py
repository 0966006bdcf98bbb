"""rebuild_valuations on a real store (SQLite, and PostgreSQL when it is up)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import AsyncIterator

import pytest

from propdata.ingest.loader import load
from propdata.ingest.synthetic import generate
from propdata.kit.db import Database
from propdata.properties.repository import PropertyRepository
from propdata.valuation.rebuild import rebuild_valuations
from propdata.valuation.schemas import Comparable
from propdata.valuation.service import ValuationService
from tests.conftest import Store, drop_store, new_store, open_db
from tests.factories import record

AS_OF = dt.date(2026, 1, 15)


@pytest.fixture(scope="module")
async def valued(
    backend: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[Store, int]]:
    """A store of 400 synthetic homes plus a house without a living area, valued once."""
    store = await new_store(backend, tmp_path_factory.mktemp(f"valuation-{backend}"))
    db = await open_db(store)
    items = list(generate(400, 11, AS_OF))
    report = await load(db, items, origin="synthetic", as_of=AS_OF)
    assert not report.rejects, report.rejects
    bare = record("bare-1", living_area=None)
    await load(db, [(1, bare)], origin="import", as_of=AS_OF)
    before = await _version(db)
    ticks: list[int] = []
    summary = await rebuild_valuations(db, AS_OF, progress=ticks.append)
    assert sum(ticks) == 2 * summary.properties
    assert await _version(db) == before + 1
    await db.close()
    yield store, summary.values
    await drop_store(store)


@pytest.fixture
async def valued_db(valued: tuple[Store, int]) -> AsyncIterator[Database]:
    """The valued store, open for the test."""
    db = await open_db(valued[0])
    yield db
    await db.close()


async def _version(db: Database) -> int:
    row = await db.fetch_one("SELECT value FROM meta WHERE key = 'data_version'")
    assert row is not None
    return int(row[0])


ESTIMATES = (
    "SELECT id, property_type, living_area, value_value, value_low, value_high, value_as_of,"
    " rent_value, rent_low, rent_high, rent_as_of FROM properties ORDER BY id"
)


async def test_estimates_are_stored_ordered_and_dated(
    valued: tuple[Store, int], valued_db: Database
) -> None:
    _, count = valued
    rows = await valued_db.fetch_all(ESTIMATES)
    with_value = [r for r in rows if r[3] is not None]
    assert len(with_value) == count > 300
    for _pid, _kind, _area, value, low, high, as_of, rent, rent_low, rent_high, rent_as_of in rows:
        if value is not None:
            assert low <= value <= high and as_of == AS_OF.isoformat()
        if rent is not None:
            assert rent_low <= rent <= rent_high and rent_as_of == AS_OF.isoformat()


async def test_land_and_homes_without_living_area_are_null(valued_db: Database) -> None:
    rows = await valued_db.fetch_all(ESTIMATES)
    unsupported = [r for r in rows if r[1] == "land" or r[2] is None]
    assert any(r[0] == "bare-1" for r in unsupported)
    assert any(r[1] == "land" for r in unsupported)
    for row in unsupported:
        assert row[3:] == (None,) * 8, row


async def test_comparables_are_the_stored_ones(valued_db: Database) -> None:
    stored = await valued_db.fetch_all(
        "SELECT c.property_id, c.comparables, p.zip_code FROM valuation_comparables c"
        " JOIN properties p ON p.id = c.property_id ORDER BY c.property_id LIMIT 20"
    )
    assert stored
    for property_id, text, zip_code in stored:
        found = await ValuationService(valued_db).comparables(property_id)
        assert all(isinstance(c, Comparable) for c in found)
        assert [[c.id, c.sale_date, c.sale_price, c.distance_miles, c.similarity]
                for c in found] == json.loads(text)  # fmt: skip
        assert 1 <= len(found) <= 5
        assert all(c.address.zip_code == zip_code for c in found)
        assert all(0 < c.similarity <= 1 for c in found)
        stored = await PropertyRepository(valued_db).price_history(found[0].id)
        sale = (found[0].sale_date, "sold", found[0].sale_price)
        assert sale in [(e.date, e.event, e.price) for e in stored]  # a real stored sale
    assert await ValuationService(valued_db).comparables("bare-1") == []


async def test_a_store_without_sales_gets_null_estimates(fresh_db: Database) -> None:
    await load(fresh_db, [(1, record("lonely-1"))], origin="import", as_of=AS_OF)
    summary = await rebuild_valuations(fresh_db, AS_OF)
    assert (summary.values, summary.rents) == (0, 0)
    row = await fresh_db.fetch_one("SELECT value_value, rent_value FROM properties")
    assert row == (None, None)


async def test_a_store_with_no_sale_at_all_rebuilds(fresh_db: Database) -> None:
    """No sale or rental anywhere (a first import of off-market homes): nothing to learn
    from, every estimate null, and the rebuild does not fail."""
    home = record("unsold-1", status="offMarket", list_price=None, listing_type=None,
                  original_list_price=None, price_history=[])  # fmt: skip
    report = await load(fresh_db, [(1, home)], origin="import", as_of=AS_OF)
    assert not report.rejects, report.rejects
    summary = await rebuild_valuations(fresh_db, AS_OF)
    assert (summary.values, summary.rents, summary.sales) == (0, 0, 0)
    assert await ValuationService(fresh_db).comparables("unsold-1") == []

"""SQL, the index and `matches` agree, filter by filter, over generated records.

Each filter of `filters.FILTERS`, the box and the radius, alone and all together, over the
same records written to a real store: the ids SQL finds (`SqlEngine`), those the index
finds (built from the store's rows) and those `matches` keeps of the same rows (as a
batch, one by one, and without their city key, which it then makes from the city) are the
same. The values cluster, so that filters meet records' values exactly, at edges, and
missing (NULL) as well.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from propdata.kit.addresses import city_key
from propdata.kit.db import Database
from propdata.properties.repository import PropertyRepository, PropertyRow
from propdata.properties.schemas import PROPERTY_TYPES, STATUSES
from propdata.search.engines import SqlEngine
from propdata.search.filters import FILTERS, SearchFilters
from propdata.search.index import INDEX_COLUMNS
from propdata.search.indexer import IndexBuilder
from propdata.search.match import Batch, matches
from propdata.search.query import SearchQuery
from propdata.search.repository import SearchRepository
from tests.conftest import drop_store, new_store, open_db

ORIGIN = "parity"
EXAMPLES = int(os.environ.get("PROPDATA_PARITY_EXAMPLES", "40"))
"""Generated sets of records, each searched every way: the same 40 every run unless raised."""
CITIES = ("Ames", "ames", "Des Moines", "DES MOINES.", "West Des-Moines", "Nevada")
NUMBERS: dict[str, st.SearchStrategy[Any]] = {
    "list_price": st.integers(0, 1_000_000) | st.sampled_from([0, 250_000, 2**53 - 1]),
    "bedrooms": st.integers(0, 8),
    "bathrooms": st.sampled_from([0.5, 1.0, 1.25, 2.5, 3.75]) | st.floats(0, 10),
    "living_area": st.integers(0, 6_000) | st.sampled_from([2**24 - 1, 2**24 + 1, 2**24 + 2]),
    "year_built": st.integers(1850, 2026),
    "days_on_market": st.integers(0, 400),
}
LATITUDE = st.floats(41.5, 42.5)
LONGITUDE = st.floats(-94.0, -93.0)


@dataclass
class Rig:
    """An empty store of one backend, and the event loop its connection lives in."""

    loop: asyncio.AbstractEventLoop
    db: Database

    def run(self, work: Any) -> Any:
        return self.loop.run_until_complete(work)


@pytest.fixture(scope="module")
def rig(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    loop = asyncio.new_event_loop()
    store = loop.run_until_complete(new_store(backend, tmp_path_factory.mktemp("parity")))
    db = loop.run_until_complete(open_db(store))
    try:
        yield Rig(loop, db)
    finally:
        loop.run_until_complete(db.close())
        loop.run_until_complete(drop_store(store))
        loop.close()


@st.composite
def records(draw: st.DrawFn) -> list[PropertyRow]:
    """Up to 25 stored rows whose searched columns vary (each may be missing)."""
    rows = []
    for n in range(draw(st.integers(0, 25))):
        values: dict[str, Any] = dict.fromkeys(PropertyRow._fields)
        city = draw(st.sampled_from(CITIES))
        values.update(
            id=f"p-{n:03d}", origin=ORIGIN, status=draw(st.sampled_from(STATUSES)), city=city,
            city_key=city_key(city), state=draw(st.sampled_from(["IA", "NE"])),
            zip_code=draw(st.sampled_from(["50010", "50011", "50014"])),
            property_type=draw(st.none() | st.sampled_from(PROPERTY_TYPES)),
            last_updated=f"2026-11-{draw(st.integers(1, 21)):02d}T00:00:00Z", content_hash="x",
        )  # fmt: skip
        for name, values_of in NUMBERS.items():
            values[name] = draw(st.none() | values_of)
        if draw(st.booleans()):
            values.update(latitude=draw(LATITUDE), longitude=draw(LONGITUDE))
        rows.append(PropertyRow(**values))
    return rows


@st.composite
def searches(draw: st.DrawFn, rows: list[PropertyRow]) -> list[SearchFilters]:
    """Each column filter alone, a box, a radius, and all of them together, each value a
    stored record's own value (an exact edge) or another one."""

    def near_a_record(strategy: st.SearchStrategy[Any], column: str) -> Any:
        stored = [getattr(r, column) for r in rows if getattr(r, column) is not None]
        return draw(st.sampled_from(stored) | strategy if stored else strategy)

    alone = []
    together = SearchFilters()
    for f in FILTERS:
        if f.column == "city_key":
            value: Any = city_key(draw(st.sampled_from(CITIES)))
        elif f.column == "status":
            value = draw(st.sampled_from([*STATUSES, "pending"]))
        elif f.column == "property_type":
            value = draw(st.sampled_from(PROPERTY_TYPES))
        elif f.column == "state":
            value = draw(st.sampled_from(["IA", "NE", "MN"]))
        elif f.column == "zip_code":
            value = draw(st.sampled_from(["50010", "50011", "50014", "99999"]))
        else:
            value = near_a_record(NUMBERS[f.column], f.column)
        alone.append(SearchFilters(**{f.field: value}))
        if draw(st.booleans()):
            setattr(together, f.field, value)
    south, north = sorted(
        (near_a_record(LATITUDE, "latitude"), near_a_record(LATITUDE, "latitude"))
    )
    west, east = sorted(
        (near_a_record(LONGITUDE, "longitude"), near_a_record(LONGITUDE, "longitude"))
    )
    if south < north and west < east:
        alone.append(SearchFilters(bbox=(west, south, east, north)))
    near = (near_a_record(LATITUDE, "latitude"), near_a_record(LONGITUDE, "longitude"),
            draw(st.floats(0.01, 100)))  # fmt: skip
    alone.append(SearchFilters(near=near))
    if draw(st.booleans()):
        together.near = near
    return [*alone, together]


async def _sql(repo: SearchRepository, filters: SearchFilters) -> set[str]:
    found = await SqlEngine(repo, offset_cap=None).find(SearchQuery(filters, limit=100), None)
    assert found.total == len(found.rows)
    return {r.id for r in found.rows}


async def _write(db: Database, rows: list[PropertyRow]) -> list[dict[str, Any]]:
    """Replace the stored records by `rows`; the rows as the store gives them back."""
    properties = PropertyRepository(db)
    async with db.transaction():
        await properties.delete_origin(ORIGIN)
        await properties.write(rows, [], [])
    stored = [await properties.get(r.id) for r in rows]
    return [r._asdict() for r in stored if r is not None]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          derandomize=EXAMPLES <= 40, database=None)  # fmt: skip
@given(data=st.data())
def test_sql_the_index_and_matches_agree_filter_by_filter(rig: Rig, data: st.DataObject) -> None:
    rows = data.draw(records())
    stored = rig.run(_write(rig.db, rows))
    repo = SearchRepository(rig.db)
    builder = IndexBuilder("parity.1")
    builder.add(rig.run(repo.index_page(INDEX_COLUMNS, None, 100)))
    index = builder.finish()
    batch = Batch.of(stored)
    for filters in data.draw(searches(rows)):
        by_sql = rig.run(_sql(repo, filters))
        page = index.search(SearchQuery(filters, "lastUpdated", "asc", 100, 0))
        assert page is not None
        kept = matches(filters, batch)
        by_matches = {r["id"] for r, keep in zip(stored, kept.tolist(), strict=True) if keep}
        assert set(page.ids) == by_sql == by_matches, filters
        one_by_one = {r["id"] for r in stored if matches(filters, r)}
        without_key = {r["id"] for r in stored if matches(filters, {**r, "city_key": None})}
        assert one_by_one == without_key == by_matches, filters


def test_the_filter_table_fills_every_search_filter() -> None:
    """Every SearchFilters field but the geography is one FILTERS entry, and back."""
    columns = {f.name for f in fields(SearchFilters)} - {"bbox", "near"}
    assert [f.field for f in FILTERS] == [
        f.name for f in fields(SearchFilters) if f.name in columns
    ]
    assert len({f.parameter for f in FILTERS}) == len(FILTERS)

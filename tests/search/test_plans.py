"""Guards: every filter and sort alone, and the common combinations, can be read from an index.

The statements are the repository's own (captured, then explained on the real store). The
store is empty and has no statistics, so SQLite plans by its defaults; PostgreSQL is told not
to scan tables (`enable_seqscan = off`), so a plan that still scans `properties` has no
index to use. Either way a missing index, or an ORDER BY an index cannot give, fails here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from propdata.kit.db import Database, Row
from propdata.search.filters import SORT_COLUMNS, SearchFilters
from propdata.search.query import SearchQuery
from propdata.search.repository import SearchRepository


class Capture:
    """Records the statements a repository method asks, answering nothing."""

    dialect: str

    def __init__(self, dialect: str) -> None:
        self.dialect = dialect
        self.statements: list[tuple[str, Sequence[Any]]] = []

    async def fetch_all(
        self, sql: str, params: Sequence[Any] = (), *, slow: bool = False
    ) -> list[Row]:
        self.statements.append((sql, params))
        return []

    async def fetch_one(
        self, sql: str, params: Sequence[Any] = (), *, slow: bool = False
    ) -> Row | None:
        self.statements.append((sql, params))
        return None


async def scans_table(
    db: Database, sql: str, params: Sequence[Any], *, sorted_by_index: bool = False
) -> list[str]:
    """The plan's lines that read the properties table without an index (and, with
    `sorted_by_index`, that sort rows instead of reading them in the index's order)."""
    if db.dialect == "sqlite":
        plan = await db.fetch_all(f"EXPLAIN QUERY PLAN {sql}", params)
        bad = ["SCAN properties", "SCAN TABLE properties"]
        if sorted_by_index:
            bad.append("USE TEMP B-TREE FOR ORDER BY")
        return [row[3] for row in plan if row[3].strip() in bad]
    async with db.transaction():
        await db.execute("SET LOCAL enable_seqscan = off")
        if sorted_by_index:  # an empty table: a bitmap read then a sort looks as cheap
            await db.execute("SET LOCAL enable_bitmapscan = off")
        row = await db.fetch_one(f"EXPLAIN (FORMAT JSON) {sql}", params)
    assert row is not None
    found: list[str] = []

    def walk(node: dict[str, Any]) -> None:
        if node.get("Node Type") == "Seq Scan" and node.get("Relation Name") == "properties":
            found.append("Seq Scan on properties")
        if sorted_by_index and node.get("Node Type") in ("Sort", "Incremental Sort"):
            found.append(f"{node['Node Type']} by {node.get('Sort Key')}")
        for child in node.get("Plans", []):
            walk(child)

    plan = json.loads(row[0]) if isinstance(row[0], str) else row[0]
    walk(plan[0]["Plan"])
    return found


ALONE = {
    "zipCode": SearchFilters(zip_code="50010"),
    "city": SearchFilters(city="ames"),
    "state": SearchFilters(state="IA"),
    "status": SearchFilters(status="forSale"),
    "propertyType": SearchFilters(property_type="condo"),
    "minPrice": SearchFilters(min_price=900_000),
    "maxPrice": SearchFilters(max_price=50_000),
    "minBeds": SearchFilters(min_beds=6),
    "maxBeds": SearchFilters(max_beds=1),
    "minBaths": SearchFilters(min_baths=4.5),
    "minSqft": SearchFilters(min_sqft=6_000),
    "maxSqft": SearchFilters(max_sqft=500),
    "minYearBuilt": SearchFilters(min_year_built=2024),
    "maxDaysOnMarket": SearchFilters(max_days_on_market=3),
}
PLACES = {
    "zipCode": {"zip_code": "50010"},
    "city": {"city": "ames", "state": "IA"},
    "state": {"state": "IA"},
}


def cases() -> list[Any]:
    out = []
    for name, f in ALONE.items():
        out.append(pytest.param(f, "lastUpdated", "desc", id=f"filter-{name}"))
    for sort in SORT_COLUMNS:
        for order in ("asc", "desc"):
            out.append(pytest.param(SearchFilters(), sort, order, id=f"sort-{sort}-{order}"))
    for place, values in PLACES.items():
        for sort in SORT_COLUMNS:
            out.append(
                pytest.param(
                    SearchFilters(**values, status="forSale", min_price=200_000, max_price=400_000),
                    sort, "desc", id=f"{place}-status-price-{sort}",
                )
            )  # fmt: skip
            out.append(
                pytest.param(
                    SearchFilters(**values, status="forSale"), sort, "asc",
                    id=f"{place}-status-{sort}",
                )
            )  # fmt: skip
    for sort in ("listPrice", "lastUpdated"):
        out.append(
            pytest.param(
                SearchFilters(min_price=200_000, max_price=400_000), sort, "asc",
                id=f"price-range-{sort}",
            )
        )  # fmt: skip
    return out


@pytest.mark.parametrize(("filters", "sort", "order"), cases())
async def test_search_reads_an_index(
    empty_db: Database, filters: SearchFilters, sort: str, order: str
) -> None:
    empty = empty_db
    capture = Capture(empty.dialect)
    repo = SearchRepository(capture)  # type: ignore[arg-type]
    await repo.search_page(SearchQuery(filters, sort, order, 25, 0))
    await repo.search_page(SearchQuery(filters, sort, order, 25, 100_000))
    if filters != SearchFilters():
        await repo.count_matches(filters)
    assert capture.statements
    alone = filters == SearchFilters()  # a sort of every row must come from an index
    for sql, params in capture.statements:
        assert await scans_table(empty, sql, params, sorted_by_index=alone) == [], sql


BOX = (-93.70, 41.98, -93.57, 42.08)
NEAR = (42.03, -93.62, 5.0)


@pytest.mark.parametrize(
    "filters",
    [
        pytest.param(SearchFilters(bbox=BOX), id="bbox"),
        pytest.param(SearchFilters(near=NEAR), id="radius"),
        pytest.param(SearchFilters(near=NEAR, status="forSale", min_price=100_000), id="radius-filters"),
        pytest.param(SearchFilters(bbox=BOX, max_price=400_000), id="bbox-price"),
    ],
)  # fmt: skip
async def test_a_box_reads_the_geo_index(empty_db: Database, filters: SearchFilters) -> None:
    """A bbox, and the box around a radius, read a range of (latitude, longitude)."""
    capture = Capture(empty_db.dialect)
    repo = SearchRepository(capture)  # type: ignore[arg-type]
    await repo.near_rows(filters, None)
    await repo.near_rows(filters, "list_price")
    await repo.search_page(SearchQuery(filters, "lastUpdated", "desc", 25, 0))
    await repo.count_matches(filters)
    for sql, params in capture.statements:
        assert await scans_table(empty_db, sql, params) == [], sql


@pytest.mark.parametrize("sort", list(SORT_COLUMNS))
@pytest.mark.parametrize("order", ["asc", "desc"])
@pytest.mark.parametrize("value", [1_000, None], ids=["value", "null"])
async def test_a_cursor_page_reads_the_sort_index(
    empty_db: Database, sort: str, order: str, value: int | None
) -> None:
    """The page after a cursor is a range of the (column, id) index, in its order: no scan,
    no sort, whatever its depth (then the nulls, by id)."""
    if sort == "lastUpdated" and value is None:
        pytest.skip("lastUpdated is never null")
    capture = Capture(empty_db.dialect)
    repo = SearchRepository(capture)  # type: ignore[arg-type]
    mark = "2026-01-01T00:00:00Z" if sort == "lastUpdated" else value
    await repo.search_page(SearchQuery(SearchFilters(), sort, order, 25, 0), (mark, "t-010"))
    alone = len(capture.statements)
    await repo.search_page(
        SearchQuery(SearchFilters(status="forSale"), sort, order, 25, 0), (mark, "t-010")
    )
    for n, (sql, params) in enumerate(capture.statements):
        ordered = n < alone  # every row: the order must come from the index
        assert await scans_table(empty_db, sql, params, sorted_by_index=ordered) == [], sql

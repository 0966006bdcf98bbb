"""Loads finished incrementally equal a full rebuild over the same records.

Random sequences of loads (new records; changes of area, price, status and ZIP code;
removals by replacing an origin, as `data generate` does) are applied to a store through
`pipeline.run`, each finished incrementally; a second store is then built from the same
final records by one full load and rebuild. The market statistics and search answers of the
two are equal, and every estimate of the first equals what its stored models give the
final records (`valuation.rebuild.stored_estimates`). Both stores, SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import math
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from propdata.ingest import pipeline, synthetic
from propdata.ingest.loader import load
from propdata.ingest.pipeline import Outcome, Source
from propdata.kit.db import Database
from propdata.markets import builder as market_builder
from propdata.properties.repository import PropertyRepository
from propdata.properties.schemas import PropertyDetail
from propdata.properties.service import PropertyService
from propdata.search.filters import SearchFilters
from propdata.search.query import SearchQuery
from propdata.search.repository import SearchRepository
from propdata.valuation.rebuild import stored_estimates
from tests.conftest import drop_store, new_store, open_db
from tests.factories import AS_OF, event

RECORDS = [record for _, record in synthetic.generate(330, 5, AS_OF)]
BASE, CHURN, POOL = RECORDS[:200], RECORDS[200:250], RECORDS[250:]
"""The first store's records (origin import), a replaced origin's, and records to come."""
TODAY = AS_OF.isoformat()

changes = st.sampled_from(["area", "price", "sell", "list", "move", "same"])
steps = st.one_of(
    st.tuples(st.just("insert"), st.integers(1, 6)),
    st.tuples(st.just("change"), st.lists(st.tuples(st.integers(0, 10**6), changes),
                                          min_size=1, max_size=6)),
    st.tuples(st.just("churn"), st.lists(st.booleans(), min_size=50, max_size=50),
              st.integers(0, 3)),
)  # fmt: skip


@settings(max_examples=6, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(plan=st.lists(steps, min_size=1, max_size=4))
def test_incremental_loads_equal_a_full_rebuild(
    backend: str, tmp_path: Path, plan: list[tuple[Any, ...]]
) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pipeline, "REFIT_SHARE", 100.0)  # every load incremental
        asyncio.run(_check(backend, tmp_path, plan))


async def _check(backend: str, tmp_path: Path, plan: list[tuple[Any, ...]]) -> None:
    folder = tmp_path / uuid.uuid4().hex  # tmp_path is one for every example
    live_store = await new_store(backend, folder / "live")
    full_store = await new_store(backend, folder / "full")
    live, full = await open_db(live_store), await open_db(full_store)
    try:
        first = await pipeline.run(live, [_source("import", BASE), _source("churn", CHURN, True)],
                                   AS_OF)  # fmt: skip
        assert first.estimates is not None and first.refit == "no stored model"
        pool = iter(POOL)
        for number, step in enumerate(plan):
            # every other load leaves its ZIP codes' statistics to a later one (replication's)
            outcome = await _apply(live, step, pool, defer=number % 2 == 1)
            assert not outcome.reports[0].rejects, outcome.reports[0].rejects
            if outcome.reports[0].changed:
                assert outcome.refit is None and outcome.valued is not None, outcome.refit
        assert await PropertyRepository(live).rebuild_pending() is None
        await pipeline.finish_markets(live, AS_OF)
        assert await market_builder.stale(live) == []
        records = await _records(live)
        await pipeline.run(full, [_source(origin, rs, True) for origin, rs in records.items()],
                           AS_OF)  # fmt: skip
        assert await _statistics(live) == await _statistics(full)
        assert await _searches(live) == await _searches(full)
        assert await _estimates(live) == await stored_estimates(live, AS_OF)
    finally:
        await live.close()
        await full.close()
        await drop_store(live_store)
        await drop_store(full_store)


def _source(origin: str, records: list[PropertyDetail], replace: bool = False) -> Source:
    return Source(origin, origin, list(enumerate(records, 1)), len(records), replace)


async def _apply(
    db: Database, step: tuple[Any, ...], pool: Iterator[PropertyDetail], defer: bool
) -> Outcome:
    kind = step[0]
    if kind == "insert":
        new = [record for record, _ in zip(pool, range(step[1]), strict=False)]
        return await pipeline.run(db, [_source("import", new)], AS_OF, defer_markets=defer)
    held = await _records(db)
    if kind == "change":
        stored = held["import"]
        changed = {}
        for at, how in step[1]:
            record = stored[at % len(stored)]
            changed[record.id] = _changed(record, how, stored[(at // 7) % len(stored)])
        return await pipeline.run(db, [_source("import", list(changed.values()))], AS_OF,
                                  defer_markets=defer)  # fmt: skip
    keep, extra = step[1], step[2]
    churn = [r for r, kept in zip(held.get("churn", []), keep, strict=False) if kept]
    churn += [record for record, _ in zip(pool, range(extra), strict=False)]
    return await pipeline.run(db, [_source("churn", churn, True)], AS_OF, defer_markets=defer)


def _changed(record: PropertyDetail, how: str, other: PropertyDetail) -> PropertyDetail:
    """The record with one field changed as a feed would change it (new events dated today)."""
    replace = msgspec.structs.replace
    history = record.price_history
    if how == "area":
        area = record.living_area
        return replace(record, living_area=None if area is None else area + 150)
    if how == "price" and record.status == "forSale" and record.list_price:
        price = record.list_price - 5_000
        return replace(record, list_price=price,
                       price_history=[event(TODAY, "priceChange", price), *history])  # fmt: skip
    if how == "sell" and record.status == "forSale":
        sold = event(TODAY, "sold", (record.list_price or 200_000) + 1_000)
        return replace(record, status="recentlySold", list_price=None,
                       price_history=[sold, *history])  # fmt: skip
    if how == "list" and record.status == "offMarket":
        listed = event(TODAY, "listedForSale", 310_000)
        return replace(record, status="forSale", list_price=310_000, days_on_market=None,
                       original_list_price=None, price_history=[listed, *history])  # fmt: skip
    if how == "move":
        return replace(record, address=other.address, coordinates=other.coordinates)
    return replace(record, last_updated="2026-11-21T08:00:00Z")


async def _records(db: Database) -> dict[str, list[PropertyDetail]]:
    """Every stored record as the API gives it, by origin."""
    service = PropertyService(db)
    rows = await db.fetch_all("SELECT id, origin FROM properties ORDER BY id")
    out: dict[str, list[PropertyDetail]] = {}
    for property_id, origin in rows:
        out.setdefault(str(origin), []).append(await service.detail(str(property_id)))
    return out


async def _statistics(db: Database) -> list[Any]:
    return [
        await db.fetch_all("SELECT * FROM market_snapshots ORDER BY zip_code"),
        await db.fetch_all("SELECT * FROM market_history ORDER BY zip_code, month"),
    ]


async def _searches(db: Database) -> list[Any]:
    repo = SearchRepository(db)
    zips = [row[0] for row in await db.fetch_all("SELECT DISTINCT zip_code FROM properties")]
    filters = [SearchFilters(), SearchFilters(status="forSale"),
               SearchFilters(status="recentlySold", min_sqft=1_200),
               SearchFilters(min_price=150_000, max_price=400_000)]  # fmt: skip
    filters += [SearchFilters(zip_code=z) for z in sorted(zips)[:5]]
    answers: list[Any] = []
    for f in filters:
        for sort in ("listPrice", "livingArea", "lastUpdated"):
            answers.append(await repo.search_page(SearchQuery(f, sort, "desc", 500, 0)))
        answers.append(await repo.count_matches(f))
    return answers


async def _estimates(db: Database) -> dict[str, tuple[tuple[Any, ...], str | None]]:
    rows = await db.fetch_all(
        "SELECT p.id, value_value, value_low, value_high, value_as_of, rent_value, rent_low,"
        " rent_high, rent_as_of, c.comparables FROM properties p"
        " LEFT JOIN valuation_comparables c ON c.property_id = p.id ORDER BY p.id"
    )
    return {str(row[0]): (tuple(row[1:9]), row[9]) for row in rows}


async def test_zip_codes_a_deferred_load_leaves_are_recomputed_by_the_next_recompute(
    empty_db: Database,
) -> None:
    """A load with `defer_markets` names its ZIP codes and leaves their statistics; the next
    load that recomputes any, `finish_markets` or a full rebuild recomputes them."""
    db = empty_db
    await pipeline.run(db, [_source("import", BASE)], AS_OF)
    one, other = BASE[0], next(r for r in BASE if r.address.zip_code != BASE[0].address.zip_code)

    grown = 0

    async def change(record: PropertyDetail, defer: bool) -> None:
        nonlocal grown
        grown += 100
        changed = msgspec.structs.replace(record, living_area=(record.living_area or 0) + grown)
        await pipeline.run(db, [_source("import", [changed])], AS_OF, defer_markets=defer)

    before = await _statistics(db)
    await change(one, True)
    assert await market_builder.stale(db) == [one.address.zip_code]
    assert await _statistics(db) == before  # not recomputed yet
    await change(other, False)  # recomputes its own ZIP code and the one left
    assert await market_builder.stale(db) == []
    await change(one, True)
    assert await pipeline.finish_markets(db, AS_OF) == 1
    assert await market_builder.stale(db) == []
    assert await pipeline.finish_markets(db, AS_OF) == 0
    await change(other, True)
    await pipeline.rebuild(db, AS_OF)
    assert await market_builder.stale(db) == []


# -- when a load is finished by a full rebuild ----------------------------------------------


async def test_a_small_load_is_finished_incrementally_and_bumps_the_version(
    empty_db: Database,
) -> None:
    db = empty_db
    await pipeline.run(db, [_source("import", BASE)], AS_OF)
    before = await PropertyRepository(db).data_version()
    outcome = await pipeline.run(db, [_source("import", POOL[:3])], AS_OF)
    assert outcome.refit is None and outcome.estimates is None
    assert outcome.valued == 3 and outcome.markets
    # The records, their estimates and statistics in one commit: one version, no mark left
    # for a rebuild, and no version that serves a record without its estimate.
    assert await PropertyRepository(db).data_version() == before + 1
    assert await PropertyRepository(db).rebuild_pending() is None
    row = await db.fetch_one(
        "SELECT count(*) FROM properties WHERE value_as_of IS NOT NULL AND id IN (?, ?, ?)",
        [r.id for r in POOL[:3]],
    )
    assert row is not None and int(row[0]) >= 1
    unchanged = await pipeline.run(db, [_source("import", POOL[:3])], AS_OF)
    assert unchanged.valued is None and unchanged.refit is None
    assert await PropertyRepository(db).data_version() == before + 1


async def test_a_load_past_the_share_refits(empty_db: Database) -> None:
    db = empty_db
    await pipeline.run(db, [_source("import", BASE)], AS_OF)
    share = int(pipeline.REFIT_SHARE * len(BASE))
    small = await pipeline.run(db, [_source("import", POOL[:share])], AS_OF)
    assert small.refit is None and small.valued == share
    # The records changed since the fit add up: one more is past the share.
    more = await pipeline.run(db, [_source("import", POOL[share : share + 1])], AS_OF)
    assert more.refit is not None and "since the fit" in more.refit
    assert more.estimates is not None and more.valued is None
    models = await db.fetch_all("SELECT kind, version, properties, changed FROM valuation_models")
    assert sorted((str(k), int(v), int(p), int(c)) for k, v, p, c in models) == [
        ("listedForRent", 2, len(BASE) + share + 1, 0),
        ("sold", 2, len(BASE) + share + 1, 0),
    ]


async def test_a_follower_leaves_the_share_to_the_days_first_commit(empty_db: Database) -> None:
    db = empty_db
    await pipeline.run(db, [_source("import", BASE)], AS_OF)
    share = int(pipeline.REFIT_SHARE * len(BASE))
    past = await pipeline.run(db, [_source("import", POOL[: share + 1])], AS_OF,
                              refit_share=math.inf)  # fmt: skip
    assert past.refit is None and past.valued == share + 1


async def test_a_new_day_refits(empty_db: Database) -> None:
    db = empty_db
    await pipeline.run(db, [_source("import", BASE)], AS_OF)
    tomorrow = AS_OF + dt.timedelta(days=1)
    outcome = await pipeline.run(db, [_source("import", POOL[:1])], tomorrow)
    assert outcome.refit is not None and "fitted as of" in outcome.refit
    dates = await db.fetch_all("SELECT DISTINCT date FROM market_snapshots")
    assert [str(d) for (d,) in dates] == [tomorrow.isoformat()]


async def test_a_load_left_unfinished_is_finished_by_a_full_rebuild(empty_db: Database) -> None:
    """A load that committed and died before its incremental work: the next run does not
    know what it changed, so it recomputes everything and clears the mark."""
    db = empty_db
    await pipeline.run(db, [_source("import", BASE)], AS_OF)
    await load(db, enumerate(POOL[:2], 1), origin="import", as_of=AS_OF)
    assert await PropertyRepository(db).rebuild_pending() is not None
    outcome = await pipeline.run(db, [_source("import", POOL[2:3])], AS_OF)
    assert outcome.refit == "an earlier load was not finished" and outcome.estimates is not None
    assert await PropertyRepository(db).rebuild_pending() is None
    assert await _estimates(db) == await stored_estimates(db, AS_OF)

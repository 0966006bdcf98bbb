"""markets.builder.rebuild against hand-made records whose statistics are worked out by hand.

D = 2026-03-15, so the snapshot window is (2026-02-13, 2026-03-15] and the history months
end on 2025-11-30, 2025-12-31, 2026-01-31, 2026-02-28 and 2026-03-15 (D, the current month).

ZIP 50010 (Ames, IA), nine properties (histories oldest first):

    p1 forSale       listed 01-10 300k, priceChange 02-20 290k            1500 sqft
    p2 forSale       listed 03-15 (= D) 410k                              no livingArea
    p3 forSale       listed 02-13 (exactly 30 days back) 200k             1000 sqft
    p4 recentlySold  listed 2025-12-01 500k, cut 01-20 480k, pending 02-01,
                     sold 02-14 470k (first day in the window)            2400 sqft
    p5 recentlySold  listed 01-01 250k, sold 02-13 260k (just outside)    1250 sqft
    p6 recentlySold  off-market sale 03-01 100k (no listing)              1000 sqft
    p7 recentlySold  listed 02-20 330k, sold 03-10 340k                   1100 sqft
    p8 offMarket     listed 01-05 600k, delisted 01-20 (mid-month)        1000 sqft
    p9 forSale       listed 2025-11-01 350k, delisted 2025-12-10,
                     relisted 03-01 340k                                  2000 sqft
"""

from __future__ import annotations

import datetime as dt
import math
import random
import statistics
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import pytest

from propdata.ingest import synthetic
from propdata.ingest.loader import load
from propdata.kit.db import Database
from propdata.markets import builder
from propdata.markets.builder import most_common_places, rebuild
from propdata.markets.repository import (
    HISTORY_INSERT,
    MarketRepository,
    MarketStatsWriter,
    PlaceCount,
)
from propdata.markets.tally import Calendar, mean_int, median
from propdata.properties import lifecycle
from propdata.properties.repository import PropertyRepository
from propdata.properties.schemas import Address, PriceEvent, PropertyDetail

D = dt.date(2026, 3, 15)
SNAPSHOT_FIELDS = (
    "zip_code", "city", "state", "date", "median_list_price", "median_sold_price",
    "active_listings", "new_listings_30d", "sold_last_30d", "median_days_on_market",
    "average_price_per_sqft", "inventory_months", "list_to_sold_ratio",
)  # fmt: skip
HISTORY_FIELDS = (
    "month", "median_list_price", "median_sold_price", "active_listings", "sold_count",
    "median_days_on_market", "average_price_per_sqft",
)  # fmt: skip


def ev(date: str, kind: str, price: int | None = None, source: str = "mls") -> PriceEvent:
    return PriceEvent(date=date, event=kind, price=price, source=source)  # type: ignore[arg-type]


def prop(
    pid: str,
    status: str,
    history: Sequence[PriceEvent],
    *,
    list_price: int | None = None,
    living_area: int | None = 1_000,
    zip_code: str = "50010",
    city: str = "Ames",
    state: str = "IA",
) -> PropertyDetail:
    """A record with `history` given oldest first (stored newest first, as on the wire)."""
    return PropertyDetail(
        id=pid,
        status=status,  # type: ignore[arg-type]
        list_price=list_price,
        address=Address(street_address=f"{pid} Main St", city=city, state=state, zip_code=zip_code),
        bedrooms_total=3, bathrooms_total=2.0, living_area=living_area, lot_size=None,
        year_built=1990, property_type="singleFamily", days_on_market=None,
        price_history=list(reversed(history)), tax_history=[], scores=None, coordinates=None,
        last_updated="2026-03-15T00:00:00Z", listing_type=None, original_list_price=None,
        previous_list_price=None, last_price_change_date=None, removed_date=None,
        rent_estimate=None, value_estimate=None, gross_yield=None, price_per_square_foot=None,
        stories=None, parcel_id=None, garage_spaces=None, basement_finished_area=None,
        fireplaces=None, overall_quality=None, overall_condition=None,
    )  # fmt: skip


def ames() -> list[PropertyDetail]:
    return [
        prop("p1", "forSale", [ev("2026-01-10", "listedForSale", 300_000),
                               ev("2026-02-20", "priceChange", 290_000)], living_area=1_500),
        prop("p2", "forSale", [ev("2026-03-15", "listedForSale", 410_000)], living_area=None),
        prop("p3", "forSale", [ev("2026-02-13", "listedForSale", 200_000)], living_area=1_000),
        prop("p4", "recentlySold", [ev("2025-12-01", "listedForSale", 500_000),
                                    ev("2026-01-20", "priceChange", 480_000),
                                    ev("2026-02-01", "pendingSale"),
                                    ev("2026-02-14", "sold", 470_000)], living_area=2_400),
        prop("p5", "recentlySold", [ev("2026-01-01", "listedForSale", 250_000),
                                    ev("2026-02-13", "sold", 260_000)], living_area=1_250),
        prop("p6", "recentlySold", [ev("2026-03-01", "sold", 100_000, "publicRecord")]),
        prop("p7", "recentlySold", [ev("2026-02-20", "listedForSale", 330_000),
                                    ev("2026-03-10", "sold", 340_000)], living_area=1_100),
        prop("p8", "offMarket", [ev("2026-01-05", "listedForSale", 600_000),
                                 ev("2026-01-20", "delisted")]),
        prop("p9", "forSale", [ev("2025-11-01", "listedForSale", 350_000),
                               ev("2025-12-10", "delisted"),
                               ev("2026-03-01", "relisted", 340_000)], living_area=2_000),
    ]  # fmt: skip


async def store(db: Database, records: list[PropertyDetail], as_of: dt.date = D) -> None:
    report = await load(db, enumerate(records, 1), origin="import", as_of=as_of)
    assert not report.rejects, report.rejects


@pytest.fixture
def db(empty_db: Database) -> Database:
    return empty_db


async def snapshot(db: Database, zip_code: str) -> dict[str, Any]:
    row = await MarketRepository(db).snapshot(zip_code)
    assert row is not None, f"no snapshot for {zip_code}"
    return dict(zip(SNAPSHOT_FIELDS, row, strict=True))


async def history(db: Database, zip_code: str, months: int = 60) -> list[dict[str, Any]]:
    rows = await MarketRepository(db).history(zip_code, months)
    return [dict(zip(HISTORY_FIELDS, row, strict=True)) for row in rows]


# -- the snapshot -----------------------------------------------------------------------------


async def test_snapshot_of_hand_made_zip(db: Database) -> None:
    await store(db, ames())
    assert await rebuild(db, D) == 1
    assert await snapshot(db, "50010") == {
        "zip_code": "50010",
        "city": "Ames",
        "state": "IA",
        "date": "2026-03-15",
        # forSale: p1 290k, p2 410k, p3 200k, p9 340k -> (290k + 340k) / 2
        "median_list_price": 315_000,
        # sales in (02-13, 03-15]: p4 470k, p6 100k, p7 340k; p5 (02-13) is outside
        "median_sold_price": 340_000,
        "active_listings": 4,
        # p2 (listed on D), p7 (02-20), p9 (relisted 03-01); p3 listed on 02-13 is outside
        "new_listings_30d": 3,
        "sold_last_30d": 3,
        # p4 2025-12-01 -> 02-14 = 75 days, p7 02-20 -> 03-10 = 18; p6 had no listing;
        # (18 + 75) / 2 = 46.5 rounds half up
        "median_days_on_market": 47,
        # p1 290000/1500 = 193.33, p3 200, p9 170 (p2 has no livingArea): 563.33 / 3 = 187.78
        "average_price_per_sqft": 188,
        # 4 active / 3 sold = 1.333
        "inventory_months": 1.33,
        # p4 470k / 480k (after the cut) = 0.97917, p7 340k / 330k = 1.03030; p6 has no ask
        "list_to_sold_ratio": 1.0047,
    }
    city_key = await db.fetch_one("SELECT city_key FROM market_snapshots WHERE zip_code = '50010'")
    assert city_key == ("AMES",)


async def test_empty_window_gives_nulls_and_zero_counts(db: Database) -> None:
    await store(db, ames())
    await rebuild(db, dt.date(2026, 5, 1))  # window (04-01, 05-01]: no events at all
    snap = await snapshot(db, "50010")
    assert snap["sold_last_30d"] == 0
    assert snap["new_listings_30d"] == 0
    assert snap["median_sold_price"] is None
    assert snap["median_days_on_market"] is None
    assert snap["inventory_months"] is None
    assert snap["list_to_sold_ratio"] is None
    assert snap["active_listings"] == 4  # the stored status, whatever the window


async def test_window_includes_d_and_excludes_exactly_30_days_back(db: Database) -> None:
    await store(db, [
        prop("a", "recentlySold", [ev("2026-01-01", "listedForSale", 100_000),
                                   ev("2026-02-13", "sold", 100_000)]),
        prop("b", "recentlySold", [ev("2026-01-01", "listedForSale", 200_000),
                                   ev("2026-02-14", "sold", 200_000)]),
        prop("c", "recentlySold", [ev("2026-01-01", "listedForSale", 300_000),
                                   ev("2026-03-15", "sold", 300_000)]),
        prop("d", "forSale", [ev("2026-02-13", "listedForSale", 1)]),
        prop("e", "forSale", [ev("2026-03-15", "relisted", 1)]),
    ])  # fmt: skip
    await rebuild(db, D)
    snap = await snapshot(db, "50010")
    assert snap["sold_last_30d"] == 2  # b and c
    assert snap["median_sold_price"] == 250_000  # (200k + 300k) / 2
    assert snap["new_listings_30d"] == 1  # e
    assert snap["median_days_on_market"] == 59  # b 44 days, c 73 days: 58.5 rounds up
    assert snap["inventory_months"] == 1.0


async def test_odd_counts_take_the_middle_value(db: Database) -> None:
    await store(db, [
        prop("a", "forSale", [ev("2026-03-01", "listedForSale", 100_001)], living_area=3),
        prop("b", "forSale", [ev("2026-03-01", "listedForSale", 100_003)], living_area=3),
        prop("c", "forSale", [ev("2026-03-01", "listedForSale", 900_000)], living_area=None),
    ])  # fmt: skip
    await rebuild(db, D)
    snap = await snapshot(db, "50010")
    assert snap["median_list_price"] == 100_003
    # 33333.67 and 33334.33: the mean is 33334.0; c has no livingArea
    assert snap["average_price_per_sqft"] == 33_334
    assert snap["inventory_months"] is None  # no sales


# -- the history ------------------------------------------------------------------------------


async def test_history_of_hand_made_zip(db: Database) -> None:
    await store(db, ames())
    await rebuild(db, D)
    assert await history(db, "50010") == [
        # end D: p1 290k (193.33), p2 410k (no area), p3 200k (200), p9 340k (170);
        # sold p6 100k (no listing) and p7 340k (18 days)
        {"month": "2026-03", "median_list_price": 315_000, "median_sold_price": 220_000,
         "active_listings": 4, "sold_count": 2, "median_days_on_market": 18,
         "average_price_per_sqft": 188},
        # end 02-28: p1 290k after the 02-20 cut (193.33), p3 200k (200), p7 330k (300);
        # sold p5 260k (43 days) and p4 470k (75 days)
        {"month": "2026-02", "median_list_price": 290_000, "median_sold_price": 365_000,
         "active_listings": 3, "sold_count": 2, "median_days_on_market": 59,
         "average_price_per_sqft": 231},
        # end 01-31: p1 300k (200), p4 480k after the 01-20 cut (200), p5 250k (200);
        # p8 was delisted on 01-20
        {"month": "2026-01", "median_list_price": 300_000, "median_sold_price": None,
         "active_listings": 3, "sold_count": 0, "median_days_on_market": None,
         "average_price_per_sqft": 200},
        # end 12-31: p4 500k (208.33); p9 was delisted on 12-10
        {"month": "2025-12", "median_list_price": 500_000, "median_sold_price": None,
         "active_listings": 1, "sold_count": 0, "median_days_on_market": None,
         "average_price_per_sqft": 208},
        # the ZIP's first month with an event: p9 listed 11-01 at 350k (175)
        {"month": "2025-11", "median_list_price": 350_000, "median_sold_price": None,
         "active_listings": 1, "sold_count": 0, "median_days_on_market": None,
         "average_price_per_sqft": 175},
    ]  # fmt: skip


async def test_same_day_listing_and_changes_count_at_end_of_day(db: Database) -> None:
    await store(db, [
        # listed and delisted on a month's last day: not active at its end
        prop("a", "offMarket", [ev("2026-01-31", "listedForSale", 100_000),
                                ev("2026-01-31", "delisted")]),
        # a price cut on the last day counts; the listing started that month
        prop("b", "forSale", [ev("2026-01-10", "listedForSale", 200_000),
                              ev("2026-01-31", "priceChange", 190_000)], living_area=None),
        # a listing ended by a rental listing
        prop("c", "forRent", [ev("2026-01-05", "listedForSale", 500_000),
                              ev("2026-02-01", "listedForRent", 2_000)], living_area=None),
    ])  # fmt: skip
    await rebuild(db, D)
    by_month = {h["month"]: h for h in await history(db, "50010")}
    assert list(by_month) == ["2026-03", "2026-02", "2026-01"]
    assert by_month["2026-01"]["active_listings"] == 2
    assert by_month["2026-01"]["median_list_price"] == 345_000  # (190k + 500k) / 2
    assert by_month["2026-01"]["average_price_per_sqft"] is None
    assert by_month["2026-02"]["active_listings"] == 1
    assert by_month["2026-02"]["median_list_price"] == 190_000


async def test_history_keeps_at_most_60_months(db: Database) -> None:
    await store(db, [
        prop("old", "forSale", [ev("2015-01-10", "listedForSale", 1_000_000)],
             living_area=500, zip_code="10001", city="New York", state="NY"),
    ])  # fmt: skip
    await rebuild(db, D)
    entries = await history(db, "10001")
    assert len(entries) == 60
    assert entries[0]["month"] == "2026-03"
    assert entries[-1]["month"] == "2021-04"
    # the listing began long before the first month kept and is active at every month end
    assert {(e["active_listings"], e["median_list_price"], e["average_price_per_sqft"])
            for e in entries} == {(1, 1_000_000, 2_000)}  # fmt: skip
    assert len(await history(db, "10001", 12)) == 12


async def test_history_starts_at_the_first_month_with_an_event(db: Database) -> None:
    await store(db, [prop("a", "forSale", [ev("2026-02-27", "listedForSale", 100_000)])])
    await rebuild(db, D)
    assert [h["month"] for h in await history(db, "50010")] == ["2026-03", "2026-02"]


async def test_events_after_as_of_are_ignored(db: Database) -> None:
    await store(db, ames())
    await rebuild(db, dt.date(2026, 2, 28))
    entries = await history(db, "50010")
    assert entries[0]["month"] == "2026-02"
    # as in the full history: p1, p3, p7 at the end of February; p6's March sale is not seen
    assert (entries[0]["active_listings"], entries[0]["sold_count"]) == (3, 2)
    snap = await snapshot(db, "50010")
    assert snap["date"] == "2026-02-28"
    # window (01-29, 02-28]: sales p5 02-13 and p4 02-14; listings p3 02-13 and p7 02-20
    assert (snap["sold_last_30d"], snap["new_listings_30d"]) == (2, 2)
    assert snap["median_sold_price"] == 365_000


# -- places ------------------------------------------------------------------------------------


async def test_city_and_state_come_from_zipcodes(db: Database) -> None:
    # the records spell the place their own way; the zipcodes package decides
    await store(db, [prop("a", "offMarket", [], zip_code="10001", city="Manhattan", state="NY")])
    await rebuild(db, D)
    snap = await snapshot(db, "10001")
    assert (snap["city"], snap["state"]) == ("New York", "NY")


async def test_unknown_zip_takes_the_most_common_place_of_its_records(db: Database) -> None:
    await store(db, [
        prop("a", "offMarket", [], zip_code="99999", city="Springfield", state="IL"),
        prop("b", "offMarket", [], zip_code="99999", city="SPRINGFIELD", state="IL"),
        prop("c", "offMarket", [], zip_code="99999", city="Springfield", state="IL"),
        prop("d", "offMarket", [], zip_code="99999", city="Shelbyville", state="IL"),
    ])  # fmt: skip
    assert await rebuild(db, D) == 1
    snap = await snapshot(db, "99999")
    assert (snap["city"], snap["state"]) == ("Springfield", "IL")
    # a ZIP with records but no events: a snapshot of zeros and nulls, no history
    assert snap["active_listings"] == snap["sold_last_30d"] == snap["new_listings_30d"] == 0
    assert snap["median_list_price"] is None
    assert await history(db, "99999") == []


async def test_a_load_names_its_zips_from_the_stored_package_answers(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a rebuild, `compute_zips` reads the zipcodes package's answers from the store
    (the package is not asked); a ZIP the package does not know still follows its records."""
    await store(db, [
        prop("a", "offMarket", [], zip_code="10001", city="Manhattan", state="NY"),
        prop("b", "offMarket", [], zip_code="99999", city="Springfield", state="IL"),
    ])  # fmt: skip
    await rebuild(db, D)
    await store(db, [
        prop("c", "offMarket", [], zip_code="99999", city="Shelbyville", state="IL"),
        prop("d", "offMarket", [], zip_code="99999", city="Shelbyville", state="IL"),
    ])  # fmt: skip

    def unasked(codes: object) -> dict[str, tuple[str, str]]:
        raise AssertionError(f"the zipcodes package was asked about {codes}")

    monkeypatch.setattr(builder, "zip_places", unasked)
    part = await builder.compute_zips(db, ["10001", "99999"], D)
    assert [row[:3] for row in part.snapshots] == [
        ("10001", "New York", "NY"), ("99999", "Shelbyville", "IL"),
    ]  # fmt: skip
    assert part.places == []
    monkeypatch.undo()
    full = await builder.compute(db, D)
    assert (part.snapshots, part.history) == (full.snapshots, full.history)


def test_most_common_places_counts_by_city_key_and_breaks_ties_alphabetically() -> None:
    rows = [
        ("99999", "Springfield", "IL", 1), ("99999", "SPRINGFIELD", "IL", 1),
        ("99999", "Shelbyville", "IL", 2), ("99998", "Ogdenville", "OR", 1),
    ]  # fmt: skip
    assert most_common_places([PlaceCount._make(row) for row in rows]) == {
        "99999": ("Shelbyville", "IL"),  # 2 against 2: SHELBYVILLE sorts first
        "99998": ("Ogdenville", "OR"),
    }


# -- replacing the statistics --------------------------------------------------------------------


async def test_rebuild_replaces_old_rows(db: Database) -> None:
    await store(db, ames())
    await db.execute(
        "INSERT INTO market_snapshots (zip_code, city, state, city_key, date, active_listings,"
        " new_listings_30d, sold_last_30d) VALUES ('12345', 'Gone', 'NY', 'GONE', '2020-01-01',"
        " 1, 1, 1)"
    )
    await db.execute(
        "INSERT INTO market_history (zip_code, month, active_listings, sold_count)"
        " VALUES ('12345', '2020-01', 1, 1)"
    )
    await rebuild(db, D)
    await rebuild(db, D)
    assert await db.fetch_all("SELECT zip_code, date FROM market_snapshots") == [
        ("50010", "2026-03-15")
    ]
    assert await db.fetch_one("SELECT count(*) FROM market_history") == (5,)
    assert await history(db, "12345") == []


async def test_rebuild_bumps_the_data_version(db: Database) -> None:
    await store(db, ames())
    before = await PropertyRepository(db).data_version()
    await rebuild(db, D)
    assert await PropertyRepository(db).data_version() == before + 1


async def test_failed_rebuild_leaves_previous_statistics(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store(db, ames())
    await rebuild(db, D)
    before_snapshots = await db.fetch_all("SELECT * FROM market_snapshots")
    before_history = await db.fetch_all("SELECT * FROM market_history ORDER BY month")
    version = await PropertyRepository(db).data_version()

    def broken_progress(n: int) -> None:
        raise RuntimeError("killed while reading")

    with pytest.raises(RuntimeError, match="while reading"):
        await rebuild(db, dt.date(2026, 4, 1), progress=broken_progress)

    # fail after the old rows are deleted and the new snapshots written
    real = db.executemany

    async def executemany(sql: str, rows: Any) -> None:
        if sql == HISTORY_INSERT:
            raise RuntimeError("killed while writing")
        await real(sql, rows)

    monkeypatch.setattr(db, "executemany", executemany)
    with pytest.raises(RuntimeError, match="while writing"):
        await rebuild(db, dt.date(2026, 4, 1))
    monkeypatch.undo()

    assert await db.fetch_all("SELECT * FROM market_snapshots") == before_snapshots
    assert await db.fetch_all("SELECT * FROM market_history ORDER BY month") == before_history
    assert await PropertyRepository(db).data_version() == version


async def test_a_load_during_the_read_is_picked_up(db: Database) -> None:
    await store(db, ames())
    calls: list[int] = []

    def progress(n: int) -> None:
        calls.append(n)

    async def load_meanwhile() -> None:
        await store(db, [prop("x", "forSale", [ev("2026-03-01", "listedForSale", 1)],
                              zip_code="10001", city="New York", state="NY")])  # fmt: skip

    original = builder._compute
    loaded = False

    async def compute(*args: Any) -> Any:
        nonlocal loaded
        result = await original(*args)
        if not loaded:  # a load commits after the first pass has read the records
            loaded = True
            await load_meanwhile()
        return result

    builder_compute = "propdata.markets.builder._compute"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(builder_compute, compute)
        assert await rebuild(db, D, progress=progress) == 2
    assert calls == [9, 10]  # the first pass was thrown away and the second saw the load
    assert (await snapshot(db, "10001"))["active_listings"] == 1


async def test_rebuild_reads_under_the_lock_when_loads_keep_landing(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store(db, ames())
    versions = iter(range(100))

    async def moving_version(self: PropertyRepository) -> int:
        return next(versions)

    monkeypatch.setattr(PropertyRepository, "data_version", moving_version)
    assert await rebuild(db, D) == 1
    assert (await snapshot(db, "50010"))["active_listings"] == 4


async def test_no_records_clears_the_statistics(db: Database) -> None:
    await MarketStatsWriter(db).replace(
        [("12345", "X", "NY", "X", "2020-01-01", None, None, 0, 0, 0, None, None, None, None)], []
    )
    assert await rebuild(db, D) == 0
    assert await db.fetch_one("SELECT count(*) FROM market_snapshots") == (0,)


async def test_progress_counts_properties(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(builder, "PAGE", 4)  # pages of 4, 4 and 1: events split across pages
    await store(db, ames())
    seen: list[int] = []
    await rebuild(db, D, progress=seen.append)
    assert seen == [4, 4, 1]
    assert (await snapshot(db, "50010"))["median_days_on_market"] == 47
    assert len(await history(db, "50010")) == 5


# -- the pieces -------------------------------------------------------------------------------------


def test_median_and_mean_round_half_up() -> None:
    assert median([]) is None
    assert median([5]) == 5
    assert median([3, 1, 2]) == 2
    assert median([1, 2]) == 2  # 1.5
    assert median([1, 4, 2, 3]) == 3  # 2.5
    assert median([2, 4]) == 3
    assert mean_int([]) is None
    assert mean_int([100.0, 101.0]) == 101  # 100.5
    assert mean_int([100.0, 100.98]) == 100  # 100.49


def test_calendar() -> None:
    cal = Calendar.of(dt.date(2024, 3, 15))
    assert cal.window_after == "2024-02-14"
    assert len(cal.months) == 60
    assert (cal.months[0], cal.months[-1]) == ("2019-04", "2024-03")
    assert cal.ends[-2:] == ("2024-02-29", "2024-03-15")  # a leap February; D ends the last
    assert cal.month_of("2019-03-31") == -1
    assert cal.month_of("2019-04-01") == 0
    assert cal.month_of("2024-03-01") == 59


# -- a cross-check against a plain reading of the definitions ------------------------------------


def random_records(seed: int, count: int) -> list[PropertyDetail]:
    """Histories drawn from the status machine: same-day events, missing prices and areas,
    relistings, rentals, off-market sales, events after D and listings older than 60 months."""
    rng = random.Random(seed)
    records: list[PropertyDetail] = []
    for n in range(count):
        day = D - dt.timedelta(days=rng.randrange(rng.choice([100, 400, 2_700])))
        status, history = "offMarket", []
        for _ in range(rng.randrange(0, 9)):
            kind = rng.choice([e for (s, e) in lifecycle.TRANSITIONS if s == status])
            day += dt.timedelta(days=rng.choice([0, 0, 1, 3, 17, 30, 31, 45, 90, 200]))
            price = (
                None if rng.random() < 0.1 else rng.randrange(50, 900) * 1_000 + rng.randrange(3)
            )
            history.append(ev(day.isoformat(), kind, price))
            status = lifecycle.TRANSITIONS[(status, kind)]
        last_sale = next((e.date for e in reversed(history) if e.event == "sold"), None)
        records.append(prop(
            f"r{n:04d}", lifecycle.expire(status, last_sale, D), history,
            living_area=rng.choice([None, 0, 700, 1_234, 2_000, 3_001]),
            zip_code=rng.choice(["50010", "50011", "99999"]),
        ))  # fmt: skip
    return records


def half_up(value: Fraction) -> int:
    return math.floor(value + Fraction(1, 2))


def ref_median(values: list[int]) -> int | None:
    return (
        None
        if not values
        else half_up(Fraction(statistics.median_low(values) + statistics.median_high(values), 2))
    )


def ref_mean(values: list[Fraction]) -> int | None:
    return None if not values else half_up(sum(values, Fraction(0)) / len(values))


def reference(
    records: list[PropertyDetail], as_of: dt.date
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Snapshot and history per ZIP, straight from the definitions in docs/markets.md."""
    D_ = as_of.isoformat()
    after = (as_of - dt.timedelta(days=30)).isoformat()
    listings: dict[str, list[dict[str, Any]]] = {}  # per ZIP: start, end, prices, area
    sales: dict[str, list[dict[str, Any]]] = {}  # per ZIP: date, price, listing
    starts: dict[str, list[str]] = {}
    firsts: dict[str, str] = {}
    actives: dict[str, list[PropertyDetail]] = {}
    for r in records:
        z = r.address.zip_code
        listings.setdefault(z, [])
        sales.setdefault(z, [])
        starts.setdefault(z, [])
        actives.setdefault(z, [])
        if r.status == "forSale":
            actives[z].append(r)
        open_: dict[str, Any] | None = None
        for e in lifecycle.chronological(r.price_history):
            if e.date > D_:
                break
            firsts[z] = min(firsts.get(z, e.date), e.date)
            if e.event in ("listedForSale", "relisted"):
                starts[z].append(e.date)
                if open_ is not None:
                    open_["end"] = e.date
                open_ = {"start": e.date, "end": None, "prices": [], "area": r.living_area}
                listings[z].append(open_)
            repriced = e.event in ("listedForSale", "relisted", "priceChange")
            if open_ is not None and repriced and e.price is not None:
                open_["prices"].append((e.date, e.price))
            if e.event == "sold":
                sales[z].append({"date": e.date, "price": e.price, "listing": open_})
            if e.event in ("sold", "delisted", "listedForRent") and open_ is not None:
                open_["end"] = e.date
                open_ = None
    cal = Calendar.of(as_of)
    snaps: dict[str, Any] = {}
    hist: dict[str, Any] = {}
    for z in listings:
        active = actives[z]
        prices = [
            r.list_price or lifecycle.current_list_price(r.price_history, r.status) for r in active
        ]
        priced = [(p, r.living_area) for p, r in zip(prices, active, strict=True) if p is not None]
        window = [s for s in sales[z] if after < s["date"] <= D_]

        def days(s: dict[str, Any]) -> int:
            return (
                dt.date.fromisoformat(s["date"]) - dt.date.fromisoformat(s["listing"]["start"])
            ).days

        ratios = [Fraction(s["price"], s["listing"]["prices"][-1][1]) for s in window
                  if s["price"] is not None and s["listing"] and s["listing"]["prices"]
                  and s["listing"]["prices"][-1][1] > 0]  # fmt: skip
        snaps[z] = {
            "median_list_price": ref_median([p for p, _ in priced]),
            "median_sold_price": ref_median([s["price"] for s in window if s["price"] is not None]),
            "active_listings": len(active),
            "new_listings_30d": sum(1 for d in starts[z] if after < d <= D_),
            "sold_last_30d": len(window),
            "median_days_on_market": ref_median([days(s) for s in window if s["listing"]]),
            "average_price_per_sqft": ref_mean([Fraction(p, a) for p, a in priced if a]),
            "inventory_months": None if not window else float(
                Fraction(half_up(Fraction(len(active) * 100, len(window))), 100)),
            "list_to_sold_ratio": None if not ratios else float(
                Fraction(half_up(sum(ratios, Fraction(0)) / len(ratios) * 10_000), 10_000)),
        }  # fmt: skip
        entries = []
        for index, month in enumerate(cal.months):
            if z not in firsts or month < firsts[z][:7]:
                continue  # history starts with the ZIP's first month with an event
            end = cal.ends[index]
            at_end = [(
                next((p for d, p in reversed(lst["prices"]) if d <= end), None), lst["area"]
            ) for lst in listings[z] if lst["start"] <= end and (lst["end"] is None or lst["end"] > end)]  # fmt: skip
            sold = [s for s in sales[z] if s["date"][:7] == month]
            entries.append({
                "month": month,
                "median_list_price": ref_median([p for p, _ in at_end if p is not None]),
                "median_sold_price": ref_median([s["price"] for s in sold if s["price"] is not None]),
                "active_listings": len(at_end),
                "sold_count": len(sold),
                "median_days_on_market": ref_median([days(s) for s in sold if s["listing"]]),
                "average_price_per_sqft": ref_mean([Fraction(p, a) for p, a in at_end if p is not None and a]),
            })  # fmt: skip
        hist[z] = list(reversed(entries))
    return snaps, hist


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_matches_a_plain_reading_of_the_definitions(db: Database, seed: int) -> None:
    records = random_records(seed, 600)
    await store(db, records)
    snaps, hist = reference(records, D)
    assert await rebuild(db, D) == len(snaps)
    for zip_code, expected in snaps.items():
        got = await snapshot(db, zip_code)
        assert {k: got[k] for k in expected} == expected, zip_code
        assert await history(db, zip_code) == hist[zip_code], zip_code


async def test_some_zip_codes_alone_give_the_full_rebuild_rows_of_those(db: Database) -> None:
    """`compute_zips` of a few ZIP codes: exactly their rows of a full pass; a ZIP without
    records gets none, and `replace_zips` leaves the other ZIP codes' rows alone. After a
    rebuild, the zipcodes package's answers come from the store (none asked again)."""
    items = list(synthetic.generate(400, 11, D))
    assert not (await load(db, items, origin="synthetic", as_of=D)).rejects
    snapshots, history, places = await builder.compute(db, D)
    codes = sorted({row[0] for row in snapshots})
    assert len(codes) > 2
    some = [codes[0], codes[-1], "00000"]
    part = await builder.compute_zips(db, some, D)
    assert part == (
        [row for row in snapshots if row[0] in some],
        [row for row in history if row[0] in some],
        [row for row in places if row[0] in some],
    )
    await rebuild(db, D)
    stored = await db.fetch_all("SELECT zip_code, city, state FROM zip_places ORDER BY zip_code")
    assert [tuple(row) for row in stored] == places
    assert await builder.compute_zips(db, some, D) == (part.snapshots, part.history, [])
    before = await db.fetch_all("SELECT * FROM market_snapshots ORDER BY zip_code")
    async with db.transaction():
        assert await builder.replace_zips(db, some, part) == 2
    assert await db.fetch_all("SELECT * FROM market_snapshots ORDER BY zip_code") == before
    assert await builder.stored_as_of(db) == {D.isoformat()}

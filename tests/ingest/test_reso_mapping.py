"""The one RESO mapping, as the Web API's JSON records and RESO CSV rows both reach it:
street parts, lot units, bathrooms, listing dates, ids of a source, and Delete."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from propdata.ingest import pipeline
from propdata.ingest.loader import LoadReport, Reject, Removal, load, validate
from propdata.ingest.readers import read_file
from propdata.ingest.readers.reso import json_row, reso_item, reso_record
from propdata.kit.db import Database
from propdata.properties.repository import PropertyRepository
from propdata.properties.schemas import PropertyDetail
from tests.factories import event, record

AS_OF = dt.date(2024, 6, 1)


def listing(**fields: Any) -> dict[str, Any]:
    """A record as a RESO Web API sends it: JSON numbers, nulls, fields it does not use."""
    record: dict[str, Any] = {
        "ListingKey": "3yd-A1", "StandardStatus": "Active", "PropertyType": "Residential",
        "PropertySubType": "SingleFamilyResidence", "StreetNumber": "2100",
        "StreetDirPrefix": "N", "StreetName": "Elm", "StreetSuffix": "Ave", "UnitNumber": None,
        "City": "Ames", "StateOrProvince": "IA", "PostalCode": "50010",
        "ListPrice": 325000, "OriginalListPrice": 335000.0, "BedroomsTotal": 3,
        "BathroomsTotalInteger": 2, "LivingArea": 1650.4, "LotSizeArea": 0.25,
        "LotSizeUnits": "Acres", "YearBuilt": 1987, "DaysOnMarket": 9,
        "Latitude": 42.0347, "Longitude": -93.62, "ModificationTimestamp":
        "2024-05-31T18:00:00.123Z", "Media": [{"MediaURL": "x"}], "NewConstructionYN": False,
    }  # fmt: skip
    record.update(fields)
    return record


def item(**fields: Any) -> PropertyDetail | Removal | Reject:
    return reso_item(1, json_row(listing(**fields)), AS_OF, "mls")


def test_a_web_api_record_maps_with_the_source_prefix() -> None:
    record = item()
    assert isinstance(record, PropertyDetail)
    assert record.id == "mls-3yd-A1" and record.status == "forSale"
    assert record.address.street_address == "2100 N Elm Ave"
    assert record.property_type == "singleFamily"
    assert (record.list_price, record.original_list_price) == (325_000, 335_000)
    assert (record.bathrooms_total, record.living_area) == (2.0, 1650)
    assert record.lot_size == 10_890  # a quarter acre
    assert record.last_updated == "2024-05-31T18:00:00Z"
    assert [(e.date, e.event) for e in record.price_history] == [("2024-05-23", "listedForSale")]
    assert validate(record, AS_OF) is None


def test_unit_numbers_and_unparsed_addresses() -> None:
    unit = item(UnitNumber="#4B")
    assert isinstance(unit, PropertyDetail)
    assert unit.address.street_address == "2100 N Elm Ave Unit 4B"
    whole = item(UnparsedAddress="7 Oak St, Ames, IA 50010")
    assert isinstance(whole, PropertyDetail) and whole.address.street_address == "7 Oak St"
    none = item(StreetName=None, UnparsedAddress=None)
    assert isinstance(none, Reject) and none.id == "mls-3yd-A1"
    assert "UnparsedAddress is empty and no StreetName" in none.reason


@pytest.mark.parametrize(
    ("fields", "square_feet"),
    [
        ({"LotSizeArea": 8712, "LotSizeUnits": "Square Feet"}, 8712),
        ({"LotSizeArea": 1000, "LotSizeUnits": "Square Meters"}, 10764),
        ({"LotSizeSquareFeet": 5000.5, "LotSizeArea": 1}, 5000),
        ({"LotSizeAcres": 1, "LotSizeArea": None}, 43560),
        ({"LotSizeArea": None}, None),
    ],
)
def test_lot_sizes_in_their_units(fields: dict[str, Any], square_feet: int | None) -> None:
    record = item(**fields)
    assert isinstance(record, PropertyDetail) and record.lot_size == square_feet


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"LotSizeUnits": None}, "LotSizeArea is given without LotSizeUnits"),
        ({"LotSizeUnits": "Hectares"}, "LotSizeUnits 'Hectares' is not"),
        ({"ListPrice": -1}, "ListPrice must not be negative"),
        ({"StandardStatus": "Incomplete"}, "not complete"),
        ({"DaysOnMarket": None}, "needs DaysOnMarket (or OnMarketDate)"),
    ],
)
def test_records_that_cannot_be_mapped_are_rejects_with_their_key(
    fields: dict[str, Any], reason: str
) -> None:
    rejected = item(**fields)
    assert isinstance(rejected, Reject) and rejected.id == "mls-3yd-A1"
    assert reason in rejected.reason


def test_bathrooms_decimal_wins_over_the_integer() -> None:
    record = item(BathroomsTotalDecimal=2.5)
    assert isinstance(record, PropertyDetail) and record.bathrooms_total == 2.5


def test_on_market_date_dates_a_listing_without_days_on_market() -> None:
    record = item(DaysOnMarket=None, OnMarketDate="2024-05-01")
    assert isinstance(record, PropertyDetail)
    assert [(e.date, e.event) for e in record.price_history] == [("2024-05-01", "listedForSale")]


def test_on_market_date_dates_a_listing_before_days_on_market_does() -> None:
    active = item(DaysOnMarket=3, OnMarketDate="2024-05-20")  # counted to another day
    assert isinstance(active, PropertyDetail) and active.days_on_market == 3
    assert [(e.date, e.event) for e in active.price_history] == [("2024-05-20", "listedForSale")]
    closed = item(StandardStatus="Closed", CloseDate="2024-05-30", DaysOnMarket=2,
                  ListingContractDate="2024-05-18")  # fmt: skip
    assert isinstance(closed, PropertyDetail)
    assert [(e.date, e.event) for e in closed.price_history] == [
        ("2024-05-30", "sold"),
        ("2024-05-18", "listedForSale"),
    ]
    after = item(StandardStatus="Closed", CloseDate="2024-05-30", DaysOnMarket=2,
                 OnMarketDate="2024-05-31")  # after the close: DaysOnMarket dates it  # fmt: skip
    assert isinstance(after, PropertyDetail)
    assert after.price_history[1].date == "2024-05-28"


def test_closed_gains_a_sold_event_at_close_price_and_date() -> None:
    record = item(StandardStatus="Closed", CloseDate="2024-05-20", ClosePrice=330000)
    assert isinstance(record, PropertyDetail) and record.status == "recentlySold"
    sale = record.price_history[0]
    assert (sale.date, sale.event, sale.price) == ("2024-05-20", "sold", 330_000)


def test_lease_is_for_rent_and_ended_listings_are_off_market() -> None:
    lease = item(PropertyType="ResidentialLease", ListPrice=1800)
    assert isinstance(lease, PropertyDetail) and lease.status == "forRent"
    for status in ("Canceled", "Expired", "Withdrawn", "Hold"):
        ended = item(StandardStatus=status)
        assert isinstance(ended, PropertyDetail) and ended.status == "offMarket"


def test_delete_is_a_removal_of_the_prefixed_id() -> None:
    assert item(StandardStatus="Delete", City=None) == Removal(1, "mls-3yd-A1")
    with pytest.raises(ValueError, match="deleted at the source"):
        reso_record(json_row(listing(StandardStatus="Delete")), AS_OF)


def test_mls_grid_s_hidden_listing_is_a_removal_and_a_shown_one_a_record() -> None:
    assert item(MlgCanView=False, City=None) == Removal(1, "mls-3yd-A1")
    assert isinstance(item(MlgCanView=True), PropertyDetail)
    assert isinstance(item(), PropertyDetail)  # a feed without the flag


def test_json_values_become_plain_text() -> None:
    row = json_row({"a": 1e-05, "b": 12.0, "c": True, "d": None, "e": [1], "f": "x"})
    assert row == {"a": "0.00001", "b": "12.0", "c": "true", "d": None, "e": None, "f": "x"}


@pytest.fixture
async def db(empty_db: Database) -> AsyncIterator[Database]:
    yield empty_db


async def test_a_reso_csv_delete_removes_the_record_through_the_feed(
    db: Database, tmp_path: Path
) -> None:
    header = "ListingKey,StandardStatus,StreetNumber,StreetName,City,StateOrProvince,PostalCode,ListPrice,DaysOnMarket\n"
    first = tmp_path / "first.csv"
    first.write_text(header + "K1,Active,1,Main St,Ames,IA,50010,100000,3\n"
                     "K2,Active,2,Main St,Ames,IA,50014,200000,3\n")  # fmt: skip
    report = await load(db, read_file(first, AS_OF), origin="import", as_of=AS_OF)
    assert report.inserted == 2
    second = tmp_path / "second.csv"
    second.write_text(header + "K1,Delete,,,,,,,\nK9,Delete,,,,,,,\n")
    report = await load(db, read_file(second, AS_OF), origin="import", as_of=AS_OF)
    assert (report.removed, report.unchanged, report.rejects) == (1, 1, [])
    assert report.zips == {"50010"}
    rows = await db.fetch_all("SELECT id FROM properties ORDER BY id")
    assert [r[0] for r in rows] == ["K2"]
    feed = await db.fetch_all(
        "SELECT property_id, change_type FROM property_changes WHERE property_id = 'K1'"
        " ORDER BY seq"
    )
    assert [tuple(r) for r in feed][-1] == ("K1", "removed")


HEADER = ("ListingKey,StandardStatus,StreetNumber,StreetName,City,StateOrProvince,PostalCode,"
          "ListPrice,DaysOnMarket,CloseDate,ClosePrice\n")  # fmt: skip


async def import_file(db: Database, path: Path, as_of: dt.date) -> LoadReport:
    """`data import FILE` as the command line runs it."""
    outcome = await pipeline.run(db, [pipeline.file_source(path, as_of)], as_of)
    return outcome.reports[0]


async def history(db: Database, property_id: str) -> list[tuple[str, str, int | None]]:
    events = await PropertyRepository(db).stored_history(property_id)
    return [(e.date, e.event, e.price) for e in events]


async def test_a_closed_row_keeps_the_listing_date_of_the_active_row_it_follows(
    db: Database, tmp_path: Path
) -> None:
    """DaysOnMarket of a Closed row counts to the contract, not the close: CloseDate - 2 is
    later than the listing the Active row dated (as-of - 5). It is the same listing."""
    active = tmp_path / "active.csv"
    active.write_text(HEADER + "K1,Active,1,Main St,Ames,IA,50010,300000,5,,\n")
    assert (await import_file(db, active, AS_OF)).inserted == 1  # listed 2024-05-27
    closed = tmp_path / "closed.csv"
    closed.write_text(HEADER + "K1,Closed,1,Main St,Ames,IA,50010,300000,2,2024-06-06,295000\n")
    later = AS_OF + dt.timedelta(days=6)
    report = await import_file(db, closed, later)
    assert (report.updated, report.rejects) == (1, [])
    assert await history(db, "K1") == [
        ("2024-06-06", "sold", 295_000),
        ("2024-05-27", "listedForSale", 300_000),
    ]
    row = await db.fetch_one(
        "SELECT status, listing_date, days_on_market, last_sale_date FROM properties"
        " WHERE id = 'K1'"
    )
    assert row is not None
    assert tuple(row) == ("recentlySold", "2024-05-27", 10, "2024-06-06")  # list to close
    again = await import_file(db, closed, later)  # the same row again: nothing changes
    assert (again.unchanged, again.updated, again.rejects) == (1, 0, [])


async def test_an_explicit_history_relisting_a_stored_listing_is_still_rejected(
    db: Database, tmp_path: Path
) -> None:
    """The same two states in the API's own shape: its priceHistory is the history, and a
    listedForSale while the stored record is forSale is no transition."""
    first = tmp_path / "first.jsonl"
    listed = record("K1", price_history=[event("2024-05-27", "listedForSale", 300_000)])
    first.write_bytes(msgspec.json.encode(listed) + b"\n")
    assert (await import_file(db, first, AS_OF)).inserted == 1
    second = tmp_path / "second.jsonl"
    sold = record("K1", status="recentlySold", price_history=[
        event("2024-06-06", "sold", 295_000), event("2024-06-04", "listedForSale", 300_000)
    ])  # fmt: skip
    second.write_bytes(msgspec.json.encode(sold) + b"\n")
    report = await import_file(db, second, AS_OF + dt.timedelta(days=6))
    assert report.updated == 0 and [r.reason for r in report.rejects] == [
        "event 1 (listedForSale on 2024-06-04) is not allowed from forSale"
    ]
    assert await history(db, "K1") == [("2024-05-27", "listedForSale", 300_000)]

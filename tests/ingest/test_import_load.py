"""Import files end to end: read_file -> loader.load -> SQLite, and back out again."""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec

from propdata.ingest.loader import LoadReport, load
from propdata.ingest.readers import API_COLUMNS, read_file, write_rejects
from propdata.kit.db import SQLiteDatabase
from propdata.migrations.schema import migrate
from propdata.properties.repository import COLUMNS, PropertyRepository
from propdata.properties.schemas import (
    Address,
    Coordinates,
    Estimate,
    PriceEvent,
    PropertyDetail,
    PropertyResponse,
    Scores,
    TaxRecord,
)
from tests.factories import record

AS_OF = dt.date(2024, 6, 1)
TABLES = ("properties", "property_histories", "meta")


async def import_file(db: SQLiteDatabase, path: Path, as_of: dt.date = AS_OF) -> LoadReport:
    return await load(db, read_file(path, as_of), origin="import", as_of=as_of)


async def dump(db: SQLiteDatabase) -> dict[str, list[tuple[Any, ...]]]:
    return {t: await db.fetch_all(f"SELECT * FROM {t} ORDER BY 1, 2") for t in TABLES}


async def export(db: SQLiteDatabase, record_id: str) -> PropertyDetail:
    """The record as GET /v1/properties/{id} shows it (computed fields left null)."""
    row = await db.fetch_one(
        f"SELECT {', '.join(COLUMNS)} FROM properties WHERE id = ?", (record_id,)
    )
    assert row is not None
    r = dict(zip(COLUMNS, row, strict=True))
    repo = PropertyRepository(db)
    events = [(e.date, e.event, e.price, e.source) for e in await repo.price_history(record_id)]
    taxes = [(t.year, t.tax_paid, t.assessed_value) for t in await repo.tax_history(record_id)]

    def estimate(prefix: str) -> Estimate | None:
        if r[f"{prefix}_value"] is None:
            return None
        return Estimate(
            value=r[f"{prefix}_value"],
            low=r[f"{prefix}_low"],
            high=r[f"{prefix}_high"],
            as_of_date=r[f"{prefix}_as_of"],
        )

    scores = (r["walk_score"], r["transit_score"], r["bike_score"])
    return PropertyDetail(
        id=r["id"],
        status=r["status"],
        list_price=r["list_price"],
        address=Address(
            street_address=r["street_address"],
            city=r["city"],
            state=r["state"],
            zip_code=r["zip_code"],
            county=r["county"],
            fips_code=r["fips_code"],
        ),
        bedrooms_total=r["bedrooms"],
        bathrooms_total=r["bathrooms"],
        living_area=r["living_area"],
        lot_size=r["lot_size"],
        year_built=r["year_built"],
        property_type=r["property_type"],
        days_on_market=r["days_on_market"],
        price_history=[PriceEvent(date=e[0], event=e[1], price=e[2], source=e[3]) for e in events],
        tax_history=[TaxRecord(year=t[0], tax_paid=t[1], assessed_value=t[2]) for t in taxes],
        scores=None if scores == (None, None, None) else Scores(
            walkability=scores[0], transit=scores[1], bike=scores[2]
        ),
        coordinates=None if r["latitude"] is None else Coordinates(
            latitude=r["latitude"], longitude=r["longitude"]
        ),
        last_updated=r["last_updated"],
        listing_type=r["listing_type"],
        original_list_price=r["original_list_price"],
        previous_list_price=r["previous_list_price"],
        last_price_change_date=r["last_price_change_date"],
        removed_date=r["removed_date"],
        rent_estimate=estimate("rent"),
        value_estimate=estimate("value"),
        gross_yield=None,
        price_per_square_foot=None,
        stories=r["stories"],
        parcel_id=r["parcel_id"], garage_spaces=r["garage_spaces"],
        basement_finished_area=r["basement_finished_area"], fireplaces=r["fireplaces"],
        overall_quality=r["overall_quality"], overall_condition=r["overall_condition"],
    )  # fmt: skip


FULL = record(
    "full-1",
    list_price=340000,
    address={"street_address": "1510 First Avenue, Apt 112"},  # Ames, IA 50010, Story County
    bathrooms_total=2.5,
    living_area=2000,
    lot_size=8712,
    year_built=1999,
    days_on_market=138,
    price_history=[
        PriceEvent(date="2024-03-01", event="priceChange", price=340000, source="agent"),
        PriceEvent(date="2024-01-15", event="listedForSale", price=350000, source="mls"),
        PriceEvent(date="2019-07-02", event="sold", price=280000, source="publicRecord"),
    ],
    tax_history=[
        TaxRecord(year=2023, tax_paid=5100, assessed_value=300000),
        TaxRecord(year=2022, tax_paid=None, assessed_value=290000),
    ],
    scores=Scores(walkability=60, transit=None, bike=70),
    coordinates=Coordinates(latitude=42.0308, longitude=-93.6319),
    last_updated="2024-05-30T12:00:00Z",
    original_list_price=350000,
    previous_list_price=350000,
    last_price_change_date="2024-03-01",
    rent_estimate=Estimate(value=2000, low=1800, high=2200, as_of_date="2024-05-01"),
    value_estimate=Estimate(value=345000, low=320000, high=370000, as_of_date="2024-05-01"),
    gross_yield=0.0696,
    price_per_square_foot=170,
    parcel_id="0527127150",
    garage_spaces=1.5,
    basement_finished_area=640,
    fireplaces=2,
    overall_quality=7,
    overall_condition=6,
)
"""A complete record whose derived fields agree with its history, as an export shows it."""


def minimal(record_id: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": record_id,
        "status": "offMarket",
        "address": {"streetAddress": f"{record_id} Main St", "city": "Ames", "state": "IA",
                    "zipCode": "50010"},
        "lastUpdated": "2024-05-01T00:00:00Z",
        **fields,
    }  # fmt: skip


def jsonl(path: Path, *lines: Any) -> Path:
    path.write_text(
        "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
        encoding="utf-8",
    )
    return path


def without_computed(record: PropertyDetail) -> PropertyDetail:
    return msgspec.structs.replace(record, gross_yield=None, price_per_square_foot=None)


# -- round trips --------------------------------------------------------------------------


async def test_api_jsonl_export_loads_back_equal(db: SQLiteDatabase, tmp_path: Path) -> None:
    path = tmp_path / "full.jsonl"
    path.write_bytes(msgspec.json.encode(FULL) + b"\n")
    report = await import_file(db, path)
    assert (report.inserted, report.rejects) == (1, [])
    exported = await export(db, "full-1")
    assert exported == without_computed(FULL)

    # The export, as GET answers it ({"data": ...}), loads into a fresh store identically
    # and over the same store changes nothing.
    again = tmp_path / "export.jsonl"
    again.write_bytes(msgspec.json.encode(PropertyResponse(data=FULL)) + b"\n")
    before = await dump(db)
    report = await import_file(db, again)
    assert (report.unchanged, report.loaded, report.rejects) == (1, 0, [])
    assert await dump(db) == before

    fresh = SQLiteDatabase(str(tmp_path / "fresh.db"))
    try:
        await migrate(fresh)
        await import_file(fresh, again)
        assert await export(fresh, "full-1") == exported
        assert (await dump(fresh))["properties"] == before["properties"]
    finally:
        await fresh.close()


async def test_minimal_jsonl_loads(db: SQLiteDatabase, tmp_path: Path) -> None:
    report = await import_file(db, jsonl(tmp_path / "m.jsonl", minimal("m1"), "", minimal("m2")))
    assert (report.inserted, report.rejects) == (2, [])
    record = await export(db, "m2")
    assert record.status == "offMarket" and record.list_price is None
    assert record.address.street_address == "m2 Main St" and record.price_history == []


def api_cells(record: PropertyDetail) -> dict[str, str]:
    """One flat CSV row of a record in the API's own shape (the documented columns)."""
    wire = msgspec.to_builtins(record)
    cells: dict[str, str] = {}
    for column in API_COLUMNS:
        head, _, tail = column.partition(".")
        value = wire.get(head)
        if tail:
            value = value.get(tail) if isinstance(value, dict) else None
        if isinstance(value, list):
            cells[column] = json.dumps(value)
        elif isinstance(value, int) and not isinstance(value, bool) and value >= 1000:
            cells[column] = f"{value:,}"  # spreadsheets write thousands separators
        else:
            cells[column] = "" if value is None else str(value)
    return cells


async def test_api_csv_round_trip(db: SQLiteDatabase, tmp_path: Path) -> None:
    path = tmp_path / "api.csv"
    other = msgspec.structs.replace(
        FULL, id="sparse-1", scores=None, coordinates=None, rent_estimate=None, tax_history=[]
    )
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(API_COLUMNS))
        writer.writeheader()
        writer.writerow(api_cells(FULL))
        writer.writerow(api_cells(other))
    report = await import_file(db, path)
    assert (report.inserted, report.rejects) == (2, [])
    assert await export(db, "full-1") == without_computed(FULL)
    assert await export(db, "sparse-1") == without_computed(other)
    before = await dump(db)
    report = await import_file(db, path)
    assert (report.unchanged, report.loaded) == (2, 0)
    assert await dump(db) == before


RESO_HEADER = [
    "ListingKey", "StandardStatus", "ListPrice", "UnparsedAddress", "City", "StateOrProvince",
    "PostalCode", "CountyOrParish", "BedroomsTotal", "BathroomsTotalDecimal", "LivingArea",
    "LotSizeSquareFeet", "YearBuilt", "PropertyType", "StoriesTotal", "DaysOnMarket",
    "OriginalListPrice", "CloseDate", "ClosePrice", "Latitude", "Longitude", "ListAgentFullName",
]  # fmt: skip


def reso_csv(path: Path, rows: list[dict[str, str]]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=RESO_HEADER, restval="")
        writer.writeheader()
        writer.writerows(rows)
    return path


RESO_ROWS = [
    {"ListingKey": "R-active", "StandardStatus": "Active", "ListPrice": "1,250,000",
     "UnparsedAddress": "10 Oak St, Ames, IA 50010", "City": "Ames", "StateOrProvince": "ia",
     "PostalCode": "50010-1234", "CountyOrParish": "Story County", "BedroomsTotal": "4",
     "BathroomsTotalDecimal": "3.5", "LivingArea": "3,200.0", "PropertyType": "Residential",
     "DaysOnMarket": "12", "OriginalListPrice": "1,300,000", "Latitude": "42.03",
     "Longitude": "-93.62", "ListAgentFullName": "Pat Agent"},
    {"ListingKey": "R-closed", "StandardStatus": "Closed", "ListPrice": "240000",
     "UnparsedAddress": "11 Oak St", "City": "Ames", "StateOrProvince": "IA",
     "PostalCode": "50010", "PropertyType": "SingleFamilyResidence", "DaysOnMarket": "30",
     "CloseDate": "2024-04-01", "ClosePrice": "235000"},
    {"ListingKey": "R-lease", "StandardStatus": "Active", "ListPrice": "1800",
     "UnparsedAddress": "12 Oak St Unit 2", "City": "Ames", "StateOrProvince": "IA",
     "PostalCode": "50014", "PropertyType": "ResidentialLease", "DaysOnMarket": "0"},
    {"ListingKey": "R-expired", "StandardStatus": "Expired", "ListPrice": "199000",
     "UnparsedAddress": "13 Oak St", "City": "Ames", "StateOrProvince": "IA",
     "PostalCode": "50010", "PropertyType": "Condominium", "DaysOnMarket": "90"},
    {"ListingKey": "R-undated", "StandardStatus": "Pending", "ListPrice": "300000",
     "UnparsedAddress": "14 Oak St", "City": "Ames", "StateOrProvince": "IA",
     "PostalCode": "50010"},
    {"ListingKey": "R-badzip", "StandardStatus": "Withdrawn", "UnparsedAddress": "15 Oak St",
     "City": "Ames", "StateOrProvince": "IA", "PostalCode": "5001"},
]  # fmt: skip


async def test_reso_round_trip(db: SQLiteDatabase, tmp_path: Path) -> None:
    path = reso_csv(tmp_path / "reso.csv", RESO_ROWS)
    report = await import_file(db, path)
    assert report.inserted == 4
    assert {(r.line, r.id) for r in report.rejects} == {(6, "R-undated"), (7, "R-badzip")}

    active = await export(db, "R-active")
    assert active.status == "forSale" and active.property_type is None
    assert (active.list_price, active.original_list_price, active.days_on_market) == (
        1_250_000, 1_300_000, 12
    )  # fmt: skip
    assert [(e.date, e.event, e.price) for e in active.price_history] == [
        ("2024-05-20", "listedForSale", 1_300_000)
    ]
    assert active.address == Address(street_address="10 Oak St", city="Ames", state="IA",
                                     zip_code="50010", county="Story", fips_code="19169")  # fmt: skip
    assert active.living_area == 3200 and active.bathrooms_total == 3.5
    assert active.last_updated == "2024-06-01T00:00:00Z"

    closed = await export(db, "R-closed")
    assert closed.status == "recentlySold" and closed.property_type == "singleFamily"
    assert [(e.event, e.date, e.price) for e in closed.price_history] == [
        ("sold", "2024-04-01", 235000), ("listedForSale", "2024-03-02", 240000)
    ]  # fmt: skip
    row = await db.fetch_one(
        "SELECT last_sale_price, last_sale_date, listing_date FROM properties WHERE id = ?",
        ("R-closed",),
    )
    assert row == (235000, "2024-04-01", "2024-03-02")

    lease = await export(db, "R-lease")
    assert lease.status == "forRent" and lease.list_price == 1800
    assert [e.event for e in lease.price_history] == ["listedForRent"]

    expired = await export(db, "R-expired")
    assert expired.status == "offMarket" and expired.list_price is None
    assert expired.property_type == "condo" and expired.price_history == []

    before = await dump(db)
    again = await import_file(db, path)
    assert (again.unchanged, again.loaded, len(again.rejects)) == (4, 0, 2)
    assert await dump(db) == before


# -- rejects ------------------------------------------------------------------------------


async def test_rejects_carry_line_and_reason_and_the_rest_loads(
    db: SQLiteDatabase, tmp_path: Path
) -> None:
    listed = [{"date": "2024-05-01", "event": "listedForSale", "price": 100, "source": "mls"}]
    path = jsonl(
        tmp_path / "mixed.jsonl",
        minimal("ok-1"),
        '{"id": "broken", ',
        minimal("wrong-type", bedroomsTotal="three"),
        minimal("bad-enum", propertyType="castle"),
        minimal("bad-zip", address={"city": "Ames", "state": "IA", "zipCode": "5001"}),
        minimal("negative", status="forSale", listPrice=-5, priceHistory=listed),
        minimal("illegal", priceHistory=listed),
        minimal("unknown", colour="red"),
        "",
        minimal("ok-1"),
        minimal("ok-2"),
    )
    report = await import_file(db, path)
    assert report.inserted == 2
    reasons = {r.line: (r.id, r.reason) for r in report.rejects}
    assert sorted(reasons) == [2, 3, 4, 5, 6, 7, 8, 10]
    assert reasons[2][0] is None and reasons[2][1].startswith("invalid JSON")
    assert reasons[3] == ("wrong-type", "bedroomsTotal: Expected `int | null`, got `str`")
    assert reasons[4][0] == "bad-enum"
    assert reasons[4][1].startswith("propertyType: Invalid enum value 'castle' (allowed:")
    assert reasons[5] == ("bad-zip", "address.zipCode '5001' is not five digits")
    assert reasons[6] == ("negative", "listPrice must not be negative")
    assert reasons[7] == ("illegal", "priceHistory leads to forSale, but status is offMarket")
    assert reasons[8] == ("unknown", "Object contains unknown field `colour`")
    assert reasons[10] == ("ok-1", "id ok-1 already appears on line 1")
    ids = [r[0] for r in await db.fetch_all("SELECT id FROM properties ORDER BY id")]
    assert ids == ["ok-1", "ok-2"]

    out = tmp_path / "rejects.csv"
    write_rejects(out, report.rejects)
    with out.open(encoding="utf-8", newline="") as handle:
        lines = list(csv.reader(handle))
    assert lines[0] == ["line", "id", "reason"]
    assert [int(row[0]) for row in lines[1:]] == [2, 3, 4, 5, 6, 7, 8, 10]
    assert lines[2] == ["3", "wrong-type", "bedroomsTotal: Expected `int | null`, got `str`"]


async def test_lookalike_ids_zips_and_dates_are_rejected(
    db: SQLiteDatabase, tmp_path: Path
) -> None:
    """`$` matches before a final newline and `\\d` matches any script's digits: neither may
    let a value through that the API's own checks (ASCII, whole value) would refuse."""
    arabic_zip = {"city": "Ames", "state": "IA", "zipCode": "\u0665\u0660\u0660\u0661\u0660"}
    path = jsonl(
        tmp_path / "lookalikes.jsonl",
        minimal("newline\n"),
        minimal("arabic-zip", address=arabic_zip),
        minimal("zip-newline", address={"city": "Ames", "state": "IA", "zipCode": "50010\n"}),
        minimal("late", lastUpdated="2024-05-01T00:00:00Z\n"),
        minimal("ok"),
    )
    report = await import_file(db, path)
    assert report.inserted == 1
    assert [r.line for r in report.rejects] == [1, 2, 3, 4]
    ids = [r[0] for r in await db.fetch_all("SELECT id FROM properties")]
    assert ids == ["ok"]


async def test_second_load_changes_nothing(db: SQLiteDatabase, tmp_path: Path) -> None:
    path = jsonl(tmp_path / "twice.jsonl", *(minimal(f"t{i}") for i in range(50)), "not json")
    first = await import_file(db, path)
    assert (first.inserted, len(first.rejects)) == (50, 1)
    before = await dump(db)
    second = await import_file(db, path)
    assert (second.inserted, second.updated, second.unchanged) == (0, 0, 50)
    assert [r.line for r in second.rejects] == [51]
    assert await dump(db) == before  # data_version in meta included: no bump


async def test_update_with_an_illegal_transition_is_rejected(
    db: SQLiteDatabase, tmp_path: Path
) -> None:
    sold = minimal(
        "house",
        status="recentlySold",
        priceHistory=[
            {"date": "2024-04-01", "event": "sold", "price": 300000, "source": "mls"},
            {"date": "2024-02-01", "event": "listedForSale", "price": 310000, "source": "mls"},
        ],
    )
    await import_file(db, jsonl(tmp_path / "v1.jsonl", sold))
    before = await dump(db)

    # On its own a valid record (listed, not sold); against the stored sale it would undo
    # the sale without any new event, which the contract does not allow.
    unsold = {**sold, "status": "forSale", "priceHistory": sold["priceHistory"][1:]}
    report = await import_file(db, jsonl(tmp_path / "v2.jsonl", unsold))
    assert report.loaded == 0
    [reject] = report.rejects
    assert (reject.line, reject.id) == (1, "house")
    assert "stored status recentlySold cannot become forSale" in reject.reason
    assert await dump(db) == before

    # A legal update (a new listing after the sale) goes through.
    relisted = {**sold, "status": "forSale", "priceHistory": [
        {"date": "2024-05-15", "event": "listedForSale", "price": 330000, "source": "agent"},
        *sold["priceHistory"],
    ]}  # fmt: skip
    report = await import_file(db, jsonl(tmp_path / "v3.jsonl", relisted))
    assert (report.updated, report.rejects) == (1, [])
    assert (await export(db, "house")).status == "forSale"


# -- atomicity ----------------------------------------------------------------------------

KILLED_LOADER = """
import asyncio, datetime as dt, sys
from pathlib import Path
from propdata.ingest.loader import load
from propdata.ingest.readers import read_file
from propdata.kit.db import SQLiteDatabase

async def main() -> None:
    db = SQLiteDatabase(sys.argv[1])
    as_of = dt.date(2024, 6, 1)
    report = await load(db, read_file(Path(sys.argv[2]), as_of), origin="import", as_of=as_of,
                        progress=lambda n: print(n, flush=True))
    print("done", report.inserted, flush=True)

asyncio.run(main())
"""


def load_and_kill(db_path: Path, source: Path) -> tuple[str, int, str]:
    """Run a load in a child process and SIGKILL it once its first batch is written."""
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_LOADER, str(db_path), str(source)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # the first batch is written inside the transaction
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        stderr = proc.stderr.read() if proc.stderr else ""
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    return first, proc.returncode, stderr


async def test_a_killed_load_leaves_earlier_data_whole(tmp_path: Path) -> None:
    db_path = tmp_path / "kill.db"
    db = SQLiteDatabase(str(db_path))
    await migrate(db)
    earlier = jsonl(
        tmp_path / "earlier.jsonl",
        msgspec.to_builtins(FULL),
        *(minimal(f"early-{i}") for i in range(20)),
    )
    assert (await import_file(db, earlier)).inserted == 21
    before = await dump(db)
    await db.close()

    big = tmp_path / "big.jsonl"
    with big.open("w", encoding="utf-8") as handle:
        for i in range(50_000):
            handle.write(
                f'{{"id":"bulk-{i}","status":"offMarket","address":{{"streetAddress":"{i} Elm St",'
                f'"city":"Ames","state":"IA","zipCode":"50010"}},'
                f'"lastUpdated":"2024-05-01T00:00:00Z","bedroomsTotal":{i % 6}}}\n'
            )

    first, returncode, stderr = load_and_kill(db_path, big)
    assert first.strip().isdigit(), stderr
    assert returncode == -signal.SIGKILL  # killed mid-load, not finished

    reopened = SQLiteDatabase(str(db_path))
    try:
        assert await reopened.fetch_one("PRAGMA integrity_check") == ("ok",)
        count = await reopened.fetch_one("SELECT count(*) FROM properties")
        assert count is not None and count[0] in (21, 21 + 50_000)
        after = await dump(reopened)
        for table in TABLES:
            kept = [r for r in after[table] if not str(r[0]).startswith("bulk-")]
            if table == "meta" and count[0] != 21:
                continue  # a finished load bumps data_version
            assert kept == before[table], table
    finally:
        await reopened.close()


async def test_loader_refuses_numbers_no_store_can_hold(tmp_path: Path) -> None:
    """Any source (not only the readers) gets a reject, never an overflow that aborts the load."""
    from propdata.ingest.loader import load
    from propdata.kit.db import SQLiteDatabase
    from propdata.migrations.schema import migrate
    from tests.factories import AS_OF, record

    db = SQLiteDatabase(str(tmp_path / "n.db"))
    await migrate(db)
    items = [
        (1, record("ok-1")),
        (2, record("big-1", living_area=2**63)),
        (3, record("nan-1", bathrooms_total=float("nan"))),
        (4, record("inf-1", bathrooms_total=float("inf"))),
    ]
    report = await load(db, items, origin="import", as_of=AS_OF)
    assert report.inserted == 1
    assert [r.line for r in report.rejects] == [2, 3, 4]
    assert "livingArea" in report.rejects[0].reason and "bathroomsTotal" in report.rejects[1].reason
    await db.close()


async def test_duplicate_ids_are_caught_across_batches(tmp_path: Path) -> None:
    from propdata.ingest import loader
    from propdata.kit.db import SQLiteDatabase
    from propdata.migrations.schema import migrate
    from tests.factories import AS_OF, record

    db = SQLiteDatabase(str(tmp_path / "d.db"))
    await migrate(db)
    items = [(n + 1, record(f"r-{n}")) for n in range(loader.BATCH + 5)]
    items.append((loader.BATCH + 6, record("r-0", living_area=999)))
    report = await loader.load(db, items, origin="import", as_of=AS_OF)
    assert report.inserted == loader.BATCH + 5
    assert len(report.rejects) == 1 and "already appears on line 1" in report.rejects[0].reason
    await db.close()


async def test_reserved_ids_and_listing_type_of_unlisted_records(tmp_path: Path) -> None:
    from propdata.ingest.loader import load
    from propdata.kit.db import SQLiteDatabase
    from propdata.migrations.schema import migrate
    from tests.factories import AS_OF, event, record

    db = SQLiteDatabase(str(tmp_path / "r.db"))
    await migrate(db)
    off = record("off-1", status="offMarket", listing_type="auction",
                 price_history=[event("2025-02-01", "delisted", None), event("2025-01-01", "listedForSale", 5)])  # fmt: skip
    report = await load(
        db, [(1, record("lookup")), (2, record("search")), (3, off)], origin="import", as_of=AS_OF
    )
    assert [r.line for r in report.rejects] == [1, 2] and "reserved" in report.rejects[0].reason
    row = await db.fetch_one("SELECT listing_type, list_price FROM properties WHERE id = 'off-1'")
    assert row == (None, None)
    await db.close()

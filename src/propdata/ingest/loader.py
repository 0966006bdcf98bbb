"""The one write path for property records: validate, derive, upsert in one transaction.

Every source (demo sets, synthetic generator, `data import`) hands `load` an iterator of
(line number, record or rejection). A record whose content is unchanged is skipped, so
loading a file twice changes nothing; the whole load is one transaction, so a load killed
halfway leaves the earlier data whole.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from propdata.kit.addresses import city_key, street_key
from propdata.kit.db import Database
from propdata.properties import lifecycle
from propdata.properties.repository import PropertyRepository, Stored
from propdata.properties.schemas import PropertyDetail

BATCH = 2_000
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
RESERVED_IDS = frozenset({"lookup", "search"})
ZIP_PATTERN = re.compile(r"^\d{5}$")
FIPS_PATTERN = re.compile(r"^\d{5}$")
DATE_PATTERN = re.compile(r"^\d{4}-\d{2}-\d{2}$")
TIMESTAMP_PATTERN = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
US_STATES = frozenset(
    [
        "AL",
        "AK",
        "AZ",
        "AR",
        "CA",
        "CO",
        "CT",
        "DE",
        "DC",
        "FL",
        "GA",
        "HI",
        "ID",
        "IL",
        "IN",
        "IA",
        "KS",
        "KY",
        "LA",
        "ME",
        "MD",
        "MA",
        "MI",
        "MN",
        "MS",
        "MO",
        "MT",
        "NE",
        "NV",
        "NH",
        "NJ",
        "NM",
        "NY",
        "NC",
        "ND",
        "OH",
        "OK",
        "OR",
        "PA",
        "RI",
        "SC",
        "SD",
        "TN",
        "TX",
        "UT",
        "VT",
        "VA",
        "WA",
        "WV",
        "WI",
        "WY",
        "PR",
        "VI",
        "GU",
        "AS",
        "MP",
    ]
)


@dataclass(frozen=True, slots=True)
class Reject:
    """A source row that cannot be loaded: where it is and why."""

    line: int
    reason: str
    id: str | None = None


@dataclass(slots=True)
class LoadReport:
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    rejects: list[Reject] = field(default_factory=list)
    lines: dict[str, int] = field(default_factory=dict, repr=False)
    """The line each id was first seen on in this load."""

    @property
    def loaded(self) -> int:
        return self.inserted + self.updated


Item = tuple[int, PropertyDetail | Reject]
_encoder = msgspec.json.Encoder(order="deterministic")


def validate(record: PropertyDetail, as_of: dt.date) -> str | None:
    """Return why a record cannot be stored, or None when it can."""
    if not ID_PATTERN.match(record.id):
        return "id must be 1-64 letters, digits, '.', '_' or '-'"
    if record.id in RESERVED_IDS:
        return f"id {record.id!r} is reserved: /v1/properties/{record.id} is another operation"
    too_big = _out_of_range(record)
    if too_big is not None:
        return too_big
    a = record.address
    if a.street_address is not None and not a.street_address.strip():
        return "address.streetAddress is empty (use null when it is unknown)"
    if not a.city.strip():
        return "address.city is empty"
    if a.state.upper() not in US_STATES:
        return f"address.state {a.state!r} is not a US state code"
    if not ZIP_PATTERN.match(a.zip_code):
        return f"address.zipCode {a.zip_code!r} is not five digits"
    if a.fips_code is not None and not FIPS_PATTERN.match(a.fips_code):
        return f"address.fipsCode {a.fips_code!r} is not five digits"
    if not TIMESTAMP_PATTERN.match(record.last_updated):
        return "lastUpdated must be an ISO 8601 UTC timestamp ending in Z"
    for name in ("list_price", "bedrooms_total", "living_area", "lot_size", "days_on_market",
                 "original_list_price", "stories"):  # fmt: skip
        value = getattr(record, name)
        if value is not None and value < 0:
            return f"{_camel(name)} must not be negative"
    if record.bathrooms_total is not None and record.bathrooms_total < 0:
        return "bathroomsTotal must not be negative"
    if record.year_built is not None and not 1600 <= record.year_built <= as_of.year + 3:
        return f"yearBuilt {record.year_built} is out of range"
    if record.coordinates is not None:
        c = record.coordinates
        if not (-90 <= c.latitude <= 90 and -180 <= c.longitude <= 180):
            return "coordinates are out of range"
    for event in record.price_history:
        if not _is_date(event.date):
            return f"priceHistory date {event.date!r} is not YYYY-MM-DD"
        if event.price is not None and event.price < 0:
            return "priceHistory price must not be negative"
    for estimate in (record.rent_estimate, record.value_estimate):
        if estimate is not None and not _is_date(estimate.as_of_date):
            return f"estimate asOfDate {estimate.as_of_date!r} is not YYYY-MM-DD"
    years = [t.year for t in record.tax_history]
    if len(years) != len(set(years)):
        return "taxHistory has a year twice"
    try:
        lifecycle.check_history(record.price_history, record.status, as_of)
    except lifecycle.TransitionError as exc:
        return str(exc)
    return None


MAX_NUMBER = 2**53 - 1
"""Largest whole number stored: exact in JSON, in SQLite and in PostgreSQL bigint."""


def _out_of_range(record: PropertyDetail) -> str | None:
    """Numbers no store can hold exactly (huge integers, NaN, infinity) refuse the record."""
    numbers: list[tuple[str, int | float | None]] = [
        ("listPrice", record.list_price), ("bedroomsTotal", record.bedrooms_total),
        ("bathroomsTotal", record.bathrooms_total), ("livingArea", record.living_area),
        ("lotSize", record.lot_size), ("daysOnMarket", record.days_on_market),
        ("originalListPrice", record.original_list_price), ("stories", record.stories),
    ]  # fmt: skip
    numbers += [("priceHistory.price", e.price) for e in record.price_history]
    for t in record.tax_history:
        numbers += [
            ("taxHistory.taxPaid", t.tax_paid),
            ("taxHistory.assessedValue", t.assessed_value),
        ]
    for name, estimate in (
        ("rentEstimate", record.rent_estimate),
        ("valueEstimate", record.value_estimate),
    ):
        if estimate is not None:
            numbers += [(f"{name}.value", estimate.value), (f"{name}.low", estimate.low),
                        (f"{name}.high", estimate.high)]  # fmt: skip
    for name, value in numbers:
        if value is not None and (not math.isfinite(value) or abs(value) > MAX_NUMBER):
            return f"{name} {value!r} is not a number the store can hold"
    return None


def _is_date(text: str) -> bool:
    if not DATE_PATTERN.match(text):
        return False
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def content_hash(record: PropertyDetail) -> str:
    return hashlib.blake2b(_encoder.encode(record), digest_size=16).hexdigest()


def to_row(record: PropertyDetail, origin: str, digest: str, as_of: dt.date) -> tuple[Any, ...]:
    """The `properties` row of a valid record, with the history-derived fields computed."""
    history = record.price_history
    derived = lifecycle.derive(history, record.status)
    # listPrice and originalListPrice describe the current listing: an offMarket record has
    # none, so a stale asking price never matches a price filter.
    listed = record.status != "offMarket"
    list_price = record.list_price if listed else None
    if list_price is None and listed:
        list_price = lifecycle.current_list_price(history, record.status)
    original = record.original_list_price if listed else None
    if original is None:
        original = derived.original_list_price
    dom = record.days_on_market
    if dom is None:
        dom = lifecycle.days_on_market(derived, history, record.status, as_of)
    a, s, c = record.address, record.scores, record.coordinates
    rent, value = record.rent_estimate, record.value_estimate
    return (
        record.id, origin, record.status, list_price,
        a.street_address.strip() if a.street_address else None,
        street_key(a.street_address) if a.street_address else None, a.city.strip(), city_key(a.city), a.state.upper(),
        a.zip_code, a.county, a.fips_code, record.bedrooms_total, record.bathrooms_total,
        record.living_area, record.lot_size, record.year_built, record.property_type, dom,
        record.listing_type if listed else None, derived.listing_date,
        original,
        derived.previous_list_price, derived.last_price_change_date, derived.removed_date,
        derived.last_sale_price, derived.last_sale_date, record.stories,
        c.latitude if c else None, c.longitude if c else None,
        s.walkability if s else None, s.transit if s else None, s.bike if s else None,
        rent.value if rent else None, rent.low if rent else None,
        rent.high if rent else None, rent.as_of_date if rent else None,
        value.value if value else None, value.low if value else None,
        value.high if value else None, value.as_of_date if value else None,
        record.last_updated, digest,
    )  # fmt: skip


async def load(
    db: Database,
    items: Iterable[Item],
    *,
    origin: str,
    as_of: dt.date,
    progress: Callable[[int], None] | None = None,
    replace_origin: bool = False,
) -> LoadReport:
    """Load records in one transaction; rejected rows are reported and the rest load.

    With `replace_origin`, every stored record of `origin` is removed first (a rebuild of
    the demo or synthetic set); other origins are never touched.
    """
    repo = PropertyRepository(db)
    report = LoadReport()
    async with db.transaction():
        removed = await repo.delete_origin(origin) if replace_origin else 0
        for batch in _batches(items):
            await _load_batch(repo, batch, origin, as_of, report)
            if progress is not None:
                progress(len(batch))
        if report.loaded or removed:  # a load that only deletes changes answers too
            await repo.bump_data_version()
    if report.loaded or removed:
        await repo.optimize()
    return report


def _batches(items: Iterable[Item]) -> Iterator[list[Item]]:
    batch: list[Item] = []
    for item in items:
        batch.append(item)
        if len(batch) >= BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


async def _load_batch(
    repo: PropertyRepository, batch: list[Item], origin: str, as_of: dt.date, report: LoadReport
) -> None:
    valid: dict[str, tuple[int, PropertyDetail]] = {}
    for line, item in batch:
        if isinstance(item, Reject):
            report.rejects.append(item)
            continue
        reason = validate(item, as_of)
        if reason is not None:
            report.rejects.append(Reject(line, reason, item.id))
        elif item.id in report.lines:
            first = report.lines[item.id]
            report.rejects.append(
                Reject(line, f"id {item.id} already appears on line {first}", item.id)
            )
        else:
            report.lines[item.id] = line  # across the whole load, not one batch
            valid[item.id] = (line, item)
    stored = await repo.stored(list(valid))
    rows: list[tuple[Any, ...]] = []
    events: list[tuple[Any, ...]] = []
    taxes: list[tuple[Any, ...]] = []
    replaced: list[str] = []
    for record_id, (line, record) in valid.items():
        digest = content_hash(record)
        old: Stored | None = stored.get(record_id)
        if old is not None:
            if old.content_hash == digest:
                report.unchanged += 1
                continue
            reason = await _update_reason(repo, old, record, as_of)
            if reason is not None:
                report.rejects.append(Reject(line, reason, record_id))
                continue
            replaced.append(record_id)
            report.updated += 1
        else:
            report.inserted += 1
        rows.append(to_row(record, origin if old is None else old.origin, digest, as_of))
        events.extend(
            (record_id, seq, e.date, e.event, e.price, e.source)
            for seq, e in enumerate(record.price_history)
        )
        taxes.extend((record_id, t.year, t.tax_paid, t.assessed_value) for t in record.tax_history)
    await repo.write(rows, events, taxes, replaced)


async def _update_reason(
    repo: PropertyRepository, old: Stored, record: PropertyDetail, as_of: dt.date
) -> str | None:
    if old.status == record.status:
        return None
    history = await repo.stored_history(record.id)
    try:
        lifecycle.check_update(old.status, history, record.price_history, record.status, as_of)
    except lifecycle.TransitionError as exc:
        return str(exc)
    return None

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
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

import msgspec

from propdata.kit import geography
from propdata.kit.addresses import city_key, street_key
from propdata.kit.db import Database
from propdata.kit.geography import US_STATES
from propdata.properties import lifecycle
from propdata.properties.loads import LoadsRepository
from propdata.properties.repository import (
    PropertyRepository,
    PropertyRow,
    Stored,
    pack_histories,
)
from propdata.properties.schemas import PROPERTY_ID, PriceEvent, PropertyDetail

BATCH = 2_000
ID_PATTERN = re.compile(PROPERTY_ID)
RESERVED_IDS = frozenset({"lookup", "search"})
ZIP_PATTERN = re.compile(geography.ZIP)
FIPS_PATTERN = re.compile(geography.FIPS)
DATE_PATTERN = re.compile(r"^\d{4}-\d{2}-\d{2}$", re.ASCII)
TIMESTAMP_PATTERN = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$", re.ASCII)


@dataclass(frozen=True, slots=True)
class Reject:
    """A source row that cannot be loaded: where it is and why."""

    line: int
    reason: str
    id: str | None = None


@dataclass(frozen=True, slots=True)
class Removal:
    """A source says the record `id` no longer exists (RESO `StandardStatus` Delete): the
    load removes it, which the change feed and the events see as `removed`."""

    line: int
    id: str


@dataclass(slots=True)
class LoadReport:
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    """Stored records removed: those of the origin removed first (a load that replaces its
    origin), and those a `Removal` named."""
    rejects: list[Reject] = field(default_factory=list)
    lines: dict[str, int] = field(default_factory=dict, repr=False)
    """The line each id was first seen on in this load."""
    written: list[str] = field(default_factory=list, repr=False)
    """Ids of the records inserted or updated: what a load's estimates value."""
    analyzed: bool = field(default=False, repr=False)
    """Whether the load refreshed the planner's statistics (see ANALYZE_SHARE)."""
    zips: set[str] = field(default_factory=set, repr=False)
    """ZIP codes the load touched: of the records it wrote, before and after (a record
    that moves touches both), and of those it removed: whose statistics it changes."""

    @property
    def loaded(self) -> int:
        return self.inserted + self.updated

    @property
    def changed(self) -> bool:
        """Whether the load changed the stored records (so estimates and statistics must be
        rebuilt)."""
        return bool(self.loaded or self.removed)


Item = tuple[int, PropertyDetail | Reject | Removal]

Committed = Callable[["LoadReport"], Awaitable[None]]
"""Run inside a load's transaction after its records are written, with its report: what
must be stored with the records or not at all (a replication source's watermark)."""
Finish = Callable[["LoadReport"], Awaitable[bool]]
"""Run inside the transaction of a load that changed records, before its data version is
bumped: True when it brought the estimates and statistics up to date there
(`ingest.pipeline`), so the commit leaves no rebuild to do."""
_encoder = msgspec.json.Encoder(order="deterministic")


def validate(record: PropertyDetail, as_of: dt.date) -> str | None:
    """Return why a record cannot be stored, or None when it can."""
    if not _plainly_valid(record, as_of.year + 3):
        reason = _field_reason(record, as_of)
        if reason is not None:
            return reason
    try:
        lifecycle.check_history(record.price_history, record.status, as_of)
    except lifecycle.TransitionError as exc:
        return str(exc)
    return None


def _plainly_valid(record: PropertyDetail, latest_year: int) -> bool:
    """True only when every check of `_field_reason` passes, by cheaper tests.

    Each test is at least as strict as the check it stands for (`0 <= x <= MAX_NUMBER` is
    false for negatives, huge numbers, NaN and infinity alike), so a record it passes is
    valid; one it does not pass goes to `_field_reason`, which names the first failing check.
    """
    if not ID_PATTERN.fullmatch(record.id) or record.id in RESERVED_IDS:
        return False
    for number in (record.list_price, record.bedrooms_total, record.bathrooms_total,
                   record.living_area, record.lot_size, record.days_on_market,
                   record.original_list_price, record.stories, record.garage_spaces,
                   record.basement_finished_area, record.fireplaces):  # fmt: skip
        if number is not None and not 0 <= number <= MAX_NUMBER:
            return False
    for grade in (record.overall_quality, record.overall_condition):
        if grade is not None and not 1 <= grade <= 10:
            return False
    parcel = record.parcel_id
    if parcel is not None and not (parcel.strip() and len(parcel) <= MAX_PARCEL):
        return False
    a = record.address
    if (
        (a.street_address is not None and not a.street_address.strip())
        or not a.city.strip()
        or a.state.upper() not in US_STATES
        or not ZIP_PATTERN.fullmatch(a.zip_code)
        or (a.fips_code is not None and not FIPS_PATTERN.fullmatch(a.fips_code))
        or not TIMESTAMP_PATTERN.fullmatch(record.last_updated)
    ):
        return False
    year = record.year_built
    if year is not None and not 1600 <= year <= latest_year:
        return False
    c = record.coordinates
    if c is not None and not (-90 <= c.latitude <= 90 and -180 <= c.longitude <= 180):
        return False
    dates = _VALID_DATES
    for event in record.price_history:
        price = event.price
        if (price is not None and not 0 <= price <= MAX_NUMBER) or event.date not in dates:
            if not _is_date(event.date):
                return False
            _remember_date(event.date)
            if price is not None and not 0 <= price <= MAX_NUMBER:
                return False
    for estimate in (record.rent_estimate, record.value_estimate):
        if estimate is None:
            continue
        if not (
            -MAX_NUMBER <= estimate.value <= MAX_NUMBER
            and -MAX_NUMBER <= estimate.low <= MAX_NUMBER
            and -MAX_NUMBER <= estimate.high <= MAX_NUMBER
        ):
            return False
        if estimate.as_of_date not in dates:  # as the events' dates: most are seen before
            if not _is_date(estimate.as_of_date):
                return False
            _remember_date(estimate.as_of_date)
    taxes = record.tax_history
    if taxes:
        for t in taxes:
            paid, assessed = t.tax_paid, t.assessed_value
            if (paid is not None and not -MAX_NUMBER <= paid <= MAX_NUMBER) or (
                assessed is not None and not -MAX_NUMBER <= assessed <= MAX_NUMBER
            ):
                return False
        if len({t.year for t in taxes}) != len(taxes):
            return False
    return True


_VALID_DATES: set[str] = set()
"""YYYY-MM-DD strings already found valid (a load meets a few thousand distinct dates)."""


def _remember_date(text: str) -> None:
    if len(_VALID_DATES) < 200_000:
        _VALID_DATES.add(text)


def _field_reason(record: PropertyDetail, as_of: dt.date) -> str | None:
    """Why a record's fields cannot be stored (the first failing check), or None."""
    if not ID_PATTERN.fullmatch(record.id):
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
    if not ZIP_PATTERN.fullmatch(a.zip_code):
        return f"address.zipCode {a.zip_code!r} is not five digits"
    if a.fips_code is not None and not FIPS_PATTERN.fullmatch(a.fips_code):
        return f"address.fipsCode {a.fips_code!r} is not five digits"
    if not TIMESTAMP_PATTERN.fullmatch(record.last_updated):
        return "lastUpdated must be an ISO 8601 UTC timestamp ending in Z"
    for name in ("list_price", "bedrooms_total", "living_area", "lot_size", "days_on_market",
                 "original_list_price", "stories", "garage_spaces", "basement_finished_area",
                 "fireplaces"):  # fmt: skip
        value = getattr(record, name)
        if value is not None and value < 0:
            return f"{_camel(name)} must not be negative"
    for name in ("overall_quality", "overall_condition"):
        value = getattr(record, name)
        if value is not None and not 1 <= value <= 10:
            return f"{_camel(name)} {value} is not a grade from 1 to 10"
    parcel = record.parcel_id
    if parcel is not None and not parcel.strip():
        return "parcelId is empty (use null when it is unknown)"
    if parcel is not None and len(parcel) > MAX_PARCEL:
        return f"parcelId is longer than {MAX_PARCEL} characters"
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
    return None


MAX_NUMBER = 2**53 - 1
"""Largest whole number stored: exact in JSON, in SQLite and in PostgreSQL bigint."""
MAX_PARCEL = 64
"""Longest parcel number stored (assessors' run to about 20 characters)."""


def _out_of_range(record: PropertyDetail) -> str | None:
    """Numbers no store can hold exactly (huge integers, NaN, infinity) refuse the record."""
    numbers: list[tuple[str, int | float | None]] = [
        ("listPrice", record.list_price), ("bedroomsTotal", record.bedrooms_total),
        ("bathroomsTotal", record.bathrooms_total), ("livingArea", record.living_area),
        ("lotSize", record.lot_size), ("daysOnMarket", record.days_on_market),
        ("originalListPrice", record.original_list_price), ("stories", record.stories),
        ("garageSpaces", record.garage_spaces),
        ("basementFinishedArea", record.basement_finished_area),
        ("fireplaces", record.fireplaces), ("overallQuality", record.overall_quality),
        ("overallCondition", record.overall_condition),
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
    if not DATE_PATTERN.fullmatch(text):
        return False
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


_buffer = bytearray()


def content_hash(record: PropertyDetail) -> str:
    """BLAKE2b of the record's canonical JSON (encoded into one reused buffer: no new bytes
    object of ~2 KB a record)."""
    _encoder.encode_into(record, _buffer)
    return hashlib.blake2b(_buffer, digest_size=16).hexdigest()


def to_row(record: PropertyDetail, origin: str, digest: str, as_of: dt.date) -> PropertyRow:
    """The `properties` row of a valid record, with the history-derived fields computed.

    Built by position in PropertyRow's field order (a million a load: naming 43 fields
    would cost seconds); tests/ingest/test_import_load.py reads every field back by name.
    """
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
    return PropertyRow._make((
        record.id, origin, record.status, list_price,
        a.street_address.strip() if a.street_address else None,
        street_key(a.street_address) if a.street_address else None, a.city.strip(), _city_key(a.city), a.state.upper(),
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
        record.parcel_id.strip() if record.parcel_id else None, record.garage_spaces,
        record.basement_finished_area, record.fireplaces, record.overall_quality,
        record.overall_condition,
    ))  # fmt: skip


_CITY_KEYS: dict[str, str] = {}


def _city_key(city: str) -> str:
    """`city_key`, remembered: a load names a few thousand cities a million times."""
    key = _CITY_KEYS.get(city)
    if key is None:
        key = city_key(city)
        if len(_CITY_KEYS) < 100_000:
            _CITY_KEYS[city] = key
    return key


async def load(
    db: Database,
    items: Iterable[Item],
    *,
    origin: str,
    as_of: dt.date,
    progress: Callable[[int], None] | None = None,
    replace_origin: bool = False,
    meta: Mapping[str, str] | None = None,
    committed: Committed | None = None,
    finish: Finish | None = None,
    listing_feed: bool = False,
) -> LoadReport:
    """Load records in one transaction; rejected rows are reported and the rest load.

    With `replace_origin`, every stored record of `origin` is removed first (a rebuild of
    the demo or synthetic set); other origins are never touched.

    `meta` is written to the store's `meta` table in the same transaction, whether or not
    the load changed a record: `data import --follow` keeps there where in its file the
    committed records end, so that place and the records are stored together or not at all.
    `committed` is awaited in the same transaction with the load's report, for what depends
    on the counts (`data replicate` moves its source's watermark and totals there).
    `finish` too, when the load changed records: unless it says it brought the estimates and
    statistics up to date, the load is marked as waiting for its rebuild.

    `listing_feed`: the records are listings as a RESO feed gives them (`data replicate`, a
    RESO CSV), whose listing dates are arithmetic; a record that opens a stored listing
    again on a later day continues it (`lifecycle.keep_opening`). Other sources give their
    histories, which replace the stored ones under the status machine as they are.

    A bulk load (at least BULK_ROWS records written, and at least as many as the store held)
    drops the property tables' secondary indexes once it gets there and builds them again
    before the commit (`PropertyRepository.defer_indexes`, SQLite): the same indexes and
    rows, without a million inserts at random places in each index.
    """
    repo = PropertyRepository(db)
    report = LoadReport()
    async with db.transaction():
        if replace_origin:
            report.zips |= await repo.origin_zips(origin)
            report.removed = await repo.delete_origin(origin)
        # An empty store has nothing to compare with: an id seen twice is a duplicate
        # (rejected before any lookup), so no record of this load can be stored already.
        lookup = await repo.any()
        held = None if lookup else 0
        """Records the store held before the batches: counted only when a load gets to
        BULK_ROWS (a count of a million rows is some 30 ms, which a page never needs)."""
        removed = report.removed
        deferred: list[str] | None = None
        for batch in _batches(items):
            await _load_batch(repo, batch, origin, as_of, report, lookup, listing_feed)
            if deferred is None and report.loaded >= BULK_ROWS:
                if held is None:  # the count now, less this load's inserts, plus its removals
                    held = await repo.count() - report.inserted + report.removed - removed
                if report.loaded >= held:
                    deferred = await repo.defer_indexes()
            if progress is not None:
                progress(len(batch))
        if deferred:
            await repo.restore_indexes(deferred)
        if meta:
            await repo.set_meta(meta)
        await LoadsRepository(db).add_counts(
            {"accepted": report.loaded + report.unchanged, "rejected": len(report.rejects)}
        )
        if committed is not None:
            await committed(report)
        if report.changed:  # a load that only deletes changes answers too
            finished = finish is not None and await finish(report)
            await repo.bump_data_version()
            if not finished:
                await repo.mark_rebuild_pending()  # cleared by ingest.pipeline.rebuild
            # Only a load that changed records is kept: one that changed nothing leaves the
            # records and this bookkeeping as they were (it adds only to ingest_counts).
            await repo.record_load({
                "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
                "origin": origin, "inserted": report.inserted, "updated": report.updated,
                "unchanged": report.unchanged, "removed": report.removed,
                "rejected": len(report.rejects),
            })  # fmt: skip
    if report.changed and await _analyze_due(repo, report, held, report.removed - removed):
        await repo.optimize()
        report.analyzed = True
    return report


async def _analyze_due(
    repo: PropertyRepository, report: LoadReport, held: int | None, removals: int
) -> bool:
    """Whether the load changed ANALYZE_SHARE of the records the store held before it
    (`held`, when counted; else counted now, less the load's inserts, plus its `removals`,
    up to the count past which the share cannot be reached)."""
    changed = report.loaded + report.removed
    if held is None:
        past = int(changed / ANALYZE_SHARE) + 2  # held at least this: the share is not reached
        found = await repo.count_upto(past + report.inserted - removals)
        held = found - report.inserted + removals
    return changed >= ANALYZE_SHARE * held


ANALYZE_SHARE = 0.10
"""A load refreshes the planner's statistics (`optimize`: a full ANALYZE, 2 s at a million
properties) when it wrote or removed at least this share of the records the store held; a
smaller one leaves the distributions as they were. A full rebuild (ingest.pipeline) also
refreshes them, and it follows at the latest once the loads since the last one changed a
tenth of the store."""


BULK_ROWS = 20_000
"""Records written before a load defers the secondary indexes (see `load`)."""


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
    repo: PropertyRepository,
    batch: list[Item],
    origin: str,
    as_of: dt.date,
    report: LoadReport,
    lookup: bool = True,
    listing_feed: bool = False,
) -> None:
    valid: dict[str, tuple[int, PropertyDetail]] = {}
    removals: list[str] = []
    lines = report.lines
    for line, item in batch:
        if isinstance(item, Reject):
            report.rejects.append(item)
            continue
        if isinstance(item, Removal):
            if item.id in lines:
                report.rejects.append(
                    Reject(line, f"id {item.id} already appears on line {lines[item.id]}", item.id)
                )
            else:
                lines[item.id] = line
                removals.append(item.id)
            continue
        reason = validate(item, as_of)
        if reason is not None:
            report.rejects.append(Reject(line, reason, item.id))
        elif item.id in lines:
            first = lines[item.id]
            report.rejects.append(
                Reject(line, f"id {item.id} already appears on line {first}", item.id)
            )
        else:
            lines[item.id] = line  # across the whole load, not one batch
            valid[item.id] = (line, item)
    stored = await repo.stored(list(valid)) if lookup else {}
    rows: list[PropertyRow] = []
    histories: list[tuple[str, str, str]] = []
    replaced: list[str] = []
    for record_id, (line, record) in valid.items():
        digest = content_hash(record)
        old: Stored | None = stored.get(record_id)
        if old is not None:
            if old.content_hash == digest:
                report.unchanged += 1
                continue
            history = None
            reason = None
            if listing_feed:
                continued, history = await _continue_listing(repo, old, record)
                if continued is not record:
                    record, digest = continued, content_hash(continued)
                    if old.content_hash == digest:
                        report.unchanged += 1
                        continue
                    reason = validate(record, as_of)
            if reason is None:
                reason = await _update_reason(repo, old, record, as_of, history)
            if reason is not None:
                report.rejects.append(Reject(line, reason, record_id))
                continue
            replaced.append(record_id)
            report.updated += 1
            report.zips.add(old.zip_code)
        else:
            report.inserted += 1
        report.written.append(record_id)
        report.zips.add(record.address.zip_code)
        rows.append(to_row(record, origin if old is None else old.origin, digest, as_of))
        histories.append(pack_histories(record_id, record.price_history, record.tax_history))
    # The one place a load writes a batch: `rows` are inserted, or updated where their id
    # is in `replaced` (already stored), with their histories.
    await repo.write(rows, histories, replaced)
    if removals:
        gone = await repo.stored(removals) if lookup else {}
        report.unchanged += len(removals) - len(gone)  # already absent: nothing to remove
        if gone:
            report.zips |= {old.zip_code for old in gone.values()}
            report.removed += await repo.delete_ids(list(gone))


async def _continue_listing(
    repo: PropertyRepository, old: Stored, record: PropertyDetail
) -> tuple[PropertyDetail, list[PriceEvent] | None]:
    """A listing feed's record continuing the stored listing when it dates that listing
    later (`lifecycle.keep_opening`), else the record itself; with the stored history when
    it was read (only for an opening later than the stored listing date)."""
    history = record.price_history
    if old.listing_date is None or not history or history[-1].date <= old.listing_date:
        return record, None
    stored = await repo.stored_history(record.id)
    kept = lifecycle.keep_opening(old.status, stored, history)
    if kept is None:
        return record, stored
    # daysOnMarket follows from the kept listing date, not from the row's count.
    return msgspec.structs.replace(record, price_history=kept, days_on_market=None), stored


async def _update_reason(
    repo: PropertyRepository,
    old: Stored,
    record: PropertyDetail,
    as_of: dt.date,
    history: list[PriceEvent] | None = None,
) -> str | None:
    """Why `record` cannot replace the stored one (`history`: the stored history, when read)."""
    if old.status == record.status:
        return None
    if history is None:
        history = await repo.stored_history(record.id)
    try:
        lifecycle.check_update(old.status, history, record.price_history, record.status, as_of)
    except lifecycle.TransitionError as exc:
        return str(exc)
    return None

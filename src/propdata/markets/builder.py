"""The market statistics builder: market_snapshots and market_history from the stored records.

`rebuild` runs at every full rebuild (a load that changes little recomputes only the ZIP
codes it touched: `compute_zips`, `replace_zips`). It streams the properties and their
price events in pages ordered by property id (two indexed range reads per page), replays
each property's events once, oldest first, and folds what it finds into small per-ZIP
accumulators: counts, and the few values a median or a mean needs. Nothing per property
outlives its page.

    zips = await rebuild(db, date(2026, 11, 21))

docs/markets.md defines every number precisely; the definitions here follow it.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import math
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from multiprocessing.connection import Connection
from typing import Any, NamedTuple

from propdata.kit import memory
from propdata.kit.addresses import city_key
from propdata.kit.db import Database, Row, connect, optimistic
from propdata.kit.geography import zip_places
from propdata.markets.repository import MarketStatsWriter, PlaceCount
from propdata.properties.repository import PropertyRepository

WINDOW_DAYS = 30
"""The snapshot's window is (as_of - 30 days, as_of]."""
HISTORY_MONTHS = 60
"""History keeps at most this many calendar months, the as_of month included."""
PAGE = 20_000
"""Properties per page: bounds memory (one page of events) while keeping round trips few."""
MONTH_SHIFT = 56
"""History values carry their month index above this bit: room for any value below 2**56."""
ATTEMPTS = 3
"""Lock-free passes tried before a rebuild reads under the write lock (see `rebuild`)."""

_PROPERTY_FIELDS = ("id", "zip_code", "status", "list_price", "living_area")
"""What `_fold` reads of each property, unpacked in this order."""
_EVENT_FIELDS = ("property_id", "date", "event", "price")
"""What `_replay` reads of each event, unpacked in this order."""
_LISTING_STARTS = frozenset({"listedForSale", "relisted"})
_LISTING_ENDS = frozenset({"delisted", "listedForRent"})  # `sold` ends one too, handled apart


async def rebuild(
    db: Database, as_of: dt.date, progress: Callable[[int], None] | None = None
) -> int:
    """Recompute market_snapshots and market_history for every ZIP code with property records.

    The statistics are those of docs/markets.md, as of `as_of` (D): the snapshot describes
    the window (D - 30 days, D], the history one entry per calendar month for up to the 60
    months ending with D's month. Events dated after D are ignored. The old rows of both
    tables are replaced in one transaction, so a rebuild that fails or is killed leaves the
    previous statistics whole, and ZIP codes that no longer have records lose theirs. The
    same transaction bumps the data version, so cached answers built on the old statistics
    are never served again (kit/cache.py keys carry the version).

    The records are read without holding the write lock, so API traffic that writes is not
    held up for the length of a rebuild. When a load commits while the records are read
    (the data version moves), the pass is thrown away and run again; after ATTEMPTS such
    passes the last one reads inside the write transaction, where no load can interleave.

    `progress` is called with the number of properties read after each page (again from
    zero when a pass is repeated). Returns the number of ZIP codes with statistics.

        zips = await rebuild(db, date(2026, 11, 21), progress=bar.advance)
    """
    versions = PropertyRepository(db)
    return await optimistic(
        db, versions.data_version, lambda: compute(db, as_of, progress),
        lambda rows: write(db, rows), ATTEMPTS,
    )  # fmt: skip


class MarketRows(NamedTuple):
    """What a rebuild stores."""

    snapshots: list[tuple[Any, ...]]
    history: list[tuple[Any, ...]]
    places: list[tuple[str, str | None, str | None]]
    """The zipcodes package's (zip_code, city, state) of the ZIPs it was asked about (city
    and state None when it does not know one), for the store's `zip_places`."""


async def compute(
    db: Database, as_of: dt.date, progress: Callable[[int], None] | None = None
) -> MarketRows:
    """The rows `rebuild` stores, read from the store as it is (no lock, nothing written):
    one half of `rebuild`, for a caller that runs it beside other work (ingest.pipeline)."""
    return await _compute(MarketStatsWriter(db), Calendar.of(as_of), progress)


def compute_in_child(sender: Connection, store: str, as_of: dt.date) -> None:
    """`compute` in a child process (ingest.pipeline runs it beside the estimates): open
    the store at `store`, send ("progress", n) after each page, then ("rows", rows), or
    ("error", why) when it fails."""

    async def go() -> MarketRows:
        db = await connect(store)
        try:
            return await compute(db, as_of, lambda n: sender.send(("progress", n)))
        finally:
            await db.close()

    try:
        sender.send(("rows", asyncio.run(go())))
    except Exception as exc:  # the parent computes them itself
        sender.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        sender.close()


async def write(db: Database, rows: MarketRows) -> int:
    """Replace the stored statistics with `rows` and bump the data version; inside a
    transaction (the other half of `rebuild`). Returns the number of ZIP codes."""
    stats = MarketStatsWriter(db)
    await stats.replace(rows.snapshots, rows.history)
    await stats.replace_zip_places(rows.places)
    await PropertyRepository(db).bump_data_version()
    return len(rows.snapshots)


# -- the calendar of one rebuild -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Calendar:
    """The dates one rebuild compares event dates with, as ISO strings (they sort as dates)."""

    as_of: str
    window_after: str
    """An event is in the snapshot window when window_after < date <= as_of."""
    months: tuple[str, ...]
    """'YYYY-MM' labels of the history months, oldest first; the last is as_of's month."""
    starts: tuple[str, ...]
    """The first day of each month."""
    ends: tuple[str, ...]
    """The day each month's listings are counted at: its last day, or as_of for the last."""

    @classmethod
    def of(cls, as_of: dt.date) -> Calendar:
        newest = as_of.year * 12 + as_of.month - 1
        months: list[str] = []
        starts: list[str] = []
        ends: list[str] = []
        for index in range(newest - HISTORY_MONTHS + 1, newest + 1):
            year, month0 = divmod(index, 12)
            first = dt.date(year, month0 + 1, 1)
            following_year, following0 = divmod(index + 1, 12)
            last = dt.date(following_year, following0 + 1, 1) - dt.timedelta(days=1)
            months.append(f"{year:04d}-{month0 + 1:02d}")
            starts.append(first.isoformat())
            ends.append(min(last, as_of).isoformat())
        return cls(
            as_of=as_of.isoformat(),
            window_after=(as_of - dt.timedelta(days=WINDOW_DAYS)).isoformat(),
            months=tuple(months),
            starts=tuple(starts),
            ends=tuple(ends),
        )

    def month_of(self, date: str) -> int:
        """Index of the history month holding `date` (<= as_of); -1 before the first one."""
        return bisect_right(self.starts, date) - 1


# -- accumulators ---------------------------------------------------------------------------


class Zip:
    """What one ZIP code collects: the snapshot's values and its history's.

    Values sit in typed arrays, 8 bytes each where a list would hold a pointer to a 32-byte
    object, and a ZIP keeps a dozen containers however many months it has. History values
    carry their month in the bits above MONTH_SHIFT, so one sort of a ZIP's array orders
    it by month and then by value, and each month's median is read off a slice.
    """

    __slots__ = (
        "active", "active_at", "days", "first_event", "list_prices", "month_days",
        "month_list_prices", "month_sold_prices", "new_listings", "price_per_sqft", "ratios",
        "sold", "sold_in", "sold_prices", "sqft_months", "sqft_values",
    )  # fmt: skip

    def __init__(self, months: int) -> None:
        # the snapshot
        self.active = 0
        self.list_prices = array("q")
        self.price_per_sqft = array("d")
        self.new_listings = 0
        self.sold = 0
        self.sold_prices = array("q")
        self.days = array("q")
        self.ratios = array("d")
        # the history, by month index
        self.first_event: str | None = None
        self.active_at = [0] * months
        self.sold_in = [0] * months
        self.month_list_prices = array("q")  # month << MONTH_SHIFT | asking price
        self.month_sold_prices = array("q")  # month << MONTH_SHIFT | sale price
        self.month_days = array("q")  # month << MONTH_SHIFT | days on market
        self.sqft_months = array("B")  # month of each value in sqft_values
        self.sqft_values = array("d")  # asking price / livingArea


# -- reading ----------------------------------------------------------------------------------


async def _compute(
    stats: MarketStatsWriter, calendar: Calendar, progress: Callable[[int], None] | None
) -> MarketRows:
    """One full pass over the records: the rows to store (every ZIP asked of the package)."""
    with memory.no_cycle_collection():
        zips = await _fold(stats, calendar, progress)
        return await _rows(stats, zips, calendar, {})


async def _rows(
    stats: MarketStatsWriter,
    zips: dict[str, Zip],
    calendar: Calendar,
    known: dict[str, tuple[str, str] | None],
) -> MarketRows:
    """The rows of folded ZIPs, in ZIP order; `known`: the zipcodes package's answers
    already stored (`zip_places`), the other ZIPs are asked of it."""
    places, asked = await _places(stats, sorted(zips), known)
    snapshots: list[tuple[Any, ...]] = []
    history: list[tuple[Any, ...]] = []
    for zip_code in sorted(zips):
        city, state = places[zip_code]
        snapshots.append(_snapshot_row(zip_code, city, state, zips[zip_code], calendar))
        history.extend(_history_rows(zip_code, zips[zip_code], calendar))
    return MarketRows(snapshots, history, asked)


async def _fold(
    stats: MarketStatsWriter, calendar: Calendar, progress: Callable[[int], None] | None
) -> dict[str, Zip]:
    """Read every property and its events, page by page, into per-ZIP accumulators."""
    zips: dict[str, Zip] = {}
    before: str | None = None
    while True:
        page = await stats.property_page(_PROPERTY_FIELDS, before, PAGE)
        if not page:
            break
        owners = _fold_properties(zips, page, calendar)
        # The page runs from page[0] (highest id) down to page[-1] (lowest id).
        events = await stats.events_between(_EVENT_FIELDS, page[-1][0], page[0][0], calendar.as_of)
        _replay(events, owners, calendar)
        before = page[-1][0]
        if progress is not None:
            progress(len(page))
    return zips


def _fold_properties(
    zips: dict[str, Zip], page: Iterable[Row], calendar: Calendar
) -> dict[str, tuple[Zip, int | None]]:
    """Fold the records' own fields into their ZIPs; each record's ZIP and living area."""
    owners: dict[str, tuple[Zip, int | None]] = {}
    for property_id, zip_code, status, list_price, living_area in page:
        z = zips.get(zip_code)
        if z is None:
            z = zips[zip_code] = Zip(len(calendar.months))
        owners[property_id] = (z, living_area)
        if status == "forSale":
            z.active += 1
            if list_price is not None:
                z.list_prices.append(list_price)
                if living_area:
                    z.price_per_sqft.append(list_price / living_area)
    return owners


# -- some ZIP codes only (a load's) -------------------------------------------------------------


async def compute_zips(db: Database, zip_codes: Iterable[str], as_of: dt.date) -> MarketRows:
    """The rows `rebuild` would store for the given ZIP codes (none for a ZIP without
    records), read from their records only: a load recomputes the ZIPs it touched.

    Every number of a ZIP comes from its own records and their events, folded the same way
    as a full pass (medians and means do not depend on the order records come in), so the
    rows equal a full rebuild's for these ZIPs.
    """
    stats = MarketStatsWriter(db)
    calendar = Calendar.of(as_of)
    zips: dict[str, Zip] = {}
    wanted = sorted(set(zip_codes))
    with memory.no_cycle_collection():
        records = await stats.properties_in(_PROPERTY_FIELDS, wanted)
        for at in range(0, len(records), PAGE):
            page = records[at : at + PAGE]
            owners = _fold_properties(zips, page, calendar)
            ids = [row[0] for row in page]
            _replay(await stats.events_of(_EVENT_FIELDS, ids, calendar.as_of), owners, calendar)
        return await _rows(stats, zips, calendar, await stats.zip_places(wanted))


async def replace_zips(db: Database, zip_codes: Iterable[str], rows: MarketRows) -> int:
    """Replace the statistics of the given ZIP codes with `rows` (of `compute_zips`), which
    are then no longer `stale`; inside a transaction, which the caller also bumps the data
    version in. Returns the number of ZIP codes with statistics."""
    stats = MarketStatsWriter(db)
    wanted = sorted(set(zip_codes))
    await stats.replace_zips(wanted, rows.snapshots, rows.history)
    await stats.add_zip_places(rows.places)
    await stats.clear_stale(wanted)
    return len(rows.snapshots)


async def defer_zips(db: Database, zip_codes: Iterable[str]) -> None:
    """Leave the given ZIP codes' statistics to a later `compute_zips` (`stale` names them
    until `replace_zips` stores theirs, or a rebuild all); inside the load's transaction."""
    await MarketStatsWriter(db).mark_stale(zip_codes)


async def stale(db: Database) -> list[str]:
    """The ZIP codes `defer_zips` left whose statistics are not recomputed yet."""
    return await MarketStatsWriter(db).stale()


async def stored_as_of(db: Database) -> set[str]:
    """The dates the stored statistics are computed as of (one after a rebuild)."""
    return await MarketStatsWriter(db).snapshot_dates()


def _replay(
    rows: Iterable[Row], owners: dict[str, tuple[Zip, int | None]], calendar: Calendar
) -> None:
    """Fold one page of events into the ZIP accumulators.

    `rows` are (property_id, date, event, price), each property's events together and
    oldest first, none after as_of. This is the hot loop of a rebuild: one pass, plain
    string comparisons (ISO dates sort as dates), dates parsed only for sales.
    """
    window_after = calendar.window_after
    month_of = calendar.month_of
    current: str | None = None
    z = Zip(0)  # replaced at the first row; never written to
    area: int | None = None
    start: str | None = None  # date the open sale listing began; None when there is none
    ask: int | None = None  # its asking price so far
    since = ""  # date of the listing's last change (start or price change)
    for property_id, date, event, price in rows:
        if property_id != current:
            if start is not None:
                _active(z, area, ask, since, None, calendar)
            current = property_id
            z, area = owners[property_id]
            start = ask = None
            if z.first_event is None or date < z.first_event:
                z.first_event = date
        if event == "priceChange":
            if start is not None and price is not None:
                _active(z, area, ask, since, date, calendar)
                ask, since = price, date
        elif event in _LISTING_STARTS:
            if start is not None:
                _active(z, area, ask, since, date, calendar)
            start = since = date
            ask = price
            if date > window_after:
                z.new_listings += 1
        elif event == "sold":
            days: int | None = None
            asked: int | None = None
            if start is not None:
                _active(z, area, ask, since, date, calendar)
                days = _days(start, date)
                asked = ask
                start = None
            index = month_of(date)
            if index >= 0:
                z.sold_in[index] += 1
                tag = index << MONTH_SHIFT
                if price is not None:
                    z.month_sold_prices.append(tag | price)
                if days is not None:
                    z.month_days.append(tag | days)
            if date > window_after:
                z.sold += 1
                if price is not None:
                    z.sold_prices.append(price)
                    if asked:
                        z.ratios.append(price / asked)
                if days is not None:
                    z.days.append(days)
        elif event in _LISTING_ENDS and start is not None:
            _active(z, area, ask, since, date, calendar)
            start = None
    if start is not None:
        _active(z, area, ask, since, None, calendar)


def _active(
    z: Zip, area: int | None, ask: int | None, since: str, until: str | None, calendar: Calendar
) -> None:
    """Count a listing, at asking price `ask`, at every month end E with since <= E < until."""
    ends = calendar.ends
    low = bisect_left(ends, since)
    high = len(ends) if until is None else bisect_left(ends, until)
    if low >= high:
        return
    active_at = z.active_at
    for index in range(low, high):
        active_at[index] += 1
    if ask is None:
        return
    prices = z.month_list_prices
    for index in range(low, high):
        prices.append(index << MONTH_SHIFT | ask)
    if area:
        per_sqft = ask / area
        z.sqft_months.extend(range(low, high))
        z.sqft_values.extend([per_sqft] * (high - low))


def _days(start: str, end: str) -> int:
    return (dt.date.fromisoformat(end) - dt.date.fromisoformat(start)).days


async def _places(
    stats: MarketStatsWriter, zip_codes: Sequence[str], known: dict[str, tuple[str, str] | None]
) -> tuple[dict[str, tuple[str, str]], list[tuple[str, str | None, str | None]]]:
    """(city, state) of each ZIP: the zipcodes package's, else the records' most common.

    The package's answer is taken from `known` (stored by an earlier rebuild or load) when
    there, else asked of the package, whose first question loads its whole table (most of a
    second). Returns the places and the package's answers to the questions asked.
    """
    asked = [code for code in zip_codes if code not in known]
    found = zip_places(asked) if asked else {}
    places = {code: place for code in zip_codes if (place := known.get(code)) is not None}
    places.update(found)
    unknown = [code for code in zip_codes if code not in places]
    if unknown:
        places.update(most_common_places(await stats.place_counts(unknown)))
    return places, [(code, *found.get(code, (None, None))) for code in asked]


def most_common_places(rows: Iterable[PlaceCount]) -> dict[str, tuple[str, str]]:
    """Per ZIP, the most common (city, state) of its records.

    Cities are counted by `city_key`, so "Ames" and "AMES" are one city; the spelling shown
    is that city's most common one. Ties go to the alphabetically first key and spelling.
    """
    by_zip: dict[str, dict[tuple[str, str], dict[str, int]]] = {}
    for row in rows:
        spellings = by_zip.setdefault(row.zip_code, {}).setdefault(
            (city_key(row.city), row.state), {}
        )
        spellings[row.city] = spellings.get(row.city, 0) + int(row.records)
    places: dict[str, tuple[str, str]] = {}
    for zip_code, cities in by_zip.items():
        key = min(cities, key=lambda k: (-sum(cities[k].values()), k))
        spelling = min(cities[key], key=lambda c: (-cities[key][c], c))
        places[zip_code] = (spelling, key[1])
    return places


# -- the stored rows ---------------------------------------------------------------------------


def _snapshot_row(
    zip_code: str, city: str, state: str, z: Zip, calendar: Calendar
) -> tuple[Any, ...]:
    inventory = None if z.sold == 0 else float(_half_up_ratio(z.active, z.sold, 2))
    ratio = None if not z.ratios else float(_half_up(math.fsum(z.ratios) / len(z.ratios), 4))
    return (
        zip_code, city, state, city_key(city), calendar.as_of, median(z.list_prices),
        median(z.sold_prices), z.active, z.new_listings, z.sold, median(z.days),
        mean_int(z.price_per_sqft), inventory, ratio,
    )  # fmt: skip


def _history_rows(zip_code: str, z: Zip, calendar: Calendar) -> list[tuple[Any, ...]]:
    if z.first_event is None:
        return []
    count = len(calendar.months)
    list_prices = _medians_by_month(z.month_list_prices, count)
    sold_prices = _medians_by_month(z.month_sold_prices, count)
    days = _medians_by_month(z.month_days, count)
    per_sqft: list[list[float]] = [[] for _ in range(count)]
    for index, value in zip(z.sqft_months, z.sqft_values, strict=True):
        per_sqft[index].append(value)
    rows: list[tuple[Any, ...]] = []
    for index in range(max(0, calendar.month_of(z.first_event)), count):
        rows.append((
            zip_code, calendar.months[index], list_prices[index], sold_prices[index],
            z.active_at[index], z.sold_in[index], days[index], mean_int(per_sqft[index]),
        ))  # fmt: skip
    return rows


def _medians_by_month(tagged: Sequence[int], months: int) -> list[int | None]:
    """The median of each month's values, from values tagged with their month (see Zip)."""
    ordered = sorted(tagged)
    mask = (1 << MONTH_SHIFT) - 1
    medians: list[int | None] = [None] * months
    end = 0
    while end < len(ordered):
        start = end
        index = ordered[start] >> MONTH_SHIFT
        end = bisect_left(ordered, (index + 1) << MONTH_SHIFT, start)
        middle = (start + end) // 2
        if (end - start) % 2:
            medians[index] = ordered[middle] & mask
        else:
            medians[index] = ((ordered[middle - 1] & mask) + (ordered[middle] & mask) + 1) // 2
    return medians


# -- rounding -----------------------------------------------------------------------------------


def median(values: Sequence[int]) -> int | None:
    """The middle value; of an even count the mean of the two middle ones, rounded half up.

    >>> median([3, 1, 2]), median([1, 2, 3, 6]), median([])
    (2, 3, None)
    """
    if not values:
        return None
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle] + 1) // 2


def mean_int(values: Sequence[float]) -> int | None:
    """The mean rounded half up to an integer; None for no values."""
    if not values:
        return None
    return int(_half_up(math.fsum(values) / len(values), 0))


def _half_up(value: float, places: int) -> Decimal:
    # Half up on the shortest decimal form of the double, so a mean that prints as x.5
    # (or 0.xxxx5) rounds up as a reader checking it by hand would expect.
    return Decimal(repr(value)).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)


def _half_up_ratio(numerator: int, denominator: int, places: int) -> Decimal:
    """numerator / denominator rounded half up, exactly (both are counts)."""
    scale = 10**places
    return Decimal((2 * numerator * scale + denominator) // (2 * denominator)).scaleb(-places)

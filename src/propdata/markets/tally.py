"""The market statistics' fold: pages of records and their price histories into numpy
columns, and the columns into the rows of docs/markets.md.

A pass (`markets.builder`) hands `Tally.add` one page at a time: the records' own fields and
their packed price histories. Each page becomes a few arrays of what the statistics count
(a listing's months on the market at its asking price, a sale's price and days, ...), kept
until `Tally.rows` sorts them once by ZIP code and month and reads every median and mean off
the sorted runs. Nothing per record outlives its page but those arrays.

    tally = Tally(Calendar.of(date(2026, 11, 21)))
    tally.add(records, histories)
    snapshots, history = tally.rows(places)

The listing state machine of one property's history, oldest event first (the definitions
in docs/markets.md): a listing opens at listedForSale or relisted (closing one still open)
and closes at sold, delisted or listedForRent; a priceChange with a price reprices the open
one. Between two of those changes a listing is on the market at one asking price: one
segment [since, until). pendingSale and rentalRemoved change no statistic and never come
first in a stored history (every history starts from offMarket), so they are dropped, as
are events after as_of.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import numpy as np
import numpy.typing as npt

from propdata.kit.addresses import city_key
from propdata.kit.db import Row
from propdata.properties.repository import unpack_events

WINDOW_DAYS = 30
"""The snapshot's window is (as_of - 30 days, as_of]."""
HISTORY_MONTHS = 60
"""History keeps at most this many calendar months, the as_of month included."""

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]
Flags = npt.NDArray[np.bool_]

_START, _REPRICE, _SOLD, _END, _UNCOUNTED = range(5)
_CODES = {
    "listedForSale": _START, "relisted": _START, "priceChange": _REPRICE, "sold": _SOLD,
    "delisted": _END, "listedForRent": _END, "pendingSale": _UNCOUNTED,
    "rentalRemoved": _UNCOUNTED,
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Calendar:
    """The dates one pass compares event dates with, as ISO strings (they sort as dates)."""

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


def _days(dates: Sequence[str]) -> Ints:
    """ISO dates as days since 1970-01-01."""
    return np.array(dates, dtype="datetime64[D]").astype(np.int64)


_GROUP_BITS = 23
"""Bits of a group: five-digit ZIP codes (the loader refuses others) times 60 months is
below 6,000,000 < 2**23."""
_VALUE_BITS = 63 - _GROUP_BITS
"""Whole values below 2**40 (days, and prices to a trillion) are kept packed under their
group in one integer: 8 bytes each, and one plain sort orders them by group and value."""
_CHUNK = 1 << 20
"""Values turned into Python floats at a time for `math.fsum` (`_Values.means`)."""


class _Values:
    """(group, value) pairs gathered page by page: a group is a ZIP code's index, or a ZIP
    code's index times the months plus a month's. Whole values are packed with their group
    where they fit (`_VALUE_BITS`); the rest keep group and value apart."""

    def __init__(self, kind: type[np.int64] | type[np.float64]) -> None:
        self.kind = kind
        self.packed: list[Ints] = []
        self.groups: list[npt.NDArray[np.int32]] = []
        self.values: list[npt.NDArray[Any]] = []

    def add(self, groups: Ints, values: npt.NDArray[Any]) -> None:
        if not len(groups):
            return
        if (
            self.kind is np.int64
            and int(values.min()) >= 0
            and int(values.max()) < 1 << _VALUE_BITS
            and int(groups.max()) < 1 << _GROUP_BITS
        ):
            self.packed.append((groups << _VALUE_BITS) | values.astype(np.int64))
        else:
            self.groups.append(groups.astype(np.int32))
            self.values.append(values.astype(self.kind))

    def runs(self, ordered: bool) -> tuple[Ints, npt.NDArray[Any], Ints, Ints]:
        """The values sorted by group (and within a group by value when `ordered`); the
        groups found, and each one's (first, end) in the values. What was gathered is let
        go: a pass reads each kind of value once."""
        packed = _joined(self.packed)
        self.packed = []
        if self.groups:  # a value too wide to pack: all of them apart, sorted on two keys
            groups = np.concatenate([packed >> _VALUE_BITS, *self.groups])
            values = np.concatenate([packed & ((1 << _VALUE_BITS) - 1), *self.values])
            self.groups, self.values = [], []
            order = (np.lexsort((values, groups)) if ordered
                     else np.argsort(groups, kind="stable"))  # fmt: skip
            groups, values = groups[order].astype(np.int64), values[order]
        else:
            packed.sort()  # in place: by group, then by value
            groups, values = packed >> _VALUE_BITS, packed & ((1 << _VALUE_BITS) - 1)
        if not len(groups):
            return groups, values, groups, groups
        first = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
        end = np.r_[first[1:], len(groups)]
        return groups[first], values, first, end

    def medians(self, size: int) -> list[int | None]:
        """Each group's median (docs/markets.md: of an even count the mean of the two middle
        values, rounded half up), None for a group without values; `size` groups."""
        keys, values, first, end = self.runs(ordered=True)
        middle = (first + end) // 2
        odd = (end - first) % 2 == 1
        low = values[np.maximum(middle - 1, first)]
        found = np.where(odd, values[middle], (low + values[middle] + 1) // 2)
        medians: list[int | None] = [None] * size
        for key, value in zip(keys.tolist(), found.tolist(), strict=True):
            medians[key] = value
        return medians

    def means(self, size: int) -> list[int | None]:
        """Each group's mean rounded half up to an integer (`mean_int`), None for none."""
        keys, values, first, end = self.runs(ordered=False)
        sums: list[float] = []
        at = 0  # runs summed so far
        while at < len(first):
            # the runs whose values start within the next _CHUNK, as Python floats once
            upto = max(at + 1, int(np.searchsorted(first, first[at] + _CHUNK)))
            base = int(first[at])
            listed = values[base : int(end[upto - 1])].tolist()
            sums += [math.fsum(listed[a - base : b - base])
                     for a, b in zip(first[at:upto].tolist(), end[at:upto].tolist(), strict=True)]  # fmt: skip
            at = upto
        found = _round_half_up(np.array(sums) / (end - first))
        means: list[int | None] = [None] * size
        for key, value in zip(keys.tolist(), found, strict=True):
            means[key] = value
        return means

    def lists(self, size: int) -> list[list[Any]]:
        """Each group's values."""
        keys, values, first, end = self.runs(ordered=False)
        listed = values.tolist()
        found: list[list[Any]] = [[] for _ in range(size)]
        for key, a, b in zip(keys.tolist(), first.tolist(), end.tolist(), strict=True):
            found[key] = listed[a:b]
        return found


def _round_half_up(values: Floats) -> list[int]:
    """`mean_int`'s rounding, of non-negative doubles (prices and areas are never negative:
    the loader refuses them): floor(x) + (x - floor(x) >= 0.5) is exact (the subtraction
    is), and the shortest decimal form of x lies on the same side of k + 0.5 as x itself
    (k + 0.5 is a double of its own, so no other double's shortest form is k.5)."""
    whole = np.floor(values)
    found: list[int] = (whole + (values - whole >= 0.5)).astype(np.int64).tolist()
    return found


def _joined(parts: list[Ints]) -> Ints:
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


class Tally:
    """What one pass collects: per ZIP code counts, and the values its medians and means
    are read from, as arrays (see the module's docstring)."""

    def __init__(self, calendar: Calendar) -> None:
        self.calendar = calendar
        self.months = len(calendar.months)
        self.as_of = int(_days([calendar.as_of])[0])
        self.window_after = int(_days([calendar.window_after])[0])
        self.starts = _days(calendar.starts)
        self.ends = _days(calendar.ends)
        self.zips: dict[str, int] = {}
        # per ZIP code: one index per thing counted
        self.active: list[Ints] = []
        self.new_listings: list[Ints] = []
        self.sold: list[Ints] = []
        self.first_event: list[tuple[Ints, Ints]] = []
        self.list_prices = _Values(np.int64)
        self.price_per_sqft = _Values(np.float64)
        self.sold_prices = _Values(np.int64)
        self.days = _Values(np.int64)
        self.ratios = _Values(np.float64)
        # per (ZIP code, month): ZIP index * months + month
        self.opened: list[Ints] = []  # +1 at a segment's first month end
        self.closed: list[Ints] = []  # -1 past its last (the month count: past the end)
        self.sold_in: list[Ints] = []
        self.month_list_prices = _Values(np.int64)
        self.month_sold_prices = _Values(np.int64)
        self.month_days = _Values(np.int64)
        self.month_per_sqft = _Values(np.float64)

    # -- one page -------------------------------------------------------------------------

    def add(self, records: Sequence[Row], histories: Sequence[Row]) -> None:
        """Fold one page: `records` as (id, zip_code, status, list_price, living_area),
        `histories` as (property_id, price_history) of those records (a history of a record
        not in the page is ignored)."""
        if not records:
            return
        ids, zip_codes, statuses, list_prices, areas = zip(*records, strict=True)
        zips = self.zips
        where = np.fromiter((zips.setdefault(z, len(zips)) for z in zip_codes), np.int64,
                            len(zip_codes))  # fmt: skip
        area = np.array([a or 0 for a in areas], np.int64)
        listed = np.array([p if p is not None else -1 for p in list_prices], np.int64)
        for_sale = np.array([s == "forSale" for s in statuses], np.bool_)
        self.active.append(where[for_sale])
        priced = for_sale & (listed >= 0)
        self.list_prices.add(where[priced], listed[priced])
        sized = priced & (area > 0)
        self.price_per_sqft.add(where[sized], listed[sized] / area[sized])
        self._events({pid: at for at, pid in enumerate(ids)}, where, area, histories)

    def _events(
        self, index: dict[str, int], where: Ints, area: Ints, histories: Sequence[Row]
    ) -> None:
        owners: list[int] = []
        counts: list[int] = []
        decoded: list[list[Any]] = []
        for property_id, text in histories:
            at = index.get(property_id)
            if at is None:
                continue
            events = unpack_events(text)
            owners.append(at)
            counts.append(len(events))
            decoded.append(events)
        flat = list(itertools.chain.from_iterable(decoded))
        if not flat:
            return
        # Stored newest first: each history's events reversed in place, so oldest first.
        sizes = np.array(counts, np.int64)
        ends = np.cumsum(sizes)
        owner = np.repeat(np.array(owners, np.int64), sizes)
        rank = np.arange(len(flat)) - np.repeat(ends - sizes, sizes)
        order = np.repeat(ends - 1, sizes) - rank
        day = _days([e[0] for e in flat])[order]
        code = np.fromiter((_CODES.get(e[1], _UNCOUNTED) for e in flat), np.int8, len(flat))
        price = np.array([-1 if e[2] is None else e[2] for e in flat], np.int64)
        code, price = code[order], price[order]
        kept = (code != _UNCOUNTED) & (day <= self.as_of)
        self._replay(owner[kept], day[kept], code[kept], price[kept], where, area)

    def _replay(
        self, owner: Ints, day: Ints, code: npt.NDArray[np.int8], price: Ints,
        where: Ints, area: Ints,
    ) -> None:  # fmt: skip
        """The listing state machine over a page's events (each record's together, oldest
        first), all records at once."""
        n = len(owner)
        if not n:
            return
        months = self.months
        at = np.arange(n)
        first = np.r_[True, owner[1:] != owner[:-1]]
        last = np.r_[owner[1:] != owner[:-1], True]
        start, sold = code == _START, code == _SOLD
        priced = price >= 0
        zip_of = where[owner]
        self.first_event.append((zip_of[first], day[first]))
        # open after each event: set by a start (open) or a sale or end (closed), else kept;
        # each record's first event sets it either way
        sets = start | sold | (code == _END) | first
        open_after = start[np.maximum.accumulate(np.where(sets, at, 0))]
        open_before = np.r_[False, open_after[:-1]] & ~first
        # a segment opens at a start, or at a priced reprice of an open listing
        opens = start | ((code == _REPRICE) & priced & open_before)
        latest = np.maximum.accumulate(np.where(opens, at, -1))
        before = np.r_[-1, latest[:-1]]  # the open segment's opening event
        closes = open_before & (opens | sold | (code == _END))
        trailing = last & open_after
        opener = np.r_[before[closes], latest[trailing]]
        until = np.r_[np.searchsorted(self.ends, day[closes]),
                      np.full(int(trailing.sum()), months)]  # fmt: skip
        self._segments(zip_of[opener], day[opener], until, price[opener], area[owner[opener]])
        # new listings, and sales
        self.new_listings.append(zip_of[start & (day > self.window_after)])
        begun = np.r_[-1, np.maximum.accumulate(np.where(start, at, -1))[:-1]]
        listing = sold & open_before
        days = np.where(listing, day - day[begun], -1)
        asked = np.where(listing, price[before], -1)
        month = np.searchsorted(self.starts, day, side="right") - 1
        counted = sold & (month >= 0)
        cell = zip_of * months + month
        self.sold_in.append(cell[counted])
        self.month_sold_prices.add(cell[counted & priced], price[counted & priced])
        self.month_days.add(cell[counted & listing], days[counted & listing])
        recent = sold & (day > self.window_after)
        self.sold.append(zip_of[recent])
        self.sold_prices.add(zip_of[recent & priced], price[recent & priced])
        self.days.add(zip_of[recent & listing], days[recent & listing])
        rated = recent & priced & (asked > 0)
        self.ratios.add(zip_of[rated], price[rated] / asked[rated])

    def _segments(self, zips: Ints, since: Ints, until: Ints, ask: Ints, area: Ints) -> None:
        """Listings on the market from `since` (a day) to the month end index `until`
        (exclusive) at asking price `ask` (-1: none known): counted at each month end E
        with since <= E, before `until`."""
        months = self.months
        low = np.searchsorted(self.ends, since)
        kept = low < until
        zips, low, until, ask, area = zips[kept], low[kept], until[kept], ask[kept], area[kept]
        self.opened.append(zips * (months + 1) + low)
        self.closed.append(zips * (months + 1) + until)
        priced = ask >= 0
        zips, low, until, ask, area = (
            zips[priced],
            low[priced],
            until[priced],
            ask[priced],
            area[priced],
        )
        lengths = until - low
        total = int(lengths.sum())
        if not total:
            return
        each = np.repeat(np.arange(len(lengths)), lengths)
        month = low[each] + np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        cell = zips[each] * months + month
        self.month_list_prices.add(cell, ask[each])
        sized = area[each] > 0
        self.month_per_sqft.add(cell[sized], ask[each][sized] / area[each][sized])

    # -- the rows -------------------------------------------------------------------------

    def zip_codes(self) -> list[str]:
        """The ZIP codes with records, sorted."""
        return sorted(self.zips)

    def rows(
        self, places: dict[str, tuple[str, str]]
    ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """The snapshot rows and history rows of every ZIP code with records, in ZIP code
        order; `places`: each one's (city, state)."""
        calendar, months, size = self.calendar, self.months, len(self.zips)
        cells = size * months

        def count(parts: list[Ints], length: int) -> list[int]:
            counted: list[int] = np.bincount(_joined(parts), minlength=length).tolist()
            return counted

        active, new, sold = (count(p, size) for p in (self.active, self.new_listings, self.sold))
        list_prices, sold_prices = self.list_prices.medians(size), self.sold_prices.medians(size)
        days, per_sqft = self.days.medians(size), self.price_per_sqft.means(size)
        ratios = self.ratios.lists(size)
        width = months + 1
        steps = (np.bincount(_joined(self.opened), minlength=size * width)
                 - np.bincount(_joined(self.closed), minlength=size * width))  # fmt: skip
        active_at = np.cumsum(steps.reshape(size, width), axis=1)[:, :months]
        active_at_rows: list[list[int]] = active_at.astype(np.int64).tolist()
        sold_in = count(self.sold_in, cells)
        month_lists = self.month_list_prices.medians(cells)
        month_solds = self.month_sold_prices.medians(cells)
        month_days = self.month_days.medians(cells)
        month_sqft = self.month_per_sqft.means(cells)
        firsts = self._first_months(size)
        snapshots: list[tuple[Any, ...]] = []
        history: list[tuple[Any, ...]] = []
        for zip_code in sorted(self.zips):
            z = self.zips[zip_code]
            city, state = places[zip_code]
            inventory = None if sold[z] == 0 else float(_half_up_ratio(active[z], sold[z], 2))
            ratio = (None if not ratios[z]
                     else float(_half_up(math.fsum(ratios[z]) / len(ratios[z]), 4)))  # fmt: skip
            snapshots.append((
                zip_code, city, state, city_key(city), calendar.as_of, list_prices[z],
                sold_prices[z], active[z], new[z], sold[z], days[z], per_sqft[z], inventory,
                ratio,
            ))  # fmt: skip
            first = firsts[z]
            if first is None:
                continue
            for m in range(first, months):
                c = z * months + m
                history.append((
                    zip_code, calendar.months[m], month_lists[c], month_solds[c],
                    active_at_rows[z][m], sold_in[c], month_days[c], month_sqft[c],
                ))  # fmt: skip
        return snapshots, history

    def _first_months(self, size: int) -> list[int | None]:
        """Per ZIP code the first history month to show: that of its first event (the
        first month when that is earlier), None for a ZIP code without events."""
        firsts: list[int | None] = [None] * size
        if not self.first_event:
            return firsts
        zips = np.concatenate([z for z, _ in self.first_event])
        days = np.concatenate([d for _, d in self.first_event])
        earliest = np.full(size, np.iinfo(np.int64).max)
        np.minimum.at(earliest, zips, days)
        month = np.maximum(np.searchsorted(self.starts, earliest, side="right") - 1, 0)
        for z, (day, m) in enumerate(zip(earliest.tolist(), month.tolist(), strict=True)):
            if day != np.iinfo(np.int64).max:
                firsts[z] = m
        return firsts


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

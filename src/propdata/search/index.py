"""The search index: every property's filter and sort columns in memory, as numpy arrays.

Why: a search must return an exact `meta.total`, and a national search with a range filter
on a column without an index makes SQLite (or PostgreSQL) visit every row: about a second at
1,000,000 properties. The same filters over columns in memory take a few milliseconds, and a
page of any depth comes from walking a presorted order of the rows.

The index answers exactly what `SearchRepository.search_page` and `count_matches` answer
(the tests compare both on generated searches): the same filters with SQL's NULL semantics
(NaN compares false), nulls last in both orders, ties broken by id in the sort's direction.
Rows are kept in id order (byte order, as SQLite's BINARY and PostgreSQL's C collation), so
a row's position is its rank by id and a stable sort breaks ties by id.

It is built from one data version of the store and answers only for that version; the
service falls back to SQL while a new one is built.

Geography: the rows with coordinates are also kept sorted by a grid cell of
`GEO_CELL` degrees (row by row of latitude, then longitude), so a box reads one slice of
that order per row of cells; the slices are then tested exactly against the box, and a
radius search keeps the rows whose exact distance (`kit.geodesy.miles`, the function the
SQL path uses) is within the radius (`kit.geodesy.Circle`, which computes it only for the
rows near the circle's edge). A page's distances are computed for its own rows, and
`sort=distance` computes them for the rows `Circle.nearest` keeps.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from propdata.kit.geodesy import Circle, miles
from propdata.search.arrays import (
    GEO_COLUMNS,
    BoolArray,
    Group,
    Keep,
    cell,
    id_grid,
    nearest,
    test,
    walk,
)
from propdata.search.filters import (
    CATEGORICAL,
    FILTERS,
    NUMERIC,
    SORT_COLUMNS,
    SearchFilters,
    Test,
    box,
)
from propdata.search.items import ItemFile
from propdata.search.query import SearchQuery
from propdata.search.repository import SearchRow

GROUPED = ("zip_code", "city_key", "state")
"""Categories with many values, kept also as the positions of each value's rows: an equality
filter on one of them reads its rows' slice instead of comparing every row (at 1,000,000
properties a ZIP code's 150 rows against a pass over the whole column and then its mask)."""
INDEX_COLUMNS = ("id", *CATEGORICAL, *NUMERIC, "last_updated", "latitude", "longitude")
"""What the repository reads for the index, in this order, ordered by id."""
ITEM_COLUMNS = tuple(name for name in SearchRow._fields if name not in INDEX_COLUMNS)
"""What it reads after those when the build also writes the snapshot's search items."""
_SELECTIVE = 16
"""Below 1/16 of the rows, filters go on over the matching positions instead of whole columns."""
_SORT_DIRECTLY = 20_000
"""Up to this many matches, sort them; above, walk the presorted order of the column."""
_RESUME_SHARE = 64
"""A page resumed past a cursor's row tests its filters on at most 1/64 of the rows: a row
tested at its place in an order (a random read of each column) costs some 50 times one in
a pass over the column, and the pass over every row is what resuming saves."""

Check = tuple[str, Test, Any]
"""One filter as a test of one column: its name, the comparison, the value (an equality's
by the value's code in this index)."""


@dataclass(frozen=True, slots=True)
class IndexPage:
    """One page the index found: the exact total, the ids in order, and for a radius
    search each one's exact distance in miles (else None)."""

    total: int
    ids: list[str]
    distances: list[float] | None
    values: list[Any] | None = None
    """Each one's value of a numeric sort column in this index's version (int, or None for
    null); None for lastUpdated and distance."""
    positions: npt.NDArray[np.int64] | None = field(default=None, compare=False)
    """The rows' positions in the index (for its search items); they follow from `ids`
    (which are left empty when the search did not ask for them). None: no rows."""
    tested: int = field(default=0, compare=False)
    """How many rows the filters were tested on to find the page: the index's size when
    the search was evaluated over the whole index (its total counted), else the rows a
    resumed walk tested past the cursor's row (`SearchIndex.search`, `total`)."""


@dataclass(eq=False)
class SearchIndex:
    namespace: str
    """`store_id.data_version` the index was built from: it answers for that version only."""
    size: int
    id_bytes: npt.NDArray[np.uint8]
    id_offsets: npt.NDArray[Any]
    codes: dict[str, dict[Any, int]]
    cats: dict[str, npt.NDArray[Any]]
    nums: dict[str, npt.NDArray[Any]]
    orders: dict[str, npt.NDArray[np.int32]]
    """Per sort column: positions ascending, nulls last, ties by position (= by id)."""
    known: dict[str, int]
    """Per sort column: how many rows have a value (the non-null head of its order)."""
    groups: dict[str, Group]
    """Per GROUPED category: the rows' positions by code, ascending within a code."""
    group_starts: dict[str, npt.NDArray[np.int64]]
    """Per GROUPED category: where each code's slice of `groups` starts (one more entry)."""
    updated_rank: npt.NDArray[np.int32]
    latitude: npt.NDArray[np.float64]
    longitude: npt.NDArray[np.float64]
    """Degrees; NaN (both) for a record without coordinates: no box or radius holds it."""
    geo_order: npt.NDArray[np.int32]
    """The positions of the rows with coordinates, by grid cell, then position."""
    geo_keys: npt.NDArray[np.int32]
    """The grid cell of each of `geo_order` (ascending)."""
    item_offsets: npt.NDArray[Any] | None = None
    """Where each row's search item starts in the snapshot's items (`search.items`)."""
    items: ItemFile | None = None
    """The snapshot's search items, when it has them (a private index has none)."""
    updated: npt.NDArray[np.bytes_] = field(default_factory=lambda: np.zeros(0, "S1"))
    """Each row's lastUpdated as the store holds it (ASCII): a delta's rows are placed
    among these (`search.live`)."""
    feed: int = 0
    """The change feed's position the rows are at least as new as: every change numbered
    above it may be missing (`search.live` takes those from the store)."""
    mark: str | None = None
    """The change feed's entry numbered `feed` (`SearchRepository.feed_mark`): a store whose
    entry differs is not the one these rows came from."""
    exact: bool = True
    """Whether the rows are exactly those of `namespace` (no later change crept in while
    they were read): only then may a cursor walk of that version follow this index alone."""
    _scratch: list[BoolArray] = field(default_factory=list, repr=False)
    """Two masks of `size` rows that every search reuses. A new one per filter would be a
    fresh mapping each time (kit.memory maps every allocation of 256 KB or more), 245 page
    faults per million rows: a third of a worker's CPU under the search mix. So a search
    must run to its end before the next starts: one thread, no await inside (the service)."""

    def _masks(self) -> tuple[BoolArray, BoolArray]:
        if not self._scratch:
            self._scratch.extend((np.empty(self.size, np.bool_), np.empty(self.size, np.bool_)))
        return self._scratch[0], self._scratch[1]

    @property
    def nbytes(self) -> int:
        arrays: list[npt.NDArray[Any]] = [
            self.id_bytes, self.id_offsets, self.updated_rank, *self.cats.values(),
            *self.nums.values(), *self.orders.values(), *self.group_starts.values(),
            self.latitude, self.longitude, self.geo_order, self.geo_keys,
        ]  # fmt: skip
        return sum(a.nbytes for a in arrays) + sum(g.nbytes for g in self.groups.values())

    def search(
        self,
        query: SearchQuery,
        after: str | None = None,
        ids: bool = True,
        total: int | None = None,
    ) -> IndexPage | None:
        """The exact total and the ids of the query's page, in its order (`search.order`;
        `ids` False: only their positions, for items read from the snapshot).

        `after`: the id of the last row of the previous page of this search in this data
        version (a cursor); the page starts past it, found by its position, not by counting
        rows, so a deep page costs what the first does. None when that id is not among this
        index's matches (the caller then answers otherwise).

        `total`: with `after`, the search's total in this index, as the cursor's walk
        counted it: the search is then not evaluated again over every row, the page resumes
        past the cursor's row in the sort's order and its filters are tested on the rows it
        walks (`resume`), when they are common enough among the rows for that to be the
        cheaper way.
        """
        if after is not None and total is not None:
            resumed = self.resume(query, after, total, ids)
            if resumed is not None:
                return resumed
        filters, sort, limit, offset = query.filters, query.sort, query.limit, query.offset
        selection = self._select(filters)
        if selection is None:
            none: list[float] | None = None if filters.near is None else []
            return None if after is not None else IndexPage(0, [], none, tested=self.size)
        mask, positions = selection  # a radius's: the rows within it (`_in_box`)
        circle = None if filters.near is None else Circle(*filters.near)
        if positions is not None:
            total = len(positions)
        elif mask is not None:
            total = int(np.count_nonzero(mask))
        else:
            total = self.size
        last: int | None = None
        if after is not None:
            last = self._position(after)
            if last is None:
                return None
            offset = 0
        elif offset >= total or limit <= 0:
            return IndexPage(total, [], None if circle is None else [], tested=self.size)
        descending = query.ordering.descending
        if sort == "distance":
            assert positions is not None and circle is not None
            if last is None:  # only the rows that may be on the page need their distance
                lats, lons = self.latitude[positions], self.longitude[positions]
                positions = positions[circle.nearest(lats, lons, offset + limit, descending)]
            page = nearest(positions, self._miles(circle, positions), descending, offset, limit,
                           last)  # fmt: skip
            if page is None:
                return None
        elif positions is not None and total <= _SORT_DIRECTLY:
            want = None if last is not None else offset + limit
            ranked = self._sorted(positions, SORT_COLUMNS[sort], descending, want)
            if last is not None:
                at = np.flatnonzero(ranked == last)
                if len(at) == 0:
                    return None
                offset = int(at[0]) + 1
            page = ranked[offset : offset + limit]
        else:
            column = SORT_COLUMNS[sort]
            if positions is not None:
                mask = self._masks()[0]
                mask.fill(False)
                mask[positions] = True
            sequences = self._sequences(column, descending)
            if last is not None:
                sequences = self.seek(column, descending, *self.place(column, last))
            walked = walk(sequences, None if mask is None else mask.__getitem__, offset, limit)
            assert walked is not None  # no budget
            page = walked.rows
        shown = None if circle is None else self._miles(circle, page).tolist()
        return self._page(total, page, shown, sort, ids, self.size)

    def _miles(self, circle: Circle, rows: npt.NDArray[Any]) -> npt.NDArray[np.float64]:
        """The rows' distances from the circle's centre (`kit.geodesy.miles`)."""
        lats, lons = self.latitude[rows], self.longitude[rows]
        return miles(circle.latitude, circle.longitude, lats, lons)

    def resume(
        self, query: SearchQuery, after: str, total: int, ids: bool = True
    ) -> IndexPage | None:
        """The page past `after`'s row of a search whose total here is `total` (see
        `search`), without evaluating the search over every row; None when that is not the
        cheaper way (`resumable`, or the walk tested `_RESUME_SHARE` of the rows without
        finding the page), or when `after` is not here."""
        filters, sort = query.filters, query.sort
        resumable = self.resumable(query, total)
        if resumable is None:
            return None
        first, budget = resumable
        last = self._position(after)
        checks = self.checks(filters)
        if last is None or checks is None:
            return None
        column, descending = SORT_COLUMNS[sort], query.ordering.descending
        sequences = self.seek(column, descending, *self.place(column, last))
        walked = walk(sequences, self.keeper(checks), 0, query.limit, first=first, budget=budget)
        if walked is None:
            return None
        return self._page(total, walked.rows, None, sort, ids, walked.tested)

    def resumable(self, query: SearchQuery, total: int) -> tuple[int, int] | None:
        """How many rows a page resumed past a cursor's row tests first (twice those that
        hold its rows, were the matches spread evenly) and at most (`_RESUME_SHARE` of the
        rows); None when the page is not resumed: a box or a radius (their rows come from
        the grid), or filters so rare that the first rows tested would pass that share."""
        if box(query.filters) is not None or query.sort not in SORT_COLUMNS or total <= 0:
            return None
        budget = self.size // _RESUME_SHARE
        expected = 2 * (query.limit + 1) * self.size // total
        if expected > budget:
            return None
        return max(expected, 64), budget

    def _page(
        self,
        total: int,
        page: npt.NDArray[np.int64],
        shown: list[float] | None,
        sort: str,
        ids: bool,
        tested: int,
    ) -> IndexPage:
        values: list[Any] | None = None
        if sort in SORT_COLUMNS and SORT_COLUMNS[sort] in self.nums:
            values = [None if math.isnan(v) else int(v)
                      for v in self.nums[SORT_COLUMNS[sort]][page].tolist()]  # fmt: skip
        return IndexPage(total, self._ids(page) if ids else [], shown, values, page, tested)

    def _position(self, wanted: str) -> int | None:
        """The position of an id (rows are in id byte order), None when absent."""
        at, present = self.insertion(wanted)
        return at if present else None

    def insertion(self, wanted: str) -> tuple[int, bool]:
        """How many rows have a smaller id, and whether the id is there (at that position)."""
        key = wanted.encode()
        starts, raw = self.id_offsets.data, self.id_bytes.data  # memoryviews: plain ints, bytes
        lo, hi = 0, self.size
        while lo < hi:
            mid = (lo + hi) // 2
            found = raw[starts[mid] : starts[mid + 1]].tobytes()
            if found == key:
                return mid, True
            if found < key:
                lo = mid + 1
            else:
                hi = mid
        return lo, False

    def insertions(self, wanted: Sequence[str]) -> tuple[npt.NDArray[np.int64], BoolArray]:
        """`insertion` of many ids at once: one binary search of them all, in step."""
        keys = np.array([w.encode() for w in wanted], dtype=np.bytes_)
        count = len(keys)
        lo, hi = np.zeros(count, np.int64), np.full(count, self.size, np.int64)
        present = np.zeros(count, np.bool_)
        if not count or not self.size:
            return lo, present
        width = max(keys.itemsize, 1)
        starts = self.id_offsets  # not copied: a base's are a million
        while True:
            open_ = lo < hi
            if not open_.any():
                return lo, present
            mid = (lo + hi) // 2
            middle = self._fixed_ids(np.minimum(mid, self.size - 1), starts, width)
            below = open_ & (middle < keys)
            equal = open_ & (middle == keys)
            present |= equal
            lo = np.where(below, mid + 1, np.where(equal, mid, lo))
            hi = np.where(below | ~open_, hi, mid)

    def _fixed_ids(
        self, positions: npt.NDArray[np.int64], starts: npt.NDArray[Any], width: int
    ) -> npt.NDArray[np.bytes_]:
        """The ids at `positions`, cut or padded with NUL to `width` bytes, then one byte
        more, 1 when the id is longer: it compares greater than every key of `width` bytes
        it begins with (no id holds a NUL, so padding keeps the byte order)."""
        grid, length = id_grid(self.id_bytes, starts, positions, width)
        longer = (length > width).astype(np.uint8)[:, None]
        return np.concatenate([grid, longer], axis=1).view(f"S{width + 1}").ravel()

    def place(self, column: str, position: int) -> tuple[float, float]:
        """The place of the row at `position` in the order of `column`, as `seek` takes it."""
        if column == "last_updated":
            return float(self.updated_rank[position]), float(position)
        return float(self.nums[column][position]), float(position)

    def seek(
        self, column: str, descending: bool, key: float, ident: float
    ) -> list[npt.NDArray[np.int32]]:
        """The order of `column` (`_sequences`) from just past a place in it: `key` is the
        value (NaN: null), or for lastUpdated the rank, and `ident` the id's rank, both in
        this index's terms. A row of this index is at its own value and position (`place`);
        a row placed among them (`search.live`) at keys between theirs."""
        rows = self.orders[column]
        known = self.known[column]
        null = False
        if column == "last_updated":
            before = min(max(math.ceil(key), 0), len(rows))
            upto = min(max(math.floor(key) + 1, 0), len(rows))
        elif math.isnan(key):  # in the null tail, by id
            null = True
            tail = rows[known:]
            before = known + int(np.searchsorted(tail, ident, side="left"))
            upto = known + int(np.searchsorted(tail, ident, side="right"))
        else:  # binary search of (value, position) in the non-null head
            values = self.nums[column]

            def at(i: int) -> tuple[float, int]:
                row = int(rows[i])
                return float(values[row]), row

            before = bisect.bisect_left(range(known), (key, ident), key=at)
            upto = bisect.bisect_right(range(known), (key, ident), key=at)
        if not descending:
            return [rows[upto:]]
        if null:
            return [rows[known:before][::-1]]
        return [rows[:before][::-1], rows[known:][::-1]]

    def checks(self, f: SearchFilters) -> list[Check] | None:
        """Each filter `f` gives, as a test of one column, equalities first (`FILTERS`'
        order); None when an equality's value is not in the store at all."""
        found: list[Check] = []
        for flt in FILTERS:
            value = getattr(f, flt.field)
            if value is None:
                continue
            if flt.test != "eq":
                found.append((flt.column, flt.test, value))
                continue
            code = self.codes[flt.column].get(value)
            if code is None:
                return None
            found.append((flt.column, "eq", code))
        return found

    def _column(self, check: Check) -> npt.NDArray[Any]:
        name, op, _ = check
        return self.cats[name] if op == "eq" else self.nums[name]

    def keeper(self, checks: list[Check], alive: BoolArray | None = None) -> Keep:
        """Which of some rows pass every check (and are `alive`), testing those rows alone."""

        def keep(rows: npt.NDArray[np.int32]) -> BoolArray:
            kept: BoolArray = np.ones(len(rows), np.bool_) if alive is None else alive[rows]
            for check in checks:
                np.logical_and(kept, test(self._column(check)[rows], check[1], check[2]), out=kept)
            return kept

        return keep

    def _select(
        self, f: SearchFilters, alive: BoolArray | None = None
    ) -> tuple[BoolArray | None, npt.NDArray[np.int64] | None] | None:
        """The matching rows as a mask or as sorted positions (None, None: every row);
        None when a filter's value is not in the store at all.

        `alive`: only the rows it marks (a delta supersedes the others, `search.live`);
        the mask returned may then be `alive` itself, which the caller must not change."""
        found = self._filtered(f)
        if found is None or alive is None:
            return found
        mask, positions = found
        if positions is not None:
            return None, positions[alive[positions]]
        if mask is None:
            return alive, None
        np.logical_and(mask, alive, out=mask)
        return mask, None

    def _filtered(
        self, f: SearchFilters
    ) -> tuple[BoolArray | None, npt.NDArray[np.int64] | None] | None:
        checks = self.checks(f)
        if checks is None:
            return None
        tests: list[tuple[npt.NDArray[Any], Test, Any]] = []
        narrowest: tuple[int, int, str] | None = None  # (rows, code, category) of a group
        for check in checks:  # equality first, then the ranges
            name, op, value = check
            if op == "eq" and name in self.groups:
                starts = self.group_starts[name]
                rows = int(starts[value + 1]) - int(starts[value])
                if narrowest is None or rows < narrowest[0]:
                    if narrowest is not None:
                        tests.append((self.cats[narrowest[2]], "eq", narrowest[1]))
                    narrowest = (rows, value, name)
                    continue
            tests.append((self._column(check), op, value))
        mask: BoolArray | None = None
        positions: npt.NDArray[np.int64] | None = None
        area = box(f)
        if area is not None:
            circle = None if f.near is None else Circle(*f.near)
            positions = self._in_box(*area, circle)  # not in order yet
        if narrowest is not None:
            rows, code, name = narrowest
            if positions is None and rows * _SELECTIVE < self.size:
                starts = self.group_starts[name]
                positions = (  # ascending: a group keeps its rows in position order
                    self.groups[name].between(int(starts[code]), int(starts[code + 1]))
                ).astype(np.int64)
            else:
                tests.insert(0, (self.cats[name], "eq", code))
        first, spare = self._masks() if tests else (None, None)
        for column, op, value in tests:
            if positions is not None:
                positions = positions[test(column[positions], op, value)]
                continue
            if mask is None:
                mask = test(column, op, value, out=first)
            else:
                np.logical_and(mask, test(column, op, value, out=spare), out=mask)
            if np.count_nonzero(mask) * _SELECTIVE < self.size:
                positions, mask = np.flatnonzero(mask), None
        if area is not None and positions is not None:
            # In position order. The box's rows come as runs of ascending positions (a
            # cell's), which the stable sort (a merge of runs) orders some 9 times faster
            # than the default on a radius mix's boxes.
            positions = np.sort(positions, kind="stable")
        return mask, positions

    def _in_box(
        self, west: float, south: float, east: float, north: float, circle: Circle | None = None
    ) -> npt.NDArray[np.int64]:
        """The positions of the rows in the box (edges included), by grid cell; with a
        circle, of those within it."""
        first_row, west_column = cell(south, west)
        last_row, east_column = cell(north, east)
        # In the keys' own type: another would make numpy convert every key at each call.
        rows = np.arange(first_row, last_row + 1, dtype=self.geo_keys.dtype) * GEO_COLUMNS
        starts = np.searchsorted(self.geo_keys, rows + west_column, side="left")
        ends = np.searchsorted(self.geo_keys, rows + east_column, side="right")
        parts = [
            self.geo_order[s:e]
            for s, e in zip(starts.tolist(), ends.tolist(), strict=True)
            if e > s
        ]
        if not parts:
            return np.zeros(0, np.int64)
        found = np.concatenate(parts).astype(np.int64)
        lats, lons = self.latitude[found], self.longitude[found]
        if circle is not None:  # the box holds the circle (`around`): its test alone
            result: npt.NDArray[np.int64] = found[circle.holds(lats, lons)]
            return result
        inside = (lats >= south) & (lats <= north) & (lons >= west) & (lons <= east)
        result = found[inside]
        return result  # by cell: `_select` puts them in position order once filtered

    def _sorted(
        self,
        positions: npt.NDArray[np.int64],
        column: str,
        descending: bool,
        want: int | None = None,
    ) -> npt.NDArray[np.int64]:
        """`positions` (ascending) in the order of `column`; with `want`, at least its
        first `want` rows: the rows past the `want`-th row's value (which cannot come
        before it) are left out before the sort (`_first`)."""
        keys = self.updated_rank if column == "last_updated" else self.nums[column]
        values = keys[positions]
        if want is not None and want * 4 < len(positions):
            kept = _first(values, want, descending)
            if kept is not None:  # a subset of ascending positions: ties keep their order
                positions, values = positions[kept], values[kept]
        if column == "last_updated":
            ranked = positions[np.argsort(values, kind="stable")]
            return ranked[::-1] if descending else ranked
        ranked = positions[np.argsort(values, kind="stable")]  # NaN last, ties by id
        if not descending:
            return ranked
        known = int(np.count_nonzero(~np.isnan(values)))
        return np.concatenate((ranked[:known][::-1], ranked[known:][::-1]))

    def _sequences(self, column: str, descending: bool) -> list[npt.NDArray[np.int32]]:
        """The rows in the order of the sort: descending keeps nulls last and ids descending."""
        rows = self.orders[column]
        if not descending:
            return [rows]
        known = self.known[column]
        return [rows[:known][::-1], rows[known:][::-1]]

    def _ids(self, positions: npt.NDArray[Any]) -> list[str]:
        starts, ends = self.id_offsets[positions], self.id_offsets[positions + 1]
        raw = self.id_bytes
        return [
            raw[s:e].tobytes().decode() for s, e in zip(starts.tolist(), ends.tolist(), strict=True)
        ]


def _first(values: npt.NDArray[Any], want: int, descending: bool) -> npt.NDArray[np.intp] | None:
    """The indices, ascending, of the values that can be among the `want` first in their
    order (ascending or descending, NaN last): those up to the `want`-th value, ties
    included; None when that is not a number (then all of them can)."""
    if descending:
        known = len(values) - int(np.count_nonzero(np.isnan(values)))
        if known < want:
            return None
        cut = np.partition(values, known - want)[known - want]  # NaN sorts last
        return np.flatnonzero(values >= cut)
    cut = np.partition(values, want - 1)[want - 1]
    if np.isnan(cut):
        return None
    return np.flatnonzero(values <= cut)

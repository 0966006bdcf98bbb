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
SQL path uses) is within the radius.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from propdata.kit.geodesy import miles
from propdata.search.arrays import (
    GEO_COLUMNS,
    BoolArray,
    Group,
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
        self, query: SearchQuery, after: str | None = None, ids: bool = True
    ) -> IndexPage | None:
        """The exact total and the ids of the query's page, in its order (`search.order`;
        `ids` False: only their positions, for items read from the snapshot).

        `after`: the id of the last row of the previous page of this search in this data
        version (a cursor); the page starts past it, found by its position, not by counting
        rows, so a deep page costs what the first does. None when that id is not among this
        index's matches (the caller then answers otherwise).
        """
        filters, sort, limit, offset = query.filters, query.sort, query.limit, query.offset
        selection = self._select(filters)
        if selection is None:
            none: list[float] | None = None if filters.near is None else []
            return None if after is not None else IndexPage(0, [], none)
        mask, positions = selection
        distances: npt.NDArray[np.float64] | None = None
        if filters.near is not None:
            assert positions is not None  # a box always selects by positions
            latitude, longitude, radius = filters.near
            found = miles(latitude, longitude, self.latitude[positions], self.longitude[positions])
            inside = found <= radius
            positions, distances = positions[inside], found[inside]
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
            return IndexPage(total, [], None if distances is None else [])
        descending = query.ordering.descending
        if sort == "distance":
            assert positions is not None and distances is not None
            page = nearest(positions, distances, descending, offset, limit, last)
            if page is None:
                return None
        elif positions is not None and total <= _SORT_DIRECTLY:
            ranked = self._sorted(positions, SORT_COLUMNS[sort], descending)
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
                sequences = self._past(sequences, column, descending, last)
            page = walk(sequences, mask, offset, limit)
        shown: list[float] | None = None
        if distances is not None:
            assert positions is not None
            shown = distances[np.searchsorted(positions, page)].tolist()
        values: list[Any] | None = None
        if sort in SORT_COLUMNS and SORT_COLUMNS[sort] in self.nums:
            values = [None if math.isnan(v) else int(v)
                      for v in self.nums[SORT_COLUMNS[sort]][page].tolist()]  # fmt: skip
        return IndexPage(total, self._ids(page) if ids else [], shown, values, page)

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

    def _past(
        self,
        sequences: list[npt.NDArray[np.int32]],
        column: str,
        descending: bool,
        last: int,
    ) -> list[npt.NDArray[np.int32]]:
        """`sequences` (the order of the sort) from just after the row at `last`."""
        rows = self.orders[column]
        known = self.known[column]
        if column == "last_updated":
            at = int(self.updated_rank[last])
        elif np.isnan(self.nums[column][last]):  # in the null tail, by position
            at = known + int(np.searchsorted(rows[known:], last))
        else:  # binary search of (value, position) in the non-null head
            values = self.nums[column]
            target = (float(values[last]), last)
            lo, hi = 0, known
            while lo < hi:
                mid = (lo + hi) // 2
                row = int(rows[mid])
                if (float(values[row]), row) < target:
                    lo = mid + 1
                else:
                    hi = mid
            at = lo
        if not descending:  # one sequence: [rows]
            return [sequences[0][at + 1 :]]
        if at < known:  # [head reversed, tail reversed]
            return [sequences[0][known - at :], sequences[1]]
        return [sequences[1][len(rows) - at :]]

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
        tests: list[tuple[npt.NDArray[Any], Test, Any]] = []
        narrowest: tuple[int, int, str] | None = None  # (rows, code, category) of a group
        for flt in FILTERS:  # equality first (FILTERS' order), then the ranges
            value = getattr(f, flt.field)
            if value is None:
                continue
            name = flt.column
            if flt.test != "eq":
                tests.append((self.nums[name], flt.test, value))
                continue
            code = self.codes[name].get(value)
            if code is None:
                return None
            if name in self.groups:
                starts = self.group_starts[name]
                rows = int(starts[code + 1]) - int(starts[code])
                if narrowest is None or rows < narrowest[0]:
                    if narrowest is not None:
                        tests.append((self.cats[narrowest[2]], "eq", narrowest[1]))
                    narrowest = (rows, code, name)
                    continue
            tests.append((self.cats[name], "eq", code))
        mask: BoolArray | None = None
        positions: npt.NDArray[np.int64] | None = None
        area = box(f)
        if area is not None:
            positions = self._in_box(*area)  # not in order yet
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
            positions = np.sort(positions)  # the box's rows, filtered, in position order
        return mask, positions

    def _in_box(
        self, west: float, south: float, east: float, north: float
    ) -> npt.NDArray[np.int64]:
        """The positions of the rows in the box (edges included), ascending."""
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
        inside = (lats >= south) & (lats <= north) & (lons >= west) & (lons <= east)
        result: npt.NDArray[np.int64] = found[inside]
        return result  # by cell: `_select` puts them in position order once filtered

    def _sorted(
        self, positions: npt.NDArray[np.int64], column: str, descending: bool
    ) -> npt.NDArray[np.int64]:
        if column == "last_updated":
            ranked = positions[np.argsort(self.updated_rank[positions], kind="stable")]
            return ranked[::-1] if descending else ranked
        values = self.nums[column][positions]
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

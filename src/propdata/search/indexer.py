"""Making a search index: pages of rows in, a `SearchIndex` out (`search.index`).

The keeper builds the base from the table (or a child process writes it as a snapshot,
`search.build_snapshot`), and `search.live` builds each data version's delta with the same
builder, from the changed records and the rows of the delta before (`absorb`).
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from propdata.search import items as search_items
from propdata.search.arrays import Group, geo_cells, group, id_grid
from propdata.search.filters import CATEGORICAL, NUMERIC, SORT_COLUMNS
from propdata.search.index import GROUPED, INDEX_COLUMNS, ITEM_COLUMNS, SearchIndex
from propdata.search.repository import SearchRow

log = logging.getLogger("propdata")

PICK = operator.itemgetter(*((INDEX_COLUMNS + ITEM_COLUMNS).index(f) for f in SearchRow._fields))
"""A `SearchRow` of a row of `INDEX_COLUMNS + ITEM_COLUMNS`."""
_UPDATED = INDEX_COLUMNS.index("last_updated")
_LATITUDE = INDEX_COLUMNS.index("latitude")
_LONGITUDE = INDEX_COLUMNS.index("longitude")


@dataclass
class IndexBuilder:
    """Collects pages of `INDEX_COLUMNS` rows (in id order) and makes the index; with
    `items`, rows of `INDEX_COLUMNS + ITEM_COLUMNS`, whose encoded search items it appends
    to that file (a snapshot's, `search.items`)."""

    namespace: str
    items: BinaryIO | None = None
    size: int = 0
    _item_lengths: list[npt.NDArray[np.int64]] = field(default_factory=list)
    _ids: list[npt.NDArray[np.uint8]] = field(default_factory=list)
    _id_lengths: list[npt.NDArray[np.int64]] = field(default_factory=list)
    _codes: dict[str, dict[Any, int]] = field(
        default_factory=lambda: {name: {} for name in CATEGORICAL}
    )
    _cats: dict[str, list[npt.NDArray[np.int32]]] = field(
        default_factory=lambda: {name: [] for name in CATEGORICAL}
    )
    _nums: dict[str, list[npt.NDArray[np.float64]]] = field(
        default_factory=lambda: {name: [] for name in NUMERIC}
    )
    _updated: list[npt.NDArray[np.bytes_]] = field(default_factory=list)
    _lats: list[npt.NDArray[np.float64]] = field(default_factory=list)
    _lons: list[npt.NDArray[np.float64]] = field(default_factory=list)
    last_id: str | None = None
    ordered: bool = True
    """Whether the rows came in id order; when not (`absorb`), `finish` puts them in it
    and keeps the permutation it applied (`permutation`)."""
    permutation: npt.NDArray[np.int64] | None = None
    """The rows' order by id, by their order of arrival (set by `finish` when not `ordered`)."""

    def add(self, rows: Sequence[Sequence[Any]]) -> None:
        """Take one page: it is turned into arrays at once, so no Python object per row
        outlives the page (they would stay in the worker's resident memory)."""
        if not rows:
            return
        self.size += len(rows)
        columns = list(zip(*rows, strict=True))
        encoded = [i.encode() for i in columns[0]]
        if self.last_id is not None and columns[0][0] <= self.last_id:
            self.ordered = False
        self._ids.append(np.frombuffer(b"".join(encoded), np.uint8))
        self._id_lengths.append(np.fromiter(map(len, encoded), np.int64, count=len(encoded)))
        for n, name in enumerate(CATEGORICAL, start=1):
            codes = self._codes[name]
            self._cats[name].append(
                np.fromiter((codes.setdefault(v, len(codes)) for v in columns[n]), np.int32)
            )
        for n, name in enumerate(NUMERIC, start=1 + len(CATEGORICAL)):
            self._nums[name].append(np.array(columns[n], dtype=np.float64))  # None -> NaN
        self._updated.append(np.array([u.encode() for u in columns[_UPDATED]], dtype=np.bytes_))
        lats = np.array(columns[_LATITUDE], dtype=np.float64)  # None -> NaN
        lons = np.array(columns[_LONGITUDE], dtype=np.float64)
        unknown = np.isnan(lats) | np.isnan(lons)  # a record needs both to be placed
        lats[unknown] = np.nan
        lons[unknown] = np.nan
        self._lats.append(lats)
        self._lons.append(lons)
        self.last_id = rows[-1][0]
        if self.items is not None:
            self._add_items(rows)

    def absorb(self, index: SearchIndex, keep: npt.NDArray[np.int64]) -> None:
        """Take the rows at positions `keep` of `index` (an index of these columns, a delta's
        earlier version), as they are: their ids may come anywhere among the other rows'."""
        if not len(keep):
            return
        self.ordered = False
        self.size += len(keep)
        starts = index.id_offsets[keep].astype(np.int64)
        lengths = index.id_offsets[keep + 1].astype(np.int64) - starts
        shift = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
        self._ids.append(index.id_bytes[shift + np.arange(int(lengths.sum()))])
        self._id_lengths.append(lengths)
        for name in CATEGORICAL:
            codes = self._codes[name]
            if not codes:  # the first rows taken: their codes as they are (a dict copy)
                self._codes[name] = dict(index.codes[name])
                self._cats[name].append(index.cats[name][keep].astype(np.int32))
                continue
            mapping = np.fromiter((codes.setdefault(v, len(codes)) for v in index.codes[name]),
                                  np.int32, count=len(index.codes[name]))  # fmt: skip
            self._cats[name].append(mapping[index.cats[name][keep]])
        for name in NUMERIC:
            self._nums[name].append(index.nums[name][keep].astype(np.float64))
        self._updated.append(index.updated[keep])
        self._lats.append(index.latitude[keep].astype(np.float64))
        self._lons.append(index.longitude[keep].astype(np.float64))

    def _add_items(self, rows: Sequence[Sequence[Any]]) -> None:
        assert self.items is not None
        parts = search_items.encoded([SearchRow._make(PICK(row)) for row in rows])
        try:
            self.items.write(b"".join(parts))
        except OSError as exc:  # a full disk, say: the snapshot goes without its items
            log.warning("could not write the search items (%s); searches read them from the"
                        " store", exc)  # fmt: skip
            self.items = None
            self._item_lengths.clear()
            return
        self._item_lengths.append(np.fromiter(map(len, parts), np.int64, count=len(parts)))

    def finish(self, order: npt.NDArray[np.int64] | None = None) -> SearchIndex:
        """The index of the rows taken. `order`: their order by id, by their order of
        arrival, where the caller knows it (a delta merges a commit's few rows into rows
        already in id order); else rows that did not come in id order are sorted."""
        size = self.size
        item_offsets = None
        if self.items is not None:
            item_offsets = search_items.offsets_of(
                np.concatenate(self._item_lengths) if self._item_lengths else np.zeros(0, np.int64)
            )
            self._item_lengths.clear()
        id_bytes = np.concatenate(self._ids) if self._ids else np.zeros(0, np.uint8)
        lengths = np.concatenate(self._id_lengths) if self._id_lengths else _ints()
        self._ids.clear()
        self._id_lengths.clear()
        offsets = np.zeros(size + 1, np.int32 if len(id_bytes) < 2**31 else np.int64)
        np.cumsum(lengths, out=offsets[1:])
        raw_cats = {name: np.concatenate(self._cats.pop(name) or [_ints()]) for name in CATEGORICAL}
        raw_nums = {name: np.concatenate(self._nums.pop(name) or [_floats()]) for name in NUMERIC}
        text = np.concatenate(self._updated) if self._updated else np.zeros(0, "S1")
        self._updated.clear()
        lats = np.concatenate(self._lats) if self._lats else _floats()
        lons = np.concatenate(self._lons) if self._lons else _floats()
        self._lats.clear()
        self._lons.clear()
        if not self.ordered or order is not None:  # rows taken from elsewhere: in id order
            starts = offsets.astype(np.int64)
            width = int(np.diff(starts).max()) if size else 1
            grid, lengths = id_grid(id_bytes, starts, np.arange(size), width)
            if order is None:
                order = np.argsort(grid.view(f"S{width}").ravel(), kind="stable")
            self.permutation = order
            grid, lengths = grid[order], lengths[order]
            id_bytes = grid[np.arange(width)[None, :] < lengths[:, None]]  # row by row
            np.cumsum(lengths, out=offsets[1:])
            raw_cats = {name: codes[order] for name, codes in raw_cats.items()}
            raw_nums = {name: values[order] for name, values in raw_nums.items()}
            text, lats, lons = text[order], lats[order], lons[order]
        cats = {name: _narrow(raw_cats[name], len(codes)) for name, codes in self._codes.items()}
        grouped = {name: group(cats[name], len(self._codes[name])) for name in GROUPED}
        nums = {name: _compact(values) for name, values in raw_nums.items()}
        orders = _Orders(nums)
        orders["last_updated"] = np.argsort(text, kind="stable").astype(np.int32)
        known = {"last_updated": size}
        for column in SORT_COLUMNS.values():
            if column != "last_updated":
                known[column] = int(np.count_nonzero(~np.isnan(nums[column])))
                if order is None:  # a delta's are made when a search first walks one
                    orders[column] = orders.make(column)
        ranks = np.empty(size, np.int32)
        ranks[orders["last_updated"]] = np.arange(size, dtype=np.int32)
        placed = np.flatnonzero(~np.isnan(lats))
        cells = geo_cells(lats[placed], lons[placed])
        by_cell = np.argsort(cells, kind="stable")  # within a cell, by position (id)
        return SearchIndex(
            namespace=self.namespace, size=size, id_bytes=id_bytes, id_offsets=offsets,
            codes=self._codes, cats=cats, nums=nums, orders=orders, known=known,
            groups={name: Group(rows) for name, (rows, _) in grouped.items()},
            group_starts={name: starts for name, (_, starts) in grouped.items()},
            updated_rank=ranks, latitude=lats, longitude=lons,
            geo_order=placed[by_cell].astype(np.int32), geo_keys=cells[by_cell],
            item_offsets=item_offsets, updated=text,
        )  # fmt: skip


class _Orders(dict[str, npt.NDArray[np.int32]]):
    """Per sort column, its rows' positions ascending, nulls (NaN) last, ties by position;
    each made on first use where not made already."""

    def __init__(self, nums: dict[str, npt.NDArray[Any]]) -> None:
        super().__init__()
        self._nums = nums

    def __missing__(self, column: str) -> npt.NDArray[np.int32]:
        made = self[column] = self.make(column)
        return made

    def make(self, column: str) -> npt.NDArray[np.int32]:
        return np.argsort(self._nums[column], kind="stable").astype(np.int32)


def _ints() -> npt.NDArray[np.int32]:
    return np.zeros(0, np.int32)


def _floats() -> npt.NDArray[np.float64]:
    return np.zeros(0, np.float64)


def _narrow(codes: npt.NDArray[np.int32], distinct: int) -> npt.NDArray[Any]:
    """The smallest integer type that holds every code."""
    if distinct <= 255:
        return codes.astype(np.uint8)
    if distinct <= 65_535:
        return codes.astype(np.uint16)
    return codes


def _compact(values: npt.NDArray[np.float64]) -> npt.NDArray[Any]:
    """float32 when every value survives it exactly (half the memory), else float64;
    comparisons stay exact through `arrays.at_least`/`at_most`. Not float16: numpy compares it in
    software, and range filters took 10 times as long."""
    with np.errstate(over="ignore"):
        small = values.astype(np.float32)
    if np.array_equal(small.astype(np.float64), values, equal_nan=True):
        return small
    return values

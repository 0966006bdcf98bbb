"""The numpy pieces of search: exact range tests on narrowed columns, the grid of places,
and walks through presorted orders. The index (`search.index`) and the predicate over a
batch of records (`search.match`) test a column with the same `test`, so a filter compares
the same way in both (and as SQL compares it: NaN, a null, passes no test).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from propdata.search.filters import Test

BoolArray = npt.NDArray[np.bool_]

GEO_CELL = 0.25
"""Degrees of a grid cell: a 25-mile radius reads about five rows of cells."""
GEO_COLUMNS = int(360 / GEO_CELL)
_GEO_ROWS = int(180 / GEO_CELL)

_FIRST_CHUNK = 4_096
_LAST_CHUNK = 262_144


@dataclass(frozen=True)
class Group:
    """The positions of one GROUPED category's rows by code (see `group`): in memory for an
    index built here, read with pread from its file for one loaded from a snapshot. A
    search reads one code's slice once; mapped, every slice a worker ever read would stay
    in its resident memory (the three groups are 12 MB at 1,000,000 properties)."""

    rows: npt.NDArray[np.int32] | None
    path: Path | None = None
    start: int = 0
    """Where the positions begin in `path` (after the .npy header), in bytes."""
    size: int = 0

    def between(self, first: int, end: int) -> npt.NDArray[np.int32]:
        """Positions `first` to `end` (one code's rows)."""
        if self.rows is not None:
            return self.rows[first:end]
        assert self.path is not None
        fd = os.open(self.path, os.O_RDONLY)
        try:
            raw = os.pread(fd, (end - first) * 4, self.start + first * 4)
        finally:
            os.close(fd)
        return np.frombuffer(raw, "<i4")

    @property
    def nbytes(self) -> int:
        return self.size * 4 if self.rows is None else self.rows.nbytes


def group(
    codes: npt.NDArray[Any], distinct: int
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64]]:
    """The positions of the rows by code, ascending within a code, and where each code's
    slice starts (`distinct + 1` entries: code c's rows are `rows[starts[c]:starts[c + 1]]`)."""
    rows = np.argsort(codes, kind="stable").astype(np.int32)
    starts = np.zeros(distinct + 1, np.int64)
    np.cumsum(np.bincount(codes, minlength=distinct), out=starts[1:])
    return rows, starts


def geo_cells(
    lats: npt.NDArray[np.float64], lons: npt.NDArray[np.float64]
) -> npt.NDArray[np.int32]:
    """The grid cell of each point: row (latitude) by row, columns by longitude."""
    rows = np.clip(np.floor((lats + 90.0) / GEO_CELL), 0, _GEO_ROWS - 1).astype(np.int32)
    columns = np.clip(np.floor((lons + 180.0) / GEO_CELL), 0, GEO_COLUMNS - 1).astype(np.int32)
    result: npt.NDArray[np.int32] = rows * np.int32(GEO_COLUMNS) + columns
    return result


def cell(lat: float, lon: float) -> tuple[int, int]:
    """`geo_cells` of one point as (row, column), in plain floats: the same float64
    arithmetic, without numpy's cost on one-element arrays."""
    row = min(max(math.floor((lat + 90.0) / GEO_CELL), 0), _GEO_ROWS - 1)
    column = min(max(math.floor((lon + 180.0) / GEO_CELL), 0), GEO_COLUMNS - 1)
    return row, column


def _bound(kind: Any, value: float) -> Any:
    """`value` in the column's float type, or an infinity beyond its range (no warning)."""
    largest = float(np.finfo(kind).max)
    if abs(value) > largest:
        return kind(np.inf if value > 0 else -np.inf)
    return kind(value)


def at_least(column: npt.NDArray[Any], value: float, out: BoolArray | None = None) -> BoolArray:
    """`column >= value` exactly, also when the column is float16/32 and the value is not
    representable in it: the bound becomes the smallest value of the type not below it."""
    kind = column.dtype.type
    bound = _bound(kind, value)
    if float(bound) < value:
        bound = np.nextafter(bound, kind(np.inf))
    result: BoolArray = np.greater_equal(column, bound, out=out)
    return result


def at_most(column: npt.NDArray[Any], value: float, out: BoolArray | None = None) -> BoolArray:
    kind = column.dtype.type
    bound = _bound(kind, value)
    if float(bound) > value:
        bound = np.nextafter(bound, kind(-np.inf))
    result: BoolArray = np.less_equal(column, bound, out=out)
    return result


def test(column: npt.NDArray[Any], op: Test, value: Any, out: BoolArray | None = None) -> BoolArray:
    """The rows that pass one filter, into `out` when given (a mask of the column's length)."""
    if op == "eq":
        result: BoolArray = np.equal(column, value, out=out)
        return result
    return at_least(column, value, out) if op == "ge" else at_most(column, value, out)


def _chunks(
    sequence: npt.NDArray[np.int32], first: int = _FIRST_CHUNK
) -> Iterator[npt.NDArray[np.int32]]:
    """Growing slices: a shallow page of a common filter reads a few thousand rows."""
    start, size = 0, first
    while start < len(sequence):
        yield sequence[start : start + size]
        start += size
        size = min(size * 2, _LAST_CHUNK)


Keep = Callable[[npt.NDArray[np.int32]], BoolArray]
"""Which of these rows (positions) a search keeps: a mask's look-up, or its filters tested on
the rows alone (`SearchIndex.keeper`)."""


@dataclass(frozen=True, slots=True)
class Walked:
    rows: npt.NDArray[np.int64]
    """The page's rows, in the order walked."""
    tested: int
    """How many rows `keep` was asked about."""


def walk(
    sequences: list[npt.NDArray[np.int32]],
    keep: Keep | None,
    offset: int,
    limit: int,
    *,
    first: int = _FIRST_CHUNK,
    budget: int | None = None,
) -> Walked | None:
    """Rows `offset` to `offset + limit` of the rows `keep` keeps (None: all), in the order
    of `sequences`, asking `keep` about growing chunks of them from `first` rows; None when
    `budget` rows were asked about and the page is not complete yet."""
    if keep is None:
        pieces: list[npt.NDArray[np.int32]] = []
        for sequence in sequences:  # no copy of whole sequences: a page is sliced out
            if offset >= len(sequence):
                offset -= len(sequence)
                continue
            pieces.append(sequence[offset : offset + limit])
            limit -= len(pieces[-1])
            offset = 0
            if limit <= 0:
                break
        return Walked(_joined(pieces), 0)
    found: list[npt.NDArray[np.int32]] = []
    skip, need, tested = offset, limit, 0
    for sequence in sequences:
        for chunk in _chunks(sequence, first):
            if budget is not None and tested >= budget:
                return None
            hits = chunk[keep(chunk)]
            tested += len(chunk)
            if skip >= len(hits):
                skip -= len(hits)
                continue
            taken = hits[skip : skip + need]
            skip = 0
            found.append(taken)
            need -= len(taken)
            if need == 0:
                return Walked(_joined(found), tested)
    return Walked(_joined(found), tested)


def _joined(pieces: list[npt.NDArray[np.int32]]) -> npt.NDArray[np.int64]:
    return (np.concatenate(pieces) if pieces else np.zeros(0, np.int32)).astype(np.int64)


def nearest(
    positions: npt.NDArray[np.int64],
    distances: npt.NDArray[np.float64],
    descending: bool,
    offset: int,
    limit: int,
    last: int | None,
) -> npt.NDArray[np.int64] | None:
    """A page of `positions` by distance, ties by position (id), in the order's direction;
    past the row at `last` when given (None when it is not among them)."""
    if last is not None:
        at = np.searchsorted(positions, last)
        if at >= len(positions) or positions[at] != last:
            return None
        d = distances[at]
        if descending:
            past = (distances < d) | ((distances == d) & (positions < last))
        else:
            past = (distances > d) | ((distances == d) & (positions > last))
        positions, distances = positions[past], distances[past]
    want = offset + limit
    if want < len(positions) // 4:  # only the nearest (farthest) `want` need a full sort
        if descending:
            bound = np.partition(distances, len(distances) - want)[len(distances) - want]
            keep = distances >= bound
        else:
            bound = np.partition(distances, want - 1)[want - 1]
            keep = distances <= bound
        positions, distances = positions[keep], distances[keep]
    ranked = positions[np.lexsort((positions, distances))]
    if descending:
        ranked = ranked[::-1]
    return ranked[offset:want]


def id_grid(
    id_bytes: npt.NDArray[np.uint8],
    starts: npt.NDArray[Any],
    positions: npt.NDArray[np.int64],
    width: int,
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """The ids at `positions` as rows of `width` bytes (cut, or padded with NUL), and their
    lengths: viewed as `S{width}`, numpy orders them as their bytes (no id holds a NUL)."""
    begin = starts[positions].astype(np.int64)
    length = starts[positions + 1].astype(np.int64) - begin
    inside = np.arange(width)[None, :] < np.minimum(length, width)[:, None]
    grid = np.zeros((len(positions), width), np.uint8)
    grid[inside] = id_bytes[(begin[:, None] + np.arange(width)[None, :])[inside]]
    return grid, length

"""The search index of one data version: a snapshot's index and the records changed since.

Why: a load changes a few records of a million (a follower commits every second), and
building the index again from the table takes seconds at that size. So a worker keeps the
index of a snapshot (the base, at least as new as its change feed position `feed`) and a
small index of the records the change feed names above that position (the delta), read from
the store by id and built with the same `IndexBuilder`. Base rows that a change supersedes
are masked out (`alive`); a removed record is only masked. A search is the base's matches and
the delta's, merged in the sort's order: the same total, rows, order and distances as SQL
over the same records (tests/search/test_live.py).

Placing a delta row among the base's rows. Both are in id order, ties broken by id, so a
delta row needs keys in the base's terms: its id's key is a number between the positions of
the base ids around it (`id_keys`), its lastUpdated's a number between the ranks of the base
rows around it in that order (`updated_keys`); numeric sort values compare as they are. A
page at offset o merges the first o + limit rows of the delta's matches with the base's
matches from o - k on (k: the delta's matches), so a deep page costs the base's walk plus
at most k more rows; a cursor page starts both sides past the last row's key.

The delta grows with every commit until the keeper folds it into a new snapshot
(`FOLD_ROWS`, `FOLD_SHARE`): a worker holds about half a kilobyte per delta row (its encoded
item most of it) and copies its arrays at each commit, while a fold costs one snapshot build
per host (docs/measurements.md, "Live data").
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from propdata.kit.db import Row
from propdata.kit.geodesy import miles
from propdata.search import items as search_items
from propdata.search.arrays import BoolArray, walk
from propdata.search.filters import SORT_COLUMNS, SearchFilters
from propdata.search.index import _SORT_DIRECTLY, IndexPage, SearchIndex
from propdata.search.indexer import PICK, IndexBuilder
from propdata.search.items import ItemFile
from propdata.search.query import SearchQuery
from propdata.search.repository import SearchRow

FOLD_ROWS = 20_000
"""Records changed since the base after which the keeper builds a new snapshot..."""
FOLD_SHARE = 0.05
"""...or this share of the base's rows, whichever is fewer (a small store folds sooner)."""

Floats = npt.NDArray[np.float64]
Positions = npt.NDArray[np.int64]
Objects = npt.NDArray[np.object_]
"""The delta's ids and encoded items by position: numpy gathers them at each commit, where a
list comprehension over 20,000 of them took a few ms each."""
_NO_OBJECTS: Objects = np.empty(0, object)
_NONE = np.zeros(0, np.int64)
_NO_FLOATS = np.zeros(0, np.float64)
_BASE, _DELTA = 0, 1


def fold_due(
    changed: int, base_size: int, rows: int = FOLD_ROWS, share: float = FOLD_SHARE
) -> bool:
    """Whether a delta of `changed` records is due to be folded into a new snapshot."""
    return changed > min(rows, max(share * base_size, 1.0))


@dataclass(slots=True)
class _Side:
    """One index's matches of a search: a mask or sorted positions, and their distances."""

    mask: BoolArray | None
    positions: Positions | None
    distances: Floats | None
    total: int


_UNREAD = _Side(None, None, None, 0)
"""A side whose matches a resumed page does not read (the base's: `LiveIndex._resume`)."""


class LiveItems:
    """The encoded items of a live index: the base's snapshot items, then the delta's."""

    def __init__(self, base: ItemFile, split: int, delta: Objects) -> None:
        self.base = base
        self.split = split
        self.delta = delta

    @property
    def ready(self) -> bool:
        return self.base.ready

    @ready.setter
    def ready(self, value: bool) -> None:
        self.base.ready = value

    @property
    def path(self) -> Any:
        return self.base.path

    def read(self, positions: npt.NDArray[Any]) -> list[bytes]:
        """These rows' encoded items, in this order (`search.items.join` makes the page)."""
        ours = positions >= self.split
        if not ours.any():
            return self.base.read(positions)
        out: list[bytes] = [b""] * len(positions)
        theirs = np.flatnonzero(~ours)
        for at, part in zip(theirs.tolist(), self.base.read(positions[theirs]), strict=True):
            out[at] = part
        for at in np.flatnonzero(ours).tolist():
            out[at] = self.delta[int(positions[at]) - self.split]
        return out


@dataclass(eq=False)
class LiveIndex:
    """The index of one data version: `base` with `alive`'s rows, and `delta` (see the module)."""

    namespace: str
    base: SearchIndex
    delta: SearchIndex
    alive: BoolArray | None
    """The base rows no change supersedes; None: all of them."""
    living: int
    """How many base rows are alive."""
    id_keys: Floats
    """Each delta row's id key in the base's terms (see the module)."""
    updated_keys: Floats
    """Each delta row's lastUpdated key in the base's terms."""
    delta_items: Objects
    """Each delta row's encoded search item (`search.items`), by position."""
    feed: int
    """The change feed's position this version's rows are as of."""
    exact: bool = True
    """Whether the rows are exactly those of `namespace` (see `SearchIndex.exact`)."""
    _items: LiveItems | None = field(default=None, repr=False)

    @classmethod
    def plain(cls, base: SearchIndex) -> LiveIndex:
        """The base alone, as the version it was built from."""
        empty = IndexBuilder(base.namespace).finish()
        return cls(base.namespace, base, empty, None, base.size, _NO_FLOATS, _NO_FLOATS,
                   _NO_OBJECTS, base.feed, base.exact)  # fmt: skip

    @property
    def size(self) -> int:
        return self.living + self.delta.size

    @property
    def nbytes(self) -> int:
        return self.base.nbytes + self.delta.nbytes

    @property
    def version(self) -> int:
        return int(self.namespace.rpartition(".")[2] or 0)

    @property
    def items(self) -> LiveItems | ItemFile | None:
        """The encoded search items of every row (None when the base has none)."""
        base = self.base.items
        if base is None or not self.delta.size:
            return base
        if self._items is None:
            self._items = LiveItems(base, self.base.size, self.delta_items)
        return self._items

    def search(
        self,
        query: SearchQuery,
        after: str | None = None,
        ids: bool = True,
        total: int | None = None,
    ) -> IndexPage | None:
        """`SearchIndex.search` over the base's alive rows and the delta's: positions of the
        delta's rows follow the base's (`base.size + q`)."""
        if not self.delta.size and self.alive is None:
            return self.base.search(query, after, ids, total)
        if after is not None and total is not None:
            resumed = self._resume(query, after, total, ids)
            if resumed is not None:
                return resumed
        filters, sort, limit, offset = query.filters, query.sort, query.limit, query.offset
        descending = query.ordering.descending
        base = self._side(self.base, self.base._select(filters, self.alive), filters)
        delta = self._side(self.delta, self.delta._select(filters) if self.delta.size else None,
                           filters)  # fmt: skip
        total = base.total + delta.total
        near = filters.near is not None
        if after is not None:
            target = self._target(after, sort, base, delta)
            if target is None:
                return None
            ours = self._window(_DELTA, delta, sort, descending, 0, limit, target)
            theirs = self._window(_BASE, base, sort, descending, 0, limit, target)
            start = 0
        else:
            if offset >= total or limit <= 0:
                return IndexPage(total, [], [] if near else None, tested=self.size)
            want = offset + limit
            ours = self._window(_DELTA, delta, sort, descending, 0, want, None)
            first = 0  # where the base's part starts: all the delta's matches may come before
            if offset > delta.total and base.total:
                first = min(offset - delta.total, base.total - 1)
            theirs = self._window(_BASE, base, sort, descending, first, want - first, None)
            start = offset - first
        page, distances = self._merge(theirs, ours, sort, descending)
        page = page[start : start + limit]
        shown = None if distances is None else distances[start : start + limit].tolist()
        return self._page(total, page, shown, sort, ids, self.size)

    def _resume(self, query: SearchQuery, after: str, total: int, ids: bool) -> IndexPage | None:
        """`SearchIndex.resume` over the base's alive rows and the delta's: the delta's
        matches as for any page (it is small), the base's tested on the rows its walk
        passes from the cursor's row; None when not resumed (see `resume`)."""
        filters, sort, limit = query.filters, query.sort, query.limit
        resumable = self.base.resumable(query, total)
        if resumable is None:
            return None
        first, budget = resumable
        descending = query.ordering.descending
        delta = self._side(self.delta, self.delta._select(filters) if self.delta.size else None,
                           filters)  # fmt: skip
        target = self._target(after, sort, _UNREAD, delta)
        if target is None:
            return None
        ours = self._window(_DELTA, delta, sort, descending, 0, limit, target)
        theirs: tuple[Positions, Floats | None] = (_NONE, None)
        tested = self.delta.size
        checks = self.base.checks(filters)
        if checks is not None:
            keep = self.base.keeper(checks, self.alive)
            sequences = self._seek(SORT_COLUMNS[sort], descending, target)
            walked = walk(sequences, keep, 0, limit, first=first, budget=budget)
            if walked is None:
                return None
            theirs, tested = (walked.rows, None), tested + walked.tested
        page, _ = self._merge(theirs, ours, sort, descending)
        return self._page(total, page[:limit], None, sort, ids, tested)

    def _page(
        self,
        total: int,
        page: Positions,
        shown: list[float] | None,
        sort: str,
        ids: bool,
        tested: int,
    ) -> IndexPage:
        values: list[Any] | None = None
        column = SORT_COLUMNS.get(sort)
        if column is not None and column in self.base.nums:
            values = [None if math.isnan(v) else int(v) for v in self._values(column, page)]
        return IndexPage(total, self._ids(page) if ids else [], shown, values, page, tested)

    # -- the two sides -------------------------------------------------------------------

    def _side(
        self,
        index: SearchIndex,
        selection: tuple[BoolArray | None, Positions | None] | None,
        filters: SearchFilters,
    ) -> _Side:
        near = filters.near
        if selection is None:
            return _Side(None, _NONE, None if near is None else _NO_FLOATS, 0)
        mask, positions = selection
        distances = None
        if near is not None:  # the rows within the radius (`SearchIndex._in_box`)
            assert positions is not None  # a box always selects by positions
            latitude, longitude, _ = near
            distances = miles(latitude, longitude, index.latitude[positions],
                              index.longitude[positions])  # fmt: skip
        if positions is not None:
            total = len(positions)
        elif mask is not None and mask is self.alive:
            total = self.living
        elif mask is not None:
            total = int(np.count_nonzero(mask))
        else:
            total = index.size
        return _Side(mask, positions, distances, total)

    def _index(self, side: int) -> SearchIndex:
        return self.base if side == _BASE else self.delta

    def _keys(
        self, side: int, positions: Positions, sort: str, descending: bool, distances: Floats | None
    ) -> list[Floats]:
        """The rows' keys in the order of the search, most significant first: ascending
        keys give that order (a descending search's are negated, nulls still last)."""
        ids = positions.astype(np.float64) if side == _BASE else self.id_keys[positions]
        if sort == "distance":
            assert distances is not None
            keys = [distances, ids]
        elif SORT_COLUMNS[sort] == "last_updated":
            if side == _BASE:
                keys = [self.base.updated_rank[positions].astype(np.float64)]
            else:
                keys = [self.updated_keys[positions]]
        else:
            values = self._index(side).nums[SORT_COLUMNS[sort]][positions].astype(np.float64)
            null = np.isnan(values)
            keys = [null.astype(np.float64), np.where(null, 0.0, values), ids]
        if descending:
            keys = [keys[0] if len(keys) == 3 else -keys[0], *(-k for k in keys[1:])]
        return keys

    def _target(
        self, after: str, sort: str, base: _Side, delta: _Side
    ) -> tuple[int, int, float | None] | None:
        """(side, position, distance) of a cursor's last row in this version, None when it
        is not here (or, for a radius search, not among the matches)."""
        side, at = _DELTA, None
        if self.delta.size:
            at = self.delta._position(after)
        if at is None:
            side, at = _BASE, self.base._position(after)
            if at is None or (self.alive is not None and not self.alive[at]):
                return None
        if sort != "distance":
            return side, at, None
        found = base if side == _BASE else delta
        assert found.positions is not None and found.distances is not None
        where = int(np.searchsorted(found.positions, at))
        if where >= len(found.positions) or found.positions[where] != at:
            return None
        return side, at, float(found.distances[where])

    def _window(
        self,
        side: int,
        found: _Side,
        sort: str,
        descending: bool,
        start: int,
        count: int,
        target: tuple[int, int, float | None] | None,
    ) -> tuple[Positions, Floats | None]:
        """Matches `start` to `start + count` of one side in the search's order, past
        `target` (a row of either side) when given; with their distances."""
        index = self._index(side)
        if count <= 0 or not found.total:
            return _NONE, None if found.distances is None else _NO_FLOATS
        mask, positions, distances = found.mask, found.positions, found.distances
        small = positions is not None and len(positions) <= _SORT_DIRECTLY
        if sort == "distance" or small or (side == _DELTA and target is not None):
            if positions is None:
                positions = np.flatnonzero(mask) if mask is not None else np.arange(index.size)
            keys = self._keys(side, positions, sort, descending, distances)
            ranked = np.lexsort(keys[::-1])
            if target is not None:
                goal = self._target_keys(target, sort, descending)
                past = _after([k[ranked] for k in keys], goal)
                skip = int(np.argmax(past)) if past.any() else len(ranked)
                ranked = ranked[skip:]
            chosen = ranked[start : start + count]
            return positions[chosen], None if distances is None else distances[chosen]
        column = SORT_COLUMNS[sort]
        if positions is not None:
            mask = index._masks()[0]
            mask.fill(False)
            mask[positions] = True
        sequences = index._sequences(column, descending)  # the delta's own: the same order
        if target is not None:
            sequences = self._seek(column, descending, target)
        walked = walk(sequences, None if mask is None else mask.__getitem__, start, count)
        assert walked is not None  # no budget
        page = walked.rows
        if distances is None:
            return page, None
        assert positions is not None
        return page, distances[np.searchsorted(positions, page)]

    def _target_keys(
        self, target: tuple[int, int, float | None], sort: str, descending: bool
    ) -> list[float]:
        side, at, distance = target
        one = np.array([at], np.int64)
        near = None if distance is None else np.array([distance], np.float64)
        return [float(k[0]) for k in self._keys(side, one, sort, descending, near)]

    def _seek(
        self, column: str, descending: bool, target: tuple[int, int, float | None]
    ) -> list[npt.NDArray[np.int32]]:
        """The base's order of `column` from just past `target`'s row (`SearchIndex.seek`,
        a delta row at its keys among the base's)."""
        side, at, _ = target
        if side == _BASE:
            return self.base.seek(column, descending, *self.base.place(column, at))
        if column == "last_updated":
            key = float(self.updated_keys[at])
        else:
            key = float(self.delta.nums[column][at])
        return self.base.seek(column, descending, key, float(self.id_keys[at]))

    def _merge(
        self,
        theirs: tuple[Positions, Floats | None],
        ours: tuple[Positions, Floats | None],
        sort: str,
        descending: bool,
    ) -> tuple[Positions, Floats | None]:
        """The base's rows and the delta's, each in the search's order, in one order."""
        (left, left_far), (right, right_far) = theirs, ours
        if not len(right):
            return left, left_far
        keys = [
            np.concatenate((a, b))
            for a, b in zip(self._keys(_BASE, left, sort, descending, left_far),
                            self._keys(_DELTA, right, sort, descending, right_far), strict=True)
        ]  # fmt: skip
        ranked = np.lexsort(keys[::-1])
        positions = np.concatenate((left, right + self.base.size))[ranked]
        if left_far is None or right_far is None:
            return positions, None
        return positions, np.concatenate((left_far, right_far))[ranked]

    def _values(self, column: str, page: Positions) -> list[float]:
        split = self.base.size
        base, delta = self.base.nums[column], self.delta.nums[column]
        return [float(base[p]) if p < split else float(delta[p - split]) for p in page.tolist()]

    def _ids(self, page: Positions) -> list[str]:
        split = self.base.size
        theirs = page < split
        if theirs.all():
            return self.base._ids(page)
        out = [""] * len(page)
        for at, found in zip(np.flatnonzero(theirs).tolist(), self.base._ids(page[theirs]),
                             strict=True):  # fmt: skip
            out[at] = found
        ours = np.flatnonzero(~theirs)
        for at, found in zip(ours.tolist(), self.delta._ids(page[ours] - split), strict=True):
            out[at] = found
        return out


def _after(keys: list[Floats], goal: list[float]) -> BoolArray:
    """Which rows' keys come strictly after `goal`'s (lexicographic, ascending)."""
    past = np.zeros(len(keys[0]), np.bool_)
    tied = np.ones(len(keys[0]), np.bool_)
    for key, value in zip(keys, goal, strict=True):
        past |= tied & (key > value)
        tied &= key == value
    return past


def _objects(values: Sequence[Any]) -> Objects:
    """`values` as a numpy array of Python objects (never split further, as bytes may be)."""
    out = np.empty(len(values), object)
    out[:] = values
    return out


def _merged(kept: Objects, added: list[str]) -> npt.NDArray[np.int64]:
    """The id order of `kept` (in id order) followed by `added` (ids none of `kept` has, in
    any order), by that order of arrival: the added rows merged in, not all sorted again."""
    by_id = sorted(range(len(added)), key=added.__getitem__)
    places = np.searchsorted(kept, np.array([added[n] for n in by_id], dtype=object))
    arrivals = len(kept) + np.array(by_id, dtype=np.int64)
    return np.insert(np.arange(len(kept), dtype=np.int64), places, arrivals)


def _find(ids: Objects, wanted: str) -> int | None:
    """The position of `wanted` among `ids` (sorted), None when absent."""
    at = bisect.bisect_left(ids, wanted)
    return at if at < len(ids) and ids[at] == wanted else None


class Delta:
    """The records changed since one base's feed position, as of the newest version read:
    each `apply` makes the next version's `LiveIndex` (built off the request path)."""

    def __init__(self, base: SearchIndex) -> None:
        self.base = base
        self.view = LiveIndex.plain(base)
        self.ids: Objects = _NO_OBJECTS
        """The delta's ids by position (in id order: `str` order is their UTF-8 bytes')."""
        self.changed: set[str] = set()
        """Every id changed since the base (the base's row, if any, is masked)."""
        self.mark = base.mark
        """The change feed's entry at `feed` (`SearchIndex.mark`), kept by the keeper."""
        self._id_at: Floats = _NO_FLOATS
        self._updated_at: Floats = _NO_FLOATS
        """Each delta row's count of base ids below it and `_updated_insertions`, by position:
        a commit computes them for its own rows only, so its cost follows its rows more than
        the delta's."""

    @property
    def feed(self) -> int:
        return self.view.feed

    def apply(
        self, namespace: str, feed: int, changed: Sequence[tuple[str, Row | None]]
    ) -> LiveIndex:
        """The index of `namespace`: this delta's and `changed` (each id with its row of
        `INDEX_COLUMNS + ITEM_COLUMNS` as stored, None when removed), at feed position `feed`."""
        view = self.view
        if not changed:
            self.view = dataclasses.replace(view, namespace=namespace, feed=feed, _items=None)
            return self.view
        latest = dict(changed)
        base = self.base
        alive, living = view.alive, view.living
        first = [found for found in latest if found not in self.changed]
        self.changed.update(first)
        places, stored = base.insertions(first)
        dead = places[stored]
        if len(dead):
            alive = np.ones(base.size, np.bool_) if alive is None else alive.copy()
            alive[dead] = False
            living -= len(dead)
        ids = self.ids
        again = [at for found in latest if (at := _find(ids, found)) is not None]
        keep = np.delete(np.arange(len(ids), dtype=np.int64), again)
        present = [row for row in latest.values() if row is not None]
        builder = IndexBuilder(namespace)
        builder.absorb(view.delta, keep)
        builder.add(present)
        kept = len(keep)
        index = builder.finish(_merged(ids[keep], [row[0] for row in present]))
        order = builder.permutation if builder.permutation is not None else _NONE
        items = _objects(search_items.encoded([SearchRow._make(PICK(row)) for row in present]))
        items = np.concatenate([view.delta_items[keep], items])[order]
        self.ids = np.concatenate([ids[keep], _objects([row[0] for row in present])])[order]
        size = index.size
        old = order < kept  # rows of the delta before: their keys in the base stand
        id_at, updated_at = np.empty(size, np.float64), np.empty(size, np.float64)
        id_at[old] = self._id_at[keep[order[old]]]
        updated_at[old] = self._updated_at[keep[order[old]]]
        fresh = np.flatnonzero(~old)
        places = base.insertions(self.ids[fresh].tolist())[0]
        id_at[fresh] = places
        updated_at[fresh] = self._updated_insertions(index.updated[fresh], places)
        self._id_at, self._updated_at = id_at, updated_at
        step = np.arange(size, dtype=np.float64) / (2 * (size + 1))
        self.view = LiveIndex(
            namespace, base, index, alive, living, id_at - 0.5 + step,
            updated_at - 0.5 + index.updated_rank / (2 * (size + 1)), items, feed,
        )  # fmt: skip
        return self.view

    def _updated_insertions(self, texts: npt.NDArray[np.bytes_], places: Positions) -> Floats:
        """How many base rows come before each of these rows in the lastUpdated order, by
        (lastUpdated, id): the base's row of the same id (superseded) counts as after it.
        One binary search of them all, in step, over the base's lastUpdated order."""
        base = self.base
        rows, updated = base.orders["last_updated"], base.updated
        count = len(places)
        ident = places.astype(np.float64) - 0.5
        lo, hi = np.zeros(count, np.int64), np.full(count, base.size, np.int64)
        while True:
            open_ = lo < hi
            if not open_.any():
                return lo.astype(np.float64)
            mid = (lo + hi) // 2
            row = rows[np.minimum(mid, base.size - 1)]
            text = updated[row]
            below = open_ & ((text < texts) | ((text == texts) & (row < ident)))
            lo = np.where(below, mid + 1, lo)
            hi = np.where(open_ & ~below, mid, hi)

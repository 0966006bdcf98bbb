"""The order of a search's rows, defined once.

Rows come by the sort's value (a `filters.SORT_COLUMNS` column, or the distance of a radius
search) in the order asked, ties broken by id in the same direction, and rows without a value
last in both directions, by id in that direction among themselves. Ids compare by their
bytes (SQLite's BINARY, PostgreSQL's "C" collation, Python's `str` order of UTF-8).

Each engine reads the rule here: SQL's ORDER BY and keyset clauses (`sql`, `sql_past`),
the radius searches SQL answers in Python (`compare`), the cursor's place (`past`), and the
index's numpy orders (`search.index`, which keeps each sort's rows with the nulls last and
reverses the head and the tail apart for a descending one: the same rule, as arrays).
tests/search/test_parity.py and test_live.py hold the engines together.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from propdata.search.filters import SORT_COLUMNS

Place = tuple[Any, str]
"""A row's place in an order: its sort value (None: null) and its id."""


@dataclass(frozen=True, slots=True)
class Order:
    sort: str
    """A `filters.SORT_COLUMNS` key, or "distance"."""
    descending: bool

    @property
    def column(self) -> str | None:
        """The sorted column; None for distance (computed, never stored)."""
        return SORT_COLUMNS.get(self.sort)

    @property
    def nullable(self) -> bool:
        """Whether rows may lack the value (lastUpdated and distances never do)."""
        return self.column not in (None, "last_updated")

    def sql(self) -> str:
        """The ORDER BY clause of a column sort."""
        assert self.column is not None, "distance is not a column"
        way = "DESC" if self.descending else "ASC"
        nulls = " NULLS LAST" if self.nullable else ""
        return f"{self.column} {way}{nulls}, id {way}"

    def sql_past(self, value: Any) -> str:
        """The keyset condition of the rows after a place whose value is `value`, in
        SQL's marks: ("value", "id") for a value (the rows with values past it; the nulls
        follow in a second read, `sql_nulls_past`), ("id",) for null."""
        assert self.column is not None, "distance is not a column"
        sign = "<" if self.descending else ">"
        if value is None:
            return f"{self.column} IS NULL AND id {sign} ?"
        return f"({self.column}, id) {sign} (?, ?)"

    def sql_nulls(self) -> str:
        """The condition of the rows without a value (which follow every row with one)."""
        return f"{self.column} IS NULL"

    def compare(self, a: Place, b: Place) -> int:
        """-1, 0 or 1 as `a` comes before, at or after `b`."""
        (value_a, id_a), (value_b, id_b) = a, b
        if (value_a is None) != (value_b is None):
            return 1 if value_a is None else -1  # nulls last, in both directions
        key_a: tuple[Any, ...] = (id_a,) if value_a is None else (value_a, id_a)
        key_b: tuple[Any, ...] = (id_b,) if value_b is None else (value_b, id_b)
        if key_a == key_b:
            return 0
        before = key_a < key_b
        return (1 if before else -1) if self.descending else (-1 if before else 1)

    def key(self) -> Callable[[Place], Any]:
        """A sort key giving this order to places (`sorted(places, key=order.key())`)."""
        return functools.cmp_to_key(self.compare)

    def past(self, place: Place, mark: Place) -> bool:
        """Whether `place` comes after `mark` (a cursor's last row)."""
        return self.compare(place, mark) > 0

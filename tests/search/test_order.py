"""The order rule, as SQL and Python read it: by value, ties by id, nulls last both ways."""

from __future__ import annotations

import pytest

from propdata.search.order import Order

PLACES = [(300, "b"), (None, "c"), (100, "z"), (300, "a"), (None, "a"), (100, "a")]


def test_ascending_puts_values_up_ties_by_id_and_nulls_last() -> None:
    ordered = sorted(PLACES, key=Order("listPrice", descending=False).key())
    assert ordered == [(100, "a"), (100, "z"), (300, "a"), (300, "b"), (None, "a"), (None, "c")]


def test_descending_reverses_values_and_ties_but_keeps_nulls_last() -> None:
    ordered = sorted(PLACES, key=Order("listPrice", descending=True).key())
    assert ordered == [(300, "b"), (300, "a"), (100, "z"), (100, "a"), (None, "c"), (None, "a")]


@pytest.mark.parametrize("descending", [False, True])
def test_past_is_what_follows_a_place_in_the_order(descending: bool) -> None:
    order = Order("listPrice", descending)
    ordered = sorted(PLACES, key=order.key())
    for n, mark in enumerate(ordered):
        assert [p for p in ordered if order.past(p, mark)] == ordered[n + 1 :]


def test_sql_reads_the_same_rule() -> None:
    assert Order("listPrice", True).sql() == "list_price DESC NULLS LAST, id DESC"
    assert Order("lastUpdated", False).sql() == "last_updated ASC, id ASC"
    assert Order("listPrice", False).sql_past(5) == "(list_price, id) > (?, ?)"
    assert Order("listPrice", True).sql_past(None) == "list_price IS NULL AND id < ?"

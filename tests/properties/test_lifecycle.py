"""The status machine and the fields derived from history."""

from __future__ import annotations

import datetime as dt

import pytest

from propdata.properties import lifecycle
from propdata.properties.lifecycle import TransitionError
from tests.factories import event

AS_OF = dt.date(2026, 11, 21)


@pytest.mark.parametrize(
    ("events", "status"),
    [
        ([], "offMarket"),
        ([event("2026-10-01", "listedForSale", 1)], "forSale"),
        ([event("2026-10-01", "listedForRent", 1)], "forRent"),
        ([event("2026-10-01", "sold", 1)], "recentlySold"),
        ([event("2020-10-01", "sold", 1)], "offMarket"),  # 180-day rule
        ([event("2026-10-02", "delisted", None), event("2026-10-01", "listedForSale", 1)], "offMarket"),
        ([event("2026-10-03", "relisted", 2), event("2026-10-02", "delisted", None),
          event("2026-10-01", "listedForSale", 1)], "forSale"),
        ([event("2026-10-03", "sold", 2), event("2026-10-02", "pendingSale", None),
          event("2026-10-01", "priceChange", 1), event("2026-09-01", "listedForSale", 1)], "recentlySold"),
        ([event("2026-10-03", "listedForSale", 2), event("2026-10-01", "listedForRent", 1)], "forSale"),
        ([event("2026-10-03", "rentalRemoved", None), event("2026-10-01", "listedForRent", 1)], "offMarket"),
        ([event("2021-01-01", "sold", 2), event("2016-01-01", "sold", 1)], "offMarket"),  # resale later
    ],
)  # fmt: skip
def test_allowed_histories(events: list, status: str) -> None:
    lifecycle.check_history(events, status, AS_OF)


@pytest.mark.parametrize(
    "events",
    [
        [event("2026-10-01", "priceChange", 1)],  # offMarket cannot change price
        [event("2026-10-02", "pendingSale", None), event("2026-10-01", "listedForRent", 1)],
        [event("2026-10-02", "sold", 2), event("2026-09-01", "sold", 1)],  # recentlySold -> sold
        [event("2026-10-02", "rentalRemoved", None)],
        [event("2026-09-01", "delisted", None), event("2026-10-01", "listedForSale", 1)],  # order
    ],
)
def test_refused_histories(events: list) -> None:
    with pytest.raises(TransitionError):
        lifecycle.replay(lifecycle.chronological(events))


def test_status_must_match_history() -> None:
    with pytest.raises(TransitionError, match="leads to forSale"):
        lifecycle.check_history([event("2026-10-01", "listedForSale", 1)], "offMarket", AS_OF)


def test_list_price_never_comes_from_an_older_listing() -> None:
    rent_without_price = [event("2026-10-01", "listedForRent", None), event("2026-01-01", "listedForSale", 736_000),
                          event("2025-12-01", "listedForRent", 1_500)]  # fmt: skip
    # (the history above is not valid as a whole; current_list_price only reads the newest listing)
    assert lifecycle.current_list_price(rent_without_price, "forRent") is None
    sale_after_rent = [
        event("2026-10-01", "listedForSale", 400_000),
        event("2026-01-01", "listedForRent", 2_000),
    ]
    assert lifecycle.current_list_price(sale_after_rent, "forSale") == 400_000
    cut = [
        event("2026-10-05", "priceChange", 380_000),
        event("2026-10-01", "listedForSale", 400_000),
    ]
    assert lifecycle.current_list_price(cut, "forSale") == 380_000
    assert lifecycle.current_list_price(cut, "offMarket") is None


def test_derive_original_and_previous_prices() -> None:
    history = [event("2026-10-09", "priceChange", 360_000), event("2026-10-05", "priceChange", 380_000),
               event("2026-10-01", "listedForSale", 400_000), event("2019-01-01", "sold", 300_000)]  # fmt: skip
    derived = lifecycle.derive(history, "forSale")
    assert derived.original_list_price == 400_000
    assert derived.previous_list_price == 380_000 and derived.last_price_change_date == "2026-10-09"
    assert derived.last_sale_price == 300_000 and derived.listing_date == "2026-10-01"
    assert lifecycle.days_on_market(derived, history, "forSale", AS_OF) == 51


def test_update_must_follow_a_transition() -> None:
    stored = [event("2026-10-01", "listedForSale", 1)]
    newer = [event("2026-10-10", "sold", 1), *stored]
    lifecycle.check_update("forSale", stored, newer, "recentlySold", AS_OF)
    with pytest.raises(TransitionError):
        lifecycle.check_update("forSale", stored, stored, "forRent", AS_OF)  # no event for it


def test_a_listing_feed_dating_the_stored_listing_later_keeps_its_opening() -> None:
    stored = [event("2026-10-01", "listedForSale", 400_000), event("2019-01-01", "sold", 300_000)]
    closed = [event("2026-10-12", "sold", 390_000), event("2026-10-09", "listedForSale", 410_000)]
    kept = lifecycle.keep_opening("forSale", stored, closed)
    assert kept == [event("2026-10-12", "sold", 390_000), *stored]
    lifecycle.check_update("forSale", stored, kept, "recentlySold", AS_OF)
    with pytest.raises(TransitionError, match="listedForSale on 2026-10-09"):
        lifecycle.check_update("forSale", stored, closed, "recentlySold", AS_OF)
    active = [event("2026-10-03", "listedForSale", 410_000)]  # the same listing, read later
    assert lifecycle.keep_opening("forSale", stored, active) == stored
    rental = [event("2026-10-01", "listedForRent", 2_000)]
    leased = [
        event("2026-11-01", "rentalRemoved", 1_900),
        event("2026-10-20", "listedForRent", 2_100),
    ]
    assert lifecycle.keep_opening("forRent", rental, leased) == [leased[0], *rental]
    sold = [event("2026-10-12", "sold", 390_000), *stored]  # and the Closed row read again
    assert lifecycle.keep_opening("recentlySold", sold, closed) == sold


@pytest.mark.parametrize(
    ("status", "stored", "new"),
    [
        # dated on or before the stored opening: the new dates stand
        ("forSale", [event("2026-10-05", "listedForSale", 1)], [event("2026-10-05", "listedForSale", 1)]),
        ("forSale", [event("2026-10-05", "listedForSale", 1)], [event("2026-10-01", "listedForSale", 1)]),
        # not listed, or opened after the stored sale: another listing
        ("offMarket", [event("2026-10-05", "delisted", None), event("2026-10-01", "listedForSale", 1)],
         [event("2026-10-09", "listedForSale", 1)]),
        ("recentlySold", [event("2026-10-05", "sold", 1), event("2026-10-01", "listedForSale", 1)],
         [event("2026-10-09", "listedForSale", 1)]),
        # another kind of listing, or no opening at all
        ("forRent", [event("2026-10-01", "listedForRent", 1)], [event("2026-10-09", "listedForSale", 1)]),
        ("forSale", [event("2026-10-01", "listedForSale", 1)], [event("2026-10-09", "sold", 1)]),
        ("forSale", [event("2026-10-01", "listedForSale", 1)], []),
    ],
)  # fmt: skip
def test_keep_opening_applies_only_to_a_later_opening_of_the_stored_listing(
    status: str, stored: list, new: list
) -> None:
    assert lifecycle.keep_opening(status, stored, new) is None

"""The status machine of contract.md ("Status transitions") and the fields derived from history.

Every writer (demo readers, synthetic generator, importer) goes through `check_history`
and `derive`, so a stored record's status, list prices and dates always agree with its
priceHistory.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from propdata.properties.schemas import PriceEvent

SOLD_EXPIRY_DAYS = 180
"""recentlySold becomes offMarket this many days after the sale with no new listing."""

TRANSITIONS: dict[tuple[str, str], str] = {
    ("offMarket", "listedForSale"): "forSale",
    ("offMarket", "relisted"): "forSale",
    ("offMarket", "listedForRent"): "forRent",
    ("offMarket", "sold"): "recentlySold",
    ("forSale", "priceChange"): "forSale",
    ("forSale", "pendingSale"): "forSale",
    ("forSale", "sold"): "recentlySold",
    ("forSale", "delisted"): "offMarket",
    ("forSale", "listedForRent"): "forRent",
    ("forRent", "rentalRemoved"): "offMarket",
    ("forRent", "listedForSale"): "forSale",
    ("recentlySold", "listedForSale"): "forSale",
    ("recentlySold", "listedForRent"): "forRent",
}
"""(status before, event) -> status after. `relisted` is a listedForSale after a delisting."""

LISTING_EVENTS = frozenset({"listedForSale", "relisted"})


class TransitionError(ValueError):
    """A history or update asks for a transition contract.md does not allow."""


def chronological(history: Sequence[PriceEvent]) -> list[PriceEvent]:
    """Oldest first; the wire order is newest first. Stable for events on the same day."""
    return list(reversed(history))


def expire(status: str, last_sale: str | None, as_of: dt.date) -> str:
    """Apply the 180-day rule: a sale older than SOLD_EXPIRY_DAYS leaves the property offMarket."""
    if (
        status == "recentlySold"
        and last_sale is not None
        and (as_of - dt.date.fromisoformat(last_sale)).days > SOLD_EXPIRY_DAYS
    ):
        return "offMarket"
    return status


def replay(events: Iterable[PriceEvent], start: str = "offMarket") -> tuple[str, str | None]:
    """Run chronological events through TRANSITIONS; return (status, date of the last sale).

    Raises TransitionError naming the first event that is not allowed.
    """
    status = start
    last_sale: str | None = None
    previous_date = ""
    for index, event in enumerate(events):
        date = event.date
        if date < previous_date:
            raise TransitionError(f"priceHistory is not in date order at {date}")
        previous_date = date
        # The 180-day rule also applies between events: a resale years later is legal. Only
        # a recent sale can expire, so the date is parsed only then (a load replays ~10M).
        if status == "recentlySold" and last_sale is not None:
            status = expire(status, last_sale, dt.date.fromisoformat(date))
        kind = event.event
        after = TRANSITIONS.get((status, kind))
        if after is None:
            raise TransitionError(
                f"event {index + 1} ({kind} on {date}) is not allowed from {status}"
            )
        status = after
        if kind == "sold":
            last_sale = date
    return status, last_sale


def check_history(history: Sequence[PriceEvent], status: str, as_of: dt.date) -> None:
    """Check that a newest-first history leads from offMarket to `status` as of `as_of`."""
    reached, last_sale = replay(reversed(history))
    reached = expire(reached, last_sale, as_of)
    if reached != status:
        raise TransitionError(f"priceHistory leads to {reached}, but status is {status}")


def check_update(
    stored_status: str,
    stored_history: Sequence[PriceEvent],
    new_history: Sequence[PriceEvent],
    new_status: str,
    as_of: dt.date,
) -> None:
    """Check that replacing a stored record keeps to the transitions.

    The events newer than the stored record's newest event must lead from the stored status
    to the new one; with no newer events the status may only change by the 180-day rule.
    """
    stored_last = stored_history[0].date if stored_history else ""
    newer = [e for e in chronological(new_history) if e.date > stored_last]
    last_sale = next((e.date for e in stored_history if e.event == "sold"), None)
    start = expire(stored_status, last_sale, as_of)
    reached, sale = replay(newer, start=start)
    reached = expire(reached, sale or last_sale, as_of)
    if reached != new_status:
        raise TransitionError(
            f"stored status {stored_status} cannot become {new_status}"
            + (f" through {', '.join(e.event for e in newer)}" if newer else " without new events")
        )


@dataclass(frozen=True, slots=True)
class Derived:
    """Fields computed from the history, never taken from input."""

    original_list_price: int | None
    previous_list_price: int | None
    last_price_change_date: str | None
    removed_date: str | None
    last_sale_price: int | None
    last_sale_date: str | None
    listing_date: str | None
    """Start of the listing that set the current status (forSale, forRent or the sold one)."""


_LISTING_STARTS: dict[str, frozenset[str]] = {
    "forSale": LISTING_EVENTS,
    "recentlySold": LISTING_EVENTS,
    "forRent": frozenset({"listedForRent"}),
}
"""The events that can start the listing behind each listed status."""
_LISTING_ENDS = frozenset({"sold", "delisted", "rentalRemoved"})


def derive(history: Sequence[PriceEvent], status: str) -> Derived:
    """Compute the listing-derived fields of a record from its newest-first history.

    - originalListPrice: the first price of the current listing (for recentlySold, of the
      listing that sold); null when the property is not listed and did not sell from a listing.
    - previousListPrice / lastPriceChangeDate: the price before, and the date of, the newest
      priceChange of that listing.
    - removedDate: the date of the newest `delisted` event.

    The listing is history[begin : start + 1] (`_listing`). Walked by index, without
    copies: every loaded record goes through here.
    """
    last_sale: PriceEvent | None = None
    removed: PriceEvent | None = None
    for event in history:
        kind = event.event
        if kind == "sold":
            if last_sale is None:
                last_sale = event
                if removed is not None:
                    break
        elif kind == "delisted" and removed is None:
            removed = event
            if last_sale is not None:
                break
    begin, start = _listing(history, status)
    original: int | None = None
    listing_date: str | None = None
    previous_price: int | None = None
    change_date: str | None = None
    if start >= 0:
        listed = history[start]
        original, listing_date = listed.price, listed.date
        for i in range(begin, start + 1):
            change = history[i]
            if change.event == "priceChange":
                change_date = change.date
                for older in range(i + 1, start + 1):
                    price = history[older].price
                    if price is not None:
                        previous_price = price
                        break
                break
    return Derived(
        original_list_price=original,
        previous_list_price=previous_price,
        last_price_change_date=change_date,
        removed_date=removed.date if removed else None,
        last_sale_price=last_sale.price if last_sale else None,
        last_sale_date=last_sale.date if last_sale else None,
        listing_date=listing_date,
    )


def _listing(history: Sequence[PriceEvent], status: str) -> tuple[int, int]:
    """(begin, start): the current listing of a newest-first history is history[begin : start
    + 1], from the newest event after the sale (for recentlySold) back to the event that
    started it; start is -1 when a sale, delisting or rental end comes first, or none did."""
    n = len(history)
    begin = start = -1
    starts = _LISTING_STARTS.get(status)
    if starts is not None:
        i = 0
        if status == "recentlySold":  # the listing that sold: the events older than the sale
            while i < n and history[i].event != "sold":
                i += 1
            i += 1
        begin = i
        while i < n:
            kind = history[i].event
            if kind in _LISTING_ENDS:
                break
            if kind in starts:
                start = i
                break
            i += 1
    return begin, start


def keep_opening(
    stored_status: str, stored_history: Sequence[PriceEvent], new_history: Sequence[PriceEvent]
) -> list[PriceEvent] | None:
    """The new history continuing the stored listing, when a listing feed dates it later.

    A listing feed (RESO) gives one listing as it stands, and its opening is arithmetic
    (as-of - DaysOnMarket, CloseDate - DaysOnMarket), so the same listing read twice may open
    on two days. When the new history opens the same kind of listing as the stored record's
    current one (forSale, forRent, or the listing a recentlySold record sold from) after the
    stored opening and, for a sold one, no later than the sale, it is that listing: the
    stored history up to and including its opening (date and price) is kept, and the new
    history adds only the events after its own opening (a sale). None when the rule does
    not apply.

        stored [listedForSale 05-27]; new [sold 06-05, listedForSale 06-03]
        -> [sold 06-05, listedForSale 05-27]
    """
    if not new_history:
        return None
    begin, start = _listing(stored_history, stored_status)
    if start < 0:
        return None
    opening = new_history[-1]  # the oldest: a feed's history starts with its listing
    if opening.event not in _LISTING_STARTS[stored_status]:
        return None
    if opening.date <= stored_history[start].date:
        return None
    if begin > 0 and opening.date > stored_history[begin - 1].date:
        return None  # opened after the stored sale: another listing
    return [*new_history[:-1], *stored_history[start:]]


def current_list_price(history: Sequence[PriceEvent], status: str) -> int | None:
    """The asking price of the current listing (sale price, or monthly rent when forRent).

    For recentlySold it is the last asking price of the listing that sold; offMarket has none.
    """
    if status == "offMarket":
        return None
    i, n = 0, len(history)
    if status == "recentlySold":
        while i < n and history[i].event != "sold":
            i += 1
        if i == n:
            return None
        i += 1
    while i < n:
        event = history[i]
        kind = event.event
        if kind in _LISTING_ENDS:
            return None
        if kind in LISTING_EVENTS or kind == "listedForRent":
            return event.price  # the listing starts here: never a price from an older one
        if event.price is not None and kind != "pendingSale":
            return event.price
        i += 1
    return None


def days_on_market(
    derived: Derived, history: Sequence[PriceEvent], status: str, as_of: dt.date
) -> int | None:
    """Days the current listing has been on the market as of `as_of`; for a sale, list to close."""
    if derived.listing_date is None:
        return None
    start = dt.date.fromisoformat(derived.listing_date)
    if status == "recentlySold" and derived.last_sale_date is not None:
        return max(0, (dt.date.fromisoformat(derived.last_sale_date) - start).days)
    if status in ("forSale", "forRent"):
        return max(0, (as_of - start).days)
    return None

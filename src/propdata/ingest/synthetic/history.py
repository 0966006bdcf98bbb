"""A synthetic home's price history: the episode that sets its status today, and a renewal
process of earlier sales, delistings and rentals before it, every one a legal transition."""

from __future__ import annotations

import math

from propdata.ingest.synthetic.rng import Rng, step
from propdata.ingest.synthetic.tables import (
    LISTING_SOURCES,
    MEAN_GAP_DAYS,
    RENT_SOURCES,
    SALE_SOURCES,
    SOLD_DAYS,
)
from propdata.properties.schemas import Event, Source

Ev = tuple[int, Event, int | None, Source]
"""An event while a history is built: (days before as_of, event, price, source)."""


class History:
    """Builds a property's episodes newest first; each episode is a chronological event list.

    Dates are days before as_of (larger = older). `final` makes the episode that sets the
    status; `earlier` fills the years before it with a renewal process whose episodes only
    start from a status they may start from (contract.md's transitions): an off-market sale
    only after an episode that ends offMarket, `relisted` only after a delisting.
    """

    __slots__ = ("discount", "episodes", "growth", "rent", "rng", "value")

    def __init__(self, rng: Rng, value: float, rent: float, growth: float, discount: float) -> None:
        self.rng = rng
        self.value = value
        self.rent = rent
        self.growth = growth
        self.discount = discount
        self.episodes: list[list[Ev]] = []

    # -- prices ----------------------------------------------------------------------

    def _ask(self, days: int) -> int:
        """A first asking price `days` before as_of: the value then plus a 0-6 % margin."""
        x = self.value * math.exp(-self.growth * days / 365) * self.rng.between(0.99, 1.06)
        return self._price(x * self.discount)

    def _price(self, x: float) -> int:
        """An asking price as agents write them: 349,900 or 350,000; 84,500 below 100k."""
        if x < 100_000:
            return step(x, 500)
        price = step(x, 1_000)
        return price - 100 if self.rng.random() < 0.4 else price

    def _rent(self, days: int) -> int:
        x = self.rent * math.exp(-0.035 * days / 365)
        return step(x, 5 if x < 1_000 else 25)

    def _source(self, cumulative: tuple[float, ...]) -> Source:
        return self.rng.weighted(LISTING_SOURCES, cumulative)

    # -- episodes --------------------------------------------------------------------

    def _for_sale(self, start: int, until: int, pending: bool) -> list[Ev]:
        """listedForSale at `start`, price cuts, an optional pendingSale, all before `until`."""
        rng = self.rng
        source = self._source(SALE_SOURCES)
        price = self._ask(start)
        events: list[Ev] = [(start, "listedForSale", price, source)]
        quiet = until + 45  # no cut in the last weeks before a sale
        if start - quiet > 2:
            cuts = sorted(
                (rng.int_between(quiet + 1, start - 1) for _ in range((start - until) // 30)
                 if rng.random() < 0.3),
                reverse=True,
            )  # fmt: skip
            for day in cuts:
                if day < events[-1][0]:
                    price = self._price(price * rng.between(0.93, 0.98))
                    events.append((day, "priceChange", price, source))
        if pending:
            room = events[-1][0] - until
            if room >= 2:
                events.append((until + min(rng.int_between(7, 45), room - 1), "pendingSale", price,
                               source))  # fmt: skip
        return events

    def _sale(self, end: int, horizon: int) -> list[Ev] | None:
        """A listing that sold at `end` (None when it cannot fit before the horizon)."""
        rng = self.rng
        start = min(end + 7 + int(rng.expovariate(1 / 50)), end + 365, horizon)
        if start - end < 7:
            return None
        events = self._for_sale(start, end, rng.random() < 0.85)
        ask = events[-1][2] or 0
        source: Source = "mls" if rng.random() < 0.7 else "publicRecord"
        events.append((end, "sold", step(ask * rng.between(0.93, 1.03), 100), source))
        return events

    def _delisting(self, end: int, horizon: int) -> list[Ev] | None:
        start = min(end + 30 + int(self.rng.expovariate(1 / 150)), end + 540, horizon)
        if start - end < 14:
            return None
        events = self._for_sale(start, end, False)
        events.append((end, "delisted", events[-1][2], events[0][3]))
        return events

    def _off_market_sale(self, end: int) -> list[Ev]:
        """A sale with no listing, known from the deed (public record)."""
        x = self.value * math.exp(-self.growth * end / 365) * self.rng.between(0.85, 1.02)
        return [(end, "sold", step(x, 100), "publicRecord")]

    def _rental(self, end: int, horizon: int) -> list[Ev] | None:
        start = min(end + 7 + int(self.rng.expovariate(1 / 20)), end + 120, horizon)
        if start - end < 3:
            return None
        rent = self._rent(start)
        source = self._source(RENT_SOURCES)
        return [(start, "listedForRent", rent, source), (end, "rentalRemoved", rent, source)]

    def _sale_then_rent(self, end: int | None, horizon: int) -> list[Ev] | None:
        """A sale listing that did not sell and became a rental (still open when end is None)."""
        rng = self.rng
        switch = rng.int_between(0, 75) if end is None else end + rng.int_between(7, 60)
        start = min(switch + rng.int_between(30, 150), horizon)
        if start - switch < 14:
            return None
        events = self._for_sale(start, switch, False)
        rent = self._rent(switch)
        source = self._source(RENT_SOURCES)
        events.append((switch, "listedForRent", rent, source))
        if end is not None:
            events.append((end, "rentalRemoved", rent, source))
        return events

    def _closed(self, kind: str, end: int, horizon: int) -> list[Ev] | None:
        """An episode of `kind` that ended `end` days before as_of, or None if it cannot fit."""
        if kind == "sale":
            return self._sale(end, horizon)
        if kind == "offSale":
            return self._off_market_sale(end) if end <= horizon else None
        if kind == "delisting":
            return self._delisting(end, horizon)
        if kind == "rental":
            return self._rental(end, horizon)
        return self._sale_then_rent(end, horizon)

    def _kind(self, after_offmarket: bool) -> str | None:
        """The kind of an earlier episode; with `after_offmarket` it must end offMarket, and
        None (the history starts here) is likelier."""
        r = self.rng.random()
        if after_offmarket:
            return (None if r < 0.3 else "delisting" if r < 0.6 else "rental" if r < 0.95
                    else "saleThenRent")  # fmt: skip
        return ("sale" if r < 0.47 else "offSale" if r < 0.57 else "delisting" if r < 0.77
                else "rental" if r < 0.97 else "saleThenRent")  # fmt: skip

    # -- the two phases --------------------------------------------------------------

    def final(self, status: str, horizon: int) -> tuple[list[Ev] | None, bool]:
        """The episode that leaves the property in `status` at as_of (None: no events in ten
        years), and whether it is an off-market sale."""
        rng = self.rng
        events: list[Ev] | None
        if status == "forSale":
            start = rng.int_between(0, 300) if rng.random() < 0.85 else rng.int_between(301, 540)
            events = self._for_sale(min(start, horizon), 0, rng.random() < 0.15)
        elif status == "recentlySold":
            end = rng.int_between(0, SOLD_DAYS - 1)
            events = self._sale(end, horizon) if rng.random() < 0.85 else None
            if events is None:
                events = self._off_market_sale(end)
        elif status == "forRent":
            events = self._sale_then_rent(None, horizon) if rng.random() < 0.15 else None
            if events is None:
                start = rng.int_between(0, 75)
                events = [(start, "listedForRent", self._rent(start), self._source(RENT_SOURCES))]
        else:
            # The time since the last episode of a renewal process; a sale must be old
            # enough to have expired (contract.md's 180-day rule).
            kind = self._kind(False) or "sale"
            end = int(rng.expovariate(1 / MEAN_GAP_DAYS))
            if kind in ("sale", "offSale"):
                end += SOLD_DAYS + 1
            events = self._closed(kind, end, horizon) if end < horizon else None
            if events is None:
                return None, False
        self.episodes.append(events)
        return events, len(events) == 1 and events[0][1] == "sold"

    def earlier(self, newer: list[Ev], off_market_sale: bool, horizon: int) -> None:
        """Add older episodes until the horizon; a listing soon after a delisting is `relisted`."""
        rng = self.rng
        while True:
            end = newer[0][0] + 30 + int(rng.expovariate(1 / MEAN_GAP_DAYS))
            if end >= horizon:
                return
            kind = self._kind(off_market_sale)
            if kind is None:
                return
            events = self._closed(kind, end, horizon)
            if events is None:
                return
            first = newer[0]
            if (kind == "delisting" and first[1] == "listedForSale" and end - first[0] < 365
                    and rng.random() < 0.7):  # fmt: skip
                newer[0] = (first[0], "relisted", first[2], first[3])
            self.episodes.append(events)
            off_market_sale = kind == "offSale"
            newer = events

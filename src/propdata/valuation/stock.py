"""What a valuation reads and computes before it writes: the stock of homes and priced events
read from the store page by page into numpy columns (`read_stock`), the models fitted on it
(`fit_stock`) and the homes valued with them (`value_homes`, `value_stock`). `rebuild`
writes what these make.

    stock = await read_stock(db, date(2026, 11, 21))
    valued = value_stock(stock, stock.sales, date(2026, 11, 21), Params())
"""

from __future__ import annotations

import datetime as dt
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from propdata.kit import memory
from propdata.kit.db import Database, Row
from propdata.valuation import model as avm
from propdata.valuation.homes import (
    EPOCH,
    EXTRAS,
    MONTH_DAYS,
    FloatArray,
    Homes,
    IntArray,
    Params,
    Vocabulary,
    floats,
    kind_codes,
    no_extras,
    supported,
)
from propdata.valuation.repository import (
    HOME_COLUMNS,
    RENTAL,
    SALE,
    ValuationRepository,
)
from propdata.valuation.stored import Fitted

PAGE = 20_000
"""Properties per read page (and per write batch)."""
ATTEMPTS = 3
"""Lock-free passes tried before a rebuild reads under the write lock (as markets do)."""
MIN_MARKET_SALES = 5
"""A market (see `market_keys`) needs this many priced homes before its homes get estimates:
with fewer, the estimate would be the national regression's guess."""
STALE_DAYS = 365
"""A market whose newest sale is older than this is valued as of that sale, not as of the
build date: the model cannot know prices it has not seen (the Ames sales end in 2010)."""
NUMERIC_COLUMNS = (
    "latitude",
    "longitude",
    "living_area",
    "lot_size",
    "bedrooms",
    "bathrooms",
    "year_built",
)
"""The HOME_COLUMNS the model reads as numbers (None becomes NaN); EXTRAS are read too."""
EVENT_FIELDS = ("property_id", "date", "event", "price")
"""What `_Columns.add_events` reads of each priced event, unpacked in this order."""


# -- what a rebuild reads ---------------------------------------------------------------------


def extras_of(columns: dict[str, tuple[Any, ...]]) -> FloatArray:
    """`Homes.extras` of HOME_COLUMNS columns (None becomes NaN)."""
    return np.column_stack([floats(columns[name]) for name in EXTRAS]).reshape(-1, len(EXTRAS))


@dataclass(frozen=True, slots=True)
class Priced:
    """Priced events (sales or rentals): whose (index into the properties), when, how much."""

    owner: IntArray
    day: IntArray
    """Days since homes.EPOCH."""
    price: FloatArray

    def take(self, index: IntArray | np.typing.NDArray[np.bool_]) -> Priced:
        return Priced(self.owner[index], self.day[index], self.price[index])


@dataclass(frozen=True, slots=True)
class Stock:
    """Every stored property (as model columns, month unset) and its sales and rentals."""

    ids: list[str]
    homes: Homes
    sales: Priced
    rentals: Priced
    zips: list[str] = field(default_factory=list)
    """ZIP code of each market (and ZIP) code of `homes` (what a stored model keeps)."""
    states: list[str] = field(default_factory=list)

    def priced(self, events: Priced) -> Homes:
        """The homes of `events`, each at its event's month."""
        return self.homes.take(events.owner).at(events.day / MONTH_DAYS)


class _Columns:
    """Per-page numpy columns, joined at the end (no per-property Python objects kept)."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.parts: dict[str, list[np.typing.NDArray[np.generic]]] = {}
        self.zips = Vocabulary()
        self.states = Vocabulary()
        # Typed arrays: 8 bytes a value where a list holds a pointer to a 28-byte object.
        self.events: dict[str, tuple[array[int], array[int], array[float]]] = {
            kind: (array("q"), array("q"), array("d")) for kind in (SALE, RENTAL)
        }
        self._days: dict[str, int] = {}

    def add_page(self, page: list[Row]) -> None:
        columns = dict(zip(HOME_COLUMNS, zip(*page, strict=True), strict=True))
        self.ids.extend(columns["id"])
        self._add("zip_code", self.zips.encode(columns["zip_code"]))
        self._add("state", self.states.encode(columns["state"]))
        for name in NUMERIC_COLUMNS:
            self._add(name, floats(columns[name]))
        self._add("kind", kind_codes(columns["property_type"]))
        self._add("extras", extras_of(columns))

    def _add(self, name: str, values: np.typing.NDArray[np.generic]) -> None:
        self.parts.setdefault(name, []).append(values)

    def add_events(self, rows: list[Row], first: int, page: list[Row]) -> None:
        index = {row[0]: first + n for n, row in enumerate(page)}
        days = self._days
        for property_id, date, event, price in rows:
            owners, when, prices = self.events[event]
            day = days.get(date)
            if day is None:
                day = days[date] = (dt.date.fromisoformat(date) - EPOCH).days
            owners.append(index[property_id])
            when.append(day)
            prices.append(price)

    def stock(self) -> Stock:
        def joined(name: str) -> np.typing.NDArray[np.generic]:
            return np.concatenate(self.parts[name]) if self.parts.get(name) else np.zeros(0)

        zips = joined("zip_code").astype(np.int64)
        n = len(self.ids)
        homes = Homes(
            owner=np.arange(n, dtype=np.int64),
            zip_code=zips,
            state=joined("state").astype(np.int64),
            market=zips,
            latitude=joined("latitude").astype(np.float64),
            longitude=joined("longitude").astype(np.float64),
            living_area=joined("living_area").astype(np.float64),
            lot_size=joined("lot_size").astype(np.float64),
            bedrooms=joined("bedrooms").astype(np.float64),
            bathrooms=joined("bathrooms").astype(np.float64),
            year_built=joined("year_built").astype(np.float64),
            kind=joined("kind").astype(np.int64),
            extras=(
                np.concatenate(self.parts["extras"]) if self.parts.get("extras") else no_extras(0)
            ),
            month=np.zeros(n),
        )
        sales, rentals = (self._priced(kind) for kind in (SALE, RENTAL))
        return Stock(self.ids, homes, sales, rentals, list(self.zips.codes),
                     list(self.states.codes))  # fmt: skip

    def _priced(self, kind: str) -> Priced:
        owners, days, prices = self.events[kind]
        return Priced(np.frombuffer(owners, dtype=np.int64).copy(),
                      np.frombuffer(days, dtype=np.int64).copy(),
                      np.frombuffer(prices, dtype=np.float64).copy())  # fmt: skip


async def read_stock(
    db: Database, until: dt.date, progress: Callable[[int], None] | None = None
) -> Stock:
    """Every property and its sales and rentals dated on or before `until`, page by page."""
    repo = ValuationRepository(db)
    columns = _Columns()
    before: str | None = None
    with memory.no_cycle_collection():
        while True:
            page = await repo.home_page(before, PAGE)
            if not page:
                break
            first = len(columns.ids)
            columns.add_page(page)
            events = await repo.priced_events(
                EVENT_FIELDS, page[-1][0], page[0][0], until.isoformat()
            )
            columns.add_events(events, first, page)
            before = page[-1][0]
            if progress is not None:
                progress(len(page))
        return columns.stock()


# -- valuing -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Valued:
    """One model's estimates of some properties, and the dates they describe."""

    estimates: avm.Estimates
    as_of: list[str | None]
    fitted: Fitted
    """The model valued with (comparable indices point into its training sales)."""


def fit_stock(stock: Stock, events: Priced, as_of: dt.date, params: Params) -> Fitted:
    """Fit one model on `events` (the usable ones: supported homes, positive prices).

    No model when no market has MIN_MARKET_SALES of them: none of its homes would be valued.
    """
    usable = supported(stock.homes.take(events.owner)) & (events.price > 0)
    training = events.take(np.flatnonzero(usable))
    markets = stock.homes.market
    count = np.bincount(markets[training.owner], minlength=len(stock.zips))
    newest = np.full(len(count), -1, dtype=np.int64)
    np.maximum.at(newest, markets[training.owner], training.day)
    model = None
    if (count >= MIN_MARKET_SALES).any():
        model = avm.fit(stock.priced(training), np.log(training.price), params)
    ids = stock.ids
    return Fitted(model, as_of.isoformat(), stock.zips, stock.states, count, newest,
                  [ids[o] for o in training.owner.tolist()], training.day,
                  training.price)  # fmt: skip


def value_homes(fitted: Fitted, homes: Homes, as_of: dt.date) -> Valued:
    """Value `homes` (coded as `fitted`'s vocabularies) with one fitted model as of `as_of`.

    A market with fewer than MIN_MARKET_SALES training events gets no estimates; one whose
    newest is more than STALE_DAYS old is valued as of that event's date. Each home's
    estimate depends on it and the model only, never on the other homes valued with it:
    a load values its records alone and gets what valuing the whole store would give.
    """
    n = len(homes)
    estimates = _no_estimates(n)
    market = homes.market
    known = market < len(fitted.counts)
    at = np.where(known, market, 0)
    count = np.where(known, fitted.counts[at], 0)
    rows = np.flatnonzero(count >= MIN_MARKET_SALES)
    if not len(rows) or fitted.model is None:
        return Valued(estimates, [None] * n, fitted)
    newest = np.where(known, fitted.newest[at], -1)
    today = (as_of - EPOCH).days
    day = np.where(today - newest > STALE_DAYS, newest, today)
    found = avm.predict(fitted.model, homes.take(rows).at(day[rows] / MONTH_DAYS))
    for name in ("value", "low", "high", "comparables", "similarity", "miles"):
        getattr(estimates, name)[rows] = getattr(found, name)
    valued = (~np.isnan(estimates.value)).tolist()
    dates = _dates(day)
    return Valued(estimates, [d if v else None for d, v in zip(dates, valued, strict=True)],
                  fitted)  # fmt: skip


def value_stock(stock: Stock, events: Priced, as_of: dt.date, params: Params) -> Valued:
    """Fit one model on `events` and value every property of `stock` as of `as_of`."""
    return value_homes(fit_stock(stock, events, as_of, params), stock.homes, as_of)


def _no_estimates(n: int) -> avm.Estimates:
    k = avm.COMPARABLES_KEPT
    return avm.Estimates(
        np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan),
        np.full((n, k), -1, dtype=np.int64), np.full((n, k), np.nan), np.full((n, k), np.nan),
    )  # fmt: skip


def _dates(days: IntArray) -> list[str]:
    cache: dict[int, str] = {}
    out: list[str] = []
    for d in days.tolist():
        text = cache.get(d)
        if text is None:
            text = cache[d] = (EPOCH + dt.timedelta(days=d)).isoformat()
        out.append(text)
    return out

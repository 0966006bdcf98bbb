"""Valuations of the stored properties: read the store, fit the model, write the estimates.

`rebuild_valuations` runs after every data load (like the market statistics): it reads
every property and its priced events page by page into numpy columns, fits the value
model on the sales and the rent model on the rentals (`valuation.model`), values every
property as of the build date, and writes the estimates and their comparables in one
transaction that also bumps the data version. The valuation endpoint (`service`) answers
from what the rebuild stored, so the sales shown are those the estimate used.

    summary = await rebuild_valuations(db, date(2026, 11, 21), progress=bar.advance)
"""

from __future__ import annotations

import concurrent.futures
import datetime as dt
from array import array
from collections.abc import Callable
from dataclasses import dataclass

import msgspec
import numpy as np
from threadpoolctl import threadpool_limits

from propdata.kit import memory
from propdata.kit.db import Database, Row, optimistic
from propdata.properties.repository import PropertyRepository
from propdata.valuation import model as avm
from propdata.valuation.homes import (
    EPOCH,
    MONTH_DAYS,
    FloatArray,
    Homes,
    IntArray,
    Params,
    Vocabulary,
    floats,
    kind_codes,
    supported,
)
from propdata.valuation.repository import HOME_COLUMNS, RENTAL, SALE, ValuationRepository

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
"""The HOME_COLUMNS the model reads as numbers (None becomes NaN)."""
EVENT_FIELDS = ("property_id", "date", "event", "price")
"""What `_Columns.add_events` reads of each priced event, unpacked in this order."""


# -- what a rebuild reads ---------------------------------------------------------------------


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
            month=np.zeros(n),
        )
        sales, rentals = (self._priced(kind) for kind in (SALE, RENTAL))
        return Stock(self.ids, homes, sales, rentals)

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
    """One model's estimates for every property, and the dates they describe."""

    estimates: avm.Estimates
    as_of: list[str | None]
    training: Priced
    """The priced events the model learnt from (comparable indices point into these)."""


def value_stock(stock: Stock, events: Priced, as_of: dt.date, params: Params) -> Valued:
    """Fit one model on `events` and value every property of `stock` as of `as_of`.

    A market with fewer than MIN_MARKET_SALES usable events gets no estimates; one whose
    newest event is more than STALE_DAYS old is valued as of that event's date.
    """
    n = len(stock.ids)
    usable = supported(stock.homes.take(events.owner)) & (events.price > 0)
    training = events.take(np.flatnonzero(usable))
    markets = stock.homes.market
    count = np.bincount(markets[training.owner], minlength=int(markets.max(initial=0)) + 1)
    rows = np.flatnonzero(count[markets] >= MIN_MARKET_SALES)
    estimates = _no_estimates(n)
    if not len(rows):
        return Valued(estimates, [None] * n, training)
    model = avm.fit(stock.priced(training), np.log(training.price), params)
    newest = np.full(len(count), -1, dtype=np.int64)
    np.maximum.at(newest, markets[training.owner], training.day)
    today = (as_of - EPOCH).days
    day = np.where(today - newest > STALE_DAYS, newest, today)[markets]
    found = avm.predict(model, stock.homes.take(rows).at(day[rows] / MONTH_DAYS))
    for name in ("value", "low", "high", "comparables", "similarity", "miles"):
        getattr(estimates, name)[rows] = getattr(found, name)
    dates = _dates(day)
    valued = ~np.isnan(estimates.value)
    return Valued(estimates, [d if v else None for d, v in zip(dates, valued.tolist(),
                                                                strict=True)], training)  # fmt: skip


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


# -- the rebuild -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RebuildSummary:
    """What a rebuild did: properties seen, estimates written, what the models learnt from."""

    properties: int
    values: int
    rents: int
    sales: int
    rentals: int


async def rebuild_valuations(
    db: Database,
    as_of: dt.date,
    progress: Callable[[int], None] | None = None,
    params: Params | None = None,
) -> RebuildSummary:
    """Refit the value and rent models and store every property's estimates as of `as_of`.

    Sales and rentals dated after `as_of` are ignored. Every property's value and rent
    columns are rewritten (null where unsupported) and its comparables replaced, in one
    transaction that bumps the data version, so cached answers never mix old and new
    estimates. Like the market rebuild, the store is read without the write lock; when a
    load commits meanwhile the pass is repeated, the last of ATTEMPTS under the lock.

    `progress` is called with the number of properties read after each page, then with
    the number written after each batch (so 2 x properties in all, again from zero when a
    pass is repeated).
    """
    versions = PropertyRepository(db)
    return await optimistic(
        db, versions.data_version, lambda: compute(db, as_of, progress, params),
        lambda valued: write(db, valued, progress), ATTEMPTS,
    )  # fmt: skip


Valuations = tuple[Stock, Valued, Valued]
"""What a rebuild computed: the stock, its value estimates and its rent estimates."""


async def compute(
    db: Database,
    as_of: dt.date,
    progress: Callable[[int], None] | None = None,
    params: Params | None = None,
) -> Valuations:
    """Read the stock and fit both models (no lock, nothing written): one half of
    `rebuild_valuations`, for a caller that runs it beside other work (ingest.pipeline)."""
    stock = await read_stock(db, as_of, progress)
    return (stock, *_value_both(stock, as_of, params or Params()))


async def write(
    db: Database, valued: Valuations, progress: Callable[[int], None] | None = None
) -> RebuildSummary:
    """Store what `compute` found and bump the data version; inside a transaction."""
    return await _write(db, *valued, progress)


def _value_both(stock: Stock, as_of: dt.date, params: Params) -> tuple[Valued, Valued]:
    """The value model on the sales and the rent model on the rentals, side by side.

    The two fits share nothing but the stock they read. numpy lets go of the GIL in their
    heavy steps (products, sorts, partitions), so on two cores they overlap.

    Each fit's matrix products run on one BLAS thread (FIT_BLAS_THREADS): OpenBLAS's own
    threads on top of these two, on a machine of two cores, spin-waited for each other in
    `_gram` (200,000 properties' fits: 26.1 CPU s against 10.6 with one BLAS thread, the
    stored estimates the same).
    """
    with (
        threadpool_limits(limits=FIT_BLAS_THREADS, user_api="blas"),
        concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="rent-model") as pool,
    ):
        rents = pool.submit(value_stock, stock, stock.rentals, as_of, params)
        values = value_stock(stock, stock.sales, as_of, params)
        return values, rents.result()


FIT_BLAS_THREADS = 1
"""BLAS threads of each of the two model fits (`_value_both`): they already make two."""


async def _write(
    db: Database,
    stock: Stock,
    values: Valued,
    rents: Valued,
    progress: Callable[[int], None] | None,
) -> RebuildSummary:
    """Replace every property's estimates and comparables; call inside a transaction.

    Rows are made a batch at a time, so no list of a million Python rows is ever held.
    """
    repo = ValuationRepository(db)
    await repo.clear_comparables()
    sale_dates = _dates(values.training.day)
    for at in range(0, len(stock.ids), PAGE):
        end = min(at + PAGE, len(stock.ids))
        v, r = _money(values.estimates, at, end, 100), _money(rents.estimates, at, end, 5)
        ids = stock.ids[at:end]
        await repo.write_estimates([
            (*value, values.as_of[at + i], *rent, rents.as_of[at + i], ids[i])
            for i, (value, rent) in enumerate(zip(v, r, strict=True))
        ])  # fmt: skip
        comps = _comparable_json(stock, values, sale_dates, at, end)
        await repo.write_comparables([(ids[i], c) for i, c in enumerate(comps) if c is not None])
        if progress is not None:
            progress(end - at)
    await PropertyRepository(db).bump_data_version()
    return RebuildSummary(
        properties=len(stock.ids),
        values=sum(1 for d in values.as_of if d is not None),
        rents=sum(1 for d in rents.as_of if d is not None),
        sales=len(values.training.owner),
        rentals=len(rents.training.owner),
    )


def _money(
    estimates: avm.Estimates, at: int, end: int, step: int
) -> list[tuple[int | None, int | None, int | None]]:
    """(value, low, high) of properties at..end in whole dollars rounded to `step`."""
    block = np.column_stack([estimates.value[at:end], estimates.low[at:end],
                             estimates.high[at:end]])  # fmt: skip
    rounded = (np.round(block / step) * step).tolist()
    return [
        (None, None, None) if row[0] != row[0] else (int(row[0]), int(row[1]), int(row[2]))
        for row in rounded
    ]


def _comparable_json(
    stock: Stock, valued: Valued, sale_dates: list[str], at: int, end: int
) -> list[str | None]:
    """Comparables of properties at..end as stored: [[id, date, price, miles, similarity]].

    Miles are null where either side has no coordinates (msgspec writes NaN as null).
    """
    est, sales = valued.estimates, valued.training
    if len(sales.owner) == 0:  # nothing to learn from: no estimate, no comparables
        return [None] * (end - at)
    index = est.comparables[at:end]
    known = index >= 0
    safe = np.where(known, index, 0)
    owners = np.where(known, sales.owner[safe], -1).tolist()
    prices = sales.price[safe].astype(np.int64).tolist()
    similarity = np.round(est.similarity[at:end], 3).tolist()
    miles = np.round(est.miles[at:end], 2).tolist()
    ids, encode = stock.ids, msgspec.json.encode
    out: list[str | None] = []
    # Whole blocks to lists once: a `tolist` a property cost a second at 200,000.
    for owner_row, index_row, price_row, mile_row, similar_row in zip(
        owners, index.tolist(), prices, miles, similarity, strict=True
    ):
        items = [
            (ids[owner], sale_dates[j], price_row[c], mile_row[c], similar_row[c])
            for c, (owner, j) in enumerate(zip(owner_row, index_row, strict=True))
            if owner >= 0
        ]
        out.append(encode(items).decode() if items else None)
    return out

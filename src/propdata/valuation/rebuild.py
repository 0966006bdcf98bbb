"""Valuations of the stored properties: read the store, fit the model, write the estimates.

`rebuild_valuations` (a full rebuild) reads every property and its priced events page by
page into numpy columns, fits the value model on the sales and the rent model on the
rentals (`valuation.model`), values every property as of the build date, and writes the
estimates and their comparables, and the fitted models (`valuation.stored`), in one
transaction that also bumps the data version. `estimate` values some properties (a load's)
with the stored models, exactly as the full valuation would with the same models. The
valuation endpoint (`service`) answers from what was stored, so the sales shown are those
the estimate used.

    summary = await rebuild_valuations(db, date(2026, 11, 21), progress=bar.advance)
"""

from __future__ import annotations

import concurrent.futures
import datetime as dt
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np
from threadpoolctl import threadpool_limits

from propdata.kit import memory
from propdata.kit.db import Database, Row, optimistic
from propdata.properties.repository import PropertyRepository
from propdata.valuation import model as avm
from propdata.valuation import stored
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
    ModelRow,
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
    """Replace every property's estimates and comparables, and the stored models; call
    inside a transaction.

    Rows are made a batch at a time, so no list of a million Python rows is ever held.
    """
    repo = ValuationRepository(db)
    await repo.clear_comparables()
    for at in range(0, len(stock.ids), PAGE):
        end = min(at + PAGE, len(stock.ids))
        await _write_rows(repo, stock.ids[at:end], values, rents, at, end)
        if progress is not None:
            progress(end - at)
    await store_models(repo, values.fitted, rents.fitted, len(stock.ids))
    await PropertyRepository(db).bump_data_version()
    return RebuildSummary(
        properties=len(stock.ids),
        values=sum(1 for d in values.as_of if d is not None),
        rents=sum(1 for d in rents.as_of if d is not None),
        sales=len(values.fitted.ids),
        rentals=len(rents.fitted.ids),
    )


async def _write_rows(
    repo: ValuationRepository, ids: list[str], values: Valued, rents: Valued, at: int, end: int
) -> None:
    """Estimates and comparables of the valued homes at..end (ids are theirs)."""
    v, r = _money(values.estimates, at, end, 100), _money(rents.estimates, at, end, 5)
    await repo.write_estimates([
        (*value, values.as_of[at + i], *rent, rents.as_of[at + i], ids[i])
        for i, (value, rent) in enumerate(zip(v, r, strict=True))
    ])  # fmt: skip
    comps = _comparable_json(ids, values, at, end)
    await repo.write_comparables([(ids[i], c) for i, c in enumerate(comps) if c is not None])


async def store_models(
    repo: ValuationRepository, values: Fitted, rents: Fitted, properties: int
) -> None:
    """Store both fitted models (`valuation_models`, `valuation_training`) under the next
    version; inside a transaction."""
    version = max((row.version for row in await repo.models()), default=0) + 1
    models: list[tuple[ModelRow, bytes]] = []
    blocks: list[tuple[str, str, list[str], bytes]] = []
    for kind, fitted in ((SALE, values), (RENTAL, rents)):
        header, kind_blocks = stored.encode(fitted)
        row = ModelRow(kind, version, fitted.as_of, properties, len(fitted.ids), 0)
        models.append((row, header))
        blocks += [(kind, *block) for block in kind_blocks]
    await repo.replace_models(models, blocks)


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


def _comparable_json(ids: list[str], valued: Valued, at: int, end: int) -> list[str | None]:
    """Comparables of the valued homes at..end as stored: [[id, date, price, miles,
    similarity]] (`ids` are the homes' from `at`).

    Miles are null where either side has no coordinates (msgspec writes NaN as null).
    """
    est, fitted = valued.estimates, valued.fitted
    if len(fitted.ids) == 0:  # nothing to learn from: no estimate, no comparables
        return [None] * (end - at)
    index = est.comparables[at:end]
    known = index >= 0
    safe = np.where(known, index, 0)
    prices = fitted.price[safe].astype(np.int64).tolist()
    days = fitted.day[safe].tolist()
    similarity = np.round(est.similarity[at:end], 3).tolist()
    miles = np.round(est.miles[at:end], 2).tolist()
    owners, encode, dates = fitted.ids, msgspec.json.encode, _DateText()
    out: list[str | None] = []
    # Whole blocks to lists once: a `tolist` a property cost a second at 200,000.
    for index_row, day_row, price_row, mile_row, similar_row in zip(
        index.tolist(), days, prices, miles, similarity, strict=True
    ):
        items = [
            (owners[j], dates(day_row[c]), price_row[c], mile_row[c], similar_row[c])
            for c, j in enumerate(index_row)
            if j >= 0
        ]
        out.append(encode(items).decode() if items else None)
    return out


class _DateText:
    """ISO text of a day since homes.EPOCH, remembered."""

    def __init__(self) -> None:
        self._cache: dict[int, str] = {}

    def __call__(self, day: int) -> str:
        text = self._cache.get(day)
        if text is None:
            text = self._cache[day] = (EPOCH + dt.timedelta(days=day)).isoformat()
        return text


# -- valuing with the stored models ------------------------------------------------------------


async def stored_models(db: Database) -> list[ModelRow]:
    """The stored models' bookkeeping (none before the first full rebuild)."""
    return await ValuationRepository(db).models()


async def count_changes(db: Database, records: int) -> None:
    """Count records a load changed against the stored models (the refit rule's measure)."""
    await ValuationRepository(db).count_changes(records)


async def forget_removed(db: Database) -> None:
    """Drop the comparables of properties no longer stored; inside a transaction."""
    await ValuationRepository(db).clear_orphan_comparables()


async def estimate(db: Database, ids: list[str], as_of: dt.date) -> int:
    """Value the given properties with the stored models as of `as_of` and store their
    estimates and comparables; inside a transaction (a load's own, or the one after it).

    Reads the stored models' headers and the training blocks of these properties' markets
    only. Ids no longer stored are skipped. Returns the number of properties valued.
    """
    repo = ValuationRepository(db)
    rows = await repo.homes(ids)
    if not rows:
        return 0
    valued_ids, values, rents = await _value_rows(repo, rows, as_of)
    await repo.clear_comparables_of(valued_ids)
    for at in range(0, len(valued_ids), PAGE):
        end = min(at + PAGE, len(valued_ids))
        await _write_rows(repo, valued_ids[at:end], values, rents, at, end)
    return len(valued_ids)


async def stored_estimates(
    db: Database, as_of: dt.date
) -> dict[str, tuple[tuple[Any, ...], str | None]]:
    """Every property's estimates as the stored models give them as of `as_of`, without
    writing: (the eight estimate columns as `write_estimates` stores them, comparables
    JSON) by id. What a full valuation with the same models would store."""
    repo = ValuationRepository(db)
    rows: list[Row] = []
    before: str | None = None
    while page := await repo.home_page(before, PAGE):
        rows += page
        before = page[-1][0]
    rows.sort(key=lambda row: str(row[0]))
    ids, values, rents = await _value_rows(repo, rows, as_of)
    out: dict[str, tuple[tuple[Any, ...], str | None]] = {}
    v, r = _money(values.estimates, 0, len(ids), 100), _money(rents.estimates, 0, len(ids), 5)
    comps = _comparable_json(ids, values, 0, len(ids))
    for i, property_id in enumerate(ids):
        out[property_id] = ((*v[i], values.as_of[i], *r[i], rents.as_of[i]), comps[i])
    return out


async def _value_rows(
    repo: ValuationRepository, rows: list[Row], as_of: dt.date
) -> tuple[list[str], Valued, Valued]:
    """Value HOME_COLUMNS rows with both stored models."""
    columns = dict(zip(HOME_COLUMNS, zip(*rows, strict=True), strict=True))
    ids = [str(i) for i in columns["id"]]
    zips = sorted(set(columns["zip_code"]))
    models = await _read_models(repo, zips)
    valued = [value_homes(f, _homes_of(f, ids, columns), as_of) for f in models]
    return ids, valued[0], valued[1]


async def _read_models(repo: ValuationRepository, zips: list[str]) -> list[Fitted]:
    """Both stored models with the training blocks of `zips`, all of one version.

    The header and the blocks are separate reads: on PostgreSQL a rebuild may commit new
    models between them, which the version read before and after tells (the version only
    grows); such a read is made again.
    """
    for _ in range(ATTEMPTS):
        version = await repo.model_version()
        models: list[Fitted] = []
        for kind in (SALE, RENTAL):
            header = await repo.model(kind)
            if header is None:
                raise LookupError(f"no stored {kind} model: a full rebuild stores one")
            blocks = [stored.Block(*b) for b in await repo.training(kind, zips)]
            models.append(stored.decode(header, blocks))
        if await repo.model_version() == version:
            return models
    raise RuntimeError("the stored models kept changing while they were read")


def _homes_of(fitted: Fitted, ids: list[str], columns: dict[str, tuple[Any, ...]]) -> Homes:
    """Homes of HOME_COLUMNS columns, coded as the stored model's vocabularies."""
    zips = stored.code_of(fitted.zips, columns["zip_code"])
    return Homes(
        owner=stored.owner_codes(fitted, ids),
        zip_code=zips,
        state=stored.code_of(fitted.states, columns["state"]),
        market=zips,
        **{name: floats(columns[name]) for name in NUMERIC_COLUMNS},
        kind=kind_codes(columns["property_type"]),
        extras=extras_of(columns),
        month=np.zeros(len(ids)),
    )

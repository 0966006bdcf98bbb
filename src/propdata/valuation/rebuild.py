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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np
from threadpoolctl import threadpool_limits

from propdata.kit.db import Database, Row, address, optimistic
from propdata.properties.repository import PropertyRepository
from propdata.valuation import model as avm
from propdata.valuation import stored
from propdata.valuation.homes import (
    EPOCH,
    Homes,
    Params,
    floats,
    kind_codes,
)
from propdata.valuation.repository import (
    HOME_COLUMNS,
    RENTAL,
    SALE,
    ModelRow,
    ValuationRepository,
)
from propdata.valuation.stock import (
    ATTEMPTS,
    NUMERIC_COLUMNS,
    PAGE,
    Stock,
    Valued,
    extras_of,
    read_stock,
    value_homes,
    value_stock,
)
from propdata.valuation.stored import Fitted

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


async def estimate(
    db: Database, ids: list[str], as_of: dt.date, blocks: stored.MarketCache | None = None
) -> int:
    """Value the given properties with the stored models as of `as_of` and store their
    estimates and comparables; inside a transaction (a load's own, or the one after it).

    Reads the stored models' headers and the training blocks of these properties' markets
    only, those `blocks` holds from there (a command that loads again and again keeps
    them: `cli.base.training_blocks`). Ids no longer stored are skipped. Returns the number
    of properties valued.
    """
    repo = ValuationRepository(db)
    rows = await repo.homes(ids)
    if not rows:
        return 0
    valued_ids, values, rents = await _value_rows(repo, rows, as_of, blocks)
    await repo.clear_comparables_of(valued_ids)
    for at in range(0, len(valued_ids), PAGE):
        end = min(at + PAGE, len(valued_ids))
        await _write_rows(repo, valued_ids[at:end], values, rents, at, end)
    return len(valued_ids)


async def stored_estimates(
    db: Database, as_of: dt.date, blocks: stored.MarketCache | None = None
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
    ids, values, rents = await _value_rows(repo, rows, as_of, blocks)
    out: dict[str, tuple[tuple[Any, ...], str | None]] = {}
    v, r = _money(values.estimates, 0, len(ids), 100), _money(rents.estimates, 0, len(ids), 5)
    comps = _comparable_json(ids, values, 0, len(ids))
    for i, property_id in enumerate(ids):
        out[property_id] = ((*v[i], values.as_of[i], *r[i], rents.as_of[i]), comps[i])
    return out


async def _value_rows(
    repo: ValuationRepository, rows: list[Row], as_of: dt.date, blocks: stored.MarketCache | None
) -> tuple[list[str], Valued, Valued]:
    """Value HOME_COLUMNS rows with both stored models."""
    columns = dict(zip(HOME_COLUMNS, zip(*rows, strict=True), strict=True))
    ids = [str(i) for i in columns["id"]]
    zips = sorted(set(columns["zip_code"]))
    models = await _read_models(repo, zips, stored.MarketCache(0) if blocks is None else blocks)
    valued = [value_homes(f, _homes_of(f, ids, columns), as_of) for f in models]
    return ids, valued[0], valued[1]


async def _read_models(
    repo: ValuationRepository, zips: list[str], blocks: stored.MarketCache
) -> list[Fitted]:
    """Both stored models with the training blocks of `zips`, all of one version.

    The header and the blocks are separate reads: on PostgreSQL a rebuild may commit new
    models between them, which the version read before and after tells (the version only
    grows); such a read is made again. Blocks come from `blocks` where it holds them for the
    header's generation (the store, version and header); those read are kept there once the
    version read after them shows they belong to it.
    """
    store = address(repo.db) or f"object {id(repo.db)}"
    for _ in range(ATTEMPTS):
        version = await repo.model_version()
        models: list[Fitted] = []
        read: list[tuple[stored.Generation, list[stored.Market]]] = []
        for kind in (SALE, RENTAL):
            header = await repo.model(kind)
            if header is None:
                raise LookupError(f"no stored {kind} model: a full rebuild stores one")
            gen = stored.generation(store, kind, version, header)
            held = blocks.get(gen, zips)
            missing = [z for z in zips if z not in held]
            block = stored.block_dtype(header)
            fresh = [stored.decode_market(block, stored.Block(*b))
                     for b in await repo.training(kind, missing)] if missing else []  # fmt: skip
            found = held | {m.zip_code: m for m in fresh}
            models.append(stored.assemble(header, [found[z] for z in zips if z in found]))
            read.append((gen, fresh))
        if await repo.model_version() == version:
            for gen, fresh in read:
                blocks.put(gen, fresh)
            return models
    raise RuntimeError("the stored models kept changing while they were read")


def _homes_of(fitted: Fitted, ids: list[str], columns: dict[str, tuple[Any, ...]]) -> Homes:
    """Homes of HOME_COLUMNS columns, coded as the stored model's vocabularies."""
    zips = stored.code_of(fitted.zips, columns["zip_code"])
    return Homes(
        owner=stored.owner_codes(fitted, ids, columns["zip_code"]),
        zip_code=zips,
        state=stored.code_of(fitted.states, columns["state"]),
        market=zips,
        **{name: floats(columns[name]) for name in NUMERIC_COLUMNS},
        kind=kind_codes(columns["property_type"]),
        extras=extras_of(columns),
        month=np.zeros(len(ids)),
    )

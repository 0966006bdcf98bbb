"""A fitted model stored and read back values every home as the model in memory does,
from its header and only the blocks of the homes' markets."""

from __future__ import annotations

import datetime as dt
import io
from dataclasses import replace
from typing import Any

import msgspec
import numpy as np
import pytest

from propdata.ingest import pipeline, synthetic
from propdata.ingest.loader import load
from propdata.kit.db import Database
from propdata.properties.schemas import PropertyDetail
from propdata.valuation import boost, rebuild, stored
from propdata.valuation.homes import Params
from propdata.valuation.repository import ValuationRepository
from propdata.valuation.stock import fit_stock, read_stock, value_homes

AS_OF = dt.date(2026, 11, 21)


def _graded(items: list[tuple[int, PropertyDetail]]) -> list[tuple[int, PropertyDetail]]:
    """Every other record with a garage, a finished basement, fireplaces and grades (as
    Ames's carry), the rest without."""
    return [
        (n, msgspec.structs.replace(r, garage_spaces=float(n % 3), basement_finished_area=100 * n,
                                    fireplaces=n % 2, overall_quality=1 + n % 10,
                                    overall_condition=1 + n % 9))
        if n % 2 else (n, r)
        for n, r in items
    ]  # fmt: skip


async def test_a_stored_model_values_as_the_fitted_one(empty_db: Database) -> None:
    items = _graded(list(synthetic.generate(900, 6, AS_OF)))
    assert not (await load(empty_db, items, origin="synthetic", as_of=AS_OF)).rejects
    stock = await read_stock(empty_db, AS_OF)
    fitted = _with_second_stage(fit_stock(stock, stock.sales, AS_OF, Params()))
    assert fitted.model is not None
    here = value_homes(fitted, stock.homes, AS_OF)
    header, blocks = stored.encode(fitted)
    assert sorted(b.zip_code for b in blocks) == sorted({fitted.zips[m] for m in
                                                         fitted.model.core.sales.market})  # fmt: skip
    # Read back with the blocks of two markets only: their homes are valued the same.
    markets = [blocks[0].zip_code, blocks[-1].zip_code]
    back = stored.decode(header, [b for b in blocks if b.zip_code in markets])
    rows = np.flatnonzero(np.isin(stock.homes.market, [fitted.zips.index(z) for z in markets]))
    homes = stock.homes.take(rows)
    homes = type(homes)(**{**{n: getattr(homes, n) for n in homes.__dataclass_fields__},
                           "owner": stored.owner_codes(back, [stock.ids[i] for i in rows],
                                                      [stock.zips[m] for m in homes.market])})  # fmt: skip
    there = value_homes(back, homes, AS_OF)
    assert len(rows) and np.isfinite(there.estimates.value).any()
    for name in ("value", "low", "high", "similarity", "miles"):
        assert np.array_equal(getattr(here.estimates, name)[rows],
                              getattr(there.estimates, name), equal_nan=True), name  # fmt: skip
    assert there.as_of == [here.as_of[i] for i in rows]
    named = [[back.ids[j] if j >= 0 else None for j in row]
             for row in there.estimates.comparables.tolist()]  # fmt: skip
    expected = [[fitted.ids[j] if j >= 0 else None for j in row]
                for row in here.estimates.comparables[rows].tolist()]  # fmt: skip
    assert named == expected


async def test_a_model_stored_without_the_optional_fields_still_values(
    empty_db: Database,
) -> None:
    """A model stored before EXTRAS (no `extras` in its header, blocks without them, four
    fills) reads back and values as it did: none of its homes had them."""
    items = [(n, msgspec.structs.replace(r, stories=None))
             for n, r in synthetic.generate(600, 8, AS_OF)]  # fmt: skip
    assert not (await load(empty_db, items, origin="synthetic", as_of=AS_OF)).rejects
    stock = await read_stock(empty_db, AS_OF)
    fitted = fit_stock(stock, stock.sales, AS_OF, Params())
    assert fitted.model is not None
    here = value_homes(fitted, stock.homes, AS_OF)
    header, blocks = stored.encode(fitted)
    with np.load(io.BytesIO(header), allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files if name != "extras"}
    arrays["fills"] = arrays["fills"][:4]
    assert not np.isfinite(fitted.model.core.regression.design.fills[4:]).any()
    buffer = io.BytesIO()
    np.savez(buffer, allow_pickle=False, **arrays)
    plain = [
        stored.Block(b.zip_code, b.ids, _without_extras(np.frombuffer(b.sales, stored.BLOCK)))
        for b in blocks
    ]
    back = stored.decode(buffer.getvalue(), plain)
    homes = type(stock.homes)(**{**{n: getattr(stock.homes, n) for n in stock.homes.__dataclass_fields__},
                                 "owner": stored.owner_codes(back, stock.ids, [stock.zips[m] for m in stock.homes.market])})  # fmt: skip
    there = value_homes(back, homes, AS_OF)
    assert np.isfinite(there.estimates.value).any()
    for name in ("value", "low", "high"):
        assert np.array_equal(getattr(here.estimates, name), getattr(there.estimates, name),
                              equal_nan=True), name  # fmt: skip


def _with_second_stage(fitted: stored.Fitted) -> stored.Fitted:
    """`fitted` with a second stage, whether or not cross-validation chose one for it."""
    assert fitted.model is not None
    core = fitted.model.core
    x = boost.features(core.sales, np.zeros(len(core.sales)), np.zeros(len(core.sales)))
    setting = boost.settings(Params())[-1]
    assert setting is not None
    stage = boost.train(x, core.residual, setting, 20)
    return replace(fitted, model=replace(fitted.model, boost=stage))


def _without_extras(records: np.typing.NDArray[np.void]) -> bytes:
    names = [n for n in records.dtype.names or () if n != "extras"]
    plain = np.empty(len(records), dtype=[(n, records.dtype[n]) for n in names])
    for name in names:
        plain[name] = records[name]
    return plain.tobytes()


def test_a_vocabulary_codes_what_it_lacks_past_its_end() -> None:
    assert stored.code_of(["50010", "50011"], ["50011", "99999", "50010", "99999"]).tolist() == [
        1, 2, 0, 2,
    ]  # fmt: skip


@pytest.fixture
def markets() -> stored.MarketCache:
    """A cache of decoded training blocks, as a loading command makes one."""
    return stored.MarketCache(0)


async def _stored_rows(
    db: Database, ids: list[str]
) -> dict[str, tuple[tuple[Any, ...], str | None]]:
    """The estimates and comparables stored for `ids`, as `stored_estimates` gives them."""
    repo = ValuationRepository(db)
    out: dict[str, tuple[tuple[Any, ...], str | None]] = {}
    for property_id in ids:
        row = await repo.estimates(property_id)
        assert row is not None
        out[property_id] = (tuple(row), await repo.comparables(property_id))
    return out


async def test_estimates_from_remembered_blocks_are_those_read_from_the_store(
    empty_db: Database, markets: stored.MarketCache
) -> None:
    await pipeline.run(empty_db, [pipeline.synthetic_source(900, 6, AS_OF)], AS_OF)
    markets.resize(0)
    read = await rebuild.stored_estimates(empty_db, AS_OF, markets)  # nothing remembered
    assert not markets.used
    markets.resize(1 << 30)
    ids = sorted(read)
    # Pages over markets that overlap: each values some markets read before, some not.
    for page in (ids[:300], ids[200:600], ids[100:900:2]):
        async with empty_db.transaction():
            assert await rebuild.estimate(empty_db, page, AS_OF, markets) == len(page)
        assert await _stored_rows(empty_db, page) == {i: read[i] for i in page}
        assert markets.used
    assert (
        await rebuild.stored_estimates(empty_db, AS_OF, markets) == read
    )  # every block remembered


async def test_a_model_stored_again_is_read_not_the_remembered_one(
    empty_db: Database, markets: stored.MarketCache
) -> None:
    await pipeline.run(empty_db, [pipeline.synthetic_source(900, 6, AS_OF)], AS_OF)
    markets.resize(1 << 30)
    before = await rebuild.stored_estimates(empty_db, AS_OF, markets)  # every block remembered
    held = markets.used
    assert held
    items = [(n, msgspec.structs.replace(r, id=f"more-{r.id}"))
             for n, r in synthetic.generate(600, 9, AS_OF)]  # fmt: skip
    assert not (await load(empty_db, items, origin="more", as_of=AS_OF)).rejects
    await pipeline.rebuild(empty_db, AS_OF)  # the models fitted again and stored anew
    assert [m.version for m in await rebuild.stored_models(empty_db)] == [2, 2]
    after = await rebuild.stored_estimates(empty_db, AS_OF, markets)
    markets.resize(0)
    assert await rebuild.stored_estimates(empty_db, AS_OF, markets) == after
    assert {i: after[i] for i in before} != before  # the refit changed the estimates


def _market(zip_code: str, nbytes: int) -> stored.Market:
    return stored.Market(zip_code, [], np.zeros(0, np.int64), {}, {}, nbytes)


def test_the_cache_keeps_the_most_recent_markets_within_its_budget() -> None:
    cache = stored.MarketCache(250)
    gen = stored.generation("store", "sale", 1, b"header")
    cache.put(gen, [_market("50010", 100), _market("50011", 100)])
    assert set(cache.get(gen, ["50010"])) == {"50010"}  # now the most recent
    cache.put(gen, [_market("50012", 100), _market("50013", 300)])  # 300: over the budget
    assert set(cache.get(gen, ["50010", "50011", "50012", "50013"])) == {"50010", "50012"}
    assert cache.used == 200
    cache.resize(150)
    assert set(cache.get(gen, ["50010", "50012"])) == {"50012"} and cache.used == 100


def test_a_new_generation_drops_the_older_one_of_its_store_and_kind_only() -> None:
    cache = stored.MarketCache(1 << 20)
    old, rental = (stored.generation("store", k, 1, b"header") for k in ("sale", "rental"))
    cache.put(old, [_market("50010", 100)])
    cache.put(rental, [_market("50010", 100)])
    new = stored.generation("store", "sale", 2, b"header")
    assert cache.get(new, ["50010"]) == {}
    assert cache.get(old, ["50010"]) == {} and cache.used == 100
    assert set(cache.get(rental, ["50010"])) == {"50010"}

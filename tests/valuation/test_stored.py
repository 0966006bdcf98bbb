"""A fitted model stored and read back values every home as the model in memory does,
from its header and only the blocks of the homes' markets."""

from __future__ import annotations

import datetime as dt
import io
from dataclasses import replace

import msgspec
import numpy as np

from propdata.ingest import synthetic
from propdata.ingest.loader import load
from propdata.kit.db import Database
from propdata.properties.schemas import PropertyDetail
from propdata.valuation import boost, stored
from propdata.valuation.homes import Params
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
                           "owner": stored.owner_codes(back, [stock.ids[i] for i in rows])})  # fmt: skip
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
                                 "owner": stored.owner_codes(back, stock.ids)})  # fmt: skip
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

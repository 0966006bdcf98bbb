"""A fitted model stored and read back values every home as the model in memory does,
from its header and only the blocks of the homes' markets."""

from __future__ import annotations

import datetime as dt

import numpy as np

from propdata.ingest import synthetic
from propdata.ingest.loader import load
from propdata.kit.db import Database
from propdata.valuation import stored
from propdata.valuation.homes import Params
from propdata.valuation.rebuild import fit_stock, read_stock, value_homes

AS_OF = dt.date(2026, 11, 21)


async def test_a_stored_model_values_as_the_fitted_one(empty_db: Database) -> None:
    items = list(synthetic.generate(900, 6, AS_OF))
    assert not (await load(empty_db, items, origin="synthetic", as_of=AS_OF)).rejects
    stock = await read_stock(empty_db, AS_OF)
    fitted = fit_stock(stock, stock.sales, AS_OF, Params())
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


def test_a_vocabulary_codes_what_it_lacks_past_its_end() -> None:
    assert stored.code_of(["50010", "50011"], ["50011", "99999", "50010", "99999"]).tolist() == [
        1, 2, 0, 2,
    ]  # fmt: skip

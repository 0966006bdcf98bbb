"""valuation.comparables: a page's subjects few to a market (all their pairs at once) and
many to a market (a dense block a market) get the same comparables, bit for bit, and both
are the first K sales by dissimilarity, ties by the sales' order."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from propdata.valuation import comparables
from propdata.valuation.homes import Homes, Params, no_extras


def _homes(n: int, markets: int, seed: int) -> Homes:
    """Homes over `markets` markets with unknowns, types and repeated sales of one house
    (equal features and place: ties in dissimilarity)."""
    rng = np.random.default_rng(seed)
    market = rng.integers(0, markets, n)

    def maybe(values: Any) -> Any:
        values = np.asarray(values, dtype=np.float64)
        values[rng.random(n) < 0.1] = np.nan
        return values

    lat = maybe(42.0 + market * 0.01 + rng.normal(0, 0.005, n))
    lon = maybe(-93.6 + rng.normal(0, 0.005, n))
    homes = Homes(
        owner=np.arange(n, dtype=np.int64), zip_code=market, state=np.zeros(n, np.int64),
        market=market, latitude=lat, longitude=lon, living_area=maybe(rng.uniform(800, 3_000, n)),
        lot_size=maybe(rng.uniform(3_000, 12_000, n)),
        bedrooms=maybe(rng.integers(1, 6, n)), bathrooms=maybe(rng.integers(1, 4, n)),
        year_built=maybe(rng.integers(1950, 2020, n)), kind=rng.integers(0, 3, n),
        extras=no_extras(n), month=rng.integers(200, 204, n).astype(np.float64),
    )  # fmt: skip
    twins = rng.choice(n, n // 5, replace=False)  # a copy of another sale: ties
    source = rng.choice(n, len(twins))
    for name in Homes.__dataclass_fields__:
        column = getattr(homes, name)
        if name not in ("owner", "extras"):
            column[twins] = column[source]
    return homes


def _brute(subjects: Homes, sales: Homes, params: Params) -> list[list[int]]:
    """Per subject, the sales of its market sorted by dissimilarity (then their order), K."""
    left, right = comparables._scaled(subjects, params), comparables._scaled(sales, params)
    found = []
    for i in range(len(subjects)):
        candidates = np.flatnonzero(sales.market == subjects.market[i])
        d = comparables._dissimilarity(left, np.array([i]), right, candidates, subjects.kind,
                                       sales.kind, params)[0]  # fmt: skip
        found.append(candidates[np.argsort(d, kind="stable")[: params.neighbours]].tolist())
    return found


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_few_and_many_to_a_market_give_the_same_comparables(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    params = Params()
    sales = _homes(3_000, 40, seed)
    subjects = _homes(300, 45, seed + 10)  # some markets without sales
    sparse = comparables.neighbours(subjects, sales, params)  # 300 over 45 markets: few
    with monkeypatch.context() as patched:
        patched.setattr(comparables, "_CHUNK", 1_000)  # the same, a few subjects at a time
        chunked = comparables.neighbours(subjects, sales, params)
    monkeypatch.setattr(comparables, "_FEW", 0)  # every market many: a block a market
    dense = comparables.neighbours(subjects, sales, params)
    for name in ("index", "dissimilarity", "miles"):
        for other in (chunked, dense):
            assert np.array_equal(getattr(sparse, name), getattr(other, name), equal_nan=True)
    expected = _brute(subjects, sales, params)
    assert [[i for i in row if i >= 0] for row in sparse.index.tolist()] == expected
    assert any(len(row) < params.neighbours for row in expected)  # a market with few sales
    ties = comparables._dissimilarity(
        comparables._scaled(subjects, params), np.arange(len(subjects)),
        comparables._scaled(sales, params), np.arange(len(sales)), subjects.kind, sales.kind,
        params,
    )  # fmt: skip
    assert len(np.unique(ties)) < ties.size  # the data has ties for the rule to break

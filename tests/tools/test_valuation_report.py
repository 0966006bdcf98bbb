"""The report's split: the model it measures never learns from a test sale."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pytest

from propdata.valuation import model as avm
from propdata.valuation.homes import EPOCH, MONTH_DAYS, Homes, no_extras
from propdata.valuation.stock import Priced, Stock
from tools import valuation_report as report


def stock(seed: int = 1) -> Stock:
    """Ames, Grinnell and synthetic homes with sales and rentals spread over 2004-2026."""
    rng = np.random.default_rng(seed)
    ids = ([f"ames-{i:04d}" for i in range(40)] + [f"grinnell-{i:04d}" for i in range(40)]
           + [f"syn-{i:07d}" for i in range(40)] + [f"sacramento-{i:04d}" for i in range(40)])  # fmt: skip
    n = len(ids)
    homes = Homes(
        owner=np.arange(n, dtype=np.int64), zip_code=np.arange(n, dtype=np.int64) // 40,
        state=np.zeros(n, dtype=np.int64), market=np.arange(n, dtype=np.int64) // 40,
        latitude=np.full(n, 42.0), longitude=np.full(n, -93.6),
        living_area=rng.uniform(800, 3_000, n), lot_size=np.full(n, 8_000.0),
        bedrooms=np.full(n, 3.0), bathrooms=np.full(n, 2.0), year_built=np.full(n, 1980.0),
        kind=np.zeros(n, dtype=np.int64), extras=no_extras(n), month=np.zeros(n),
    )  # fmt: skip

    def events(count: int) -> Priced:
        first, last = (dt.date(2004, 1, 1) - EPOCH).days, (AS_OF - EPOCH).days
        return Priced(
            owner=rng.integers(0, n, count).astype(np.int64),
            day=rng.integers(first, last, count).astype(np.int64),
            price=rng.uniform(50_000, 500_000, count),
        )

    return Stock(ids=ids, homes=homes, sales=events(600), rentals=events(300))


AS_OF = report.AS_OF


@pytest.mark.parametrize("spec", report.SPLITS, ids=lambda s: s.name)
def test_split_trains_only_before_the_cut_off(spec: report.Split) -> None:
    data = stock()
    train, test = report.split(data, spec)
    cutoff = (spec.cutoff - EPOCH).days
    assert len(train.owner) and len(test.owner)
    if not spec.fifth:
        assert (train.day < cutoff).all()
        assert (test.day >= cutoff).all()
    assert all(data.ids[o].startswith(spec.prefix) for o in test.owner)
    learnt = set(zip(train.owner.tolist(), train.day.tolist(), train.price.tolist(), strict=True))
    tested = set(zip(test.owner.tolist(), test.day.tolist(), test.price.tolist(), strict=True))
    assert not learnt & tested


def test_the_model_is_fitted_on_the_training_split_only(monkeypatch: pytest.MonkeyPatch) -> None:
    data = stock(2)
    spec = report.SPLITS[0]
    train, test = report.split(data, spec)
    seen: list[Homes] = []
    real_fit = avm.fit

    def spy(sales: Homes, log_price: Any, params: Any = None) -> avm.Model:
        seen.append(sales)
        return real_fit(sales, log_price, params)

    monkeypatch.setattr(avm, "fit", spy)
    accuracy = report.evaluate(data, train, test)
    assert len(seen) == 1 and accuracy.test == len(test.owner)
    fitted = seen[0]
    cutoff_month = (spec.cutoff - EPOCH).days / MONTH_DAYS
    assert (fitted.month < cutoff_month).all()
    test_sales = set(zip(test.owner.tolist(), (test.day / MONTH_DAYS).tolist(), strict=True))
    assert not set(zip(fitted.owner.tolist(), fitted.month.tolist(), strict=True)) & test_sales


def test_the_random_fifth_is_seeded_and_never_learnt_from() -> None:
    data = stock(3)
    spec = next(s for s in report.SPLITS if s.fifth)
    train, test = report.split(data, spec)
    again, same = report.split(data, spec)
    assert np.array_equal(test.owner, same.owner) and np.array_equal(train.day, again.day)
    mine = np.array([i.startswith(spec.prefix) for i in data.ids])[data.sales.owner]
    assert 0.1 < len(test.owner) / mine.sum() < 0.3
    assert len(train.owner) + len(test.owner) == len(data.sales.owner)
    learnt = set(zip(train.owner.tolist(), train.day.tolist(), train.price.tolist(), strict=True))
    tested = set(zip(test.owner.tolist(), test.day.tolist(), test.price.tolist(), strict=True))
    assert not learnt & tested


def test_sacramento_is_added_once_with_its_places_and_sales() -> None:
    data = stock(4)
    data = Stock(data.ids[:120], data.homes.take(np.arange(120)), data.sales, data.rentals,
                 [f"z{i}" for i in range(3)], ["IA"])  # fmt: skip
    data = Stock(data.ids, data.homes, data.sales.take(np.flatnonzero(data.sales.owner < 120)),
                 data.rentals.take(np.flatnonzero(data.rentals.owner < 120)), data.zips,
                 data.states)  # fmt: skip
    added = report.with_sacramento(data)
    assert len(added.ids) == 120 + 932 and added.ids[120] == "sacramento-0001"
    assert len(added.sales.owner) == len(data.sales.owner) + 932
    assert report.with_sacramento(added) is added
    sac = added.homes.take(np.arange(120, len(added.ids)))
    assert {added.states[s] for s in sac.state.tolist()} == {"CA"}
    assert all(added.zips[z].startswith("95") for z in sac.zip_code.tolist())
    assert (sac.zip_code >= 3).all() and np.isnan(sac.year_built).all()

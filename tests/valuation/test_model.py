"""valuation.model on made-up homes: nulls where unsupported, ordered intervals, comparables."""

from __future__ import annotations

import numpy as np
import pytest

from propdata.valuation import model as avm
from propdata.valuation.homes import EXTRAS, LAND, FloatArray, Homes, no_extras


def homes(n: int, seed: int = 3, kind: int = 0) -> tuple[Homes, FloatArray]:
    """n homes in two ZIP codes, priced by size, age and place with some noise, over 5 years."""
    rng = np.random.default_rng(seed)
    zip_code = rng.integers(0, 2, n)
    area = rng.uniform(800, 3_000, n)
    year = rng.integers(1950, 2020, n).astype(np.float64)
    lat = 42.0 + zip_code * 0.05 + rng.normal(0, 0.01, n)
    lon = -93.6 + rng.normal(0, 0.01, n)
    month = rng.uniform(200, 260, n)
    log_price = (
        11.0 + 0.8 * np.log(area / 1_500) + 0.003 * (year - 1985) + 0.2 * zip_code
        + 0.002 * (month - 230) + rng.normal(0, 0.08, n)
    )  # fmt: skip
    built = Homes(
        owner=np.arange(n, dtype=np.int64), zip_code=zip_code.astype(np.int64),
        state=np.zeros(n, dtype=np.int64), market=zip_code.astype(np.int64), latitude=lat,
        longitude=lon, living_area=area, lot_size=rng.uniform(3_000, 12_000, n),
        bedrooms=rng.integers(1, 6, n).astype(np.float64),
        bathrooms=rng.integers(1, 4, n).astype(np.float64), year_built=year,
        kind=np.full(n, kind, dtype=np.int64), extras=no_extras(n), month=month,
    )  # fmt: skip
    return built, log_price


def test_estimates_are_ordered_and_close() -> None:
    sales, log_price = homes(600)
    model = avm.fit(sales, log_price)
    subjects, truth = homes(200, seed=4)
    found = avm.predict(model, subjects)
    assert np.all(found.low <= found.value) and np.all(found.value <= found.high)
    assert np.median(np.abs(np.log(found.value) - truth)) < 0.1
    inside = np.mean((np.log(found.low) <= truth) & (truth <= np.log(found.high)))
    assert 0.7 <= inside <= 0.97


def test_land_and_missing_living_area_get_nothing() -> None:
    sales, log_price = homes(300)
    model = avm.fit(sales, log_price)
    subjects, _ = homes(10, seed=5)
    area = subjects.living_area.copy()
    area[0] = np.nan
    kind = subjects.kind.copy()
    kind[1] = LAND
    subjects = Homes(**{**{f: getattr(subjects, f) for f in Homes.__dataclass_fields__},
                            "living_area": area, "kind": kind})  # fmt: skip
    found = avm.predict(model, subjects)
    for i in (0, 1):
        assert np.isnan([found.value[i], found.low[i], found.high[i]]).all()
        assert (found.comparables[i] == -1).all()
    assert not np.isnan(found.value[2:]).any()


def test_fit_refuses_unsupported_homes() -> None:
    sales, log_price = homes(50, kind=LAND)
    with pytest.raises(ValueError):
        avm.fit(sales, log_price)


def test_comparables_are_in_the_subjects_market_most_similar_first() -> None:
    sales, log_price = homes(400)
    model = avm.fit(sales, log_price)
    subjects, _ = homes(50, seed=6)
    found = avm.predict(model, subjects)
    assert (found.comparables >= 0).all()
    assert (sales.market[found.comparables] == subjects.market[:, None]).all()
    assert (np.diff(found.similarity, axis=1) <= 1e-12).all()
    assert ((found.similarity > 0) & (found.similarity <= 1)).all()


def test_the_fixed_interval_of_too_few_sales_bounds_every_estimate() -> None:
    """Under 20 out-of-fold errors the calibration is a fixed +-35 % with no market scales:
    bounding estimates with it must not index the empty scales (an IndexError in a rebuild,
    seen on a small store after a second import)."""
    fixed = avm.Calibration(np.zeros(0), np.zeros(0), np.array([-0.35]), np.array([0.35]), 7,
                           np.zeros(0))  # fmt: skip
    low, high = fixed.bounds(np.array([0.1, np.nan, 3.0]), np.array([0, 5, 2]))
    assert low.tolist() == [-0.35] * 3 and high.tolist() == [0.35] * 3


def test_a_market_whose_newest_sales_are_missed_more_gets_wider_intervals() -> None:
    """The per-market factor comes from the newest sales valued as forecasts: where those
    errors are larger than the random folds' (here: noise tripled in one market's last
    year), that market's interval widens, and the other market's does not."""
    sales, log_price = homes(1_500)
    recent = (sales.month >= sales.month.max() - 12) & (sales.market == 1)
    noise = np.random.default_rng(9).normal(0, 0.25, len(sales))
    noisy = np.where(recent, log_price + noise, log_price)
    factor = avm.fit(sales, noisy).calibration.factor
    assert factor[1] > 1.1 and factor[0] < factor[1]
    plain = avm.fit(sales, log_price).calibration.factor
    assert np.all(np.abs(plain - 1) < 0.3)


def test_too_few_newest_sales_leave_the_pooled_interval() -> None:
    sales, log_price = homes(300)
    early = sales.take(np.flatnonzero(sales.month < sales.month.min() + 13))
    model = avm.fit(early, log_price[sales.month < sales.month.min() + 13])
    assert not len(model.calibration.factor)


def test_a_factor_is_never_below_one() -> None:
    """A market whose newest sales are valued better than the random folds' keeps the
    out-of-fold interval: a forecast is no easier than a valuation among contemporaries."""
    sales, log_price = homes(1_500)
    old = sales.month < sales.month.max() - 12
    noisy = np.where(old, log_price + np.random.default_rng(9).normal(0, 0.2, len(sales)),
                     log_price)  # fmt: skip
    factor = avm.fit(sales, noisy).calibration.factor
    assert len(factor) and np.all(factor >= 1.0)


def test_the_fields_a_record_has_are_learnt_and_missing_ones_cost_nothing() -> None:
    """Prices that rise with the quality grade: where one market's homes carry the grade,
    its homes are valued closer than by a model that is not given it, and the other
    market's homes (no grade) are valued as well as without it."""
    sales, log_price = homes(1_200)
    subjects, truth = homes(300, seed=7)
    rng = np.random.default_rng(11)
    column = EXTRAS.index("overall_quality")

    def graded(built: Homes, price: FloatArray) -> tuple[Homes, FloatArray]:
        quality = rng.integers(3, 10, len(built)).astype(np.float64)
        extras = no_extras(len(built))
        extras[:, column] = np.where(built.market == 0, quality, np.nan)
        with_grade = Homes(**{**{f: getattr(built, f) for f in Homes.__dataclass_fields__},
                              "extras": extras})  # fmt: skip
        return with_grade, price + np.where(built.market == 0, 0.1 * (quality - 6), 0.0)

    sales, log_price = graded(sales, log_price)
    subjects, truth = graded(subjects, truth)
    blind = Homes(**{**{f: getattr(sales, f) for f in Homes.__dataclass_fields__},
                     "extras": no_extras(len(sales))})  # fmt: skip
    error = np.abs(np.log(avm.predict(avm.fit(sales, log_price), subjects).value) - truth)
    blind_error = np.abs(np.log(avm.predict(avm.fit(blind, log_price), subjects).value) - truth)
    first = subjects.market == 0
    assert np.median(error[first]) < 0.7 * np.median(blind_error[first])
    assert np.median(error[~first]) < 1.1 * np.median(blind_error[~first])

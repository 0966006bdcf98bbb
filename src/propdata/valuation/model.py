"""The automated valuation model: a hedonic regression corrected by comparable sales.

Pure numpy, no I/O: `fit` learns from priced homes (sales, or rentals), `predict` values
other homes at a given month. The same code values the store (`valuation.rebuild`) and is
measured on held-out real sales (`tools/valuation_report.py`, which writes docs/valuation.md).

How an estimate is made, in log price:

1. **Hedonic regression** (`valuation.regression`): features, a national price curve, and
   shrunken state and ZIP levels and trends.
2. **Comparable sales** (`valuation.comparables` finds them): the K training sales in the
   subject's market that are nearest in place, size, age, rooms, type and date. Here each
   comparable's price is adjusted to the subject by the regression (the comparable's
   residual), and the weighted mean residual, shrunk toward zero when the comparables are
   few or far, corrects the regression's estimate: the regression's value blended with
   the adjusted prices of the comparables it lists.
3. **A gradient-boosted second stage** (`valuation.boost`) learns what those two steps
   get wrong, from their out-of-fold errors (below), and its correction is added, when
   cross-validation on the training sales says it helps.
4. **The 85 % interval** comes from out-of-fold errors: the training sales are split in
   folds by property, each fold is valued by a model fitted on the others (the second
   stage's part by its cross-fitted predictions), and the 7.5th
   and 92.5th percentiles of those errors (in units of the market's typical error, within
   bins of the estimate's comparable spread: a valuation whose comparables disagree is
   less certain) give each estimate its low and high. Each market's interval is then
   stretched so that it holds 85 % of the errors of the market's newest sales valued as
   forecasts, by a model fitted on the sales before them (split conformal, leaning on
   the market's state and on all markets where it has few such sales).

Land, and any home without a living area, gets no estimate (`homes.supported`).

    model = fit(sales, np.log(prices))
    estimates = predict(model, subjects)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from propdata.valuation import boost, comparables
from propdata.valuation.boost import Boost
from propdata.valuation.comparables import Neighbours
from propdata.valuation.homes import FloatArray, Homes, IntArray, Params, supported
from propdata.valuation.regression import Regression, fit_regression

COMPARABLES_KEPT = 5
"""How many comparables an estimate reports (the most similar of those it used)."""


@dataclass(frozen=True, slots=True)
class Core:
    """The model without its interval: regression, training sales and their residuals."""

    params: Params
    regression: Regression
    sales: Homes
    residual: FloatArray


@dataclass(frozen=True, slots=True)
class Point:
    """Central estimates (log price) with what they rest on."""

    log_value: FloatArray
    spread: FloatArray
    """Weighted spread of the comparables' residuals: the interval's dispersion score."""
    neighbours: Neighbours
    weights: FloatArray


def _core(sales: Homes, y: FloatArray, params: Params) -> Core:
    regression = fit_regression(sales, y, params)
    return Core(params, regression, sales, y - regression.predict(sales))


def _point(core: Core, subjects: Homes) -> Point:
    base = core.regression.predict(subjects)
    near = comparables.neighbours(subjects, core.sales, core.params)
    weights = comparables.weights(near.dissimilarity)
    own = near.index >= 0
    own &= core.sales.owner[np.maximum(near.index, 0)] == subjects.owner[:, None]
    boosted = np.where(own, weights * core.params.own_weight, weights)
    residual = np.where(near.index >= 0, core.residual[np.maximum(near.index, 0)], 0.0)
    residual = np.clip(residual, -core.params.clip, core.params.clip)
    total = boosted.sum(axis=1)
    weighted = (boosted * residual).sum(axis=1)
    correction = weighted / (total + core.params.shrink)
    mean = weighted / np.maximum(total, 1e-12)
    spread = np.sqrt(
        ((boosted * (residual - mean[:, None]) ** 2).sum(axis=1) + 0.04 * core.params.shrink)
        / (total + core.params.shrink)
    )
    return Point(base + correction, spread, near, weights)


@dataclass(frozen=True, slots=True)
class Calibration:
    """Where out-of-fold errors fall: per market a typical error size, and the quantiles of
    errors in those units within bins of the dispersion score (edges between bins)."""

    scale: FloatArray
    """Per market code: mean absolute out-of-fold error, shrunk toward its state's (itself
    shrunk toward all markets'), relative to all markets'."""
    edges: FloatArray
    low: FloatArray
    high: FloatArray
    errors: int
    """Out-of-fold errors the quantiles come from."""
    factor: FloatArray
    """Per market code: the conformal correction of its interval, 1 or more (empty: 1
    everywhere)."""

    def bounds(self, spread: FloatArray, market: IntArray) -> tuple[FloatArray, FloatArray]:
        """Log offsets of the interval's ends from the estimate."""
        bins = np.searchsorted(self.edges, spread)
        if not len(self.scale):  # too few sales to measure: the fixed interval everywhere
            return np.full(len(spread), self.low[0]), np.full(len(spread), self.high[0])
        known = market < len(self.scale)
        scale = np.where(known, self.scale[np.where(known, market, 0)], 1.0)
        if len(self.factor):
            scale = scale * np.where(known, self.factor[np.where(known, market, 0)], 1.0)
        return self.low[bins] * scale, self.high[bins] * scale


@dataclass(frozen=True, slots=True)
class Model:
    core: Core
    calibration: Calibration
    boost: Boost | None = None
    """The second stage; None where cross-validation chose the first stage alone."""

    def point(self, subjects: Homes) -> Point:
        """Both stages' central estimates of supported subjects."""
        return _boosted(_point(self.core, subjects), self.boost, subjects)


def _boosted(point: Point, stage: Boost | None, subjects: Homes) -> Point:
    """`point` (the first stage's) with the second stage's correction added, if any."""
    if stage is None:
        return point
    correction = stage.predict(subjects, point.log_value, point.spread)
    return replace(point, log_value=point.log_value + correction)


@dataclass(frozen=True, slots=True)
class Estimates:
    """Per subject: value and interval (in price units, NaN when unsupported), and the
    comparables reported (indices into the training sales, -1 for none), most similar first."""

    value: FloatArray
    low: FloatArray
    high: FloatArray
    comparables: IntArray
    similarity: FloatArray
    miles: FloatArray


def fit(sales: Homes, log_price: FloatArray, params: Params | None = None) -> Model:
    """Learn from priced homes, each at its sale month.

    Every home must be `supported` with a finite log price: comparables are reported as
    positions in `sales`, so the caller filters, not the model.
    """
    params = params or Params()
    if not len(sales):
        raise ValueError("no priced homes to learn from")
    if not (supported(sales).all() and np.isfinite(log_price).all()):
        raise ValueError("every home learnt from needs a living area, a type other than land"
                         " and a price")  # fmt: skip
    oof = OutOfFold(*out_of_fold(sales, log_price, params))
    stage, setting, crossed = boost.fit(
        sales.take(oof.positions), log_price[oof.positions] - oof.errors, oof.spreads,
        oof.errors, params,
    )  # fmt: skip
    calibration = _calibrate(sales, log_price, params, replace(oof, errors=oof.errors - crossed),
                             Forward(oof, setting))  # fmt: skip
    return Model(_core(sales, log_price, params), calibration, stage)


@dataclass(frozen=True, slots=True)
class OutOfFold:
    """Training sales valued by the first stage fitted on the other folds (`out_of_fold`)."""

    positions: IntArray
    errors: FloatArray
    spreads: FloatArray


@dataclass(frozen=True, slots=True)
class Forward:
    """What the forward check refits its second stage from: the first stage's out-of-fold
    errors and the setting chosen (None: no second stage)."""

    oof: OutOfFold
    setting: boost.Setting | None


def out_of_fold(
    sales: Homes, log_price: FloatArray, params: Params
) -> tuple[IntArray, FloatArray, FloatArray]:
    """(sale positions, errors, dispersion scores) of held-out sales.

    Each fold is valued by a model fitted on the other folds only, as a new sale would be:
    folds are drawn by sale, so a house's other sales may inform it, as they inform its
    stored estimate. At most `calibration_cap` errors are computed (a random sample, fixed
    seed).
    """
    rng = np.random.default_rng(20240601)
    n = len(sales)
    share = min(1.0, params.calibration_cap / max(n, 1))
    # Folds only over the sample, as many as keep each fit on >= (1 - 1/folds) of the
    # sales: five for small sets, one for a million sales (a fit is the costly part).
    folds = max(1, math.ceil(params.folds * share))
    fold = np.where(rng.random(n) < share, rng.integers(0, folds, size=n), -1)
    positions: list[IntArray] = []
    errors: list[FloatArray] = []
    spreads: list[FloatArray] = []
    for k in range(folds):
        held = np.flatnonzero(fold == k)
        train = fold != k
        if not len(held) or not train.any():
            continue
        core = _core(sales.take(train), log_price[train], params)
        point = _point(core, sales.take(held))
        positions.append(held)
        errors.append(log_price[held] - point.log_value)
        spreads.append(point.spread)
    if not positions:
        return np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
    return np.concatenate(positions), np.concatenate(errors), np.concatenate(spreads)


def _calibrate(
    sales: Homes, log_price: FloatArray, params: Params, oof: OutOfFold, forward: Forward
) -> Calibration:
    """`oof`'s errors are both stages' (the second's cross-fitted)."""
    positions, errors, spreads = oof.positions, oof.errors, oof.spreads
    tail = (1 - params.coverage) / 2
    if len(errors) < 20:
        # Too few sales to measure: a wide fixed interval (+-35 %), honest about knowing little.
        return Calibration(np.zeros(0), np.zeros(0), np.array([-0.35]), np.array([0.35]),
                           len(errors), np.zeros(0))  # fmt: skip
    market, state = sales.market[positions], sales.state[positions]
    size = np.abs(errors)
    overall = float(size.mean())
    # A market leans on its state's typical error, a state on all markets' (as the
    # regression's levels do): a state of small ZIP codes the model predicts badly keeps
    # its wider intervals.
    in_state = np.bincount(state)
    state_size = (np.bincount(state, size) + params.market_prior * overall) / (
        in_state + params.market_prior
    )
    count = np.bincount(market)
    state_of = np.zeros(len(count), dtype=np.int64)
    state_of[market] = state
    scale = (np.bincount(market, size) + params.market_prior * state_size[state_of]) / (
        (count + params.market_prior) * overall
    )
    units = errors / scale[market]
    bins = max(1, min(params.calibration_bins, len(units) // 150))
    edges = np.quantile(spreads, np.linspace(0, 1, bins + 1)[1:-1])
    which = np.searchsorted(edges, spreads)
    low = np.array([np.quantile(units[which == b], tail) for b in range(bins)])
    high = np.array([np.quantile(units[which == b], 1 - tail) for b in range(bins)])
    # Wider with more spread, never narrower: a bin's noise must not reverse the order.
    low, high = np.minimum.accumulate(low), np.maximum.accumulate(high)
    calibration = Calibration(scale, edges, low, high, len(units), np.zeros(0))
    factor = _forward_factor(sales, log_price, params, calibration, forward)
    return replace(calibration, factor=factor)


def _forward_factor(
    sales: Homes, log_price: FloatArray, params: Params, calibration: Calibration,
    forward: Forward,
) -> FloatArray:  # fmt: skip
    """Per market: by how much its intervals must be stretched (1 or more) to hold
    `coverage` of the errors of its newest sales valued by a model fitted on the older ones.

    Random folds value a sale among its contemporaries; an estimate is a forecast (the
    next sale comes after everything the model learnt from). So the sales of the last
    `conformal_months` are valued by a model fitted on the sales before them (its second
    stage, if chosen, refitted on the older sales' out-of-fold errors), and each
    error's score is the stretch its interval needs to hold it; a market's factor is the
    `coverage` quantile of its scores (split-conformal, with the finite-sample rank),
    shrunk toward its state's, and a state's toward all markets', each with a prior of
    `conformal_prior` sales: a ZIP code of a few sales gets its state's correction, not
    none. Empty (1 everywhere) when the split leaves too few on either side.
    """
    if not len(sales) or not len(calibration.scale):
        return np.zeros(0)
    held = sales.month >= sales.month.max() - params.conformal_months
    if held.sum() < 20 or (~held).sum() < 20:
        return np.zeros(0)
    positions = np.flatnonzero(held)
    if len(positions) > params.calibration_cap:
        rng = np.random.default_rng(20240602)
        positions = np.sort(rng.choice(positions, params.calibration_cap, replace=False))
    core = _core(sales.take(~held), log_price[~held], params)
    subjects = sales.take(positions)
    oof = forward.oof
    older = ~held[oof.positions]
    stage = None
    if forward.setting is not None and older.sum() >= params.boost_min_sales:
        rows = oof.positions[older]
        x = boost.features(sales.take(rows), log_price[rows] - oof.errors[older],
                           oof.spreads[older])  # fmt: skip
        stage = boost.train(x, oof.errors[older], forward.setting, params.boost_rounds)
    point = _boosted(_point(core, subjects), stage, subjects)
    market = subjects.market
    lo, hi = calibration.bounds(point.spread, market)
    errors = log_price[positions] - point.log_value
    score = np.maximum(errors / np.maximum(hi, 1e-9), errors / np.minimum(lo, -1e-9))
    markets = len(calibration.scale)
    known = np.flatnonzero(market < markets)  # a market without out-of-fold errors keeps 1
    market, state, score = market[known], subjects.state[known], score[known]
    prior = params.conformal_prior
    # Never narrower than the random folds' interval, for all markets together or for one
    # after shrinking (a forecast is no easier than valuing a sale among its contemporaries);
    # but a state's or a market's own quantile may be below 1 before it is shrunk: flooring
    # each would let a market's easy year only ever widen the intervals.
    pooled = max(1.0, _conformal(score, params.coverage))
    states = int(state.max()) + 1 if len(state) else 0
    state_factor = np.full(states, pooled)
    for code, group in _groups(state, states):
        n = len(group)
        state_factor[code] = (n * _conformal(score[group], params.coverage) + prior * pooled) / (
            n + prior
        )
    factor = np.ones(markets)
    for code, group in _groups(market, markets):
        n, toward = len(group), float(state_factor[state[group[0]]])
        own = _conformal(score[group], params.coverage)
        factor[code] = max(1.0, (n * own + prior * toward) / (n + prior))
    return factor


def _conformal(score: FloatArray, coverage: float) -> float:
    """The split-conformal quantile of `score` (the `coverage` one at the finite-sample
    rank)."""
    n = len(score)
    return float(np.quantile(score, min(1.0, math.ceil((n + 1) * coverage) / n)))


def _groups(codes: IntArray, size: int) -> list[tuple[int, IntArray]]:
    """(code, positions) of each code of `codes` that occurs."""
    count = np.bincount(codes, minlength=size)
    order = np.argsort(codes, kind="stable")
    return [
        (int(codes[group[0]]), group)
        for group in np.split(order, np.cumsum(count)[:-1])
        if len(group)
    ]


def predict(model: Model, subjects: Homes) -> Estimates:
    """Value each subject at its month; NaN (and no comparables) where unsupported."""
    n = len(subjects)
    value, low, high = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    comps = np.full((n, COMPARABLES_KEPT), -1, dtype=np.int64)
    similarity = np.full((n, COMPARABLES_KEPT), np.nan)
    miles = np.full((n, COMPARABLES_KEPT), np.nan)
    supported_rows = np.flatnonzero(supported(subjects))
    # Blocks of subjects in market order: the comparables' matrices (K per subject) of a
    # million subjects at once would be the rebuild's largest allocation.
    supported_rows = supported_rows[np.argsort(subjects.market[supported_rows], kind="stable")]
    for at in range(0, len(supported_rows), _SUBJECTS):
        rows = supported_rows[at : at + _SUBJECTS]
        point = model.point(subjects.take(rows))
        lo, hi = model.calibration.bounds(point.spread, subjects.market[rows])
        value[rows] = np.exp(point.log_value)
        low[rows] = np.exp(point.log_value + np.minimum(lo, 0.0))
        high[rows] = np.exp(point.log_value + np.maximum(hi, 0.0))
        keep = min(COMPARABLES_KEPT, point.neighbours.index.shape[1])
        comps[rows, :keep] = point.neighbours.index[:, :keep]
        similarity[rows, :keep] = point.weights[:, :keep]
        miles[rows, :keep] = point.neighbours.miles[:, :keep]
    return Estimates(value, low, high, comps, similarity, miles)


_SUBJECTS = 100_000
"""Subjects valued per block by `predict`."""

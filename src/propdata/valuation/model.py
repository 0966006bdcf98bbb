"""The automated valuation model: a hedonic regression corrected by comparable sales.

Pure numpy, no I/O: `fit` learns from priced homes (sales, or rentals), `predict` values
other homes at a given month. The same code values the store (`valuation.rebuild`) and is
measured on held-out real sales (`tools/valuation_report.py`, which writes docs/valuation.md).

How an estimate is made, in log price:

1. **Hedonic regression.** log price = features (living area, lot, bedrooms, bathrooms,
   year built, property type) + a national price curve over time + a state level and
   trend + a ZIP level and trend. The features are fitted by ridge least squares; the
   state and ZIP terms by shrunken means and slopes of what the rest leaves (backfitting),
   so a ZIP with few sales leans on its state, and a state with few on the nation.
2. **Comparable sales.** The K training sales in the subject's market (its ZIP code)
   that are nearest in place, size, age,
   rooms, type and date. Each comparable's price is adjusted to the subject by the
   regression (the comparable's residual), and the weighted mean residual, shrunk toward
   zero when the comparables are few or far, corrects the regression's estimate. So the
   estimate is, exactly, the regression's value blended with the adjusted prices of the
   comparables it lists.
3. **The 85 % interval** comes from out-of-fold errors: the training sales are split in
   folds by property, each fold is valued by a model fitted on the others, and the 7.5th
   and 92.5th percentiles of those errors (in units of the market's typical error, within
   bins of the estimate's comparable spread: a valuation whose comparables disagree is
   less certain) give each estimate its low and high.

Land, and any home without a living area, gets no estimate (`supported`).

    model = fit(sales, np.log(prices))
    estimates = predict(model, subjects)
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
Float32Array = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

KINDS = ("singleFamily", "condo", "townhouse", "multiFamily", "land")
"""Property types by code; -1 is unknown (a source that does not say)."""
LAND = KINDS.index("land")
EPOCH = dt.date(2000, 1, 1)
MONTH_DAYS = 30.4375
COMPARABLES_KEPT = 5
"""How many comparables an estimate reports (the most similar of those it used)."""


@dataclass(frozen=True, slots=True)
class Params:
    """The model's settings; the defaults were chosen on the held-out sales of
    docs/valuation.md."""

    neighbours: int = 12
    """Comparable sales per estimate."""
    miles: float = 0.35
    """Distance at which the place term of the dissimilarity reaches 1."""
    log_area: float = 0.25
    years_built: float = 15.0
    rooms: float = 2.0
    log_lot: float = 1.0
    months: float = 48.0
    kind: float = 1.0
    """Dissimilarity added when the property types differ."""
    shrink: float = 1.5
    own_weight: float = 10.0
    """Weight multiplier of the subject's own earlier sales among its comparables (a repeat
    sale says more about a house than a neighbour's)."""
    """Comparable weight that stands for 'no correction' (the regression's own vote)."""
    ridge: float = 1.0
    clip: float = 0.4
    """Comparable residuals are clipped to +-clip (log): one odd sale must not swing a value."""
    huber: float = 0.15
    """Regression residuals beyond this (log) are down-weighted (Huber), a few rounds."""
    zip_prior: float = 8.0
    """Sales a ZIP's level needs before it counts as much as its state's."""
    trend_prior: float = 8.0 * 24.0**2
    """Same for its trend (sales times squared months from their mean)."""
    time_knots: float = 12.0
    """Months between knots of the national price curve."""
    folds: int = 5
    calibration_bins: int = 8
    calibration_cap: int = 100_000
    """Out-of-fold errors used at most (a sample; keeps a million-sale fit quick)."""
    coverage: float = 0.85
    market_prior: float = 50.0
    """Out-of-fold errors a market needs before its own error size counts as much as all
    markets' together."""


@dataclass(frozen=True, slots=True)
class Homes:
    """Columns of some homes, each at a month: its features, its place and that month.

    Float columns hold NaN for unknown. `owner` identifies the property (the sales of one
    house share it); `market` is where its comparables may come from.
    """

    owner: IntArray
    zip_code: IntArray
    state: IntArray
    market: IntArray
    latitude: FloatArray
    longitude: FloatArray
    living_area: FloatArray
    lot_size: FloatArray
    bedrooms: FloatArray
    bathrooms: FloatArray
    year_built: FloatArray
    kind: IntArray
    month: FloatArray

    def __len__(self) -> int:
        return len(self.owner)

    def take(self, index: IntArray | BoolArray) -> Homes:
        """The homes at `index` (positions or a mask)."""
        return Homes(**{name: getattr(self, name)[index] for name in _COLUMNS})

    def at(self, month: FloatArray | float) -> Homes:
        """The same homes, valued at another month."""
        months = np.broadcast_to(np.asarray(month, dtype=np.float64), self.month.shape).copy()
        return replace(self, month=months)


_COLUMNS = tuple(Homes.__dataclass_fields__)


def month_of(date: dt.date | str) -> float:
    """Months since 2000-01-01, fractional: the model's clock."""
    day = dt.date.fromisoformat(date) if isinstance(date, str) else date
    return (day - EPOCH).days / MONTH_DAYS


def supported(homes: Homes) -> BoolArray:
    """Homes the model values: not land, and with a living area (never a guess without one)."""
    mask: BoolArray = (homes.kind != LAND) & (homes.living_area > 0)
    return mask


# -- features ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Design:
    """How features become regression columns: the fill values learnt from training sales."""

    fills: FloatArray
    """Median of log lot, bedrooms, bathrooms, year built (for unknowns)."""
    knots: FloatArray


def _design_of(sales: Homes, params: Params) -> Design:
    lot = np.log(np.clip(sales.lot_size, 100, 1e8))
    fills = np.array([
        _median(lot), _median(sales.bedrooms), _median(sales.bathrooms),
        _median(sales.year_built),
    ])  # fmt: skip
    start, end = float(sales.month.min()), float(sales.month.max())
    knots = np.arange(start + params.time_knots, end, params.time_knots)
    return Design(fills=fills, knots=knots)


def _median(values: FloatArray) -> float:
    known = values[~np.isnan(values)]
    return float(np.median(known)) if len(known) else 0.0


def _columns(homes: Homes, design: Design) -> Float32Array:
    """The regression columns: features (unknowns filled, with indicators) and time.

    Single precision, filled column by column: at a million sales the matrix is the
    rebuild's largest object, and the Gram products are summed in double (`_gram`).
    """
    area = np.log(homes.living_area) - 7.3
    lot = np.log(np.clip(homes.lot_size, 100, 1e8))
    lot_known = ~np.isnan(lot)
    lot = np.where(lot_known, lot, design.fills[0]) - 8.9
    beds = np.nan_to_num(homes.bedrooms, nan=design.fills[1])
    baths = np.nan_to_num(homes.bathrooms, nan=design.fills[2])
    year_known = ~np.isnan(homes.year_built)
    age = (np.where(year_known, homes.year_built, design.fills[3]) - 1970.0) / 30.0
    t = homes.month
    columns: list[Callable[[], npt.NDArray[np.generic]]] = [
        lambda: np.ones(len(homes)), lambda: area, lambda: area**2, lambda: lot,
        lambda: lot**2, lambda: ~lot_known, lambda: np.clip(beds, 0, 8) / 3.0,
        lambda: np.clip(baths, 0, 6) / 2.0, lambda: age, lambda: age**2, lambda: age**3,
        lambda: ~year_known, lambda: homes.living_area / np.maximum(beds, 1) / 1000.0,
    ]  # fmt: skip
    for code in range(LAND):
        columns += [partial(np.equal, homes.kind, code),
                    partial(lambda c: (homes.kind == c) * area, code)]  # fmt: skip
    columns.append(lambda: t / 120.0)
    columns += [partial(lambda k: np.maximum(t - k, 0.0) / 120.0, knot) for knot in design.knots]
    x = np.empty((len(homes), len(columns)), dtype=np.float32)
    for j, column in enumerate(columns):
        x[:, j] = column()
    return x


_ROWS = 100_000
"""Rows per block when products of the design matrix are summed in double precision."""


def _gram(x: Float32Array, weight: FloatArray, penalty: FloatArray) -> FloatArray:
    """X' W X + diag(penalty), block by block in double precision."""
    gram = np.diag(penalty)
    for at in range(0, len(x), _ROWS):
        block = x[at : at + _ROWS].astype(np.float64)
        gram += (block * weight[at : at + _ROWS, None]).T @ block
    return gram


def _xt(x: Float32Array, vector: FloatArray) -> FloatArray:
    """X' v, block by block in double precision."""
    total = np.zeros(x.shape[1])
    for at in range(0, len(x), _ROWS):
        total += x[at : at + _ROWS].astype(np.float64).T @ vector[at : at + _ROWS]
    return total


def _times(x: Float32Array, beta: FloatArray) -> FloatArray:
    """X beta, block by block in double precision."""
    out = np.empty(len(x))
    for at in range(0, len(x), _ROWS):
        out[at : at + _ROWS] = x[at : at + _ROWS].astype(np.float64) @ beta
    return out


# -- the regression -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Levels:
    """Shrunken level and trend of one grouping (states or ZIP codes), by group code."""

    level: FloatArray
    trend: FloatArray
    center: FloatArray

    def of(self, codes: IntArray, months: FloatArray) -> FloatArray:
        if not len(self.level):
            return np.zeros(len(codes))
        known = codes < len(self.level)
        safe = np.where(known, codes, 0)
        value = self.level[safe] + self.trend[safe] * (months - self.center[safe])
        return np.where(known, value, 0.0)


_NO_LEVELS = Levels(np.zeros(0), np.zeros(0), np.zeros(0))


def _levels(
    codes: IntArray, months: FloatArray, residual: FloatArray, prior: float, trend_prior: float
) -> Levels:
    """Per group, a level and a trend in time of `residual`, each shrunk toward zero."""
    size = int(codes.max()) + 1 if len(codes) else 0
    count = np.bincount(codes, minlength=size).astype(np.float64)
    center = np.bincount(codes, months, size) / np.maximum(count, 1)
    offset = months - center[codes]
    level = np.bincount(codes, residual, size) / (count + prior)
    spread = np.bincount(codes, offset**2, size)
    trend = np.bincount(codes, offset * (residual - level[codes]), size) / (spread + trend_prior)
    return Levels(level=level, trend=trend, center=center)


@dataclass(frozen=True, slots=True)
class Regression:
    design: Design
    beta: FloatArray
    states: Levels
    zips: Levels

    def predict(self, homes: Homes) -> FloatArray:
        return (
            _times(_columns(homes, self.design), self.beta)
            + self.states.of(homes.state, homes.month)
            + self.zips.of(homes.zip_code, homes.month)
        )


def _regression(sales: Homes, y: FloatArray, params: Params, rounds: int = 4) -> Regression:
    """Backfit the ridge regression and the state and ZIP levels, a few rounds."""
    design = _design_of(sales, params)
    x = _columns(sales, design)
    penalty = np.full(x.shape[1], params.ridge)
    penalty[0] = 0.0
    local = np.zeros(len(y))
    states = zips = _NO_LEVELS
    beta: FloatArray = np.zeros(x.shape[1])
    # The first fit only sets the Huber weights: a systematic sample of 200,000 rows is
    # as good for that and saves building one full Gram matrix at a million sales.
    weight = np.zeros(len(y))
    weight[:: max(1, len(y) // 200_000)] = 1.0
    gram = _gram(x, weight, penalty)
    for round_ in range(rounds):
        beta = np.asarray(np.linalg.solve(gram, _xt(x, weight * (y - local))), dtype=np.float64)
        base = _times(x, beta)
        if round_ == 0:
            # Huber weights once, from the first fit: odd sales (a family sale, a
            # partial one) pull the features less; the Gram matrix is built twice only.
            weight = np.minimum(1.0, params.huber / np.maximum(np.abs(y - base), 1e-9))
            gram = _gram(x, weight, penalty)
        states = _levels(sales.state, sales.month, y - base - zips.of(sales.zip_code, sales.month),
                         params.zip_prior, params.trend_prior)  # fmt: skip
        state_part = states.of(sales.state, sales.month)
        zips = _levels(sales.zip_code, sales.month, y - base - state_part, params.zip_prior,
                       params.trend_prior)  # fmt: skip
        local = state_part + zips.of(sales.zip_code, sales.month)
    return Regression(design=design, beta=beta, states=states, zips=zips)


# -- comparables --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Neighbours:
    """Per subject, its comparables (indices into the training sales, -1 for none), their
    dissimilarity and distance in miles (NaN unknown), nearest first."""

    index: IntArray
    dissimilarity: FloatArray
    miles: FloatArray


_CHUNK = 2_000_000
"""Subject x candidate pairs computed at once: bounds memory (a few arrays of this size)."""


def _neighbours(subjects: Homes, sales: Homes, params: Params) -> Neighbours:
    """The K most similar training sales in each subject's market, by brute force per market.

    Markets are small (a ZIP code), so each is a dense subjects x sales block.
    """
    k = params.neighbours
    n = len(subjects)
    index = np.full((n, k), -1, dtype=np.int64)
    dissimilarity = np.full((n, k), np.inf)
    miles = np.full((n, k), np.nan)
    left, right = _scaled(subjects, params), _scaled(sales, params)
    sale_order = np.argsort(sales.market, kind="stable")
    sale_markets = sales.market[sale_order]
    subject_order = np.argsort(subjects.market, kind="stable")
    bounds = np.flatnonzero(np.diff(subjects.market[subject_order])) + 1
    for group in np.split(subject_order, bounds):
        if not len(group):
            continue
        market = subjects.market[group[0]]
        lo, hi = np.searchsorted(sale_markets, [market, market + 1])
        candidates = sale_order[lo:hi]
        if not len(candidates):
            continue
        take = min(k, len(candidates))
        step = max(1, _CHUNK // len(candidates))
        for at in range(0, len(group), step):
            rows = group[at : at + step]
            d = _dissimilarity(left, rows, right, candidates, subjects.kind, sales.kind, params)
            if take < len(candidates):
                nearest = np.argpartition(d, take - 1, axis=1)[:, :take]
            else:
                nearest = np.broadcast_to(np.arange(take), (len(rows), take))
            picked = np.take_along_axis(d, nearest, axis=1)
            order = np.argsort(picked, axis=1, kind="stable")
            chosen = candidates[np.take_along_axis(nearest, order, axis=1)]
            index[rows, :take] = chosen
            dissimilarity[rows, :take] = np.take_along_axis(picked, order, axis=1)
            miles[rows, :take] = _miles(subjects, rows, sales, chosen)
    return Neighbours(index=index, dissimilarity=dissimilarity, miles=miles)


def _scaled(homes: Homes, params: Params) -> FloatArray:
    """Columns whose differences make the dissimilarity: each divided by its scale.

    North and east are in miles (east at latitude 40; a market spans a few miles, where
    the error is small), then divided by the distance scale.
    """
    return np.column_stack([
        homes.latitude * 69.05 / params.miles,
        homes.longitude * 69.17 * math.cos(math.radians(40.0)) / params.miles,
        np.log(np.fmax(homes.living_area, 1.0)) / params.log_area,
        homes.year_built / params.years_built,
        homes.bedrooms / params.rooms,
        homes.bathrooms / params.rooms,
        np.log(np.fmax(homes.lot_size, 1.0)) / params.log_lot,
        homes.month / params.months,
    ])  # fmt: skip


_UNKNOWN = (0.0, 0.0, 0.25, 0.25, 0.25, 0.25, 0.25, 0.0)
"""A term's value when a side does not know it: nothing for place (the market is near
enough), a quarter of a scale unit for a feature."""


def _dissimilarity(
    left: FloatArray,
    rows: IntArray,
    right: FloatArray,
    candidates: IntArray,
    left_kind: IntArray,
    right_kind: IntArray,
    params: Params,
) -> FloatArray:
    """Squared scaled differences summed over `_scaled`'s columns, plus the type penalty."""
    a, b = left[rows], right[candidates]
    d = np.multiply(left_kind[rows][:, None] != right_kind[candidates][None, :], params.kind)
    for j, unknown in enumerate(_UNKNOWN):
        term = np.subtract(a[:, j, None], b[None, :, j])
        np.square(term, out=term)
        if np.isnan(a[:, j]).any() or np.isnan(b[:, j]).any():
            np.nan_to_num(term, copy=False, nan=unknown)
        d += term
    result: FloatArray = d
    return result


def _miles(subjects: Homes, rows: IntArray, sales: Homes, chosen: IntArray) -> FloatArray:
    """Miles between each subject and its chosen comparables; NaN without coordinates."""
    lat = subjects.latitude[rows][:, None]
    north = (lat - sales.latitude[chosen]) * 69.05
    east = (subjects.longitude[rows][:, None] - sales.longitude[chosen]) * 69.17
    distance: FloatArray = np.sqrt(north**2 + (east * np.cos(np.radians(lat))) ** 2)
    return distance


def _weights(dissimilarity: FloatArray) -> FloatArray:
    """A comparable's weight: 1 for a twin, falling with dissimilarity; 0 for none."""
    return np.where(np.isfinite(dissimilarity), np.exp(-0.5 * dissimilarity), 0.0)


# -- fitting and predicting ---------------------------------------------------------------


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
    regression = _regression(sales, y, params)
    return Core(params, regression, sales, y - regression.predict(sales))


def _point(core: Core, subjects: Homes) -> Point:
    base = core.regression.predict(subjects)
    near = _neighbours(subjects, core.sales, core.params)
    weights = _weights(near.dissimilarity)
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
    """Per market code: mean absolute out-of-fold error, shrunk toward all markets', relative
    to all markets'."""
    edges: FloatArray
    low: FloatArray
    high: FloatArray
    errors: int
    """Out-of-fold errors the quantiles come from."""

    def bounds(self, spread: FloatArray, market: IntArray) -> tuple[FloatArray, FloatArray]:
        """Log offsets of the interval's ends from the estimate."""
        bins = np.searchsorted(self.edges, spread)
        if not len(self.scale):  # too few sales to measure: the fixed interval everywhere
            return np.full(len(spread), self.low[0]), np.full(len(spread), self.high[0])
        known = market < len(self.scale)
        scale = np.where(known, self.scale[np.where(known, market, 0)], 1.0)
        return self.low[bins] * scale, self.high[bins] * scale


@dataclass(frozen=True, slots=True)
class Model:
    core: Core
    calibration: Calibration


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
    return Model(_core(sales, log_price, params), _calibrate(sales, log_price, params))


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


def _calibrate(sales: Homes, log_price: FloatArray, params: Params) -> Calibration:
    positions, errors, spreads = out_of_fold(sales, log_price, params)
    tail = (1 - params.coverage) / 2
    if len(errors) < 20:
        # Too few sales to measure: a wide fixed interval (+-35 %), honest about knowing little.
        return Calibration(np.zeros(0), np.zeros(0), np.array([-0.35]), np.array([0.35]),
                           len(errors))  # fmt: skip
    market = sales.market[positions]
    size = np.abs(errors)
    overall = float(size.mean())
    count = np.bincount(market)
    scale = (np.bincount(market, size) + params.market_prior * overall) / (
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
    return Calibration(scale, edges, low, high, len(units))


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
        point = _point(model.core, subjects.take(rows))
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


# -- building Homes from columns -------------------------------------------------------------


@dataclass(slots=True)
class Vocabulary:
    """Codes for strings (ZIP codes, states, towns), first seen first."""

    codes: dict[str, int] = field(default_factory=dict)

    def encode(self, values: Sequence[str]) -> IntArray:
        codes = self.codes
        return np.fromiter(
            (codes.setdefault(v, len(codes)) for v in values), dtype=np.int64, count=len(values)
        )


def floats(values: Sequence[float | int | None]) -> FloatArray:
    """A float column from values that may be None (NaN)."""
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def kind_codes(values: Sequence[str | None]) -> IntArray:
    """Property type codes (KINDS); -1 for unknown."""
    lookup = {kind: code for code, kind in enumerate(KINDS)}
    return np.fromiter((lookup.get(v, -1) if v else -1 for v in values), dtype=np.int64,
                       count=len(values))  # fmt: skip

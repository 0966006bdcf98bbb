"""The valuation model's first step: a hedonic regression of log price.

log price = features (living area, lot, bedrooms, bathrooms, year built, property type, and
those of EXTRAS the training homes have) + a national price curve over time + a state
level and trend + a ZIP level and trend. The
features are fitted by ridge least squares; the state and ZIP terms by shrunken means and
slopes of what the rest leaves (backfitting), so a ZIP with few sales leans on its state,
and a state with few on the nation.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
import numpy.typing as npt

from propdata.valuation.homes import EXTRAS, LAND, Float32Array, FloatArray, Homes, IntArray, Params

# -- features ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Design:
    """How features become regression columns: the fill values learnt from training sales."""

    fills: FloatArray
    """Median of log lot, bedrooms, bathrooms, year built, then of each of EXTRAS (for
    unknowns). A design of four fills (a model stored before EXTRAS) has no EXTRAS terms."""
    knots: FloatArray


def _design_of(sales: Homes, params: Params) -> Design:
    lot = np.log(np.clip(sales.lot_size, 100, 1e8))
    fills = np.array([
        _median(lot), _median(sales.bedrooms), _median(sales.bathrooms),
        _median(sales.year_built),
        *(_median(sales.extras[:, j], np.nan) for j in range(len(EXTRAS))),
    ])  # fmt: skip
    start, end = float(sales.month.min()), float(sales.month.max())
    knots = np.arange(start + params.time_knots, end, params.time_knots)
    return Design(fills=fills, knots=knots)


def _median(values: FloatArray, none: float = 0.0) -> float:
    known = values[~np.isnan(values)]
    return float(np.median(known)) if len(known) else none


_BASE_FILLS = 4
"""Fills of the features every home may have (lot, bedrooms, bathrooms, year built)."""
Term = Callable[[FloatArray], FloatArray]
TERMS: dict[str, tuple[Term, ...]] = {
    "stories": (lambda v: np.clip(v, 1, 3) - 1.0,),
    "garage_spaces": (lambda v: np.clip(v, 0, 4) / 2.0,),
    "basement_finished_area": (lambda v: np.clip(v, 0, 3_000) / 1_000.0,),
    "fireplaces": (lambda v: np.clip(v, 0, 3),),
    "overall_quality": (lambda v: (v - 6.0) / 2.0, lambda v: ((v - 6.0) / 2.0) ** 2),
    "overall_condition": (lambda v: (v - 5.0) / 2.0, lambda v: ((v - 5.0) / 2.0) ** 2),
}
"""The regression columns of each of EXTRAS it uses (its value, the training median where
unknown), each with an indicator of unknown."""


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
    for j, fill in enumerate(design.fills[_BASE_FILLS:].tolist()):
        # No column for a field no training home has (fill NaN): it would be constant.
        if EXTRAS[j] in TERMS and not math.isnan(fill):
            values = homes.extras[:, j]
            known = ~np.isnan(values)
            filled = np.where(known, values, fill)
            columns += [partial(lambda f, v: f(v), f, filled) for f in TERMS[EXTRAS[j]]]
            columns.append(partial(np.logical_not, known))
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
    """X beta, block by block in double precision.

    Each row's sum is numpy's reduction of that row alone, not a BLAS product whose kernel
    (and so the last bits of a row's result) may change with the number of rows: a home
    gets the same value whether it is valued alone (a load) or with the whole store.
    """
    out = np.empty(len(x))
    for at in range(0, len(x), _ROWS):
        out[at : at + _ROWS] = (x[at : at + _ROWS].astype(np.float64) * beta).sum(axis=1)
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


def fit_regression(sales: Homes, y: FloatArray, params: Params, rounds: int = 4) -> Regression:
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

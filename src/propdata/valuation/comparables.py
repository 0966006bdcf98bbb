"""The valuation model's comparable sales: the K training sales most like each subject.

Comparables come from the subject's market (its ZIP code) and are the nearest in place,
size, age, rooms, type and date; each gets a weight that falls with its dissimilarity.
How their residuals correct the regression is `model`'s step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from propdata.valuation.homes import FloatArray, Homes, IntArray, Params


@dataclass(frozen=True, slots=True)
class Neighbours:
    """Per subject, its comparables (indices into the training sales, -1 for none), their
    dissimilarity and distance in miles (NaN unknown), nearest first."""

    index: IntArray
    dissimilarity: FloatArray
    miles: FloatArray


_CHUNK = 2_000_000
"""Subject x candidate pairs computed at once: bounds memory (a few arrays of this size)."""


def neighbours(subjects: Homes, sales: Homes, params: Params) -> Neighbours:
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


def weights(dissimilarity: FloatArray) -> FloatArray:
    """A comparable's weight: 1 for a twin, falling with dissimilarity; 0 for none."""
    return np.where(np.isfinite(dissimilarity), np.exp(-0.5 * dissimilarity), 0.0)

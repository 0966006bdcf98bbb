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
_FEW = 8
"""Subjects a market at most, on average, for them all to be valued at once (`_sparse`)."""


def neighbours(subjects: Homes, sales: Homes, params: Params) -> Neighbours:
    """The K most similar training sales in each subject's market: the first K by
    dissimilarity, ties by the sales' order.

    Markets are small (a ZIP code). Subjects many to a market (a rebuild values every home)
    are valued a dense subjects x sales block a market; subjects few to a market (a page of
    a load over hundreds of ZIP codes) all at once, as one list of (subject, sale) pairs
    (`_sparse`), where a market at a time was mostly the cost of numpy's calls. Both give
    the same comparables, bit for bit.
    """
    k = params.neighbours
    n = len(subjects)
    index = np.full((n, k), -1, dtype=np.int64)
    dissimilarity = np.full((n, k), np.inf)
    miles = np.full((n, k), np.nan)
    left, right = _scaled(subjects, params), _scaled(sales, params)
    sale_order = np.argsort(sales.market, kind="stable")
    sale_markets = sales.market[sale_order]
    lo = np.searchsorted(sale_markets, subjects.market, side="left")
    hi = np.searchsorted(sale_markets, subjects.market, side="right")
    if n <= _FEW * len(np.unique(subjects.market)):
        step = max(1, _CHUNK // max(1, int((hi - lo).max(initial=0))))  # rows of `_sparse`
        for at in range(0, n, step):
            part = np.arange(at, min(n, at + step))
            _sparse(subjects, part, sales, params, left, right, sale_order, lo, hi,
                    (index, dissimilarity, miles))  # fmt: skip
        return Neighbours(index=index, dissimilarity=dissimilarity, miles=miles)
    subject_order = np.argsort(subjects.market, kind="stable")
    bounds = np.flatnonzero(np.diff(subjects.market[subject_order])) + 1
    for group in np.split(subject_order, bounds):
        if not len(group):
            continue
        candidates = sale_order[lo[group[0]] : hi[group[0]]]
        if not len(candidates):
            continue
        take = min(k, len(candidates))
        step = max(1, _CHUNK // len(candidates))
        for at in range(0, len(group), step):
            rows = group[at : at + step]
            d = _dissimilarity(left, rows, right, candidates, subjects.kind, sales.kind, params)
            nearest = _first(d, take)
            picked = np.take_along_axis(d, nearest, axis=1)
            order = np.argsort(picked, axis=1, kind="stable")
            chosen = candidates[np.take_along_axis(nearest, order, axis=1)]
            index[rows, :take] = chosen
            dissimilarity[rows, :take] = np.take_along_axis(picked, order, axis=1)
            miles[rows, :take] = _miles(subjects, rows, sales, chosen)
    return Neighbours(index=index, dissimilarity=dissimilarity, miles=miles)


def _first(d: FloatArray, take: int) -> IntArray:
    """Per row of `d`, the columns of its `take` smallest values, ties by column, in column
    order: `argpartition` finds them, and a row whose `take`-th value ties with a column
    left out is sorted whole."""
    if take >= d.shape[1]:
        return np.broadcast_to(np.arange(d.shape[1]), d.shape).copy()
    nearest = np.sort(np.argpartition(d, take - 1, axis=1)[:, :take], axis=1)
    picked = np.take_along_axis(d, nearest, axis=1)
    edge = picked.max(axis=1, keepdims=True)
    left_out = np.count_nonzero(d == edge, axis=1) > np.count_nonzero(picked == edge, axis=1)
    left_out &= np.isfinite(edge[:, 0])  # inf: no sale there (`_sparse`'s padding)
    for row in np.flatnonzero(left_out):
        nearest[row] = np.sort(np.argsort(d[row], kind="stable")[:take])
    return nearest


def _sparse(
    subjects: Homes,
    part: IntArray,
    sales: Homes,
    params: Params,
    left: FloatArray,
    right: FloatArray,
    sale_order: IntArray,
    lo: IntArray,
    hi: IntArray,
    out: tuple[IntArray, FloatArray, FloatArray],
) -> None:
    """`neighbours` of every subject at once: each (subject, candidate) pair of its market
    in one list, their dissimilarities summed term by term as `_dissimilarity` sums them,
    then chosen as a market's block is (`_first`, ties by the candidate's place)."""
    index, dissimilarity, miles = out
    counts = hi[part] - lo[part]
    pairs = int(counts.sum())
    if not pairs:
        return
    subject = np.repeat(part, counts)
    starts = np.cumsum(counts) - counts
    place = np.arange(pairs) - np.repeat(starts - lo[part], counts)  # in sale_order
    sale = sale_order[place]
    d = np.multiply(subjects.kind[subject] != sales.kind[sale], params.kind)
    for j, unknown in enumerate(_UNKNOWN):
        term = np.subtract(left[subject, j], right[sale, j])
        np.square(term, out=term)
        np.copyto(term, unknown, where=np.isnan(term))
        d += term
    # Each subject's pairs as a row, in its market's order, padded with inf (no sale): a
    # market has a few hundred sales, so the rows are as wide and the selection is _first's.
    column = np.arange(pairs) - np.repeat(starts, counts)
    block = np.full((len(part), int(counts.max())), np.inf)
    block[np.repeat(np.arange(len(part)), counts), column] = d
    take = min(params.neighbours, block.shape[1])
    nearest = _first(block, take)
    picked = np.take_along_axis(block, nearest, axis=1)
    order = np.argsort(picked, axis=1, kind="stable")
    nearest = np.take_along_axis(nearest, order, axis=1)
    picked = np.take_along_axis(picked, order, axis=1)
    found, columns = np.nonzero(np.isfinite(picked))
    rows = part[found]
    chosen = sale_order[lo[rows] + nearest[found, columns]]
    index[rows, columns] = chosen
    dissimilarity[rows, columns] = picked[found, columns]
    lat = subjects.latitude[rows]
    north = (lat - sales.latitude[chosen]) * 69.05
    east = (subjects.longitude[rows] - sales.longitude[chosen]) * 69.17
    miles[rows, columns] = np.sqrt(north**2 + (east * np.cos(np.radians(lat))) ** 2)


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
            np.copyto(term, unknown, where=np.isnan(term))
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

"""The fold's reductions against their one-value-at-a-time definitions (`median`, `mean_int`).

tests/markets/test_builder.py holds the whole fold to docs/markets.md; these hold the array
reductions to the plain functions on the values where the arrays take another path: values
too wide to pack beside their group (the indirect sort), and means that land on or next to a
half.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from propdata.markets.tally import _half_up, _round_half_up, _Values, mean_int, median

MAX_NUMBER = 2**53 - 1
"""The largest price the loader stores."""


def grouped(rng: random.Random, groups: int, top: int) -> dict[int, list[int]]:
    return {g: [rng.randrange(top) for _ in range(rng.randrange(1, 6))]
            for g in rng.sample(range(groups), min(groups, 200))}  # fmt: skip


@pytest.mark.parametrize(("groups", "top"), [(50, 10**6), (400_000, 10**6), (400_000, MAX_NUMBER)])
def test_medians_equal_the_median_of_each_group(groups: int, top: int) -> None:
    """Small groups and values pack into one integer; 400,000 groups (6,667 ZIP codes times
    60 months) beside values up to the largest stored price do not, and sort indirectly."""
    rng = random.Random(groups + top)
    values = grouped(rng, groups, top)
    found = _Values(np.int64)
    for g, vs in values.items():
        found.add(np.full(len(vs), g, np.int64), np.array(vs, np.int64))
    medians = found.medians(groups)
    assert {g: medians[g] for g in values} == {g: median(vs) for g, vs in values.items()}
    assert sum(m is not None for m in medians) == len(values)


def test_means_equal_the_mean_of_each_group() -> None:
    rng = random.Random(5)
    values = {g: [rng.randrange(1, 10**7) / rng.randrange(1, 5_000) for _ in range(rng.randrange(1, 9))]
              for g in range(300)}  # fmt: skip
    values[300] = [0.5, 1.5, 2.5]  # a mean of exactly 1.5
    found = _Values(np.float64)
    for g, vs in values.items():
        found.add(np.full(len(vs), g, np.int64), np.array(vs))
    means = found.means(302)
    assert means[:301] == [mean_int(values[g]) for g in range(301)]
    assert means[301] is None


def test_rounding_half_up_agrees_with_the_decimal_form() -> None:
    """On the half, a double's width either side of it, and a spread of ordinary values."""
    halves = [k + 0.5 for k in (0, 1, 2, 99, 10**6, 2**40)]
    near = [math.nextafter(x, d) for x in halves for d in (0.0, math.inf)]
    rng = random.Random(7)
    spread = [rng.randrange(10**9) / rng.randrange(1, 10**4) for _ in range(2_000)]
    values = [0.0, *halves, *near, *spread]
    assert _round_half_up(np.array(values)) == [int(_half_up(v, 0)) for v in values]

"""The fold's reductions against their one-value-at-a-time definitions (`median`, `mean_int`).

tests/markets/test_builder.py holds the whole fold to docs/markets.md; these hold the array
reductions to the plain functions on the values where the arrays take another path: values
too wide to pack beside their group (the indirect sort), means summed a chunk of values at a
time, and means that land on or next to a half.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from propdata.markets import tally
from propdata.markets.tally import _half_up, _round_half_up, _Values, mean_int, median

MAX_NUMBER = 2**53 - 1
"""The largest price the loader stores."""


def grouped(rng: random.Random, groups: int, tops: list[int]) -> dict[int, list[int]]:
    """Up to 200 groups of 1 to 5 values, each group's values below one of `tops`."""
    return {g: [rng.randrange(top) for _ in range(rng.randrange(1, 6))]
            for g in rng.sample(range(groups), min(groups, 200)) for top in [rng.choice(tops)]}  # fmt: skip


@pytest.mark.parametrize(
    ("groups", "tops"),
    [
        (50, [10**6]),
        (6_000_000, [10**6]),
        (6_000_000, [MAX_NUMBER]),
        (6_000_000, [10**6, MAX_NUMBER]),
    ],
)
def test_medians_equal_the_median_of_each_group(groups: int, tops: list[int]) -> None:
    """Values below 2**40 pack beside their group (up to every month of 100,000 ZIP codes);
    past it, up to the largest stored price, they are sorted on two keys, and a mix of both
    is sorted on two keys together."""
    rng = random.Random(groups + len(tops) + tops[-1])
    values = grouped(rng, groups, tops)
    found = _Values(np.int64)
    for g, vs in values.items():
        found.add(np.full(len(vs), g, np.int64), np.array(vs, np.int64))
    medians = found.medians(groups)
    assert {g: medians[g] for g in values} == {g: median(vs) for g, vs in values.items()}
    assert sum(m is not None for m in medians) == len(values)


@pytest.mark.parametrize("chunk", [7, 1 << 20])
def test_means_equal_the_mean_of_each_group(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Summed a chunk of values at a time: with chunks of 7, runs end and begin across
    chunks, and one run of 20 values is longer than a chunk."""
    monkeypatch.setattr(tally, "_CHUNK", chunk)
    rng = random.Random(5)
    values = {g: [rng.randrange(1, 10**7) / rng.randrange(1, 5_000) for _ in range(rng.randrange(1, 9))]
              for g in range(300)}  # fmt: skip
    values[7] = [rng.randrange(1, 10**7) / 3 for _ in range(20)]
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

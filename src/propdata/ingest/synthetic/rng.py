"""The generator's random source: one Mersenne Twister per seed, with cheap draws."""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


class Rng(random.Random):
    """random.Random with cheap draws (one `random()` each, no argument checks).

    The stdlib's randint/choice/choices cost 0.3-1 µs a call; a million records make some
    forty million draws. The stream is still the Mersenne Twister of the seed.
    """

    def int_between(self, a: int, b: int) -> int:
        """An integer in [a, b]."""
        return a + int(self.random() * (b - a + 1))

    def pick(self, seq: Sequence[T]) -> T:
        return seq[int(self.random() * len(seq))]

    def between(self, a: float, b: float) -> float:
        return a + (b - a) * self.random()

    def lognormal(self, mu: float, sigma: float) -> float:
        """exp(N(mu, sigma)); `gauss` is about twice as fast as `lognormvariate`'s sampler."""
        return math.exp(self.gauss(mu, sigma))

    def weighted(self, values: Sequence[T], cumulative: Sequence[float]) -> T:
        """One of `values`, drawn with the running totals `cumulative`."""
        return values[bisect.bisect(cumulative, self.random() * cumulative[-1])]


def step(x: float, unit: int) -> int:
    """Round a non-negative amount to a whole multiple of `unit`."""
    return int(x / unit + 0.5) * unit

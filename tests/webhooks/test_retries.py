"""The retry schedule: ten attempts, each wait within ±20 % of its step, Retry-After honoured
when longer and capped at 24 hours."""

from __future__ import annotations

import random

import pytest

from propdata.webhooks.retries import ATTEMPTS, DELAYS, Retries, retry_after

NOMINAL = [5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]


def test_the_schedule_is_the_contracts() -> None:
    assert list(DELAYS) == NOMINAL
    assert ATTEMPTS == 10


@pytest.mark.parametrize("position", [0.0, 0.5, 0.999999])
def test_each_wait_is_within_twenty_percent(position: float) -> None:
    schedule = Retries(random=lambda: position)
    for attempts, nominal in enumerate(NOMINAL, 1):
        wait = schedule.delay(attempts)
        assert wait is not None
        assert nominal * 0.8 <= wait <= nominal * 1.2
    assert schedule.delay(10) is None  # the tenth attempt was the last


def test_the_jitter_spreads_over_the_band() -> None:
    schedule = Retries(random=random.Random(3).random)
    waits = [schedule.delay(1) for _ in range(2000)]
    assert min(w for w in waits if w is not None) < 4.1
    assert max(w for w in waits if w is not None) > 5.9


def test_retry_after_is_honoured_when_longer_and_capped_at_a_day() -> None:
    schedule = Retries(random=lambda: 0.5)
    assert schedule.delay(1, retry_after=600) == 600  # longer than 5 s: honoured
    assert schedule.delay(3, retry_after=60) == 1800  # shorter than the step: the step
    assert schedule.delay(2, retry_after=10 * 86400) == 86400  # at most 24 h
    assert schedule.delay(10, retry_after=5) is None


def test_retry_after_reads_seconds_and_dates() -> None:
    now = 1_800_000_000.0
    assert retry_after("120", now) == 120
    assert retry_after("Fri, 15 Jan 2027 08:10:00 GMT", now) == 600
    assert retry_after(None, now) is None
    assert retry_after("soon", now) is None

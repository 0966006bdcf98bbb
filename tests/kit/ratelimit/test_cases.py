"""One table of cases that every limiter must answer identically: SQLite, Redis, fallback.

Each case is a script of calls at given seconds after an hour's start, with what each call
must answer: the sliding windows to the microsecond, refunds, hourly counts, the failed-
request guard and attempt guards. The `rig` fixture runs every case on every kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from propdata.kit.ratelimit.base import Attempts, Decision
from tests.kit.ratelimit.rig import Rig, forget_names

START = 1_800_000_000  # the FakeClock's start, an hour's first second
H = 3600


@dataclass(frozen=True)
class Admit:
    per_minute: int
    daily: int | None = None
    failures: int | None = None


@dataclass(frozen=True)
class Usage:
    per_minute: int
    daily: int | None = None
    failures: int | None = None


@dataclass(frozen=True)
class Refund:
    admission: int
    """Which admission of the case (0 = the first allowed one) to take back."""
    per_minute: int
    daily: int | None = None


@dataclass(frozen=True)
class Fail:
    pass


@dataclass(frozen=True)
class Hourly:
    since: float
    """Seconds after START."""


@dataclass(frozen=True)
class Attempt:
    limit: int
    window: float
    record: bool = True


@dataclass(frozen=True)
class Forget:
    pass


Call = Admit | Usage | Refund | Fail | Hourly | Attempt | Forget


def ok(minute: int, day: int | None = None) -> tuple[Any, ...]:
    """An allowed decision: the minute's and the day's used counts."""
    return (True, minute, day, None, None)


def refused(minute: int, day: int | None, exceeded: str, retry_after: int) -> tuple[Any, ...]:
    return (False, minute, day, exceeded, retry_after)


def hours(**counts: int) -> dict[int, int]:
    """Hourly counts by hour after START: hours(h0=2, h1=1)."""
    return {START + int(name[1:]) * H: n for name, n in counts.items()}


CASES: dict[str, list[tuple[float, Call, Any]]] = {
    "the minute is (now - 60 s, now]": [
        (0, Admit(2), ok(1)),
        (10, Admit(2), ok(2)),
        (59.5, Admit(2), refused(2, None, "minute", 1)),
        (59.999999, Admit(2), refused(2, None, "minute", 1)),
        (60, Admit(2), ok(2)),  # the entry at 0 is exactly 60 s old: out
        (60, Admit(2), refused(2, None, "minute", 10)),
    ],
    "the day rolls": [
        (0, Admit(10, 3), ok(1, 1)),
        (100, Admit(10, 3), ok(1, 2)),
        (200, Admit(10, 3), ok(1, 3)),
        (300, Admit(10, 3), refused(0, 3, "day", 86_100)),
        (86_399.5, Admit(10, 3), refused(0, 3, "day", 1)),
        (86_400, Admit(10, 3), ok(1, 3)),
    ],
    "both windows full: the longer wait wins": [
        *((0, Admit(3, 3), ok(n + 1, n + 1)) for n in range(3)),
        (0, Admit(3, 3), refused(3, 3, "day", 86_400)),
    ],
    "a lower limit waits for enough entries to leave": [
        *((n, Admit(100, 1000), ok(n + 1, n + 1)) for n in range(4)),
        (3, Admit(2, 1000), refused(4, 4, "minute", 59)),  # the third oldest must leave
        (3, Admit(100, 1000), ok(5, 5)),
    ],
    "a refund takes back exactly its entry, once": [
        (0, Admit(10, 100), ok(1, 1)),
        (2, Admit(10, 100), ok(2, 2)),
        (4, Admit(10, 100), ok(3, 3)),
        (5, Refund(1, 10, 100), ok(2, 2)),
        (5, Refund(1, 10, 100), ok(2, 2)),
        (5, Refund(0, 10, 100), ok(1, 1)),
        (5, Hourly(0), hours(h0=1)),
    ],
    "same microsecond, apart": [
        (0, Admit(5), ok(1)),
        (0, Admit(5), ok(2)),
        (0, Admit(5), ok(3)),
        (0, Refund(1, 5), ok(2)),
        (0, Usage(5), ok(2)),
    ],
    "refused and usage are never recorded": [
        (0, Admit(1, 10), ok(1, 1)),
        (1, Admit(1, 10), refused(1, 1, "minute", 59)),
        (2, Usage(1, 10), ok(1, 1)),
        (60, Admit(1, 10), ok(1, 2)),
        (60, Hourly(0), hours(h0=2)),
    ],
    "a refund past the longest window kept changes nothing": [
        (0, Admit(10), ok(1)),
        (61, Refund(0, 10), ok(0)),
        (61, Hourly(0), hours(h0=1)),
    ],
    "hourly counts, a refund in an earlier hour": [
        (0, Admit(100, 1000), ok(1, 1)),
        (10, Admit(100, 1000), ok(2, 2)),
        (H - 1e-6, Admit(100, 1000), ok(1, 3)),
        (H, Admit(100, 1000), ok(2, 4)),
        (H + 1800, Admit(100, 1000), ok(1, 5)),
        (H + 1800, Hourly(0), hours(h0=3, h1=2)),
        (H + 1800, Hourly(H), hours(h1=2)),
        (H + 1801, Refund(0, 100, 1000), ok(1, 4)),
        (H + 1801, Hourly(0), hours(h0=2, h1=2)),
    ],
    "the failed-request guard": [
        (0, Fail(), None),
        (10, Fail(), None),
        (20, Fail(), None),
        (30, Admit(100, 1000, failures=4), ok(1, 1)),
        (30, Fail(), None),
        (30, Admit(100, 1000, failures=4), refused(1, 1, "failures", 30)),
        (30, Usage(100, 1000, failures=4), refused(1, 1, "failures", 30)),
        (30, Usage(100, 1000), ok(1, 1)),
        (60, Admit(100, 1000, failures=4), ok(2, 2)),  # the failure at 0 has left
    ],
    "an attempt guard": [
        (0, Attempt(3, 900), Attempts(True, 1, 3)),
        (10, Attempt(3, 900), Attempts(True, 2, 3)),
        (20, Attempt(3, 900), Attempts(True, 3, 3)),
        (30, Attempt(3, 900), Attempts(False, 3, 3, 870)),
        (30, Attempt(3, 900, record=False), Attempts(False, 3, 3, 870)),
        (30, Attempt(2, 900, record=False), Attempts(False, 3, 2, 880)),
        (900, Attempt(3, 900, record=False), Attempts(True, 2, 3)),
        (900, Attempt(3, 900), Attempts(True, 3, 3)),
    ],
    "forget takes back the newest attempt": [
        (0, Attempt(2, 60), Attempts(True, 1, 2)),
        (0, Attempt(2, 60), Attempts(True, 2, 2)),  # the same microsecond, apart
        (1, Attempt(2, 60), Attempts(False, 2, 2, 59)),
        (1, Forget(), None),
        (1, Attempt(2, 60), Attempts(True, 2, 2)),
        (59.5, Attempt(2, 60), Attempts(False, 2, 2, 1)),
    ],
}


def _summary(decision: Decision) -> tuple[Any, ...]:
    day = decision.day.used if decision.day is not None else None
    return (decision.allowed, decision.minute.used, day, decision.exceeded,
            decision.retry_after)  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
async def test_case(rig: Rig, case: str) -> None:
    limiter, key = rig.limiter, rig.key
    name = f"case:{key}"
    stamps: list[tuple[int, int]] = []
    try:
        for n, (at, call, expected) in enumerate(CASES[case]):
            rig.clock.now = START + at
            got: Any
            match call:
                case Admit(per_minute, daily, failures):
                    decision = await limiter.admit(key, per_minute, daily, failures)
                    if decision.stamp is not None:
                        stamps.append(decision.stamp)
                    got = _summary(decision)
                case Usage(per_minute, daily, failures):
                    got = _summary(await limiter.usage(key, per_minute, daily, failures))
                case Refund(admission, per_minute, daily):
                    got = _summary(await limiter.refund(key, stamps[admission], per_minute, daily))
                case Fail():
                    await limiter.fail(key)
                    got = None
                case Hourly(since):
                    got = await limiter.hourly(key, START + since)
                case Attempt(limit, window, record):
                    got = await limiter.attempt(name, limit, window, record)
                case Forget():
                    await limiter.forget(name)
                    got = None
            assert got == expected, (case, n, at, call)
    finally:
        if rig.kind == "redis":
            forget_names(name)

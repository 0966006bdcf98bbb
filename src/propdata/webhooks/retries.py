"""When a failed webhook delivery is attempted again (contract.md "Webhooks").

After the first attempt fails, the next comes after 5 s, then 5 min, 30 min, 2 h, 5 h, 10 h,
14 h, 20 h and 24 h, each ±20 %; a 429 or 503 whose Retry-After asks for longer is honoured,
up to 24 h. After the tenth attempt the delivery has failed for good.

    schedule = Retries(random=random.Random(7).random)
    schedule.delay(1)                      # about 5 s: the wait after the first attempt
    schedule.delay(1, retry_after=600)     # 600 s: the receiver asked for longer
    schedule.delay(10)                     # None: no eleventh attempt
"""

from __future__ import annotations

import email.utils
import random as _random
from collections.abc import Callable
from dataclasses import dataclass, field

DELAYS: tuple[float, ...] = (
    5.0,
    5 * 60.0,
    30 * 60.0,
    2 * 3600.0,
    5 * 3600.0,
    10 * 3600.0,
    14 * 3600.0,
    20 * 3600.0,
    24 * 3600.0,
)
"""Seconds before each attempt after the first."""
ATTEMPTS = len(DELAYS) + 1
"""Attempts a delivery gets in all."""
JITTER = 0.2
"""Each wait is drawn evenly from ±20 % of its nominal length, so endpoints that failed
together are not all tried again in the same second."""
LONGEST = 24 * 3600.0
"""Retry-After is honoured up to this many seconds."""


@dataclass(frozen=True, slots=True)
class Retries:
    random: Callable[[], float] = field(default=_random.random)
    """A number in [0, 1): the position inside the jitter band."""

    def delay(self, attempts: int, retry_after: float | None = None) -> float | None:
        """Seconds to wait after a failed attempt, `attempts` made so far (1 after the
        first); None when the delivery has had all its attempts."""
        if attempts >= ATTEMPTS:
            return None
        nominal = DELAYS[attempts - 1]
        wait = nominal * (1 - JITTER + 2 * JITTER * self.random())
        if retry_after is not None and retry_after > wait:
            wait = min(retry_after, LONGEST)
        return wait


def retry_after(value: str | None, now: float) -> float | None:
    """Seconds a Retry-After header asks for (delay seconds or an HTTP date); None when absent
    or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - now)

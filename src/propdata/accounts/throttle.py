"""Counted attempts (log-ins, sign-ups, mails) on the limiter's sliding logs, under names
of this store's own.

Two services sharing one Redis keep their attempts apart, and the store's secret makes the
stored digest unguessable from an email address.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from propdata.errors import TooManyAttempts
from propdata.kit import crypto
from propdata.kit.ratelimit.base import Attempts, Limiter


class Throttle:
    """Attempts counted against a limit per window, refused with 429 past it."""

    def __init__(self, limiter: Limiter, secret: Callable[[], Awaitable[str]]) -> None:
        self.limiter = limiter
        self._secret = secret

    async def _scoped(self, name: str) -> str:
        """A guard's name of this store's own."""
        return f"{crypto.token_hash(await self._secret())[:16]}:{name}"

    async def attempt(self, name: str, limit: int, window: float, record: bool) -> Attempts:
        """Count (when `record`) one attempt under `name`; whether it is allowed."""
        scoped = await self._scoped(name)
        return await self.limiter.attempt(scoped, limit, window, record=record)

    async def allow(self, name: str, limit: int, window: float, what: str) -> None:
        """Count one attempt under `name`, or refuse it with `TooManyAttempts` naming `what`."""
        attempt = await self.attempt(name, limit, window, record=True)
        if not attempt.allowed:
            wait = attempt.retry_after or 1
            raise TooManyAttempts(
                f"Too many {what}; try again in {_duration(wait)}.", retry_after=wait
            )

    async def forget(self, names: list[str]) -> None:
        """Give back the attempts counted under `names`."""
        for name in names:
            await self.limiter.forget(await self._scoped(name))


def _duration(seconds: int) -> str:
    if seconds < 90:
        return f"{seconds} seconds"
    minutes = (seconds + 59) // 60
    return f"{minutes} minutes"

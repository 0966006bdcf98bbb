"""Counted attempts (log-ins, sign-ups, mails) on the limiter's sliding logs, under names
of this store's own; and the management requests of an owner (`managed`).

Two services sharing one Redis keep their attempts apart, and the store's secret makes the
stored digest unguessable from an email address.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from propdata.accounts.schemas import ApiKey
from propdata.errors import RateLimitExceeded, TooManyAttempts
from propdata.kit import crypto
from propdata.kit.ratelimit.base import Attempts, Limiter

MANAGED_PER_MINUTE = 60
"""Requests managing saved searches and webhook endpoints an owner (an account, all its keys
and its portal pages together; a key without one alone) may make in any 60 s."""


async def managed(limiter: Limiter, key: ApiKey) -> None:
    """Count one request managing the saved searches or webhooks of the key's owner (the
    API's or a portal button's); 429 past MANAGED_PER_MINUTE in any 60 s."""
    tried = await limiter.attempt(f"manage:{key.owner}", MANAGED_PER_MINUTE, 60.0)
    if not tried.allowed:
        raise RateLimitExceeded(
            f"At most {MANAGED_PER_MINUTE} requests a minute may manage saved searches and"
            f" webhooks; retry after {tried.retry_after} seconds.",
            headers={"Retry-After": str(tried.retry_after)},
        )


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

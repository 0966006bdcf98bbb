"""Time passing: days on market grow and sales age out once a day, without a load."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass

from propdata.kit.db import StoreUnavailable, optimistic
from propdata.properties import lifecycle
from propdata.properties.repository import AgingRow, PropertyRepository

AGE_EVERY = 600.0
"""Seconds between a server's checks whether the day has turned (see `keep_aged`)."""

log = logging.getLogger("propdata")


async def age(repo: PropertyRepository, today: dt.date) -> Aged | None:
    """Bring the store to `today`, once a day for every worker and host: the days on
    market of every open listing, and the 180-day rule (recentlySold -> offMarket).

    Computed off the event loop from a read of the listed properties, written in one
    transaction that also claims the day (so only one process does it) and bumps the
    data version (so cached answers and search indexes follow). None when the store
    was already aged to `today`.
    """

    async def compute() -> Aged:
        rows = await repo.listed()
        return await asyncio.to_thread(_aged, rows, today)

    async def write(aged: Aged) -> Aged | None:
        if not await repo.take_aging_turn(today.isoformat()):
            return None
        if aged.days or aged.expired:
            await repo.set_days_on_market(aged.days)
            await repo.expire_sales(aged.expired)
            await repo.bump_data_version()
        return aged

    if await repo.aged_as_of() >= today.isoformat():
        return None
    return await optimistic(repo.db, repo.data_version, compute, write)


async def keep_aged(
    repo: PropertyRepository, today: Callable[[], dt.date], every: float = AGE_EVERY
) -> None:
    """Age the store now, then check again every `every` seconds (a server's task)."""
    while True:
        try:
            aged = await age(repo, today())
            if aged is not None:
                log.info("aged the store to %s: %d listings' days on market, %d sales"
                         " past 180 days", today(), len(aged.days), len(aged.expired))  # fmt: skip
        except StoreUnavailable as exc:
            log.warning("ageing the store waits for it: %s", exc)
        await asyncio.sleep(every)


@dataclass(frozen=True, slots=True)
class Aged:
    """What a day's ageing changes: (days, id) and (last_updated, id) rows."""

    days: list[tuple[int, str]]
    expired: list[tuple[str, str]]


def _aged(rows: list[AgingRow], today: dt.date) -> Aged:
    """The days on market of open listings as of `today`, and the sales past 180 days.

    A listing whose history has no listing event keeps the days it was loaded with.
    """
    days: list[tuple[int, str]] = []
    expired: list[tuple[str, str]] = []
    for row in rows:
        if row.status == "recentlySold":
            if lifecycle.expire(row.status, row.last_sale_date, today) == "offMarket":
                sale = dt.date.fromisoformat(str(row.last_sale_date))
                gone = sale + dt.timedelta(days=lifecycle.SOLD_EXPIRY_DAYS + 1)
                expired.append((f"{gone.isoformat()}T00:00:00Z", row.id))
        elif row.listing_date is not None:
            current = max(0, (today - dt.date.fromisoformat(row.listing_date)).days)
            if current != row.days_on_market:
                days.append((current, row.id))
    return Aged(days, expired)

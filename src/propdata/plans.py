"""The four plans, defined once: request limits, page sizes, prices and the events' limits
(saved searches, webhook endpoints, events a day, open event streams).

Everything else reads `PLANS`: the accounts store's `plans` table (upserted from it at every
migrate, so a changed limit reaches a store made earlier), the key and account services, the
portal's pages and the command line. A test holds the docs' plan tables to it.

    from propdata.plans import BY_NAME
    BY_NAME["pro"].max_page_size  # 250
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Plan:
    name: str
    """The name keys, the API and the command line use: `free`, `developer`, ..."""
    title: str
    """The name people read: `Free`, `Developer`, ..."""
    per_minute: int
    """Requests in any sliding 60 s."""
    daily: int | None
    """Requests in any rolling 24 h; None: unlimited."""
    default_page_size: int
    max_page_size: int
    price_usd: int | None
    """USD a month; None: priced by arrangement."""
    saved_searches: int
    """Saved searches an account may hold."""
    webhook_endpoints: int
    """Webhook endpoints an account may hold."""
    events_per_day: int | None
    """Events produced for an account in any rolling 24 h; None: unlimited."""
    event_streams: int
    """Event streams (GET /v1/events/stream) an account may hold open at once."""
    self_serve: bool
    """Whether a person may choose the plan on the dashboard (else an operator sets it)."""
    customisable: bool
    """Whether an operator may give a key on this plan limits of its own (stored on the key)."""
    exports: bool
    """Whether the plan's keys may list and download bulk exports (GET /v1/exports)."""


FREE = Plan(
    name="free", title="Free", per_minute=10, daily=100, default_page_size=10,
    max_page_size=25, price_usd=0, saved_searches=3, webhook_endpoints=1,
    events_per_day=1_000, event_streams=1, self_serve=True, customisable=False,
    exports=False,
)  # fmt: skip
DEVELOPER = Plan(
    name="developer", title="Developer", per_minute=100, daily=10_000, default_page_size=25,
    max_page_size=100, price_usd=49, saved_searches=25, webhook_endpoints=5,
    events_per_day=50_000, event_streams=5, self_serve=True, customisable=False,
    exports=False,
)  # fmt: skip
PRO = Plan(
    name="pro", title="Pro", per_minute=500, daily=100_000, default_page_size=50,
    max_page_size=250, price_usd=199, saved_searches=500, webhook_endpoints=25,
    events_per_day=1_000_000, event_streams=20, self_serve=True, customisable=False,
    exports=True,
)  # fmt: skip
ENTERPRISE = Plan(
    name="enterprise", title="Enterprise", per_minute=2_000, daily=None, default_page_size=100,
    max_page_size=1_000, price_usd=None, saved_searches=10_000, webhook_endpoints=100,
    events_per_day=None, event_streams=100, self_serve=False, customisable=True,
    exports=True,
)  # fmt: skip

OWNER_LIMITS: tuple[str, ...] = ("saved_searches", "webhook_endpoints", "events_per_day")
"""The limits an owner (a portal account, or a key without one) has as a whole, from the
highest plan among its active keys; an operator may set an Enterprise key's own. (Open event
streams, `event_streams`, are the owner's too, from that plan, but never a key's own.)"""

PLANS: tuple[Plan, ...] = (FREE, DEVELOPER, PRO, ENTERPRISE)
"""Every plan, cheapest first."""
BY_NAME: dict[str, Plan] = {plan.name: plan for plan in PLANS}
NAMES: tuple[str, ...] = tuple(BY_NAME)
SELF_SERVE: tuple[str, ...] = tuple(plan.name for plan in PLANS if plan.self_serve)


def highest(names: Iterable[str]) -> Plan:
    """The dearest of these plans (in `PLANS` order); Free when there are none."""
    held = set(names)
    return next((plan for plan in reversed(PLANS) if plan.name in held), FREE)


def raising(limit: str, beyond: int, above: Plan) -> Plan | None:
    """The cheapest plan dearer than `above` whose `limit` (a Plan field: saved_searches, ...)
    is above `beyond` (None: unlimited counts as above all), or None when no plan's is."""
    for plan in PLANS[PLANS.index(BY_NAME[above.name]) + 1 :]:
        value = getattr(plan, limit)
        if value is None or value > beyond:
            return plan
    return None


def first_with(feature: str) -> Plan:
    """The cheapest plan that has `feature` (a boolean Plan field: `exports`)."""
    return next(plan for plan in PLANS if getattr(plan, feature))


def choice(names: tuple[str, ...], *, titles: bool = False) -> str:
    """Name plans as a choice in prose: "free, developer, pro or enterprise"."""
    words = [BY_NAME[name].title if titles else name for name in names]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"

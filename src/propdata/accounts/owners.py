"""Owners: who holds saved searches, webhook endpoints and events, and the 403 of an owner
at one of its plan's owner limits (`plans.OWNER_LIMITS`)."""

from __future__ import annotations

from propdata.accounts.schemas import ApiKey
from propdata.errors import PlanLimitReached
from propdata.plans import Plan, raising


def owner_of(key: ApiKey) -> str:
    """Who owns the saved searches, webhook endpoints and events a key sees: the portal
    account that holds it (every active key of the account sees the same), else the key
    (`ApiKey.owner`)."""
    return key.owner


def plan_limit(plan: Plan, limit: str, one: str, many: str) -> PlanLimitReached:
    """The 403 of an owner at their limit (`limit`, an `OWNER_LIMITS` field of `plan`, the
    owner's limits), naming the dearer plan that raises it, else who may."""
    held = getattr(plan, limit)
    higher = raising(limit, held, plan)
    then = (
        f"; the {higher.title} plan holds {getattr(higher, limit):,}"
        if higher is not None
        else "; an operator may raise an Enterprise account's limit"
    )
    noun = one if held == 1 else many
    return PlanLimitReached(
        f"The {plan.title} plan holds at most {held:,} {noun}{then}.",
        raised_by=higher.name if higher is not None else None,
    )

"""Keys, accounts, the audit log and the auth status answer (the plans: `propdata.plans`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from propdata.api.schemas import Base


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A verified key with the limits in force for it right now (plan + custom overrides)."""

    id: str
    name: str
    prefix: str
    plan: str
    status: str
    per_minute: int
    daily: int | None
    """None: no daily quota."""
    default_page_size: int
    max_page_size: int
    saved_searches: int
    webhook_endpoints: int
    events_per_day: int | None
    """The owner limits (`plans.OWNER_LIMITS`) this key brings its owner (see `Held`); None:
    unlimited."""
    created_at: str
    account_id: str | None = None
    """The portal account that holds the key; None for a key made by an operator alone."""

    @property
    def window_id(self) -> str:
        """Whose minute and day windows (and failed-request log) this key's requests count
        in: a Free key held by a portal account counts in the account's, across all its Free
        keys, revoked ones included, so revoking and re-creating a Free key gives no new room;
        any other key counts in its own."""
        if self.plan == "free" and self.account_id is not None:
            return f"account:{self.account_id}:free"
        return self.id

    @property
    def owner(self) -> str:
        """Who owns the saved searches, webhook endpoints and events this key sees (and
        whose 60 management requests a minute it spends): the portal account that holds it,
        every active key of the account alike, else the key alone."""
        if self.account_id is not None:
            return f"acct:{self.account_id}"
        return f"key:{self.id}"

    @property
    def failures_per_minute(self) -> int:
        """Failed requests (4xx but 429) the key may make in any 60 s: contract.md."""
        return max(20, 2 * self.per_minute)


@dataclass(frozen=True, slots=True)
class Account:
    """A person of the portal: they sign in and manage the keys they hold."""

    id: str
    email: str
    password_hash: str
    status: str
    """'active' or 'disabled' (an operator's decision: its keys and sessions stop)."""
    is_admin: bool
    email_verified_at: str | None
    created_at: str

    @property
    def verified(self) -> bool:
        return self.email_verified_at is not None


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """Who changed what, when, from where: plan changes, key creation and revocation, ..."""

    id: str
    at: str
    actor: str
    account_id: str | None
    key_id: str | None
    action: str
    from_value: str | None
    to_value: str | None
    client: str | None


class Held(NamedTuple):
    """A plan an owner holds through an active key, with that key's owner limits in force
    (`plans.OWNER_LIMITS`): the key's own where an operator gave it one (Enterprise), else
    the plan's."""

    plan: str
    saved_searches: int
    webhook_endpoints: int
    events_per_day: int | None


class Limits(Base):
    per_minute: int
    daily: int | None
    default_page_size: int
    max_page_size: int


class WindowUsage(Base):
    used: int
    remaining: int
    reset: int


class Usage(Base):
    minute: WindowUsage
    day: WindowUsage | None


class AuthStatus(Base):
    key_id: str
    name: str
    plan: str
    status: str
    limits: Limits
    usage: Usage


class AuthStatusResponse(Base):
    data: AuthStatus

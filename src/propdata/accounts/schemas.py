"""Keys, plans and the auth status answer."""

from __future__ import annotations

from dataclasses import dataclass

from propdata.api.schemas import Base

PLANS = ("free", "developer", "pro", "enterprise")


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
    created_at: str

    @property
    def failures_per_minute(self) -> int:
        """Failed requests (4xx but 429) the key may make in any 60 s: contract.md."""
        return max(20, 2 * self.per_minute)


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

"""GET /v1/auth/status: the key, its plan, limits and live usage; never counted."""

from __future__ import annotations

from litestar import get

from propdata.accounts.schemas import (
    ApiKey,
    AuthStatus,
    AuthStatusResponse,
    Limits,
    Usage,
    WindowUsage,
)
from propdata.api.dependencies import Injected
from propdata.api.openapi import RATE_HEADERS, documented, errors
from propdata.kit.ratelimit.base import Limiter


@get(
    "/auth/status",
    opt={"metered": False},
    responses=errors(metered=False),
    **documented("account", "Check the key and its usage", "getAuthStatus", headers=RATE_HEADERS),
)
async def auth_status(key: Injected[ApiKey], limiter: Injected[Limiter]) -> AuthStatusResponse:
    """Describe the calling key: plan, limits and the usage of both windows."""
    usage = await limiter.usage(key.window_id, key.per_minute, key.daily)
    day = None
    if usage.day is not None:
        day = WindowUsage(used=usage.day.used, remaining=usage.day.remaining, reset=usage.day.reset)
    return AuthStatusResponse(
        data=AuthStatus(
            key_id=key.id, name=key.name, plan=key.plan, status=key.status,
            limits=Limits(per_minute=key.per_minute, daily=key.daily,
                          default_page_size=key.default_page_size, max_page_size=key.max_page_size),
            usage=Usage(
                minute=WindowUsage(used=usage.minute.used, remaining=usage.minute.remaining,
                                   reset=usage.minute.reset),
                day=day,
            ),
        )
    )  # fmt: skip


HANDLERS = [auth_status]

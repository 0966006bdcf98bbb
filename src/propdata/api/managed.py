"""The error answers every management request may give (saved searches, webhook endpoints):
never counted nor cached, at most 60 a minute an owner (`accounts.middleware.MANAGED`)."""

from __future__ import annotations

from typing import Any

from propdata.api.body import too_large
from propdata.api.openapi import errors
from propdata.errors import RateLimitExceeded, ServiceError

MANAGED_429 = RateLimitExceeded(
    "At most 60 requests a minute may manage saved searches and webhooks; retry after 12 seconds."
)


def managed_errors(*statuses: int, examples: list[ServiceError] | None = None) -> Any:
    """The error answers of a management request: its own, a body over 64 KB where it takes
    one, and the 429 of its 60 a minute (no 304: its answers carry no ETag)."""
    shown = [*(examples or []), MANAGED_429, *([too_large()] if 413 in statuses else [])]
    return errors(*statuses, examples=shown, conditional=False)

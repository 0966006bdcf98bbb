"""The page-size rule, decided once per request.

The metering middleware decides a paged request's size (it keys the response cache on it)
and keeps it on the request; the endpoint reads that same size from the request
(`applied_page_size`), so the two can never disagree. (Not as a second injected dependency:
Litestar resolves two dependencies of one handler in an anyio task group, about 7 % of a
search request's CPU.)
"""

from __future__ import annotations

from typing import Any

from propdata.api.values import INTEGER, MAX_INT
from propdata.errors import InvalidParameter

LIMIT = "limit"
_STATE = "propdata.page_size"


def page_size(raw: str | None, default: int, maximum: int) -> int:
    """The size a page gets: `default` when `limit` is absent, else `limit` clamped to
    `maximum`; a `limit` that is not a whole number from 1 to MAX_INT is a 400."""
    if raw is None:
        return default
    if not INTEGER.fullmatch(raw) or len(raw) > 20:
        raise InvalidParameter(LIMIT, f"'{LIMIT}' must be a whole number such as 25.")
    value = int(raw)
    if value < 1:
        raise below_one()
    if value > MAX_INT:
        raise InvalidParameter(LIMIT, f"'{LIMIT}' must be at most {MAX_INT}.")
    return min(value, maximum)


def below_one() -> InvalidParameter:
    """The 400 for a `limit` under 1 (the example a paged operation's document shows)."""
    return InvalidParameter(LIMIT, f"'{LIMIT}' must be at least 1.")


def remember(scope: Any, size: int) -> None:
    """Keep the size decided for this request."""
    scope.setdefault("state", {})[_STATE] = size


def applied_page_size(scope: Any) -> int:
    """The size decided for this request (see `remember`)."""
    size: int = scope["state"][_STATE]
    return size

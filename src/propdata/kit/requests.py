"""Per-request plumbing with no domain knowledge: the request id and extra response headers."""

from __future__ import annotations

import os
from typing import Any

STATE_ID = "propdata.request_id"
STATE_HEADERS = "propdata.headers"
STATE_UNCACHED = "propdata.uncached"


def _state(scope: Any) -> dict[str, Any]:
    state: dict[str, Any] = scope.setdefault("state", {})
    return state


def request_id(scope: Any) -> str:
    """The request's id, made on first use: 'req_' and 16 hex digits."""
    state = _state(scope)
    rid: str | None = state.get(STATE_ID)
    if rid is None:
        rid = state[STATE_ID] = "req_" + os.urandom(8).hex()
    return rid


def add_headers(scope: Any, headers: dict[str, str]) -> None:
    """Headers to put on this request's response, whatever path the response takes."""
    _state(scope).setdefault(STATE_HEADERS, {}).update(headers)


def extra_headers(scope: Any) -> dict[str, str]:
    headers: dict[str, str] = _state(scope).get(STATE_HEADERS, {})
    return headers


def keep_out_of_cache(scope: Any) -> None:
    """This request's answer must not be stored in the response cache (it is of an older
    data version than the one its cache key names)."""
    _state(scope)[STATE_UNCACHED] = True


def cacheable(scope: Any) -> bool:
    return not _state(scope).get(STATE_UNCACHED, False)

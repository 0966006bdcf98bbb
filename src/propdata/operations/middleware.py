"""Every request's metrics and its line in the request log.

`RequestObserver` wraps Litestar's router and error handling (create_app puts it around
`Litestar.asgi_handler`), so it sees every answer, errors and unknown paths included, and
by the time an answer is sent the router has named its route: labels and log lines carry
the route's template (`/v1/properties/{id}`), never the raw path, a key or an id.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from litestar.enums import ScopeType

from propdata.accounts.middleware import STATE_KEY
from propdata.api.clients import Networks, client_address
from propdata.errors import ORIGINAL_METHOD
from propdata.kit.logs import RequestLog
from propdata.kit.metrics import TALLY
from propdata.kit.requests import extra_headers, request_id

if TYPE_CHECKING:
    from litestar.types import ASGIApp, Receive, Scope, Send

UNMATCHED = "unmatched"
"""The route of a request no route took (an unknown path, a method no path takes)."""
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


_STATUS = "propdata.status"
_BYTES = "propdata.bytes"


def note_sent(message: Any, scope: Any) -> None:
    """Note the status and body bytes of an answer as it is sent (the app's before-send hook
    calls it for every message: no wrapper of its own, no allocation per request)."""
    kind = message["type"]
    if kind == "http.response.body":
        state = scope["state"]
        state[_BYTES] = state.get(_BYTES, 0) + len(message.get("body", b""))
    elif kind == "http.response.start":
        scope["state"][_STATUS] = message["status"]


class RequestObserver:
    """Count, time and log each HTTP request the wrapped application answers (its status
    and bytes noted by `note_sent` as they are sent)."""

    def __init__(self, app: ASGIApp, log: RequestLog, proxies: Sequence[Any]) -> None:
        self.app = app
        self.log = log
        self.proxies: Networks = tuple(proxies)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        try:
            await self.app(scope, receive, send)
        finally:
            self._observe(scope, time.perf_counter() - started)

    def _observe(self, scope: Any, seconds: float) -> None:
        route: str = scope.get("path_template") or UNMATCHED
        state = scope["state"]
        status: int = state.get(_STATUS, 500)  # nothing sent: the server answers 500
        method = state.get(ORIGINAL_METHOD) or scope["method"]
        if method not in _METHODS:
            method = "other"  # a label takes few values, whatever a client sends
        TALLY.add(route, method, status, seconds)
        key = state.get(STATE_KEY)
        self.log.request(
            request_id(scope), method, route, status, seconds, state.get(_BYTES, 0),
            key.id if key is not None else None,
            "hit" if extra_headers(scope).get("X-Cache") == "HIT" else "miss",
            client_address(scope, self.proxies),
        )  # fmt: skip

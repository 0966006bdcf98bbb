"""Key check, response cache, limiter and metering around every /v1 request.

Order: verify the key (401s) -> a cached 200 is answered at once (X-Cache: HIT, not
counted, served even over quota) -> the limiter admits and records in one step (429
otherwise) -> the handler runs -> a 4xx/5xx answer is refunded -> a 200 is cached.
Routes with opt {"metered": False} (auth status) are verified but never counted.

The events' routes (contract.md "Events", Metering) say how they are metered in `opt`:
- `MANAGED` (saved searches and webhook endpoints, every method): never counted nor
  cached, but at most `throttle.MANAGED_PER_MINUTE` of them an owner (an account, all its
  keys and its portal buttons together) in any 60 s (429 past that);
- `{"cached": False}` (GET /v1/events): counted like any lookup, never cached (the answer
  is its owner's and moves with every event);
- `STREAMED` (GET /v1/events/stream): counted once when opened, never cached, and its
  body passes through as it is written (no ETag; a 4xx or 5xx at the start is refunded).

Every metered 200 carries an ETag (a hash of its bytes); a request whose If-None-Match
names it gets 304 with no body instead, counted like the 200 it replaces (not counted when
the 200 would have come from the cache).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlencode

from litestar import Request
from litestar.exceptions import HTTPException
from litestar.middleware import ASGIMiddleware

from propdata.accounts.keys import KeyService
from propdata.accounts.schemas import ApiKey
from propdata.accounts.throttle import managed
from propdata.api import paging
from propdata.api.guards import checked_query
from propdata.errors import (
    InvalidParameter,
    NotFound,
    QuotaExceeded,
    RateLimitExceeded,
    ServiceError,
)
from propdata.kit.cache import Cached, ResponseCache
from propdata.kit.conditional import entity_tag, none_match
from propdata.kit.metrics import CACHE_REQUESTS, LIMITER_DECISIONS, TALLY
from propdata.kit.ratelimit.base import Decision, Limiter
from propdata.kit.requests import add_headers, cacheable

if TYPE_CHECKING:
    from litestar.types import ASGIApp, Message, Receive, Scope, Send

STATE_KEY = "propdata.key"
_CACHE_HIT, _CACHE_MISS = CACHE_REQUESTS.labels("hit"), CACHE_REQUESTS.labels("miss")
_DECISIONS = {
    window: LIMITER_DECISIONS.labels(window or "allowed")
    for window in (None, "minute", "day", "failures")
}


class Metering(Protocol):
    """What the middleware needs of the app's services (`app.Services` provides it)."""

    @property
    def keys(self) -> KeyService: ...

    @property
    def limiter(self) -> Limiter: ...

    @property
    def cache(self) -> ResponseCache: ...

    @property
    def cache_ttl(self) -> float: ...

    async def cache_namespace(self) -> str:
        """The store's identity and data version: what every cached answer depends on."""
        ...


MANAGED = {"metering": "managed"}
"""opt of a route that manages saved searches or webhook endpoints (see the module's doc)."""
STREAMED = {"metering": "stream"}
"""opt of a streamed answer (GET /v1/events/stream): counted once, passed through."""


def current_key(request: Request[Any, Any, Any]) -> ApiKey:
    """The verified key of this request (a dependency: handlers take `key: ApiKey`)."""
    key: ApiKey = request.scope["state"][STATE_KEY]
    return key


def rate_headers(decision: Decision) -> dict[str, str]:
    headers = {
        "X-RateLimit-Limit": str(decision.minute.limit),
        "X-RateLimit-Remaining": str(decision.minute.remaining),
        "X-RateLimit-Reset": str(decision.minute.reset),
    }
    if decision.day is not None:
        headers["X-Quota-Limit"] = str(decision.day.limit)
        headers["X-Quota-Remaining"] = str(decision.day.remaining)
        headers["X-Quota-Reset"] = str(decision.day.reset)
    return headers


class MeteringMiddleware(ASGIMiddleware):
    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        services: Metering = scope["litestar_app"].state.services
        headers = dict(scope["headers"])
        credentials = [value for name, value in scope["headers"] if name == b"authorization"]
        if len(credentials) > 1 or b"," in b"".join(credentials):
            # Which one a proxy or a framework would pick differs: refuse to guess. (Joined
            # into one header, they are comma-separated; no key holds a comma.)
            raise InvalidParameter(
                "Authorization", "Send one Authorization header; this request has several."
            )
        key = await services.keys.authenticate(_text(headers.get(b"authorization")))
        scope.setdefault("state", {})[STATE_KEY] = key
        limiter = services.limiter
        opt = scope["route_handler"].opt
        if not opt.get("metered", True):
            usage = await limiter.usage(key.window_id, key.per_minute, key.daily)
            add_headers(scope, rate_headers(usage))
            await next_app(scope, receive, send)
            return

        metering = opt.get("metering")
        if metering == "managed":
            await self._managed(services, key, scope, receive, send, next_app)
            return

        guard = key.failures_per_minute
        size: int | None = None
        try:
            # Every parameter rule before the cache: a cached answer never turns a 400 into 200.
            pairs = sorted(checked_query(scope))
            if opt.get("paged"):
                # The one decision of the page size: the endpoint takes it from here.
                size = paging.page_size(
                    dict(pairs).get(paging.LIMIT), key.default_page_size, key.max_page_size
                )
                paging.remember(scope, size)
        except (InvalidParameter, NotFound):  # answered before admission: describe the windows
            usage = await limiter.usage(key.window_id, key.per_minute, key.daily, guard)
            add_headers(scope, rate_headers(usage))
            _refuse(key, usage)
            await limiter.fail(key.window_id)
            raise
        cache_key = None
        if services.cache_ttl > 0 and metering is None and opt.get("cached", True):
            cache_key = await self._cache_key(services, scope, pairs, size)
            hit = await services.cache.get(cache_key)
            TALLY.inc(_CACHE_MISS if hit is None else _CACHE_HIT)
            if hit is not None:
                usage = await limiter.usage(key.window_id, key.per_minute, key.daily, guard)
                add_headers(scope, rate_headers(usage))
                _refuse(key, usage)  # a key past the failed-request guard gets no hit either
                add_headers(scope, {"X-Cache": "HIT"})
                await _replay(hit, headers.get(b"if-none-match"), send)
                return

        decision = await _admit(limiter, key)
        add_headers(scope, rate_headers(decision))
        _refuse(key, decision)

        status = 500
        body: list[bytes] = []
        content_type = b"application/json"
        held: list[tuple[bytes, bytes]] | None = None  # a 200's headers, sent with its ETag

        async def settle(answered: int) -> None:
            """A 4xx or 5xx is refunded; a 4xx (but a 429) counts against the guard."""
            if decision.stamp is not None:
                after = await limiter.refund(
                    key.window_id, decision.stamp, key.per_minute, key.daily
                )
                add_headers(scope, rate_headers(after))
            if 400 <= answered < 500 and answered != 429:
                await limiter.fail(key.window_id)

        async def metered_send(message: Message) -> None:
            nonlocal status, content_type, held
            if metering == "stream":  # passed through as written: only a failure settles
                if message["type"] == "http.response.start":
                    status = message["status"]
                    if status >= 400:
                        await settle(status)
                await send(message)
                return
            if message["type"] == "http.response.start":
                status = message["status"]
                for name, value in message.get("headers", ()):
                    if name.lower() == b"content-type":
                        content_type = bytes(value)
                if status >= 400:
                    await settle(status)
                if status == 200:
                    held = list(message.get("headers", ()))
                    return
            elif message["type"] == "http.response.body" and held is not None:
                body.append(message.get("body", b""))
                if message.get("more_body", False):
                    return
                start, held = held, None
                await _answer(200, start, b"".join(body), headers.get(b"if-none-match"), send)
                return
            await send(message)

        try:
            await next_app(scope, receive, metered_send)
        except BaseException as exc:
            if status < 400:  # nothing answered yet: the error is rendered outside
                await settle(_status_of(exc))
            raise
        if status == 200 and cache_key is not None and cacheable(scope):
            await services.cache.set(
                cache_key, Cached(200, content_type, b"".join(body)), services.cache_ttl
            )

    @staticmethod
    async def _managed(
        services: Metering,
        key: ApiKey,
        scope: Scope,
        receive: Receive,
        send: Send,
        next_app: ASGIApp,
    ) -> None:
        """A request managing saved searches or webhook endpoints: not counted, not cached,
        at most MANAGED_PER_MINUTE of its owner's in any 60 s (`throttle.managed`)."""
        limiter = services.limiter
        usage = await limiter.usage(key.window_id, key.per_minute, key.daily)
        add_headers(scope, rate_headers(usage))
        pairs = checked_query(scope)
        if scope["route_handler"].opt.get("paged"):
            paging.remember(
                scope,
                paging.page_size(
                    dict(pairs).get(paging.LIMIT), key.default_page_size, key.max_page_size
                ),
            )
        await managed(limiter, key)
        await next_app(scope, receive, send)

    @staticmethod
    async def _cache_key(
        services: Metering, scope: Scope, pairs: list[tuple[str, str]], size: int | None
    ) -> str:
        """Store id and data version, path, canonical query (sorted pairs), page size applied.

        On a paged operation `limit` stands in the key as the size the endpoint applies
        (whatever its spelling), so no plan is ever served a page above its maximum, and
        `limit=10` on a plan whose default is 10 shares the entry of a request without it.
        """
        if size is not None:
            pairs = [(name, value) for name, value in pairs if name != paging.LIMIT]
        namespace = await services.cache_namespace()
        return f"{namespace}|{scope['path']}?{urlencode(pairs)}|{size or 0}"


async def count_one(limiter: Limiter, key: ApiKey) -> Decision:
    """Admit and count one request of `key` made outside /v1 (a dashboard download counts
    as one request of the key that gives the account its exports), as the middleware does:
    the contract's 429 when a window is full. A request that then fails is `refund_one`ed."""
    decision = await _admit(limiter, key)
    _refuse(key, decision)
    return decision


async def _admit(limiter: Limiter, key: ApiKey) -> Decision:
    """Count one request of `key` if its windows have room, and tally the decision: the
    one admission of a metered request, in /v1 and from the dashboard alike."""
    decision = await limiter.admit(key.window_id, key.per_minute, key.daily,
                                   key.failures_per_minute)  # fmt: skip
    TALLY.inc(_DECISIONS[decision.exceeded if not decision.allowed else None])
    return decision


async def refund_one(limiter: Limiter, key: ApiKey, decision: Decision, status: int) -> None:
    """Give back a request `count_one` counted, which failed with `status`: as in /v1, a 4xx
    (but a 429) counts against the key's failed-request guard."""
    if decision.stamp is not None:
        await limiter.refund(key.window_id, decision.stamp, key.per_minute, key.daily)
    if 400 <= status < 500 and status != 429:
        await limiter.fail(key.window_id)


def _refuse(key: ApiKey, decision: Decision) -> None:
    """Raise the contract's 429 for a refused decision (with its Retry-After)."""
    if decision.allowed:
        return
    retry = {"Retry-After": str(decision.retry_after)}
    if decision.exceeded == "day":
        raise QuotaExceeded(
            f"Daily quota of {key.daily} requests used up; retry after"
            f" {decision.retry_after} seconds.",
            headers=retry,
        )
    if decision.exceeded == "failures":
        raise RateLimitExceeded(
            f"Too many failed requests: at most {key.failures_per_minute} answers of 400-499"
            f" in 60 seconds; retry after {decision.retry_after} seconds.",
            headers=retry,
        )
    raise RateLimitExceeded(
        f"Rate limit of {key.per_minute} requests per minute exceeded; retry after"
        f" {decision.retry_after} seconds.",
        headers=retry,
    )


def _status_of(exc: BaseException) -> int:
    """The status an exception will be answered with (errors.py renders it)."""
    if isinstance(exc, ServiceError):
        return exc.status
    if isinstance(exc, HTTPException):
        return exc.status_code
    return 500


async def _replay(hit: Cached, if_none_match: bytes | None, send: Send) -> None:
    headers = [
        (b"content-type", hit.content_type),
        (b"content-length", str(len(hit.body)).encode()),
    ]
    await _answer(hit.status, headers, hit.body, if_none_match, send)


async def _answer(
    status: int,
    headers: Iterable[tuple[bytes, bytes]],
    body: bytes,
    if_none_match: bytes | None,
    send: Send,
) -> None:
    """Send an answer with its ETag, or 304 with no body when If-None-Match names that tag."""
    tag = entity_tag(body)
    sent = [*headers, (b"etag", tag.encode())]
    if none_match(if_none_match, tag):
        kept = [(n, v) for n, v in sent if n.lower() not in (b"content-type", b"content-length")]
        await send({"type": "http.response.start", "status": 304, "headers": kept})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        return
    await send({"type": "http.response.start", "status": status, "headers": sent})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def _text(value: bytes | None) -> str | None:
    return value.decode("latin-1") if value is not None else None

"""GET /metrics: the Prometheus exposition of every worker of the host."""

from __future__ import annotations

import asyncio
import datetime as dt
import hmac
import time
from typing import Any, Protocol

import msgspec
from litestar import Request, Response, get
from litestar.datastructures import State
from litestar.exceptions import NotFoundException

from propdata import __version__
from propdata.api.clients import bearer_token, client_address, forwarded_by_stranger, in_networks
from propdata.api.dependencies import Injected
from propdata.config import Settings
from propdata.kit import metrics
from propdata.kit.cache import ResponseCache
from propdata.kit.db import Database
from propdata.kit.ratelimit.base import Limiter

STATE_INDEX = "propdata.index_behind_since"


class Watched(Protocol):
    """What the scrape reads of the app's services (`app.Services` provides it)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def db(self) -> Database: ...

    @property
    def accounts_db(self) -> Database: ...

    @property
    def limiter(self) -> Limiter: ...

    @property
    def cache(self) -> ResponseCache: ...

    @property
    def properties(self) -> _Properties: ...

    @property
    def search(self) -> _Search: ...

    @property
    def loops(self) -> _Loops: ...


class _Loops(Protocol):
    def health(self) -> dict[str, str]: ...


class _Properties(Protocol):
    async def data_version(self) -> int: ...

    async def load_counts(self) -> dict[str, int]: ...

    async def feeds(self) -> int: ...

    async def replication_totals(self) -> list[tuple[str, int, int, int, str, str | None]]: ...


class _Search(Protocol):
    async def index_status(self) -> str: ...


def allowed(request: Request[Any, Any, Any], settings: Settings) -> bool:
    """A client in the allowed networks, or one bearing the metrics token (`Bearer` in any
    case); never a request a proxy forwarded that is not in PROPDATA_TRUSTED_PROXIES, token or
    not: its peer is the proxy, so behind one on this host every client would look local."""
    scope = request.scope
    if forwarded_by_stranger(scope, settings.proxies):
        return False
    if in_networks(client_address(scope, settings.proxies), settings.metrics_networks):
        return True
    token, sent = settings.metrics_token, bearer_token(request.headers.get("authorization"))
    return (
        token is not None
        and sent is not None
        and hmac.compare_digest(sent.encode(), token.encode())
    )


@get("/metrics", include_in_schema=False)
async def scrape(
    request: Request[Any, Any, Any], services: Injected[Watched], state: State
) -> Response[bytes]:
    """Serve every worker's counts and the stores' state, for Prometheus (no key, never
    counted); 404, as for an unknown path, to a client neither allowed nor bearing the token."""
    if not allowed(request, services.settings):
        raise NotFoundException()
    samples = [metrics.build_info(__version__), metrics.store_up(await _stores(services)),
               metrics.loop_up(services.loops.health())]  # fmt: skip
    try:
        samples.append(metrics.data_version(await services.properties.data_version()))
        samples.append(metrics.ingest_records(await services.properties.load_counts()))
        samples.append(metrics.ingest_feeds(await services.properties.feeds()))
        samples.append(metrics.search_index_age(await _index_age(services, state)))
        samples.extend(
            metrics.replication(_replication(await services.properties.replication_totals()))
        )
    except Exception:  # the store is down: propdata_store_up says so
        pass
    metrics.TALLY.flush()  # here, on the loop that counts, not in the thread below
    accept = request.headers.get("accept")
    body, content_type = await asyncio.to_thread(metrics.exposition, samples, accept)
    return Response(body, media_type=content_type)


def _replication(
    rows: list[tuple[str, int, int, int, str, str | None]],
) -> list[tuple[str, int, int, int, dict[str, int], float | None]]:
    """The sources' totals with their requests decoded and the lag counted to now."""
    now = time.time()
    found = []
    for name, written, rejected, removed, requests, committed in rows:
        statuses = {str(k): int(v) for k, v in msgspec.json.decode(requests).items()}
        behind = None
        if committed is not None:
            moment = dt.datetime.fromisoformat(committed.replace("Z", "+00:00"))
            behind = max(0.0, now - moment.timestamp())
        found.append((name, written, rejected, removed, statuses, behind))
    return found


async def _stores(services: Watched) -> dict[str, bool]:
    """Whether each store answers; for Redis, whether the limiter and the cache both use it
    (each falls back to a per-process copy while it is away, and tries it again when used)."""
    up = {"database": await _answers(services.db)}
    if services.accounts_db is not services.db:
        up["accounts"] = await _answers(services.accounts_db)
    if services.settings.redis_url:
        try:
            await services.limiter.usage("metrics-probe", 1, None)
            await services.cache.get("metrics-probe")
            up["redis"] = services.limiter.status() == "ok" and services.cache.status() == "ok"
        except Exception:
            up["redis"] = False
    return up


async def _answers(db: Database) -> bool:
    try:
        await db.fetch_one("SELECT 1")
    except Exception:
        return False
    return True


async def _index_age(services: Watched, state: State) -> float:
    """Seconds since this worker first found its search index behind the store's data at a
    scrape (0 while it answers for the current data, or is off)."""
    if await services.search.index_status() in ("ok", "off"):
        state[STATE_INDEX] = None
        return 0.0
    since = state.get(STATE_INDEX)
    if since is None:
        since = state[STATE_INDEX] = time.monotonic()
    return time.monotonic() - since


HANDLERS = [scrape]

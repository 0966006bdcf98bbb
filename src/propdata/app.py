"""create_app(settings): the Litestar application; engines, cache and limiter built in its lifespan."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import msgspec
from litestar import Litestar, Request, Response, Router, get
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import HTTPException
from litestar.openapi import OpenAPIConfig, ResponseSpec
from litestar.openapi.spec import Components, Example, SecurityScheme
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from propdata import __version__, web
from propdata.accounts import endpoints as account_endpoints
from propdata.accounts.keys import KeyService
from propdata.accounts.middleware import MeteringMiddleware, current_key
from propdata.accounts.service import AccountService
from propdata.api import openapi as api_openapi
from propdata.api.body import MAX_BODY
from propdata.api.dependencies import Injected
from propdata.api.guards import check_request
from propdata.api.openapi import documented, errors
from propdata.config import ENV, INDEX_TUNING, Settings, load_settings
from propdata.errors import ORIGINAL_METHOD, exception_handlers, http_error_handler
from propdata.events import endpoints as event_endpoints
from propdata.events import produce
from propdata.events import stream as event_stream
from propdata.events.repository import EventRepository
from propdata.events.service import EventService
from propdata.exports import endpoints as export_endpoints
from propdata.exports.service import Exporter, ExportService
from propdata.feed import endpoints as feed_endpoints
from propdata.feed.service import FeedService
from propdata.kit import memory, metrics, multiproc
from propdata.kit.cache import MemoryCache, ResponseCache
from propdata.kit.db import Database, PostgresDatabase, StoreUnavailable, connect
from propdata.kit.logs import RequestLog, configure
from propdata.kit.loops import Loop, Loops, TaskLoop
from propdata.kit.mail import Mailer, mailer_for
from propdata.kit.ratelimit.base import Clock, Limiter
from propdata.kit.ratelimit.sqlite import SQLiteLimiter
from propdata.kit.requests import extra_headers, request_id
from propdata.kit.wakeup import Wakeups, open_wakeups
from propdata.markets import endpoints as market_endpoints
from propdata.markets.service import MarketService
from propdata.migrations.schema import migrate, migrate_accounts
from propdata.operations import endpoints as operations
from propdata.operations.middleware import RequestObserver, note_sent
from propdata.portal import endpoints as portal
from propdata.properties import endpoints as property_endpoints
from propdata.properties.service import PropertyService
from propdata.saved_searches import endpoints as saved_search_endpoints
from propdata.saved_searches.service import SavedSearchService
from propdata.search import endpoints as search_endpoints
from propdata.search.keeper import KeeperSettings
from propdata.search.service import SearchService
from propdata.valuation import endpoints as valuation_endpoints
from propdata.valuation.service import ValuationService
from propdata.web import DocsPage
from propdata.webhooks import endpoints as webhook_endpoints
from propdata.webhooks.addresses import DnsResolver, Gate
from propdata.webhooks.service import WebhookService

if TYPE_CHECKING:
    from propdata.webhooks.dispatcher import Dispatcher, HostTurn

log = logging.getLogger("propdata")

SERVING_PAGE_CACHE_KIB = 4096
"""SQLite's page cache of a server's store connections: 4 MB, not the commands' 16. Each
worker keeps its own, where the OS cache serves every worker; by-id and search cost the
same server CPU with either at 1,000,000 properties, and a worker is 12 MB smaller
(docs/measurements.md, "Memory with the response cache full")."""


@dataclass(slots=True)
class Services:
    """Everything a request needs, built once per process at start-up."""

    settings: Settings
    db: Database
    accounts_db: Database
    """The accounts store: `db` itself at scale-out, a SQLite file of its own embedded."""
    keys: KeyService
    accounts: AccountService
    """The portal's people, sessions and audit log (beside the keys, in the accounts store)."""
    properties: PropertyService
    search: SearchService
    feed: FeedService
    markets: MarketService
    valuations: ValuationService
    saved_searches: SavedSearchService
    events: EventService
    webhooks: WebhookService
    limiter: Limiter
    cache: ResponseCache
    wakeups: Wakeups
    """Wake-ups between processes: "changes" (a data commit), "events" (events produced)."""
    mailer: Mailer
    streams: event_stream.StreamHub
    """The worker's open event streams and the one reader of the log that feeds them."""
    exports: ExportService
    """The bulk export snapshots under PROPDATA_EXPORT_DIR."""
    loops: Loops = field(default_factory=lambda: Loops([]))
    """The worker's always-running work (`build_loops`), started and stopped by the app."""

    @property
    def cache_ttl(self) -> float:
        return self.settings.cache_ttl

    async def cache_namespace(self) -> str:
        return await self.properties.cache_namespace()

    def dispatcher(self) -> Dispatcher:
        """A webhook dispatcher over the accounts store (one per process that delivers;
        imported by those only: its HTTP client, httpx, is 6.6 MB of a process)."""
        from propdata.webhooks.dispatcher import Dispatcher

        return Dispatcher(
            self.accounts_db, self.webhooks.gate, self.wakeups, self.mailer,
            self.webhooks.mail_to, clock=self.webhooks.clock,
        )  # fmt: skip

    def dispatch_turn(self) -> HostTurn | None:
        """On SQLite, the lock that makes one worker of the host the dispatcher; None at
        scale-out, where every process dispatches."""
        from propdata.webhooks.dispatcher import HostTurn

        path = getattr(self.accounts_db, "path", None)
        if self.accounts_db.dialect == "postgresql" or path in (None, ":memory:"):
            return None
        return HostTurn(Path(f"{path}.dispatch.lock"))

    async def close(self) -> None:
        await self.streams.close()
        await self.saved_searches.counts.close()
        await self.wakeups.close()
        await self.search.close()
        await self.cache.close()
        await self.limiter.close()
        if self.accounts_db is not self.db:
            await self.accounts_db.close()
        await self.db.close()


async def open_database(
    url: str, migrator: Callable[[Database], Awaitable[None]] = migrate, *, private: bool = False
) -> Database:
    """Open and migrate a store. PostgreSQL that is down at start is not fatal: the server
    answers 503 and migrates when it first reaches the database."""
    db = await connect(url, lazy=True, private=private)
    try:
        await migrator(db)
    except StoreUnavailable as exc:
        if not isinstance(db, PostgresDatabase):
            raise
        log.error("database unreachable at start (%s); answering 503 until it is back", exc)
        db.on_open = migrator
    return db


async def open_stores(settings: Settings) -> tuple[Database, Database]:
    """The data store and the accounts store (one PostgreSQL database serves both)."""
    if settings.accounts_url == settings.database_url:

        async def both(db: Database) -> None:
            await migrate(db)
            await migrate_accounts(db)

        db = await open_database(settings.database_url, both)
        return db, db
    db = await open_database(settings.database_url)
    return db, await open_database(settings.accounts_url, migrate_accounts, private=True)


def keeper_settings(settings: Settings) -> KeeperSettings:
    """The search index keeper's numbers, from PROPDATA_INDEX_* (`config.INDEX_TUNING`)."""
    return KeeperSettings(**{name.removeprefix("index_"): getattr(settings, name)
                             for name in INDEX_TUNING})  # fmt: skip


async def build_services(settings: Settings, clock: Clock | None = None) -> Services:
    memory.map_large_allocations()
    db, accounts = await open_stores(settings)
    for store in (db, accounts):
        store.limit_page_cache(SERVING_PAGE_CACHE_KIB)
    limiter: Limiter
    cache: ResponseCache
    if settings.redis_url:
        # Redis for both, each with a per-process fallback while Redis is unreachable. The
        # clock is the tests' (create_app(clock=...)); production leaves it to Redis's TIME.
        # Imported here: Redis's client is 6.5 MB of every process that loads it.
        from propdata.kit.ratelimit.redis import RedisLimiter
        from propdata.kit.ratelimit.resilient import ResilientLimiter
        from propdata.kit.redis_cache import RedisCache, ResilientCache

        limiter = ResilientLimiter(RedisLimiter.from_url(settings.redis_url, clock))
        cache = ResilientCache(RedisCache.from_url(settings.redis_url))
    else:
        limiter = SQLiteLimiter(settings.usage_path, **({"clock": clock} if clock else {}))
        cache = MemoryCache(settings.cache_bytes)
    search = SearchService(db, search_index=settings.search_index, snapshots=settings.index_path,
                           tuning=keeper_settings(settings))  # fmt: skip
    mailer = mailer_for(settings.smtp_url, settings.outbox_path, settings.mail_from)
    wakeups = open_wakeups(accounts, settings.redis_url)
    keys = KeyService(accounts, **({"clock": clock} if clock else {}))
    gate = Gate(allowed=settings.webhook_networks, resolver=DnsResolver(settings.nameservers))
    return Services(
        settings=settings,
        db=db,
        accounts_db=accounts,
        keys=keys,
        accounts=AccountService(
            accounts,
            keys,
            limiter,
            mailer,
            **({"clock": clock} if clock else {}),
            session_lifetime=settings.session_days * 86_400,
        ),
        properties=PropertyService(db),
        search=search,
        feed=FeedService(db),
        markets=MarketService(db),
        valuations=ValuationService(db),
        saved_searches=SavedSearchService(
            accounts, db, keys, search, **({"clock": clock} if clock else {})
        ),
        events=EventService(accounts),
        webhooks=WebhookService(accounts, gate, wakeups, **({"clock": clock} if clock else {})),
        limiter=limiter,
        cache=cache,
        wakeups=wakeups,
        mailer=mailer,
        streams=event_stream.StreamHub(
            EventRepository(accounts), keys, keepalive=settings.stream_keepalive,
            queue=settings.stream_queue,
            wait=lambda timeout: wakeups.wait("events", timeout),
            # Counted across the host's workers (embedded) or every host (Redis); at most
            # half a worker's connections, so the API, /health and the portal keep theirs.
            limiter=limiter, most=max(1, settings.max_connections // 2),
        ),
        exports=ExportService(Path(settings.export_dir)),
    )  # fmt: skip


HealthStatus = Literal["ok", "degraded", "down"]


class Health(msgspec.Struct):
    status: HealthStatus
    checks: dict[str, str]
    loops: dict[str, str] = {}
    """Each always-running part of the worker that answered: "ok", "stopped" or "failing:
    <reason>" (informational: `status` does not follow it)."""


HEALTH_DOWN = Health(status="down", checks={"database": "down: StoreUnavailable", "limiter": "ok",
                                             "cache": "ok"})  # fmt: skip


@get("/health", include_in_schema=True,
     **documented("operations", "Service health", "getHealth", headers=None),
     responses={
         503: ResponseSpec(Health, generate_examples=False, examples=[
             Example(summary="down", value=msgspec.to_builtins(HEALTH_DOWN))],
             description="Down: the database does not answer."),
         **{status: spec for status, spec in errors(metered=False).items()
            if status in (431, 500)},
     })  # fmt: skip
async def health(services: Injected[Services]) -> Response[Health]:
    """Report whether the stores answer: ok, degraded or down (no key, never counted)."""
    checks: dict[str, str] = {}
    try:
        await services.db.fetch_one("SELECT 1")
        checks["database"] = "ok"
    except Exception as exc:  # any failure means down, and says why
        checks["database"] = f"down: {type(exc).__name__}"
    # The Redis backends never raise for an outage: they answer from a per-process fallback
    # and say so in status(). Probing them here also tries Redis again while it is away.
    unreachable = "degraded: redis unreachable"
    try:
        await services.limiter.usage("health-probe", 1, None)
        checks["limiter"] = "ok" if services.limiter.status() == "ok" else unreachable
    except Exception as exc:
        checks["limiter"] = f"degraded: {type(exc).__name__}"
    try:
        await services.cache.get("health-probe")
        checks["cache"] = "ok" if services.cache.status() == "ok" else unreachable
    except Exception as exc:
        checks["cache"] = f"degraded: {type(exc).__name__}"
    status: HealthStatus = "down" if checks["database"] != "ok" else "ok"
    if status == "ok" and any(v != "ok" for v in checks.values()):
        status = "degraded"
    # Informational: while the index builds (at start, after a load) searches are exact but
    # answered by SQL, slower; that is not a degraded service.
    if checks["database"] == "ok":
        checks["searchIndex"] = await services.search.index_status()
        # A load that died between its commit and its rebuild: new records without
        # estimates, stale market figures. `propdata serve` or any data command finishes it.
        if await services.properties.rebuild_pending():
            checks["rebuild"] = "degraded: pending"
            status = "degraded"
    return Response(
        Health(status=status, checks=checks, loops=services.loops.health()),
        status_code=503 if status == "down" else 200,
    )


async def _add_headers(message: Message, scope: Scope) -> None:
    """Every response gets X-Request-Id, the rate headers of its key, and X-Cache; its status
    and bytes are noted for the request's metrics and log line."""
    note_sent(message, scope)
    if message["type"] != "http.response.start":
        return
    headers = list(message.get("headers", []))
    extra = {"X-Cache": "MISS", **extra_headers(scope), "X-Request-Id": request_id(scope),
             "X-Content-Type-Options": "nosniff"}  # fmt: skip
    present = {name.lower() for name, _ in headers}
    content_type = next((v for n, v in headers if n.lower() == b"content-type"), b"")
    if content_type.startswith(b"text/html"):
        extra.update(web.PAGE_HEADERS)
    for name, value in extra.items():
        if name.lower().encode() not in present:
            headers.append((name.lower().encode(), value.encode()))
    message["headers"] = headers


def _http_error(request: Request[Any, Any, Any], exc: HTTPException) -> Response[Any]:
    """A browser outside the API gets a page; everyone else the contract's JSON error."""
    if portal.wants_page(request):
        return portal.error_page(request, exc)
    return http_error_handler(request, exc)


STRICT_TRANSPORT = "max-age=31536000"
"""Browsers keep to https for a year once they have seen it over https (PROPDATA_PUBLIC_URL)."""


async def _strict_transport(message: Message, scope: Scope) -> None:
    if message["type"] == "http.response.start":
        message["headers"] = [*message.get("headers", []),
                              (b"strict-transport-security", STRICT_TRANSPORT.encode())]  # fmt: skip


def build_loops(services: Services, settings: Settings) -> Loops:
    """The worker's always-running work, in the order it starts (it stops in reverse)."""
    loops: list[Loop] = [
        # Notices between processes, which the loops below wait on: first up, last down.
        services.wakeups,
        services.search.indexes,  # the search index, made at start and kept live
        services.streams,
        # Days on market grow and sales age out without a load (docs/api.md, decision 7).
        TaskLoop("ageing", lambda: services.properties.keep_aged(settings.today)),
        TaskLoop("feedPruning", lambda: services.feed.keep_pruned(settings.today)),
        producer(services),
    ]
    if settings.deliveries == "workers":
        loops.append(dispatcher(services))
    if settings.export_every is not None:
        # Periodic exports: every process takes part, the store's lease picks one a turn.
        loops.append(Exporter(
            services.db, Path(settings.export_dir), settings.export_every,
            settings.export_keep, env=export_env(settings),
        ))  # fmt: skip
    return Loops(loops)


def delivery_loops(services: Services) -> Loops:
    """What a `propdata deliver` process runs: a producer of its own (so its dispatcher hears
    of new events at once, as a worker's does) and the dispatcher."""
    return Loops([services.wakeups, producer(services), dispatcher(services)])


def producer(services: Services) -> Loop:
    """Saved searches' events, from every commit of the data store, announced to the
    dispatchers and streams of this process ("events"); every process that runs one takes
    part safely."""
    return TaskLoop(
        "producer",
        lambda: produce.keep_producing(
            services.db,
            services.accounts_db,
            wait=lambda timeout: services.wakeups.wait("changes", timeout),
            notify=lambda: services.wakeups.notify("events"),
        ),
    )


def dispatcher(services: Services) -> Loop:
    """Webhook deliveries: every process at scale-out, one a host embedded."""
    from propdata.webhooks.dispatcher import dispatch

    return TaskLoop("dispatcher", lambda: dispatch(services.dispatcher(), services.dispatch_turn()))


def export_env(settings: Settings) -> dict[str, str]:
    """The variables a periodic export's child process (`propdata data export`) needs to use
    this app's store and folder (in its environment: a URL may hold a password)."""
    env = {ENV["database_url"]: settings.database_url, ENV["export_dir"]: settings.export_dir}
    if settings.as_of is not None:
        env[ENV["as_of"]] = settings.as_of.isoformat()
    return env


def _services(state: State) -> Services:
    services: Services = state.services
    return services


def _provide(name: str) -> Provide:
    """One of the services, by its name in `Services`, for handlers that take it by that name."""

    def provide(state: State) -> Any:
        return getattr(state.services, name)

    return Provide(provide, sync_to_thread=False)


DEPENDENCIES = {
    "services": Provide(_services, sync_to_thread=False),
    **{
        name: _provide(name)
        for name in (
            "properties",
            "search",
            "feed",
            "markets",
            "valuations",
            "saved_searches",
            "events",
            "limiter",
            "accounts",
            "settings",
            "webhooks",
            "streams",
            "exports",
        )
    },
    "key": Provide(current_key, sync_to_thread=False),
}
"""What handlers take by name: the process's services and the request's key (a paged one
reads its page size from the request: `api.paging.applied_page_size`)."""


def create_app(settings: Settings | None = None, *, clock: Clock | None = None) -> Litestar:
    """Build the application; stores are opened when it starts, not here."""
    settings = settings or load_settings()

    request_log = RequestLog(settings.log_format)

    @contextlib.asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        multiproc.forget_dead_workers()
        services = await build_services(settings, clock)
        app.state.services = services
        services.loops = build_loops(services, settings)
        await services.loops.start()
        try:
            yield
        finally:
            await services.loops.stop()
            await services.close()
            metrics.TALLY.flush()  # this worker's last counts, into the host's total
            request_log.flush()
            multiproc.worker_stopped()

    v1_handlers = [
        *feed_endpoints.HANDLERS,
        *search_endpoints.HANDLERS,
        *property_endpoints.HANDLERS,
        *valuation_endpoints.HANDLERS,
        *market_endpoints.HANDLERS,
        *account_endpoints.HANDLERS,
        *saved_search_endpoints.HANDLERS,
        *event_endpoints.HANDLERS,
        *webhook_endpoints.HANDLERS,
        *event_stream.HANDLERS,
        *export_endpoints.HANDLERS,
    ]
    openapi = OpenAPIConfig(
        title="propdata: US property and market data API",
        version=__version__,
        description=(
            "United States property records and ZIP-level market statistics. Every /v1 request"
            " carries `Authorization: Bearer $PROPDATA_API_KEY` (your key). Every error answer"
            " is one shape, `ErrorResponse`; each operation lists the statuses it can answer. "
            + api_openapi.methods_note("/v1", v1_handlers)
        ),
        path="/docs",
        render_plugins=[DocsPage()],
        components=Components(
            security_schemes={"bearerAuth": SecurityScheme(type="http", scheme="bearer")},
            headers=api_openapi.HEADERS,
            responses=api_openapi.RESPONSES,
        ),
        use_handler_docstrings=True,
        create_examples=False,
    )

    @get("/openapi.json", include_in_schema=False)
    async def openapi_json(request: Request[Any, Any, Any]) -> Response[bytes]:
        schema = request.app.openapi_schema.to_schema()
        return Response(msgspec.json.encode(schema), media_type="application/json")

    v1 = Router(
        path="/v1",
        route_handlers=v1_handlers,
        middleware=[MeteringMiddleware()],
        before_request=check_request,
        request_max_body_size=MAX_BODY,
        security=[{"bearerAuth": []}],
    )
    app = Litestar(
        route_handlers=[
            v1,
            health,
            *operations.HANDLERS,
            openapi_json,
            web.static_files(),
            portal.router(),
        ],
        template_config=portal.templates(),
        lifespan=[lifespan],
        dependencies=DEPENDENCIES,
        exception_handlers={**exception_handlers(), HTTPException: _http_error},
        after_exception=[portal.find_visitor],
        before_send=[_add_headers]
        + ([_strict_transport] if (settings.public_url or "").startswith("https://") else []),
        openapi_config=openapi,
        plugins=[
            api_openapi.NullableChoice(),
            api_openapi.ExactBody(*saved_search_endpoints.BODIES),
            api_openapi.ClosedBody(),
        ],
        logging_config=None,
        debug=False,
    )
    # Around Litestar's router and error handling: every answer, errors included, and by
    # the time it is sent the router has named its route.
    app.asgi_handler = RequestObserver(app.asgi_handler, request_log, settings.proxies)
    return app


class HeadAsGet:
    """Serve HEAD as GET without the body (Litestar's GET handlers do not take HEAD).

    OPTIONS, which Litestar would answer itself, is passed on under a name no route takes,
    so it gets the contract's 405 like every other method a path does not take.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope.get("method")
        if method not in ("HEAD", "OPTIONS"):
            await self.app(scope, receive, send)  # the common path: untouched
            return
        raw: dict[str, Any] = dict(scope)
        if method == "OPTIONS":
            raw["state"] = {**raw.get("state", {}), ORIGINAL_METHOD: "OPTIONS"}
            raw["method"] = "X-OPTIONS"
            await self.app(cast(Scope, raw), receive, send)
            return

        async def send_headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        raw["method"] = "GET"
        await self.app(cast(Scope, raw), receive, send_headers_only)


def asgi() -> ASGIApp:
    """The server's entry point (uvicorn --factory propdata.app:asgi)."""
    settings = load_settings()
    configure(settings.log_level, settings.log_format)
    app = create_app(settings)
    app.on_startup.append(memory.freeze_startup_objects)  # a served worker's, not a test's
    return HeadAsGet(app)

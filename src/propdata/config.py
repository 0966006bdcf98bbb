"""One typed Settings object, read from PROPDATA_* environment variables, checked at start.

Every setting is listed in docs/configuration.md (a test holds the two together).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import msgspec


class ConfigError(ValueError):
    """A PROPDATA_* variable has a value the service cannot run with."""


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    database_url: str = "var/propdata.db"
    """PROPDATA_DATABASE_URL: a SQLite file path (default) or a postgresql:// URL."""
    redis_url: str | None = None
    """PROPDATA_REDIS_URL: unset for the embedded limiter and cache, or a redis:// URL."""
    cache_ttl: float = 60.0
    """PROPDATA_CACHE_TTL: seconds a 200 answer stays in the response cache; 0 turns it off."""
    cache_mb: float = 32.0
    """PROPDATA_CACHE_MB: the embedded response cache's memory budget for the whole host, in
    MB, shared out evenly among the workers of `propdata serve --workers N` (a full budget
    costs about 1.25 times as much heap, Python's overheads included). 32, not 64: with it
    full, a worker stays under 150 MB (docs/measurements.md, "Memory")."""
    workers: int = 1
    """PROPDATA_WORKERS: the worker processes this one shares the host's budgets with; set by
    `propdata serve --workers N` for its workers (set it yourself when a process manager
    starts the workers instead)."""
    as_of: dt.date | None = None
    """PROPDATA_AS_OF: the date loads and statistics are computed as of (default: today, UTC)."""
    log_level: str = "INFO"
    """PROPDATA_LOG_LEVEL: DEBUG, INFO, WARNING or ERROR."""
    log_format: Literal["text", "json"] = "text"
    """PROPDATA_LOG_FORMAT: `text` (logfmt: `key=value` pairs) or `json` (JSON Lines) for the
    log on standard error, one line per request and the service's own messages."""
    metrics_allowed_networks: str = "127.0.0.0/8,::1/128"
    """PROPDATA_METRICS_ALLOWED_NETWORKS: comma-separated networks whose clients may read
    GET /metrics without a token (behind PROPDATA_TRUSTED_PROXIES, the forwarded client);
    empty: the token only."""
    metrics_token: str | None = None
    """PROPDATA_METRICS_TOKEN: a secret that lets a scraper from any address read GET /metrics
    with `Authorization: Bearer <token>`; unset: the allowed networks only."""
    webhook_allowed_networks: str = ""
    """PROPDATA_WEBHOOK_ALLOWED_NETWORKS: comma-separated networks webhook deliveries may reach
    although they are not public (10.20.0.0/16, 127.0.0.1/32), by http:// as well as https://;
    empty: https:// to public addresses only."""
    webhook_nameservers: str = ""
    """PROPDATA_WEBHOOK_NAMESERVERS: comma-separated DNS servers (`address` or `address:port`,
    `[v6]:port`) that webhook URLs' names are resolved through; empty: the system's
    (/etc/resolv.conf). Each name has 2 s to resolve."""
    search_index: bool = True
    """PROPDATA_SEARCH_INDEX: keep every property's search columns in memory (about 66 MB at
    1,000,000 properties, mapped once for all of a host's workers) so searches take
    milliseconds; false searches in SQL."""
    index_dir: str | None = None
    """PROPDATA_INDEX_DIR: a local folder for the search index's snapshots, one per data
    version, which every worker of the host maps (default: `<name>-index` beside the SQLite
    file; var/propdata-index at scale-out)."""

    index_poll: float = 0.25
    """PROPDATA_INDEX_POLL: seconds between a worker's looks at the data version, so that a
    commit's search index is usually made before a request asks for it."""
    index_refresh_wait: float = 1.0
    """PROPDATA_INDEX_REFRESH_WAIT: seconds a search waits for the index of a data version
    being made before SQL answers it."""
    index_retry: float = 60.0
    """PROPDATA_INDEX_RETRY: seconds before a failed index build (or fold) is tried again."""
    index_refresh_retry: float = 1.0
    """PROPDATA_INDEX_REFRESH_RETRY: seconds before a failed read of the changes is tried
    again."""
    index_snapshot_wait: float = 0.2
    """PROPDATA_INDEX_SNAPSHOT_WAIT: seconds between a worker's looks for the snapshot another
    worker of the host is building."""
    index_older_kept: int = 3
    """PROPDATA_INDEX_OLDER_KEPT: superseded data versions' indexes a worker keeps for cursor
    walks begun on them."""
    index_older_seconds: float = 3600.0
    """PROPDATA_INDEX_OLDER_SECONDS: how long a worker keeps a superseded index mapped from a
    snapshot."""
    index_refresh_cap: int = 50_000
    """PROPDATA_INDEX_REFRESH_CAP: changes read into the live index at most; more (a large
    load) and a new snapshot is built, SQL answering meanwhile."""
    index_page: int = 10_000
    """PROPDATA_INDEX_PAGE: rows a page of a worker's own index build reads between
    requests."""
    index_fold_rows: int = 20_000
    """PROPDATA_INDEX_FOLD_ROWS: changed records past which the live index is folded into a
    new snapshot (with PROPDATA_INDEX_FOLD_SHARE)."""
    index_fold_share: float = 0.05
    """PROPDATA_INDEX_FOLD_SHARE: the share of the base's records past which the live index is
    folded (with PROPDATA_INDEX_FOLD_ROWS)."""

    smtp_url: str | None = None
    """PROPDATA_SMTP_URL: smtp://user:pass@host:port (STARTTLS when offered) or smtps://...
    for the portal's mail; unset, each message is written to var/outbox/*.eml beside the data
    and its link logged at INFO."""
    mail_from: str = "propdata <no-reply@localhost>"
    """PROPDATA_MAIL_FROM: the From of the portal's mail."""
    public_url: str | None = None
    """PROPDATA_PUBLIC_URL: the service's address as people reach it (https://api.example.com),
    used in mailed links; https:// also marks session cookies Secure. Unset: the address the
    server listens on (never the request's Host header, which a client chooses)."""
    session_days: float = 30.0
    """PROPDATA_SESSION_DAYS: a portal session ends this many days after sign-in however often
    it is used (beside the 14 days without a request that also end it)."""
    trusted_proxies: str = ""
    """PROPDATA_TRUSTED_PROXIES: comma-separated addresses or networks of the proxies in front
    (10.0.0.0/8,127.0.0.1); from them X-Forwarded-For names the client for the portal's
    attempt limits. Empty: the socket peer is the client."""
    head_timeout: float = 10.0
    """PROPDATA_HEAD_TIMEOUT: seconds `propdata serve` waits for a request's head (its line and
    headers) to arrive whole, from the connection's opening or the request's first byte."""
    body_timeout: float = 10.0
    """PROPDATA_BODY_TIMEOUT: seconds `propdata serve` waits for the next bytes of a request
    body before answering 408 and closing the connection."""
    max_connections: int = 500
    """PROPDATA_MAX_CONNECTIONS: open connections per worker of `propdata serve`; one more is
    answered 503 and closed. Keep workers times this under the open-files limit."""
    stream_keepalive: float = 15.0
    """PROPDATA_STREAM_KEEPALIVE: seconds an event stream (GET /v1/events/stream) may go
    without sending anything before it sends a comment line that keeps it open."""
    stream_queue: int = 1000
    """PROPDATA_STREAM_QUEUE: events an open stream may fall behind its reader; one more
    and the stream ends (the reader resumes with Last-Event-ID)."""

    export_dir: str = "var/exports"
    """PROPDATA_EXPORT_DIR: the folder of bulk export snapshots (`propdata data export`, the
    periodic exports, GET /v1/exports); with several hosts, one folder they all share."""
    export_every: float | None = None
    """PROPDATA_EXPORT_EVERY: make a snapshot this often (`24h`, `90m`, `3600s`, or seconds),
    by one process of all the hosts; unset: only on command (`propdata data export`)."""
    export_keep: int = 3
    """PROPDATA_EXPORT_KEEP: the snapshots the periodic exports keep (older ones are removed)."""
    valuation_cache_mb: float = 256.0
    """PROPDATA_VALUATION_CACHE_MB: memory a process that loads records (`data replicate`,
    `data import --follow`) may keep the stored models' decoded training blocks in, in MB,
    so that load after load over the same markets reads and decodes each block once; 0
    keeps none. 256 holds the blocks of some 2,500 of the 1,000,000-property bench store's
    6,667 ZIP codes (about 0.1 MB each, both models)."""
    deliveries: Literal["workers", "apart"] = "workers"
    """PROPDATA_DELIVERIES: who sends webhook deliveries. `workers`: the server's workers (one
    a host on SQLite, every one at scale-out), between requests. `apart`: processes of
    `propdata deliver` only, at a lower CPU priority than the workers; `propdata serve`
    starts one beside its workers and sets this for them (`--deliveries workers` does not)."""

    def today(self) -> dt.date:
        return self.as_of or dt.datetime.now(dt.UTC).date()

    @property
    def valuation_cache_bytes(self) -> int:
        return int(self.valuation_cache_mb * 1024 * 1024)

    @property
    def cache_bytes(self) -> int:
        """This worker's share of the host's embedded cache budget, in bytes."""
        return int(self.cache_mb * 1024 * 1024 / self.workers)

    @property
    def accounts_url(self) -> str:
        return accounts_url(self.database_url)

    @property
    def usage_path(self) -> str:
        return usage_path(self.database_url)

    @property
    def index_path(self) -> Path | None:
        """Where this host keeps search index snapshots (None: an in-memory database)."""
        if self.index_dir:
            return Path(self.index_dir)
        if _is_postgres(self.database_url):
            return Path("var/propdata-index")
        if self.database_url.removeprefix("sqlite://").removeprefix("/") in (":memory:", ""):
            return None
        return Path(_sibling(self.database_url, "-index"))

    @property
    def outbox_path(self) -> Path:
        """Where mail goes without SMTP: var/outbox beside the SQLite data file."""
        if _is_postgres(self.database_url):
            return Path("var/outbox")
        return Path(_sibling(self.database_url, "")).parent / "outbox"

    @property
    def store_file(self) -> Path | None:
        """The embedded store's file, absolute (None: PostgreSQL, or an in-memory database)."""
        if _is_postgres(self.database_url):
            return None
        path = self.database_url.removeprefix("sqlite:///").removeprefix("sqlite://")
        return None if path in (":memory:", "") else Path(path).resolve()

    @property
    def store_label(self) -> str:
        """The store as an operator reads it: the file's absolute path, or the URL without
        its password."""
        if self.store_file is not None:
            return str(self.store_file)
        if _is_postgres(self.database_url):
            return re.sub(r"//([^:@/]*):[^@/]*@", r"//\1:***@", self.database_url)
        return self.database_url

    @property
    def proxies(self) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
        return _networks(self.trusted_proxies)

    @property
    def webhook_networks(self) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
        return _networks(self.webhook_allowed_networks)

    @property
    def nameservers(self) -> tuple[tuple[str, int], ...]:
        """PROPDATA_WEBHOOK_NAMESERVERS as (address, port) pairs."""
        return tuple(_nameserver(part) for part in self.webhook_nameservers.split(",")
                     if part.strip())  # fmt: skip

    @property
    def metrics_networks(self) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
        return _networks(self.metrics_allowed_networks)


def _is_postgres(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


def _sibling(database_url: str, suffix: str) -> str:
    path = Path(database_url.removeprefix("sqlite:///").removeprefix("sqlite://"))
    return str(path.with_name(path.stem + suffix))


def accounts_url(database_url: str) -> str:
    """Where plans and keys live: embedded, a SQLite file beside the data (var/propdata.db ->
    var/propdata-accounts.db), so a data load, which holds the data file's write lock for
    minutes, never holds up a key being made, changed or revoked; at scale-out, the same
    PostgreSQL database, whose row locks keep them apart."""
    return database_url if _is_postgres(database_url) else _sibling(database_url, "-accounts.db")


def usage_path(database_url: str) -> str:
    """The embedded limiter's file: beside the SQLite database, never inside it."""
    if _is_postgres(database_url):
        # PostgreSQL without Redis: each host keeps its own counters (see docs/deploy.md).
        return "var/propdata-usage.db"
    return _sibling(database_url, "-usage.db")


ENV = {
    "database_url": "PROPDATA_DATABASE_URL",
    "redis_url": "PROPDATA_REDIS_URL",
    "cache_ttl": "PROPDATA_CACHE_TTL",
    "cache_mb": "PROPDATA_CACHE_MB",
    "workers": "PROPDATA_WORKERS",
    "as_of": "PROPDATA_AS_OF",
    "log_level": "PROPDATA_LOG_LEVEL",
    "log_format": "PROPDATA_LOG_FORMAT",
    "metrics_allowed_networks": "PROPDATA_METRICS_ALLOWED_NETWORKS",
    "metrics_token": "PROPDATA_METRICS_TOKEN",
    "webhook_allowed_networks": "PROPDATA_WEBHOOK_ALLOWED_NETWORKS",
    "webhook_nameservers": "PROPDATA_WEBHOOK_NAMESERVERS",
    "search_index": "PROPDATA_SEARCH_INDEX",
    "index_dir": "PROPDATA_INDEX_DIR",
    "index_poll": "PROPDATA_INDEX_POLL",
    "index_refresh_wait": "PROPDATA_INDEX_REFRESH_WAIT",
    "index_retry": "PROPDATA_INDEX_RETRY",
    "index_refresh_retry": "PROPDATA_INDEX_REFRESH_RETRY",
    "index_snapshot_wait": "PROPDATA_INDEX_SNAPSHOT_WAIT",
    "index_older_kept": "PROPDATA_INDEX_OLDER_KEPT",
    "index_older_seconds": "PROPDATA_INDEX_OLDER_SECONDS",
    "index_refresh_cap": "PROPDATA_INDEX_REFRESH_CAP",
    "index_page": "PROPDATA_INDEX_PAGE",
    "index_fold_rows": "PROPDATA_INDEX_FOLD_ROWS",
    "index_fold_share": "PROPDATA_INDEX_FOLD_SHARE",
    "smtp_url": "PROPDATA_SMTP_URL",
    "mail_from": "PROPDATA_MAIL_FROM",
    "public_url": "PROPDATA_PUBLIC_URL",
    "trusted_proxies": "PROPDATA_TRUSTED_PROXIES",
    "session_days": "PROPDATA_SESSION_DAYS",
    "head_timeout": "PROPDATA_HEAD_TIMEOUT",
    "body_timeout": "PROPDATA_BODY_TIMEOUT",
    "max_connections": "PROPDATA_MAX_CONNECTIONS",
    "stream_keepalive": "PROPDATA_STREAM_KEEPALIVE",
    "stream_queue": "PROPDATA_STREAM_QUEUE",
    "export_dir": "PROPDATA_EXPORT_DIR",
    "export_every": "PROPDATA_EXPORT_EVERY",
    "export_keep": "PROPDATA_EXPORT_KEEP",
    "valuation_cache_mb": "PROPDATA_VALUATION_CACHE_MB",
    "deliveries": "PROPDATA_DELIVERIES",
}
INDEX_TUNING = tuple(name for name in ENV if name.startswith("index_") and name != "index_dir")
"""The search index keeper's numbers (`search.keeper.KeeperSettings`, without the prefix)."""
_DURATION = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([smhd]?)\s*$")
_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def duration(text: str) -> float:
    """Seconds of a duration written `24h`, `90m`, `30s`, `2d` or plain seconds; ValueError
    for anything else."""
    found = _DURATION.match(text)
    if found is None:
        raise ValueError(f"{text!r} is not a duration such as 24h, 90m or 3600s")
    return float(found.group(1)) * _UNIT[found.group(2)]


def load_settings(environ: Mapping[str, str] | None = None, **overrides: object) -> Settings:
    """Read the settings from the environment; raise ConfigError naming a bad variable."""
    env = os.environ if environ is None else environ
    raw: dict[str, object] = {}
    for field, variable in ENV.items():
        value = env.get(variable)
        if value not in (None, ""):
            raw[field] = value
    raw.update({k: v for k, v in overrides.items() if v is not None})
    if isinstance(raw.get("export_every"), str):
        try:
            raw["export_every"] = duration(str(raw["export_every"]))
        except ValueError as exc:
            raise ConfigError(f"PROPDATA_EXPORT_EVERY: {exc}") from exc
    try:
        settings = msgspec.convert(raw, Settings, strict=False)
    except msgspec.ValidationError as exc:
        raise ConfigError(_explain(str(exc))) from exc
    if settings.cache_ttl < 0:
        raise ConfigError("PROPDATA_CACHE_TTL must be 0 or more seconds")
    if not 0 < settings.cache_mb <= 1_000_000:
        raise ConfigError("PROPDATA_CACHE_MB must be more than 0 and at most 1000000")
    if not 0 <= settings.valuation_cache_mb <= 1_000_000:
        raise ConfigError("PROPDATA_VALUATION_CACHE_MB must be 0 or more and at most 1000000")
    if not 1 <= settings.workers <= 1024:
        raise ConfigError("PROPDATA_WORKERS must be a whole number from 1 to 1024")
    for name in ("head_timeout", "body_timeout"):
        if not 0 < getattr(settings, name) <= 3600:
            raise ConfigError(f"{ENV[name]} must be more than 0 and at most 3600 seconds")
    if not 1 <= settings.max_connections <= 1_000_000:
        raise ConfigError("PROPDATA_MAX_CONNECTIONS must be a whole number from 1 to 1000000")
    if not 0 < settings.stream_keepalive <= 3600:
        raise ConfigError("PROPDATA_STREAM_KEEPALIVE must be more than 0 and at most 3600 seconds")
    if not 1 <= settings.stream_queue <= 1_000_000:
        raise ConfigError("PROPDATA_STREAM_QUEUE must be a whole number from 1 to 1000000")
    for name in INDEX_TUNING:
        if not 0 < getattr(settings, name) <= 1_000_000:
            raise ConfigError(f"{ENV[name]} must be more than 0 and at most 1000000")
    if settings.index_fold_share > 1:
        raise ConfigError("PROPDATA_INDEX_FOLD_SHARE must be more than 0 and at most 1")
    if settings.log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise ConfigError("PROPDATA_LOG_LEVEL must be DEBUG, INFO, WARNING or ERROR")
    if settings.redis_url is not None and not settings.redis_url.startswith(
        ("redis://", "rediss://", "unix://")
    ):
        raise ConfigError("PROPDATA_REDIS_URL must be a redis:// or rediss:// URL")
    if settings.smtp_url is not None and not settings.smtp_url.startswith(("smtp://", "smtps://")):
        raise ConfigError("PROPDATA_SMTP_URL must be an smtp:// or smtps:// URL")
    if settings.public_url is not None and not settings.public_url.startswith(
        ("http://", "https://")
    ):
        raise ConfigError("PROPDATA_PUBLIC_URL must be an http:// or https:// URL")
    if not 0 < settings.session_days <= 366:
        raise ConfigError("PROPDATA_SESSION_DAYS must be more than 0 and at most 366")
    for field in ("trusted_proxies", "metrics_allowed_networks", "webhook_allowed_networks"):
        try:
            _networks(getattr(settings, field))
        except ValueError as exc:
            raise ConfigError(f"{ENV[field]}: {exc}") from exc
    try:
        settings.nameservers  # noqa: B018 (parsed to be checked)
    except ValueError as exc:
        raise ConfigError(f"PROPDATA_WEBHOOK_NAMESERVERS: {exc}") from exc
    if settings.export_every is not None and not 60 <= settings.export_every <= 366 * 86400:
        raise ConfigError("PROPDATA_EXPORT_EVERY must be at least 1 minute and at most 366 days")
    if not 1 <= settings.export_keep <= 1000:
        raise ConfigError("PROPDATA_EXPORT_KEEP must be a whole number from 1 to 1000")
    if settings.metrics_token is not None and len(settings.metrics_token) < 16:
        raise ConfigError("PROPDATA_METRICS_TOKEN must be at least 16 characters")
    return settings


def _nameserver(text: str) -> tuple[str, int]:
    """`address`, `address:port` or `[v6]:port` as (address, port); ValueError else."""
    host, port = text.strip(), "53"
    if host.startswith("["):
        host, _, rest = host[1:].partition("]")
        port = rest.removeprefix(":") if rest else port
    elif host.count(":") == 1:
        host, _, port = host.partition(":")
    if not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
        raise ValueError(f"{text.strip()!r}: the port must be a number from 1 to 65535")
    try:
        ipaddress.ip_address(host)
    except ValueError as exc:
        raise ValueError(f"{text.strip()!r}: not an IP address (with an optional :port)") from exc
    return host, int(port)


def _networks(text: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(
        ipaddress.ip_network(part.strip(), strict=False) for part in text.split(",") if part.strip()
    )


def _explain(message: str) -> str:
    for field, variable in ENV.items():
        message = message.replace(f"`$.{field}`", variable)
    return message

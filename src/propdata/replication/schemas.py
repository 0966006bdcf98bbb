"""A replication source as stored, and the checks of what an operator gives for one."""

from __future__ import annotations

import datetime as dt
import ipaddress
import re
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

import msgspec

from propdata.errors import InvalidParameter

NAME = re.compile(r"^[a-z0-9][a-z0-9_]{0,31}$")
"""A source's name: it prefixes its records' ids (`NAME-ListingKey`), so no '-' inside."""
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
PAGE_SIZE = (1, 10_000, 1_000)
"""Least, most and default records asked per page."""
REQUESTS_PER_HOUR = (1, 360_000, 7_200)
OVERLAP = (0, 86_400, 300)
MAX_FILTER = 2_000
MAX_URL = 2_000

AuthKind = Literal["none", "token", "oauth"]


class Auth(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """How a source authenticates: the names of environment variables, never a secret."""

    kind: AuthKind = "none"
    token_env: str | None = None
    token_url: str | None = None
    client_id: str | None = None
    secret_env: str | None = None
    scope: str | None = None


@dataclass(frozen=True, slots=True)
class SourceConfig:
    """What `propdata sources add` was given, checked."""

    name: str
    url: str
    auth: Auth = field(default_factory=Auth)
    filter: str | None = None
    page_size: int = PAGE_SIZE[2]
    requests_per_hour: int = REQUESTS_PER_HOUR[2]
    overlap: int = OVERLAP[2]
    events_url: str | None = None
    """The feed's EntityEvent collection (RESO RCP-27), on the host of `url`: when given, a
    pass reads the Property events after the source's sequence and asks `url` for the records
    they name, a record the feed no longer returns leaving the store, instead of walking the
    records by ModificationTimestamp."""


@dataclass(frozen=True, slots=True)
class Watermark:
    """Where a source's replication stands: its last committed record's
    `ModificationTimestamp` (UTC, as the feed wrote it) and key; for a source that follows
    EntityEvent, the last event's `EntityEventSequence` it committed."""

    timestamp: str | None = None
    key: str | None = None
    sequence: int | None = None

    def shown(self) -> str | None:
        """As `sources list` and the progress line show it."""
        if self.sequence is not None:
            return f"EntityEventSequence {self.sequence}"
        return self.timestamp


@dataclass(frozen=True, slots=True)
class Source:
    """A stored source with where its replication stands."""

    config: SourceConfig
    created_at: str
    watermark: Watermark
    committed_at: str | None
    records: int
    rejects: int
    removed: int
    last_pass_at: str | None
    state: str
    error: str | None
    requests: dict[str, int]
    events_from: int | None = None
    """For a source that follows EntityEvent and has no sequence yet: the log's newest
    event, noted before its catch-up pass by timestamp (None: not noted yet)."""


def check_name(name: str) -> str:
    if not NAME.fullmatch(name):
        raise InvalidParameter(
            "NAME", "NAME must be 1-32 lower-case letters, digits or '_', starting with a letter"
            " or digit (it prefixes the records' ids: NAME-ListingKey)",
        )  # fmt: skip
    return name


def check_url(url: str, option: str = "URL") -> str:
    """An https URL (http only to this machine, for tests); no user info, no fragment."""
    if len(url) > MAX_URL or any(c.isspace() or ord(c) < 32 for c in url):
        raise InvalidParameter(option, f"{option} is not a URL")
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme not in ("https", "http") or not host:
        raise InvalidParameter(option, f"{option} must be an https:// URL")
    if parts.username or parts.password:
        raise InvalidParameter(option, f"{option} must not carry a user name or password")
    if parts.fragment:
        raise InvalidParameter(option, f"{option} must not have a #fragment")
    if parts.scheme == "http" and not _loopback(host):
        raise InvalidParameter(
            option, f"{option} must be https:// (http:// only for this machine: 127.0.0.1)"
        )
    return url


def check_events_url(events: str, url: str) -> str:
    """An EntityEvent collection URL on the scheme, host and port of the source's `url`: the
    credentials go to no other host."""
    check_url(events, "--entity-events")
    given, ours = urlsplit(events), urlsplit(url)
    if (given.scheme, given.hostname, given.port) != (ours.scheme, ours.hostname, ours.port):
        raise InvalidParameter(
            "--entity-events", "--entity-events must be on the same host as URL (its credentials"
            " go nowhere else)",
        )  # fmt: skip
    return events


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_env(name: str, option: str) -> str:
    if not ENV_NAME.fullmatch(name):
        raise InvalidParameter(option, f"{option} must name an environment variable (A-Z, 0-9, _)")
    return name


def check_range(value: int, bounds: tuple[int, int, int], option: str) -> int:
    least, most, _ = bounds
    if not least <= value <= most:
        raise InvalidParameter(option, f"{option} must be from {least:,} to {most:,}")
    return value


def check_filter(text: str) -> str:
    """An OData `$filter` expression, ANDed to every request: bounded, balanced, one line."""
    text = text.strip()
    if not text or len(text) > MAX_FILTER or any(ord(c) < 32 for c in text):
        raise InvalidParameter(
            "--filter", f"--filter must be one line of 1-{MAX_FILTER} characters"
        )
    depth, quoted = 0, False
    for c in text:
        if c == "'":
            quoted = not quoted
        elif not quoted and c == "(":
            depth += 1
        elif not quoted and c == ")":
            depth -= 1
            if depth < 0:
                break
    if depth != 0 or quoted:
        raise InvalidParameter("--filter", "--filter has unbalanced parentheses or quotes")
    return text


def utc_now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")

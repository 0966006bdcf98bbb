"""Reading a RESO Web API collection (OData 4) page by page, with the feed's manners.

A pass asks for the records modified since `watermark - overlap`, ordered by
`ModificationTimestamp` then `ListingKey`, `$top` and `Prefer: odata.maxpagesize` records a
page, the operator's filter ANDed (in parentheses) into every request. It follows
`@odata.nextLink` whenever the server gives one; otherwise it asks for the records after the
last one it has (timestamp, then key); a server that refuses that query is paged by `$skip`.

    client = FeedClient(config, os.environ)
    async for page in client.pages(watermark):
        ...  # page.records: the JSON objects, in the feed's order

A source that follows the feed's EntityEvent resource (RESO RCP-27) reads instead the
Property events after its sequence, in sequence order (nextLink, else the sequence itself),
and asks the Property collection for the records they name, KEYS_PER_REQUEST keys a request
(`ListingKey eq '...' or ...`, which every OData 4 server reads), the filter ANDed:

    async for events in client.events(watermark.sequence):
        found = await client.records(events.keys())
"""

from __future__ import annotations

import asyncio
import datetime as dt
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

import httpx

from propdata.replication.schemas import SourceConfig, Watermark
from propdata.webhooks.retries import retry_after

KEY = "ListingKey"
STAMP = "ModificationTimestamp"
SEQUENCE = "EntityEventSequence"
RESOURCE = "ResourceName"
RECORD_KEY = "ResourceRecordKey"
MAX_SEQUENCE = 2**63 - 1
"""RCP-27: a sequence is the positive part of an Int64."""
KEYS_PER_REQUEST = 100
"""Keys one request for records names: some 3 KB of URL, under every server's limit."""
MAX_WAIT = 300.0
"""The longest wait between two requests: a Retry-After, a back-off."""
MIN_INTERVAL = 0.5
"""At most 2 requests a second, whatever the hourly allowance."""
NETWORK_TRIES = 6
"""Requests tried after a network error (waiting 1, 2, 4, ... s) before the pass fails."""
RENEW_BEFORE = 60.0
"""An OAuth token is renewed this many seconds before it expires."""
TIMEOUT = httpx.Timeout(30.0, connect=10.0)


class FeedError(Exception):
    """The pass cannot go on; the message names the cause (never a secret)."""


@dataclass(slots=True)
class Page:
    records: list[dict[str, Any]]
    mode: str
    """How it was asked for: "first", "nextLink", "keyset" or "skip"."""


@dataclass(slots=True)
class EventPage:
    events: list[tuple[int, str]]
    """(EntityEventSequence, ResourceRecordKey) of each Property event, in sequence order."""
    last: int
    """The page's last sequence: where the next page starts."""

    def keys(self) -> list[str]:
        """The records the page names, once each, in the order of their last event."""
        latest = {key: sequence for sequence, key in self.events}
        return sorted(latest, key=latest.__getitem__)


Sleep = Callable[[float], Awaitable[None]]
Count = Callable[[str], None]


@dataclass(slots=True)
class Pacer:
    """Spaces requests: at most `per_hour` an hour and 2 a second."""

    per_hour: int
    clock: Callable[[], float] = time.monotonic
    last: float | None = None

    @property
    def interval(self) -> float:
        return max(MIN_INTERVAL, 3600.0 / self.per_hour)

    def wait(self) -> float:
        """Seconds until the next request may go."""
        if self.last is None:
            return 0.0
        return max(0.0, self.last + self.interval - self.clock())

    def sent(self) -> None:
        self.last = self.clock()


@dataclass(slots=True)
class _Token:
    value: str
    expires: float


@dataclass(slots=True)
class FeedClient:
    """One source's requests. Secrets are read from `env` by the variable names the source
    stores, kept in memory only, and never put in a message."""

    config: SourceConfig
    env: Mapping[str, str]
    transport: httpx.AsyncBaseTransport | None = None
    sleep: Sleep = asyncio.sleep
    count: Count = lambda status: None
    clock: Callable[[], float] = time.monotonic
    pacer: Pacer = field(init=False)
    _token: _Token | None = field(default=None, init=False)
    _http: httpx.AsyncClient | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.pacer = Pacer(self.config.requests_per_hour, self.clock)
        self._secret(self.config.auth.token_env)
        self._secret(self.config.auth.secret_env)

    def _secret(self, variable: str | None) -> str | None:
        if variable is None:
            return None
        value = self.env.get(variable, "")
        if not value:
            raise FeedError(
                f"source {self.config.name}: the environment variable {variable} is not set"
            )
        return value

    async def __aenter__(self) -> FeedClient:
        self._http = httpx.AsyncClient(transport=self.transport, timeout=TIMEOUT,
                                       follow_redirects=False)  # fmt: skip
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._http is not None:
            await self._http.aclose()

    # -- the pages of a pass -------------------------------------------------------------

    async def pages(self, watermark: Watermark) -> AsyncIterator[Page]:
        """The pages of records modified since `watermark - overlap`, in order, to the end."""
        since = _since(watermark.timestamp, self.config.overlap)
        top = self.config.page_size
        url: str | None = self._url(since, None, top, skip=None)
        mode = "first"
        skip = 0
        chain = 0
        """Records since the last URL built here: a server that pages by nextLink within
        the `$top` asked (as SAP CAP does) ends its links once `$top` records were sent."""
        while url is not None:
            body = await self._get(url, allow_refusal=mode == "keyset")
            if body is None:  # the server refused the keyset query: page by $skip
                mode = "skip"
                url = self._url(since, None, top, skip=skip)
                continue
            records = body.get("value")
            if not isinstance(records, list):
                raise FeedError(f"source {self.config.name}: the answer has no `value` list")
            page = [r for r in records if isinstance(r, dict)]
            yield Page(page, mode)
            skip += len(page)
            chain += len(page)
            next_link = body.get("@odata.nextLink")
            if isinstance(next_link, str) and next_link:
                url, mode = self._same_origin(str(httpx.URL(url).join(next_link))), "nextLink"
                continue
            if chain < top or not page:
                url = None
            elif mode == "skip":
                url = self._url(since, None, top, skip=skip)
            else:
                last = page[-1]
                stamp, key = last.get(STAMP), last.get(KEY)
                if not isinstance(stamp, str) or key is None:
                    raise FeedError(
                        f"source {self.config.name}: a record lacks {STAMP} or {KEY},"
                        " so the pages cannot follow the timestamp order"
                    )
                url, mode = self._url(since, (stamp, str(key)), top, skip=None), "keyset"
            chain = 0

    async def events(self, after: int | None) -> AsyncIterator[EventPage]:
        """The pages of Property events after sequence `after` (all, when None), in order,
        to the end of the log."""
        assert self.config.events_url is not None
        top = self.config.page_size
        url: str | None = self._events_url(after, top)
        chain = 0
        while url is not None:
            body = await self._get(url)
            assert body is not None
            page = EventPage([], after if after is not None else 0)
            for record in _values(body, self.config.name):
                sequence, key = self._sequence(record), record.get(RECORD_KEY)
                if after is not None and sequence <= after:
                    raise FeedError(f"source {self.config.name}: the events are not in"
                                    f" {SEQUENCE} order ({sequence} after {after})")  # fmt: skip
                after = page.last = sequence
                if record.get(RESOURCE, "Property") == "Property" and key is not None:
                    page.events.append((sequence, str(key)))
            yield page
            chain += len(body["value"])
            next_link = body.get("@odata.nextLink")
            if isinstance(next_link, str) and next_link:
                url = self._same_origin(str(httpx.URL(url).join(next_link)))
                continue
            url = None if chain < top or not body["value"] else self._events_url(after, top)
            chain = 0

    async def newest_event(self) -> int:
        """The sequence of the log's newest Property event (0 when it has none)."""
        assert self.config.events_url is not None
        query = {"$filter": f"{RESOURCE} eq 'Property'", "$orderby": f"{SEQUENCE} desc",
                 "$top": "1"}  # fmt: skip
        body = await self._get(_with_query(self.config.events_url, query))
        assert body is not None
        found = _values(body, self.config.name)
        return self._sequence(found[0]) if found else 0

    def _sequence(self, event: dict[str, Any]) -> int:
        sequence = event.get(SEQUENCE)
        if isinstance(sequence, str) and sequence.isdigit():
            sequence = int(sequence)  # Edm.Int64 as a string (IEEE754Compatible)
        if (
            not isinstance(sequence, int)
            or isinstance(sequence, bool)
            or not (0 <= sequence <= MAX_SEQUENCE)
        ):
            raise FeedError(f"source {self.config.name}: an event lacks a whole {SEQUENCE},"
                            " so the events cannot be followed in order")  # fmt: skip
        return sequence

    async def records(self, keys: list[str]) -> list[dict[str, Any]]:
        """The Property records of `keys` that the feed returns (with the filter)."""
        found: list[dict[str, Any]] = []
        for start in range(0, len(keys), KEYS_PER_REQUEST):
            chunk = keys[start : start + KEYS_PER_REQUEST]
            named = " or ".join(f"{KEY} eq '{_quoted(key)}'" for key in chunk)
            clauses = [f"({named})"] + ([f"({self.config.filter})"] if self.config.filter else [])
            query = {"$filter": " and ".join(clauses), "$top": str(len(chunk))}
            url: str | None = _with_query(self.config.url, query)
            while url is not None:
                body = await self._get(url)
                assert body is not None
                found += _values(body, self.config.name)
                next_link = body.get("@odata.nextLink")
                url = None
                if isinstance(next_link, str) and next_link:
                    url = self._same_origin(str(httpx.URL(self.config.url).join(next_link)))
        return found

    def _events_url(self, after: int | None, top: int) -> str:
        assert self.config.events_url is not None
        clauses = [f"{RESOURCE} eq 'Property'"]
        if after is not None:
            clauses.insert(0, f"{SEQUENCE} gt {after}")
        query = {"$filter": " and ".join(clauses), "$orderby": SEQUENCE, "$top": str(top)}
        return _with_query(self.config.events_url, query)

    def _same_origin(self, link: str) -> str:
        """A nextLink on the source's own scheme, host and port: the credentials go nowhere
        else."""
        given, ours = httpx.URL(link), httpx.URL(self.config.url)
        if (given.scheme, given.host, given.port) != (ours.scheme, ours.host, ours.port):
            raise FeedError(
                f"source {self.config.name}: the server's nextLink leads to another host"
                f" ({given.host}); not followed"
            )
        return link

    def _url(self, since: str | None, after: tuple[str, str] | None, top: int,
             skip: int | None) -> str:  # fmt: skip
        clauses = []
        if after is not None:
            stamp, key = after
            quoted = _quoted(key)
            clauses.append(f"({STAMP} gt {stamp} or ({STAMP} eq {stamp} and {KEY} gt '{quoted}'))")
        elif since is not None:
            clauses.append(f"{STAMP} ge {since}")
        if self.config.filter:
            clauses.append(f"({self.config.filter})")
        query: dict[str, str] = {"$orderby": f"{STAMP},{KEY}", "$top": str(top)}
        if clauses:
            query["$filter"] = " and ".join(clauses)
        if skip:
            query["$skip"] = str(skip)
        return _with_query(self.config.url, query)

    # -- one request ----------------------------------------------------------------------

    async def _get(self, url: str, *, allow_refusal: bool = False) -> dict[str, Any] | None:
        """The JSON body of a GET, after waits, renewals and retries; None when
        `allow_refusal` and the server answered 400 or 501."""
        assert self._http is not None, "use the client in `async with`"
        renewed = False
        failures = 0
        waited = 0.0
        while True:
            await self._pace(waited)
            waited = 0.0
            headers = {"Accept": "application/json",
                       "Prefer": f"odata.maxpagesize={self.config.page_size}"}  # fmt: skip
            authorization = await self._authorization(renew=False)
            if authorization:
                headers["Authorization"] = authorization
            try:
                response = await self._http.get(url, headers=headers)
            except httpx.TransportError as exc:
                self.count("error")
                failures += 1
                if failures >= NETWORK_TRIES:
                    raise FeedError(
                        f"source {self.config.name}: cannot reach {httpx.URL(url).host}"
                        f" ({type(exc).__name__}) after {failures} tries"
                    ) from None
                waited = min(MAX_WAIT, 2.0 ** (failures - 1)) * (0.8 + 0.4 * random.random())
                continue
            self.count(str(response.status_code))
            status = response.status_code
            if status == 200:
                try:
                    body = response.json()
                except ValueError:
                    raise FeedError(f"source {self.config.name}: the answer is not JSON") from None
                if not isinstance(body, dict):
                    raise FeedError(f"source {self.config.name}: the answer is not an object")
                return body
            if status in (429, 503):
                asked = retry_after(response.headers.get("Retry-After"), time.time())
                failures += 1
                waited = min(MAX_WAIT, asked if asked is not None else 2.0**failures)
                continue
            if status == 401 and self.config.auth.kind == "oauth" and not renewed:
                renewed = True
                await self._authorization(renew=True)
                continue
            if allow_refusal and status in (400, 501):
                return None
            if status >= 500:
                failures += 1
                if failures < NETWORK_TRIES:
                    waited = min(MAX_WAIT, 2.0 ** (failures - 1))
                    continue
            raise FeedError(
                f"source {self.config.name}: {httpx.URL(url).host} answered {status}"
                + (" (the credentials were refused)" if status in (401, 403) else "")
            )

    async def _pace(self, extra: float) -> None:
        delay = max(self.pacer.wait(), extra)
        if delay > 0:
            await self.sleep(delay)
        self.pacer.sent()

    async def _authorization(self, *, renew: bool) -> str | None:
        auth = self.config.auth
        if auth.kind == "token":
            return f"Bearer {self._secret(auth.token_env)}"
        if auth.kind != "oauth":
            return None
        token = self._token
        if renew or token is None or token.expires - RENEW_BEFORE <= self.clock():
            token = self._token = await self._fetch_token()
        return f"Bearer {token.value}"

    async def _fetch_token(self) -> _Token:
        """OAuth2 client credentials: a new access token from the token URL."""
        assert self._http is not None
        auth = self.config.auth
        form = {"grant_type": "client_credentials", "client_id": auth.client_id or "",
                "client_secret": self._secret(auth.secret_env) or ""}  # fmt: skip
        if auth.scope:
            form["scope"] = auth.scope
        await self._pace(0.0)
        try:
            response = await self._http.post(auth.token_url or "", data=form,
                                             headers={"Accept": "application/json"})  # fmt: skip
        except httpx.TransportError as exc:
            raise FeedError(
                f"source {self.config.name}: cannot reach the token URL ({type(exc).__name__})"
            ) from None
        self.count(f"token {response.status_code}")
        if response.status_code != 200:
            raise FeedError(
                f"source {self.config.name}: the token URL answered {response.status_code}"
                " (check --client-id and the secret's variable)"
            )
        try:
            body = response.json()
            value = str(body["access_token"])
            lifetime = float(body.get("expires_in", 3600))
        except (ValueError, KeyError, TypeError):
            raise FeedError(
                f"source {self.config.name}: the token URL's answer has no access_token"
            ) from None
        return _Token(value, self.clock() + lifetime)


def _with_query(url: str, query: dict[str, str]) -> str:
    joiner = "&" if "?" in url else "?"
    return url + joiner + urlencode(query, safe="$,'()", quote_via=quote)


def _quoted(key: str) -> str:
    """A key as the inside of an OData string literal."""
    return key.replace("'", "''")


def _values(body: dict[str, Any], name: str) -> list[dict[str, Any]]:
    records = body.get("value")
    if not isinstance(records, list):
        raise FeedError(f"source {name}: the answer has no `value` list")
    return [r for r in records if isinstance(r, dict)]


def _since(timestamp: str | None, overlap: int) -> str | None:
    """`timestamp - overlap` as an OData DateTimeOffset literal (UTC), or None."""
    if timestamp is None:
        return None
    moment = dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    earlier = moment.astimezone(dt.UTC) - dt.timedelta(seconds=overlap)
    return earlier.strftime("%Y-%m-%dT%H:%M:%SZ")

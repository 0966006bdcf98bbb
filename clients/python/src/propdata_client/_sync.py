"""The synchronous client, `Client`.

Generated from `_async.py` by `clients/python/tools/unasync.py`: edit that file, not this.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar, cast, overload

import httpx
import msgspec

from propdata_client import _core
from propdata_client._core import Record
from propdata_client.errors import PropdataError
from propdata_client.models import (
    AuthStatus,
    ChangesPage,
    CreatedWebhook,
    Delivery,
    EventsPage,
    EventType,
    Export,
    ExportFile,
    Market,
    MarketHistory,
    Page,
    Property,
    PropertyHistory,
    PropertyMatch,
    PropertyPage,
    PropertySort,
    PropertyStatus,
    PropertySummary,
    PropertyType,
    RateLimit,
    SavedSearch,
    SortOrder,
    StreamedEvent,
    Valuation,
    Webhook,
    WebhookStatus,
)

T = TypeVar("T")


def _args(values: dict[str, Any]) -> dict[str, Any]:
    """A method's keyword arguments (its `locals()` on entry), without `self`."""
    return {name: value for name, value in values.items() if name != "self"}


class Client:
    """A client of the propdata API.

    ```python
    from propdata_client import Client

    with Client() as client:  # PROPDATA_API_KEY, PROPDATA_BASE_URL
        home = client.properties.get("syn-0000059")
        print(home.list_price)
        for item in client.properties.search_all(zip_code="50010"):
            print(item.id)
    ```

    `api_key` and `base_url` default to the environment variables `PROPDATA_API_KEY` and
    `PROPDATA_BASE_URL` (then `http://127.0.0.1:8000`). Failed requests are retried up to
    `max_retries` times: a 429 after its `Retry-After` plus 0-1 s of jitter, a 503 or a
    connection error after a capped exponential backoff; a wait announced longer than
    `max_retry_wait` seconds raises at once. `sleep` replaces `time.sleep` for those
    waits; `http_client` replaces the `httpx.Client` the client makes (its base URL and
    headers are not used: each request carries its own). The client remembers the ETag and
    body of the latest `etag_cache` answers (default 128; 0 turns it off) and asks for them
    again with `If-None-Match`: a 304 is answered from memory (`last_not_modified` is then
    True).
    """

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        timeout: float = _core.DEFAULT_TIMEOUT,
        max_retries: int = _core.DEFAULT_MAX_RETRIES,
        max_retry_wait: float = _core.DEFAULT_MAX_RETRY_WAIT,
        sleep: Callable[[float], None] | None = None,
        http_client: httpx.Client | None = None,
        etag_cache: int = _core.DEFAULT_ETAG_CACHE,
    ) -> None:
        self._settings = _core.settings(api_key, base_url, timeout, max_retries, max_retry_wait)
        self._etags = _core.EtagCache(etag_cache)
        self._http = http_client if http_client is not None else httpx.Client(timeout=timeout)
        self._owns_http = http_client is None
        self._sleep = sleep if sleep is not None else time.sleep
        self.last_rate_limit: RateLimit | None = None
        """The rate-limit and quota headers of the last answer (None when it had none)."""
        self.last_etag: str | None = None
        """The ETag of the last successful answer (None when it had none)."""
        self.last_not_modified = False
        """Whether the last successful answer was a 304, served from the client's memory."""
        self.properties = Properties(self)
        self.markets = Markets(self)
        self.auth = Auth(self)
        self.searches = Searches(self)
        self.events = Events(self)
        self.webhooks = Webhooks(self)
        self.exports = Exports(self)

    @property
    def base_url(self) -> str:
        return self._settings.base_url

    @property
    def max_retries(self) -> int:
        return self._settings.retry.max_retries

    @property
    def max_retry_wait(self) -> float:
        return self._settings.retry.max_retry_wait

    def __repr__(self) -> str:
        return f"Client(base_url={self.base_url!r})"

    # -- transport --------------------------------------------------------------------

    def _send(
        self,
        path: str,
        params: dict[str, str],
        *,
        method: str = "GET",
        body: bytes | None = None,
    ) -> tuple[httpx.Response, bytes]:
        """The answer and its body (a GET's 304 from memory), after the retry rule."""
        settings = self._settings
        key = _core.EtagCache.key(path, params)
        reading = method == "GET"
        retries = 0
        while True:
            cause: Exception | None = None
            known = self._etags.get(key) if reading else None
            headers = settings.headers
            if known is not None:
                headers = {**headers, "If-None-Match": known.etag}
            if body is not None:
                headers = {**headers, "Content-Type": "application/json"}
            try:
                response = self._http.request(
                    method,
                    settings.base_url + path,
                    params=params,
                    headers=headers,
                    content=body,
                    timeout=settings.timeout,
                )
            except httpx.TransportError as exc:
                error: PropdataError = _core.connection_error(exc)
                cause = exc
            else:
                self.last_rate_limit = _core.rate_limit_of(response)
                if response.status_code < 300 or (response.status_code == 304 and known):
                    if not reading:
                        self.last_not_modified, self.last_etag = False, None
                        return response, response.content
                    return self._answered(key, response, known)
                error = _core.error_of(response, self.last_rate_limit)
            wait = settings.retry.wait(retries, error, idempotent=method != "POST")
            if wait is None:
                raise error from cause
            self._sleep(wait)
            retries += 1

    def _answered(
        self, key: str, response: httpx.Response, known: _core.Remembered | None
    ) -> tuple[httpx.Response, bytes]:
        self.last_not_modified = response.status_code == 304
        if known is not None and self.last_not_modified:
            self.last_etag = response.headers.get("ETag", known.etag)
            return response, known.content
        self.last_etag = response.headers.get("ETag")
        self._etags.put(key, self.last_etag, response.content)
        return response, response.content

    def _call(self, call: _core.Call[T]) -> T:
        response, content = self._send(call.path, call.params, method=call.method, body=call.body)
        try:
            return call.result(content)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            self._etags.forget(_core.EtagCache.key(call.path, call.params))  # never again
            raise _core.invalid_answer(response, exc) from exc

    def _page(self, call: _core.PageCall[T]) -> Page[T]:
        response, content = self._send(call.path, call.params)
        try:
            return call.result(content)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            self._etags.forget(_core.EtagCache.key(call.path, call.params))  # never again
            raise _core.invalid_answer(response, exc) from exc

    def _follow(self, since: str | None, page_size: int | None) -> Iterator[ChangesPage]:
        while True:
            page = self._call(_core.list_changes({"since": since, "limit": page_size}))
            if not page.data:
                return
            yield page
            since = page.meta.next_cursor

    def _follow_events(self, values: dict[str, Any], page_size: int | None) -> Iterator[EventsPage]:
        while True:
            page = self._call(_core.list_events({**values, "limit": page_size}))
            if not page.data:
                return
            yield page
            values["since"] = page.meta.next_cursor

    def _stream(
        self,
        since: str | None,
        types: Sequence[str] | str | None,
        search_id: str | None,
        max_reconnects: int | None,
        on_open: Callable[[], None] | None = None,
        on_retry: Callable[[PropdataError | None, float], None] | None = None,
    ) -> Iterator[StreamedEvent]:
        settings = self._settings
        url = settings.base_url + _core.stream_path()
        timeout = httpx.Timeout(settings.timeout, read=_core.STREAM_READ_TIMEOUT)
        parser = _core.SseParser()
        cursor, failures, reconnects = since, 0, 0
        while True:
            error: PropdataError | None = None
            cause: Exception | None = None
            try:
                headers = _core.stream_headers(settings, cursor)
                with self._http.stream("GET", url, headers=headers, timeout=timeout) as response:
                    self.last_rate_limit = _core.rate_limit_of(response)
                    if response.status_code >= 300:
                        response.read()
                        error = _core.error_of(response, self.last_rate_limit)
                    else:
                        failures = 0
                        parser = _core.SseParser()
                        if on_open is not None:
                            on_open()
                        for line in response.iter_lines():
                            message = parser.feed(line)
                            if message is None:
                                continue
                            item = _core.streamed(message)
                            cursor = item.cursor
                            if _core.wanted(item.event, types, search_id):
                                yield item
            except httpx.TransportError as exc:
                error, cause = _core.connection_error(exc), exc
            wait = _core.reconnect_wait(failures, error, settings.retry, parser.retry_ms)
            if wait is None or (max_reconnects is not None and reconnects >= max_reconnects):
                if error is None:
                    return
                raise error from cause
            failures += error is not None
            reconnects += 1
            if on_retry is not None:
                on_retry(error, wait)
            self._sleep(wait)

    def _iterate(self, call: _core.PageCall[T]) -> Iterator[T]:
        page = self._page(call.at(int(call.params.get("offset", "0"))))
        seen: set[str] = set()
        while True:
            yield from page.data
            following = _core.following(page, call, seen)
            if following is None:
                return
            page = self._page(following)

    # -- lifetime ---------------------------------------------------------------------

    def close(self) -> None:
        """Close the connections (not those of an `http_client` passed in)."""
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class Properties:
    """`client.properties`: property records, lookups, searches, history, valuations and
    the change feed.

    Each method that reads records takes `fields` (wire names, dotted for nested ones, such
    as `["listPrice", "address.zipCode"]`, or one comma-separated string): the answer then
    holds only those fields and `id`, and the method returns it as the wire's JSON, a `dict`
    with camelCase names and dates as strings (`Record`), instead of the model.
    """

    def __init__(self, client: Client) -> None:
        self._client = client

    @overload
    def get(self, property_id: str, *, fields: None = None) -> Property: ...
    @overload
    def get(self, property_id: str, *, fields: Sequence[str]) -> Record: ...
    def get(self, property_id: str, *, fields: Sequence[str] | None = None) -> Property | Record:
        """The full record of a property: `GET /v1/properties/{id}`."""
        result: Property | Record = self._client._call(_core.get_property(property_id, fields))
        return result

    @overload
    def lookup(
        self, street_address: str | None = None, city: str | None = None,
        state: str | None = None, zip_code: str | None = None,
        *, address: str | None = None, parcel_id: str | None = None, fields: None = None,
    ) -> PropertyMatch: ...  # fmt: skip
    @overload
    def lookup(
        self, street_address: str | None = None, city: str | None = None,
        state: str | None = None, zip_code: str | None = None,
        *, address: str | None = None, parcel_id: str | None = None, fields: Sequence[str],
    ) -> Record: ...  # fmt: skip
    def lookup(
        self, street_address: str | None = None, city: str | None = None,
        state: str | None = None, zip_code: str | None = None,
        *, address: str | None = None, parcel_id: str | None = None,
        fields: Sequence[str] | None = None,
    ) -> PropertyMatch | Record:  # fmt: skip
        """The one property at a street address: `GET /v1/properties/lookup`.

        Give `street_address` with `city` and `state`, or with `zip_code` (ZIP+4 is read as
        its five digits); or the whole address on one line in `address` alone; or the
        assessor's parcel number in `parcel_id` alone. Raises
        NotFoundError when nothing matches exactly and AmbiguousAddressError (with the
        candidate `zip_codes`) when several properties match; both carry `candidates`, the
        properties at that street address.
        """
        result: PropertyMatch | Record = self._client._call(_core.lookup_property(_args(locals())))
        return result

    @overload
    def search(
        self,
        *,
        zip_code: str | None = None,
        city: str | None = None,
        state: str | None = None,
        status: PropertyStatus | None = None,
        property_type: PropertyType | None = None,
        min_price: int | None = None,
        max_price: int | None = None,
        min_beds: int | None = None,
        max_beds: int | None = None,
        min_baths: float | None = None,
        min_sqft: int | None = None,
        max_sqft: int | None = None,
        min_year_built: int | None = None,
        max_days_on_market: int | None = None,
        latitude: float | None = None,
        longitude: float | None = None,
        radius: float | None = None,
        bbox: tuple[float, float, float, float] | str | None = None,
        limit: int | None = None,
        offset: int | None = None,
        cursor: str | None = None,
        sort: PropertySort | None = None,
        order: SortOrder | None = None,
        fields: None = None,
    ) -> PropertyPage[PropertySummary]: ...
    @overload
    def search(
        self,
        *,
        zip_code: str | None = None,
        city: str | None = None,
        state: str | None = None,
        status: PropertyStatus | None = None,
        property_type: PropertyType | None = None,
        min_price: int | None = None,
        max_price: int | None = None,
        min_beds: int | None = None,
        max_beds: int | None = None,
        min_baths: float | None = None,
        min_sqft: int | None = None,
        max_sqft: int | None = None,
        min_year_built: int | None = None,
        max_days_on_market: int | None = None,
        latitude: float | None = None,
        longitude: float | None = None,
        radius: float | None = None,
        bbox: tuple[float, float, float, float] | str | None = None,
        limit: int | None = None,
        offset: int | None = None,
        cursor: str | None = None,
        sort: PropertySort | None = None,
        order: SortOrder | None = None,
        fields: Sequence[str],
    ) -> PropertyPage[Record]: ...
    def search(
        self,
        *,
        zip_code: str | None = None,
        city: str | None = None,
        state: str | None = None,
        status: PropertyStatus | None = None,
        property_type: PropertyType | None = None,
        min_price: int | None = None,
        max_price: int | None = None,
        min_beds: int | None = None,
        max_beds: int | None = None,
        min_baths: float | None = None,
        min_sqft: int | None = None,
        max_sqft: int | None = None,
        min_year_built: int | None = None,
        max_days_on_market: int | None = None,
        latitude: float | None = None,
        longitude: float | None = None,
        radius: float | None = None,
        bbox: tuple[float, float, float, float] | str | None = None,
        limit: int | None = None,
        offset: int | None = None,
        cursor: str | None = None,
        sort: PropertySort | None = None,
        order: SortOrder | None = None,
        fields: Sequence[str] | None = None,
    ) -> PropertyPage[PropertySummary] | PropertyPage[Record]:
        """One page of a property search: `GET /v1/properties`.

        `limit` defaults to the plan's page size and is clamped to its maximum
        (`page.meta.limit` is the size applied). `latitude`, `longitude` and `radius`
        (miles) together make a radius search (items then carry `distance_miles`, and
        `sort="distance"` is allowed, nearest first by default); `bbox` is (west, south,
        east, north) in degrees, not with a radius. `page.next_cursor`, sent as `cursor`
        with the same filters and sort, is the next page (None on the last); `cursor` does
        not go with `offset`.
        """
        page = self._client._page(_core.search_properties(_args(locals())))
        return cast("PropertyPage[Any]", page)  # the decoder of search_properties makes one

    @overload
    def search_all(
        self,
        *,
        zip_code: str | None = None,
        city: str | None = None,
        state: str | None = None,
        status: PropertyStatus | None = None,
        property_type: PropertyType | None = None,
        min_price: int | None = None,
        max_price: int | None = None,
        min_beds: int | None = None,
        max_beds: int | None = None,
        min_baths: float | None = None,
        min_sqft: int | None = None,
        max_sqft: int | None = None,
        min_year_built: int | None = None,
        max_days_on_market: int | None = None,
        latitude: float | None = None,
        longitude: float | None = None,
        radius: float | None = None,
        bbox: tuple[float, float, float, float] | str | None = None,
        page_size: int | None = None,
        sort: PropertySort | None = None,
        order: SortOrder | None = None,
        fields: None = None,
    ) -> Iterator[PropertySummary]: ...
    @overload
    def search_all(
        self,
        *,
        zip_code: str | None = None,
        city: str | None = None,
        state: str | None = None,
        status: PropertyStatus | None = None,
        property_type: PropertyType | None = None,
        min_price: int | None = None,
        max_price: int | None = None,
        min_beds: int | None = None,
        max_beds: int | None = None,
        min_baths: float | None = None,
        min_sqft: int | None = None,
        max_sqft: int | None = None,
        min_year_built: int | None = None,
        max_days_on_market: int | None = None,
        latitude: float | None = None,
        longitude: float | None = None,
        radius: float | None = None,
        bbox: tuple[float, float, float, float] | str | None = None,
        page_size: int | None = None,
        sort: PropertySort | None = None,
        order: SortOrder | None = None,
        fields: Sequence[str],
    ) -> Iterator[Record]: ...
    def search_all(
        self,
        *,
        zip_code: str | None = None,
        city: str | None = None,
        state: str | None = None,
        status: PropertyStatus | None = None,
        property_type: PropertyType | None = None,
        min_price: int | None = None,
        max_price: int | None = None,
        min_beds: int | None = None,
        max_beds: int | None = None,
        min_baths: float | None = None,
        min_sqft: int | None = None,
        max_sqft: int | None = None,
        min_year_built: int | None = None,
        max_days_on_market: int | None = None,
        latitude: float | None = None,
        longitude: float | None = None,
        radius: float | None = None,
        bbox: tuple[float, float, float, float] | str | None = None,
        page_size: int | None = None,
        sort: PropertySort | None = None,
        order: SortOrder | None = None,
        fields: Sequence[str] | None = None,
    ) -> Iterator[PropertySummary] | Iterator[Record]:
        """Every match of a property search, page after page (one request per page).

        Takes the filters of `search`; `page_size` is the `limit` of each request (default:
        the plan's). It follows each page's `next_cursor` (pages never overlap or skip, even
        while a load runs). Each page is a metered request.
        """
        values = _args(locals())
        values["limit"] = values.pop("page_size")
        result: Iterator[Any] = self._client._iterate(_core.search_properties(values))
        return result

    @overload
    def history(self, property_id: str, *, fields: None = None) -> PropertyHistory: ...
    @overload
    def history(self, property_id: str, *, fields: Sequence[str]) -> Record: ...
    def history(
        self, property_id: str, *, fields: Sequence[str] | None = None
    ) -> PropertyHistory | Record:
        """Price and tax history: `GET /v1/properties/{id}/history`."""
        result: PropertyHistory | Record = self._client._call(
            _core.property_history(property_id, fields)
        )
        return result

    @overload
    def valuation(self, property_id: str, *, fields: None = None) -> Valuation: ...
    @overload
    def valuation(self, property_id: str, *, fields: Sequence[str]) -> Record: ...
    def valuation(
        self, property_id: str, *, fields: Sequence[str] | None = None
    ) -> Valuation | Record:
        """Value and rent estimates and comparable sales: `GET /v1/properties/{id}/valuation`."""
        result: Valuation | Record = self._client._call(
            _core.property_valuation(property_id, fields)
        )
        return result

    def changes(self, since: str | None = None, limit: int | None = None) -> ChangesPage:
        """One page of the change feed: `GET /v1/properties/changes`.

        `since` is the `meta.next_cursor` of an earlier page (None: from the oldest change
        kept). `page.meta.next_cursor` is never None; an empty `data` means caught up: ask
        again later with the same cursor.
        """
        return self._client._call(_core.list_changes(_args(locals())))

    def follow_changes(
        self, since: str | None = None, *, page_size: int | None = None
    ) -> Iterator[ChangesPage]:
        """Every page of the change feed after `since`, until caught up (the first empty
        page, which is not yielded). Save each page's `meta.next_cursor` once you have
        applied it, and pass the last one as `since` next time. One request per page.
        """
        return self._client._follow(since, page_size)


class Markets:
    """`client.markets`: ZIP-code market snapshots, monthly history, market search."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def get(self, zip_code: str) -> Market:
        """The current market snapshot of a ZIP code: `GET /v1/markets/{zipCode}`."""
        return self._client._call(_core.get_market(zip_code))

    def history(self, zip_code: str, months: int | None = None) -> MarketHistory:
        """Monthly history, newest first (`months` 1-60, default 12):
        `GET /v1/markets/{zipCode}/history`."""
        return self._client._call(_core.market_history(zip_code, months))

    def search(
        self,
        *,
        city: str | None = None,
        state: str | None = None,
        zip_code: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> Page[Market]:
        """One page of markets by city, state or ZIP prefix (1-5 digits):
        `GET /v1/markets/search`."""
        return self._client._page(_core.search_markets(_args(locals())))

    def search_all(
        self,
        *,
        city: str | None = None,
        state: str | None = None,
        zip_code: str | None = None,
        page_size: int | None = None,
    ) -> Iterator[Market]:
        """Every market of a market search, page after page."""
        values = _args(locals())
        values["limit"] = values.pop("page_size")
        return self._client._iterate(_core.search_markets(values))


class Auth:
    """`client.auth`: the calling key."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def status(self) -> AuthStatus:
        """The key, its plan, limits and usage: `GET /v1/auth/status` (never metered)."""
        return self._client._call(_core.auth_status())


class Searches:
    """`client.searches`: saved searches, the subjects of events and webhooks.

    `filters` takes `properties.search`' filters, by the SDK's names or the wire's
    (`{"zip_code": "50010", "max_price": 400000}` or `{"zipCode": "50010", ...}`);
    `property_ids` (at most 1,000) watches those records; a record must pass both.
    """

    def __init__(self, client: Client) -> None:
        self._client = client

    def create(
        self,
        name: str,
        *,
        filters: Mapping[str, object] | None = None,
        property_ids: Sequence[str] | None = None,
    ) -> SavedSearch:
        """Save a search: `POST /v1/searches`. Its `match_count` is how many records match
        now (the volume of events to expect). Raises PlanLimitError past the plan's limit."""
        return self._client._call(_core.create_search(_args(locals())))

    def list(self, *, limit: int | None = None, offset: int | None = None) -> Page[SavedSearch]:
        """One page of the saved searches: `GET /v1/searches`."""
        return self._client._page(_core.list_searches(_args(locals())))

    def list_all(self, *, page_size: int | None = None) -> Iterator[SavedSearch]:
        """Every saved search, page after page."""
        return self._client._iterate(_core.list_searches({"limit": page_size}))

    def get(self, search_id: str) -> SavedSearch:
        """One saved search: `GET /v1/searches/{id}`."""
        return self._client._call(_core.get_search(search_id))

    def update(
        self,
        search_id: str,
        *,
        name: str | None = None,
        filters: Mapping[str, object] | None = None,
        property_ids: Sequence[str] | None = None,
    ) -> SavedSearch:
        """Change a saved search's name, filters or ids (None leaves one as it is):
        `PATCH /v1/searches/{id}`."""
        values = _args(locals())
        del values["search_id"]
        return self._client._call(_core.update_search(search_id, values))

    def delete(self, search_id: str) -> None:
        """Delete a saved search: `DELETE /v1/searches/{id}`."""
        self._client._call(_core.delete_search(search_id))


class Events:
    """`client.events`: the event log of the key's account (kept 30 days), and its stream.

    `types` narrows to those event types (`["property.priceChanged", "search.entered"]`),
    `search_id` to one saved search's events.
    """

    def __init__(self, client: Client) -> None:
        self._client = client

    def list(
        self,
        since: str | None = None,
        *,
        types: Sequence[EventType] | str | None = None,
        search_id: str | None = None,
        limit: int | None = None,
    ) -> EventsPage:
        """One page of events, oldest first: `GET /v1/events` (one metered lookup).

        `since` is an earlier page's `meta.next_cursor` (None: from the oldest kept);
        `page.meta.next_cursor` is never None, and an empty `data` means caught up.
        """
        return self._client._call(_core.list_events(_args(locals())))

    def follow(
        self,
        since: str | None = None,
        *,
        types: Sequence[EventType] | str | None = None,
        search_id: str | None = None,
        page_size: int | None = None,
    ) -> Iterator[EventsPage]:
        """Every page of events after `since`, until caught up (the first empty page, which
        is not yielded). Save each page's `next_cursor` once you have handled it, and pass
        the last one as `since` next time. One metered request per page.
        """
        values: dict[str, Any] = {"since": since, "types": types, "search_id": search_id}
        return self._client._follow_events(values, page_size)

    def stream(
        self,
        since: str | None = None,
        *,
        types: Sequence[EventType] | str | None = None,
        search_id: str | None = None,
        max_reconnects: int | None = None,
        on_open: Callable[[], None] | None = None,
        on_retry: Callable[[PropdataError | None, float], None] | None = None,
    ) -> Iterator[StreamedEvent]:
        """Events as they happen: `GET /v1/events/stream` (Server-Sent Events), for ever.

        Each item is a `StreamedEvent`: the event and its `cursor`. The stream starts after
        `since` (a cursor: a streamed event's, or an events page's `next_cursor`; None: from
        now). When the connection ends or fails it is opened again with `Last-Event-ID`, the
        last cursor seen, so no event is missed or repeated: after the server's `retry:`
        (else about 1 s), or after a 429's or 503's `Retry-After` or a capped backoff for a
        lost connection; any other error is raised. `max_reconnects` bounds the openings
        after the first (None: no bound). `types` and `search_id` are applied by the client
        (the stream sends every event). Each opening is one metered lookup.

        `on_open()` is called each time the stream is open (its answer a 200), and
        `on_retry(error, seconds)` before each wait to open it again: the error that ended
        the last opening (None when the server ended it), so a program can say that the API
        is out of reach instead of waiting in silence.
        """
        return self._client._stream(since, types, search_id, max_reconnects, on_open, on_retry)


class Exports:
    """`client.exports`: snapshots of the whole data set (Pro and Enterprise keys).

    ```python
    export = client.exports.download("snapshot")  # the newest, checksums checked
    for page in client.properties.follow_changes(export.feed_cursor):
        ...  # stay in step from the snapshot's data version on
    ```
    """

    def __init__(self, client: Client) -> None:
        self._client = client

    def list(self) -> list[Export]:
        """Every snapshot, newest first: `GET /v1/exports` (never metered)."""
        return self._client._call(_core.list_exports())

    def download(self, folder: str | os.PathLike[str], export_id: str | None = None) -> Export:
        """Download a snapshot (the newest when `export_id` is None) into `folder`: every file
        checked against the manifest's SHA-256 (`checksum_mismatch` otherwise), then the
        snapshot's `manifest.json` written beside them. Each file counts as one request."""
        export = _core.latest(self.list(), export_id)
        root = _core.prepare_folder(folder)
        for listed in export.files:
            self._fetch(root, export.id, listed)
        _core.write_manifest(root, export)
        return export

    def _fetch(self, root: Path, export_id: str, listed: ExportFile) -> None:
        client = self._client
        settings = client._settings
        url = settings.base_url + _core.export_file(export_id, listed.name).path
        download = _core.Download(root, listed)
        try:
            with client._http.stream(
                "GET", url, headers=settings.headers, timeout=settings.timeout
            ) as response:
                client.last_rate_limit = _core.rate_limit_of(response)
                if response.status_code >= 300:
                    response.read()
                    raise _core.error_of(response, client.last_rate_limit)
                for chunk in response.iter_bytes(_core.DOWNLOAD_CHUNK):
                    download.write(chunk)
        except BaseException:
            download.abandon()
            raise
        download.finish()


class Webhooks:
    """`client.webhooks`: endpoints the API POSTs events to, signed (Standard Webhooks).

    Verify each delivery with `propdata_client.verify_webhook`.
    """

    def __init__(self, client: Client) -> None:
        self._client = client

    def create(
        self,
        url: str,
        *,
        event_types: Sequence[EventType] | None = None,
        search_ids: Sequence[str] | None = None,
        description: str | None = None,
    ) -> CreatedWebhook:
        """Add an endpoint: `POST /v1/webhooks`. The answer's `secret` is shown this once:
        keep it where the receiver can read it. `event_types` and `search_ids` None: all."""
        return self._client._call(_core.create_webhook(_args(locals())))

    def list(self, *, limit: int | None = None, offset: int | None = None) -> Page[Webhook]:
        """One page of the endpoints: `GET /v1/webhooks`."""
        return self._client._page(_core.list_webhooks(_args(locals())))

    def list_all(self, *, page_size: int | None = None) -> Iterator[Webhook]:
        """Every endpoint, page after page."""
        return self._client._iterate(_core.list_webhooks({"limit": page_size}))

    def get(self, webhook_id: str) -> Webhook:
        """One endpoint: `GET /v1/webhooks/{id}`."""
        return self._client._call(_core.get_webhook(webhook_id))

    def update(
        self,
        webhook_id: str,
        *,
        url: str | None = None,
        event_types: Sequence[EventType] | None = None,
        search_ids: Sequence[str] | None = None,
        description: str | None = None,
        status: WebhookStatus | None = None,
    ) -> Webhook:
        """Change an endpoint (None leaves a field as it is): `PATCH /v1/webhooks/{id}`.
        `status="enabled"` turns a disabled endpoint back on: the events kept while it was
        off are then delivered, oldest first."""
        values = _args(locals())
        del values["webhook_id"]
        return self._client._call(_core.update_webhook(webhook_id, values))

    def delete(self, webhook_id: str) -> None:
        """Delete an endpoint: `DELETE /v1/webhooks/{id}`."""
        self._client._call(_core.delete_webhook(webhook_id))

    def rotate_secret(self, webhook_id: str, *, grace_seconds: int | None = None) -> str:
        """A new signing secret: `POST /v1/webhooks/{id}/rotate-secret`. Until
        `grace_seconds` pass (0-604,800; default a day) deliveries carry signatures by both
        the old and the new secret."""
        call = _core.rotate_webhook_secret(webhook_id, grace_seconds)
        return (self._client._call(call)).secret

    def test(self, webhook_id: str) -> None:
        """Send a `webhook.test` event to this endpoint alone: `POST /v1/webhooks/{id}/test`."""
        self._client._call(_core.send_test_event(webhook_id))

    def deliveries(
        self, webhook_id: str, *, limit: int | None = None, offset: int | None = None
    ) -> Page[Delivery]:
        """One page of the endpoint's delivery attempts, newest first: a row per attempt
        made and one per delivery waiting for its next: `GET /v1/webhooks/{id}/deliveries`."""
        values = _args(locals())
        del values["webhook_id"]
        return self._client._page(_core.list_deliveries(webhook_id, values))

    def deliveries_all(
        self, webhook_id: str, *, page_size: int | None = None
    ) -> Iterator[Delivery]:
        """Every delivery attempt of the endpoint, newest first, page after page."""
        return self._client._iterate(_core.list_deliveries(webhook_id, {"limit": page_size}))

    def resend(self, webhook_id: str, event_id: str) -> None:
        """Send an event the endpoint was sent once more, with the same `webhook-id`
        (`webhook.test` events too): `POST /v1/webhooks/{id}/deliveries/{eventId}/resend`."""
        self._client._call(_core.resend_delivery(webhook_id, event_id))

    def replay(self, webhook_id: str, since: str) -> int:
        """Deliver again the kept events after the cursor `since` that reached the endpoint
        and pass its filters (same ids): `POST /v1/webhooks/{id}/replay`. How many were
        queued (one replay of an endpoint at a time, 10 an account a day)."""
        return (self._client._call(_core.replay_webhook(webhook_id, since))).queued

"""The synchronous client: `Client`."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any, TypeVar

import httpx
import msgspec

from propdata_client import _core
from propdata_client.errors import PropdataError
from propdata_client.models import (
    AuthStatus,
    Market,
    MarketHistory,
    Page,
    Property,
    PropertyHistory,
    PropertyMatch,
    PropertySort,
    PropertyStatus,
    PropertySummary,
    PropertyType,
    RateLimit,
    SortOrder,
    Valuation,
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
        print(client.properties.get("syn-0000062").list_price)
    ```

    `api_key` and `base_url` default to the environment variables `PROPDATA_API_KEY` and
    `PROPDATA_BASE_URL` (then `http://127.0.0.1:8000`). Failed requests are retried up to
    `max_retries` times: a 429 after its `Retry-After` plus 0-1 s of jitter, a 503 or a
    connection error after a capped exponential backoff; a wait announced longer than
    `max_retry_wait` seconds raises at once. `sleep` replaces `time.sleep` for those waits;
    `http_client` replaces the `httpx.Client` the client makes (its base URL and headers are
    not used: each request carries its own).
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
    ) -> None:
        self._settings = _core.settings(api_key, base_url, timeout, max_retries, max_retry_wait)
        self._http = http_client if http_client is not None else httpx.Client(timeout=timeout)
        self._owns_http = http_client is None
        self._sleep = sleep if sleep is not None else time.sleep
        self.last_rate_limit: RateLimit | None = None
        """The rate-limit and quota headers of the last answer (None when it had none)."""
        self.properties = Properties(self)
        self.markets = Markets(self)
        self.auth = Auth(self)

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

    def _send(self, path: str, params: dict[str, str]) -> httpx.Response:
        settings = self._settings
        retries = 0
        while True:
            cause: Exception | None = None
            try:
                response = self._http.get(settings.base_url + path, params=params,
                                          headers=settings.headers, timeout=settings.timeout)  # fmt: skip
            except httpx.TransportError as exc:
                error: PropdataError = _core.connection_error(exc)
                cause = exc
            else:
                self.last_rate_limit = _core.rate_limit_of(response)
                if response.status_code < 300:
                    return response
                error = _core.error_of(response, self.last_rate_limit)
            wait = settings.retry.wait(retries, error)
            if wait is None:
                raise error from cause
            self._sleep(wait)
            retries += 1

    def _call(self, call: _core.Call[T]) -> T:
        response = self._send(call.path, call.params)
        try:
            return call.result(response.content)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            raise _core.invalid_answer(response, exc) from exc

    def _page(self, call: _core.PageCall[T]) -> Page[T]:
        response = self._send(call.path, call.params)
        try:
            return call.result(response.content)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            raise _core.invalid_answer(response, exc) from exc

    def _iterate(self, call: _core.PageCall[T]) -> Iterator[T]:
        offset: int | None = int(call.params.get("offset", "0"))
        while offset is not None:
            page = self._page(call.at(offset))
            yield from page.data
            offset = page.next_offset

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
    """`client.properties`: property records, lookups, searches, history, valuations."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def get(self, property_id: str) -> Property:
        """The full record of a property: `GET /v1/properties/{id}`."""
        return self._client._call(_core.get_property(property_id))

    def lookup(
        self, street_address: str, city: str, state: str, zip_code: str | None = None
    ) -> PropertyMatch:
        """The one property at a street address: `GET /v1/properties/lookup`.

        Raises NotFoundError when nothing matches exactly and AmbiguousAddressError (with
        the candidate `zip_codes`) when several properties match.
        """
        return self._client._call(_core.lookup_property(_args(locals())))

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
        limit: int | None = None,
        offset: int | None = None,
        sort: PropertySort | None = None,
        order: SortOrder | None = None,
    ) -> Page[PropertySummary]:
        """One page of a property search: `GET /v1/properties`.

        `limit` defaults to the plan's page size and is clamped to its maximum
        (`page.meta.limit` is the size applied); `page.next_offset` is the next page's.
        """
        return self._client._page(_core.search_properties(_args(locals())))

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
        page_size: int | None = None,
        sort: PropertySort | None = None,
        order: SortOrder | None = None,
    ) -> Iterator[PropertySummary]:
        """Every match of a property search, page after page (one request per page).

        Takes the filters of `search`; `page_size` is the `limit` of each request (default:
        the plan's). Each page is a metered request.
        """
        values = _args(locals())
        values["limit"] = values.pop("page_size")
        return self._client._iterate(_core.search_properties(values))

    def history(self, property_id: str) -> PropertyHistory:
        """Price and tax history: `GET /v1/properties/{id}/history`."""
        return self._client._call(_core.property_history(property_id))

    def valuation(self, property_id: str) -> Valuation:
        """Value and rent estimates and comparable sales: `GET /v1/properties/{id}/valuation`."""
        return self._client._call(_core.property_valuation(property_id))


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

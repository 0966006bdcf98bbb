"""What the synchronous and the asynchronous client share: configuration, the requests of
each endpoint, reading answers and errors, and the retry rule. No I/O happens here."""

from __future__ import annotations

import hashlib
import os
import random
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar
from urllib.parse import quote, urlencode

import httpx
import msgspec

from propdata_client._version import __version__
from propdata_client.errors import (
    APIConnectionError,
    AuthenticationError,
    PropdataError,
    RateLimitError,
    ServiceUnavailableError,
    error_for,
)
from propdata_client.models import (
    AuthStatus,
    Candidate,
    ChangesPage,
    CreatedWebhook,
    Delivery,
    Event,
    EventsPage,
    Export,
    ExportFile,
    Market,
    MarketHistory,
    Page,
    Property,
    PropertyHistory,
    PropertyMatch,
    PropertyPage,
    PropertySummary,
    RateLimit,
    ReplayQueued,
    SavedSearch,
    StreamedEvent,
    Valuation,
    Webhook,
    WebhookSecret,
)

T = TypeVar("T")

DEFAULT_BASE_URL = "http://127.0.0.1:8000"
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_RETRIES = 2
DEFAULT_MAX_RETRY_WAIT = 60.0
DEFAULT_ETAG_CACHE = 128
ETAG_CACHE_MAX_BYTES = 1 << 20  # a larger answer is not kept for conditional requests
USER_AGENT = f"propdata-client-python/{__version__}"

# The wire name of every query parameter each operation takes, by the SDK's argument name.
# tests/test_models_drift.py checks these against the server's OpenAPI document.
PROPERTY_SEARCH_PARAMS = {
    "zip_code": "zipCode",
    "city": "city",
    "state": "state",
    "status": "status",
    "property_type": "propertyType",
    "min_price": "minPrice",
    "max_price": "maxPrice",
    "min_beds": "minBeds",
    "max_beds": "maxBeds",
    "min_baths": "minBaths",
    "min_sqft": "minSqft",
    "max_sqft": "maxSqft",
    "min_year_built": "minYearBuilt",
    "max_days_on_market": "maxDaysOnMarket",
    "latitude": "latitude",
    "longitude": "longitude",
    "radius": "radius",
    "bbox": "bbox",
    "limit": "limit",
    "offset": "offset",
    "cursor": "cursor",
    "sort": "sort",
    "order": "order",
    "fields": "fields",
}
LOOKUP_PARAMS = {
    "street_address": "streetAddress",
    "city": "city",
    "state": "state",
    "zip_code": "zipCode",
    "address": "address",
    "parcel_id": "parcelId",
    "fields": "fields",
}
RECORD_PARAMS = {"fields": "fields"}  # by id: the record, its history, its valuation
CHANGES_PARAMS = {"since": "since", "limit": "limit"}
MARKET_SEARCH_PARAMS = {
    "city": "city",
    "state": "state",
    "zip_code": "zipCode",
    "limit": "limit",
    "offset": "offset",
}
MARKET_HISTORY_PARAMS = {"months": "months"}
LIST_PARAMS = {"limit": "limit", "offset": "offset"}  # saved searches, webhooks, deliveries
EVENTS_PARAMS = {"since": "since", "types": "types", "search_id": "searchId", "limit": "limit"}
STREAM_PARAMS = {"since": "since", "types": "types", "search_id": "searchId"}
"""What `GET /v1/events/stream` takes, by the SDK's argument name (the SDK filters the
stream it reads by `types` and `search_id` too, so a resumed stream is filtered alike)."""
NOT_FILTERS = frozenset({"limit", "offset", "cursor", "sort", "order", "fields"})
SEARCH_FILTERS = {k: v for k, v in PROPERTY_SEARCH_PARAMS.items() if k not in NOT_FILTERS}
"""A saved search's `filters`: `GET /v1/properties`' filter parameters (not paging, sort or
fields), by the SDK's argument name."""
# The bodies of the writes, by the SDK's argument name.
SEARCH_FIELDS = {"name": "name", "filters": "filters", "property_ids": "propertyIds"}
WEBHOOK_FIELDS = {
    "url": "url",
    "event_types": "eventTypes",
    "search_ids": "searchIds",
    "description": "description",
}
WEBHOOK_UPDATE_FIELDS = {**WEBHOOK_FIELDS, "status": "status"}


class _Envelope(msgspec.Struct, Generic[T], frozen=True):
    data: T


class _ErrorBody(msgspec.Struct, frozen=True):
    code: str
    message: str
    status: int | None = None
    requestId: str | None = None
    parameter: str | None = None
    candidates: list[Candidate] | None = None


class _ErrorEnvelope(msgspec.Struct, frozen=True):
    error: _ErrorBody


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request: its method, path, query and JSON body, and how to read a 2xx answer
    (its `data`, the whole body when `enveloped` is False, nothing when `decode` is None)."""

    path: str
    params: dict[str, str]
    decode: msgspec.json.Decoder[Any] | None
    enveloped: bool = True
    method: str = "GET"
    body: bytes | None = None

    def result(self, content: bytes) -> T:
        if self.decode is None:
            nothing: T = None  # type: ignore[assignment]
            return nothing
        decoded = self.decode.decode(content)
        value: T = decoded.data if self.enveloped else decoded
        return value

    @property
    def idempotent(self) -> bool:
        """Whether sending it twice does what sending it once does (every method but POST)."""
        return self.method != "POST"


_DECODERS: dict[Any, msgspec.json.Decoder[Any]] = {}


def _decoder(kind: Any) -> msgspec.json.Decoder[Any]:
    if kind not in _DECODERS:
        _DECODERS[kind] = msgspec.json.Decoder(_Envelope[kind])
    return _DECODERS[kind]


def _page_decoder(kind: Any, page: Any = Page) -> msgspec.json.Decoder[Any]:
    key = (page, kind)
    if key not in _DECODERS:
        _DECODERS[key] = msgspec.json.Decoder(page[kind])
    return _DECODERS[key]


@dataclass(frozen=True)
class PageCall(Generic[T]):
    """A GET that answers one page ({meta, data}) of a search."""

    path: str
    params: dict[str, str]
    decode: msgspec.json.Decoder[Any]

    def result(self, content: bytes) -> Page[T]:
        value: Page[T] = self.decode.decode(content)
        return value

    def at(self, offset: int) -> PageCall[T]:
        return PageCall(self.path, {**self.params, "offset": str(offset)}, self.decode)

    def after(self, cursor: str) -> PageCall[T]:
        """The next page by cursor (which is not sent with an offset)."""
        params = {k: v for k, v in self.params.items() if k != "offset"}
        return PageCall(self.path, {**params, "cursor": cursor}, self.decode)


def following(page: Page[T], call: PageCall[T], seen: set[str]) -> PageCall[T] | None:
    """The request of the page after `page`, or None when it is the last. A property search
    page carries `next_cursor`: the walk follows it (None on the last page; a page may be
    short, even empty, when records were removed since the walk began). Other searches
    page by offset, until `meta.total`."""
    if isinstance(page, PropertyPage):
        cursor = page.meta.next_cursor
        if cursor is None or cursor in seen:  # a repeated cursor would never end
            return None
        seen.add(cursor)
        return call.after(cursor)
    offset = page.next_offset
    return None if offset is None else call.at(offset)


# -- the requests of each endpoint -------------------------------------------------------


def segment(value: str, what: str) -> str:
    """A path parameter, percent-encoded; `.` and `..` encoded too so no URL normaliser
    turns them into another path. A `/` is refused: servers decode `%2F` before routing, so
    it could reach another endpoint (no id or ZIP code holds one)."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string")
    if "/" in value:
        raise ValueError(f"{what} cannot contain '/'")
    encoded = quote(value, safe="")
    return encoded.replace(".", "%2E") if set(value) == {"."} else encoded


def field_list(fields: str | Sequence[str]) -> str:
    """The `fields` parameter: wire names joined by commas (a string is sent as it is)."""
    if isinstance(fields, str):
        return fields
    names = list(fields)
    if not all(isinstance(name, str) for name in names):
        raise TypeError("fields must be wire names (strings)")
    return ",".join(names)


def _decimal(value: float) -> str:
    """A number as the API reads it: plain decimal digits, never an exponent."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"bbox must hold four numbers, not {value!r}")
    text = format(float(value), ".10f").rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def bbox_of(value: str | Sequence[float]) -> str:
    """`bbox`: (west, south, east, north) joined by commas (a string is sent as it is)."""
    if isinstance(value, str):
        return value
    numbers = list(value)
    if len(numbers) != 4:
        raise ValueError("bbox is (west, south, east, north): four numbers")
    return ",".join(_decimal(n) for n in numbers)


def _given(names: Mapping[str, str], values: Mapping[str, object]) -> Iterator[tuple[str, object]]:
    """The SDK's keyword arguments that were given (None is left out); TypeError for a name
    the operation does not take (`names`: the SDK's names to the wire's)."""
    for name, value in values.items():
        if value is None:
            continue
        if name not in names:
            raise TypeError(f"unknown parameter {name!r}")
        yield name, value


def query(names: Mapping[str, str], values: Mapping[str, object]) -> dict[str, str]:
    """The query string of an operation from the SDK's keyword arguments; None is left out."""
    params: dict[str, str] = {}
    for name, value in _given(names, values):
        if name in ("fields", "types"):
            params[names[name]] = field_list(value)  # type: ignore[arg-type]
            continue
        if name == "bbox":
            params[names[name]] = bbox_of(value)  # type: ignore[arg-type]
            continue
        if isinstance(value, bool):
            raise TypeError(f"{name} must be a number or a string, not a bool")
        params[names[name]] = str(value)
    return params


Record = dict[str, Any]
"""A record cut down by `fields`: the wire's JSON as it came (camelCase names, dates as
strings), holding only the fields asked for and `id`."""


def _record_decoder(kind: Any, fields: object) -> msgspec.json.Decoder[Any]:
    return _decoder(kind if fields is None else Record)


def get_property(property_id: str, fields: object = None) -> Call[Any]:
    path = f"/v1/properties/{segment(property_id, 'property_id')}"
    params = query(RECORD_PARAMS, {"fields": fields})
    return Call(path, params, _record_decoder(Property, fields))


def lookup_property(values: Mapping[str, object]) -> Call[Any]:
    decode = _record_decoder(PropertyMatch, values.get("fields"))
    return Call("/v1/properties/lookup", query(LOOKUP_PARAMS, values), decode)


def search_properties(values: Mapping[str, object]) -> PageCall[Any]:
    kind = PropertySummary if values.get("fields") is None else Record
    params = query(PROPERTY_SEARCH_PARAMS, values)
    return PageCall("/v1/properties", params, _page_decoder(kind, PropertyPage))


def property_history(property_id: str, fields: object = None) -> Call[Any]:
    path = f"/v1/properties/{segment(property_id, 'property_id')}/history"
    params = query(RECORD_PARAMS, {"fields": fields})
    return Call(path, params, _record_decoder(PropertyHistory, fields))


def property_valuation(property_id: str, fields: object = None) -> Call[Any]:
    path = f"/v1/properties/{segment(property_id, 'property_id')}/valuation"
    params = query(RECORD_PARAMS, {"fields": fields})
    return Call(path, params, _record_decoder(Valuation, fields))


_CHANGES = msgspec.json.Decoder(ChangesPage)


def list_changes(values: Mapping[str, object]) -> Call[ChangesPage]:
    return Call("/v1/properties/changes", query(CHANGES_PARAMS, values), _CHANGES, False)


def get_market(zip_code: str) -> Call[Market]:
    return Call(f"/v1/markets/{segment(zip_code, 'zip_code')}", {}, _decoder(Market))


def market_history(zip_code: str, months: int | None) -> Call[MarketHistory]:
    path = f"/v1/markets/{segment(zip_code, 'zip_code')}/history"
    return Call(path, query(MARKET_HISTORY_PARAMS, {"months": months}), _decoder(MarketHistory))


def search_markets(values: Mapping[str, object]) -> PageCall[Market]:
    return PageCall(
        "/v1/markets/search", query(MARKET_SEARCH_PARAMS, values), _page_decoder(Market)
    )


def auth_status() -> Call[AuthStatus]:
    return Call("/v1/auth/status", {}, _decoder(AuthStatus))


# -- bulk exports ---------------------------------------------------------------------------

MANIFEST = "manifest.json"
DOWNLOAD_CHUNK = 1 << 20


def list_exports() -> Call[list[Export]]:
    return Call("/v1/exports", {}, _decoder(list[Export]))


def export_file(export_id: str, name: str) -> Call[None]:
    """The download of one file (streamed by the client; no JSON answer)."""
    path = f"/v1/exports/{quote(export_id, safe='')}/files/{quote(name, safe='/=')}"
    return Call(path, {}, None)


def export_target(folder: Path, name: str) -> Path:
    """Where a file of a snapshot goes in `folder`; a name that would leave it is refused."""
    root = folder.resolve()
    target = (root / name).resolve()
    if not target.is_relative_to(root):
        raise PropdataError(
            f"The export names a file outside its folder: {name!r}", code="invalid_response"
        )
    return target


def checksum_error(name: str, sha256: str, expected: str) -> PropdataError:
    return PropdataError(
        f"{name}: the downloaded bytes have SHA-256 {sha256}, the manifest says {expected};"
        " download it again.",
        code="checksum_mismatch",
    )


def latest(exports: list[Export], export_id: str | None) -> Export:
    """The export `export_id` (the newest when None) of a listing."""
    for export in exports:
        if export_id is None or export.id == export_id:
            return export
    raise PropdataError(
        "No export to download." if export_id is None else f"No export with id {export_id!r}.",
        code="not_found",
        status=404,
    )


class Download:
    """One file of a snapshot being written into a folder: to `<name>.part`, checked against
    the manifest's SHA-256 and size, then renamed into place."""

    def __init__(self, folder: Path, listed: ExportFile) -> None:
        self.listed = listed
        self.target = export_target(folder, listed.name)
        self.target.parent.mkdir(parents=True, exist_ok=True)
        self.part = self.target.with_name(self.target.name + ".part")
        self._out = self.part.open("wb")
        self._digest = hashlib.sha256()
        self.size = 0

    def write(self, chunk: bytes) -> None:
        self._out.write(chunk)
        self._digest.update(chunk)
        self.size += len(chunk)

    def finish(self) -> None:
        self._out.close()
        found = self._digest.hexdigest()
        if found != self.listed.sha256 or self.size != self.listed.bytes:
            self.part.unlink()
            raise checksum_error(self.listed.name, found, self.listed.sha256)
        os.replace(self.part, self.target)

    def abandon(self) -> None:
        self._out.close()
        self.part.unlink(missing_ok=True)


def prepare_folder(folder: str | os.PathLike[str]) -> Path:
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    return root


def write_manifest(folder: Path, export: Export) -> None:
    """The snapshot's manifest.json, written last: a folder with one is whole and checked."""
    (folder / MANIFEST).write_bytes(msgspec.json.format(msgspec.json.encode(export)))


# -- events: saved searches, the event log, webhooks --------------------------------------

_WIRE_FILTERS = {wire: sdk for sdk, wire in SEARCH_FILTERS.items()}


def search_filters(filters: Mapping[str, object]) -> dict[str, object]:
    """A saved search's `filters` as the API reads them: by wire name (the SDK's names, such
    as `min_price`, are accepted too), numbers as JSON numbers, `bbox` as its string."""
    if not isinstance(filters, Mapping):
        raise TypeError("filters must be a mapping of filter names to values")
    body: dict[str, object] = {}
    for name, value in filters.items():
        if value is None:
            continue
        wire = SEARCH_FILTERS.get(name) or (name if name in _WIRE_FILTERS else None)
        if wire is None:
            raise TypeError(f"unknown filter {name!r}: filters are those of properties.search")
        if isinstance(value, bool):
            raise TypeError(f"{name} must be a number or a string, not a bool")
        body[wire] = bbox_of(value) if wire == "bbox" else value  # type: ignore[arg-type]
    return body


def _body(names: Mapping[str, str], values: Mapping[str, object]) -> bytes:
    """A JSON request body from the SDK's keyword arguments; None is left out."""
    body: dict[str, object] = {}
    for name, value in _given(names, values):
        if name == "filters":
            value = search_filters(value)  # type: ignore[arg-type]
        elif isinstance(value, (list, tuple)):
            value = list(value)
        body[names[name]] = value
    return msgspec.json.encode(body)


def create_search(values: Mapping[str, object]) -> Call[SavedSearch]:
    body = _body(SEARCH_FIELDS, values)
    return Call("/v1/searches", {}, _decoder(SavedSearch), method="POST", body=body)


def list_searches(values: Mapping[str, object]) -> PageCall[SavedSearch]:
    return PageCall("/v1/searches", query(LIST_PARAMS, values), _page_decoder(SavedSearch))


def get_search(search_id: str) -> Call[SavedSearch]:
    return Call(f"/v1/searches/{segment(search_id, 'search_id')}", {}, _decoder(SavedSearch))


def update_search(search_id: str, values: Mapping[str, object]) -> Call[SavedSearch]:
    path = f"/v1/searches/{segment(search_id, 'search_id')}"
    body = _body(SEARCH_FIELDS, values)
    return Call(path, {}, _decoder(SavedSearch), method="PATCH", body=body)


def delete_search(search_id: str) -> Call[None]:
    path = f"/v1/searches/{segment(search_id, 'search_id')}"
    return Call(path, {}, None, method="DELETE")


_EVENTS = msgspec.json.Decoder(EventsPage)
EVENT_DECODER = msgspec.json.Decoder(Event)
"""One event's JSON: a webhook's body, an SSE message's `data`."""


def list_events(values: Mapping[str, object]) -> Call[EventsPage]:
    return Call("/v1/events", query(EVENTS_PARAMS, values), _EVENTS, False)


def stream_path() -> str:
    return "/v1/events/stream"


def create_webhook(values: Mapping[str, object]) -> Call[CreatedWebhook]:
    body = _body(WEBHOOK_FIELDS, values)
    return Call("/v1/webhooks", {}, _decoder(CreatedWebhook), method="POST", body=body)


def list_webhooks(values: Mapping[str, object]) -> PageCall[Webhook]:
    return PageCall("/v1/webhooks", query(LIST_PARAMS, values), _page_decoder(Webhook))


def _webhook_path(webhook_id: str, tail: str = "") -> str:
    return f"/v1/webhooks/{segment(webhook_id, 'webhook_id')}{tail}"


def get_webhook(webhook_id: str) -> Call[Webhook]:
    return Call(_webhook_path(webhook_id), {}, _decoder(Webhook))


def update_webhook(webhook_id: str, values: Mapping[str, object]) -> Call[Webhook]:
    body = _body(WEBHOOK_UPDATE_FIELDS, values)
    return Call(_webhook_path(webhook_id), {}, _decoder(Webhook), method="PATCH", body=body)


def delete_webhook(webhook_id: str) -> Call[None]:
    return Call(_webhook_path(webhook_id), {}, None, method="DELETE")


def rotate_webhook_secret(webhook_id: str, grace_seconds: int | None) -> Call[WebhookSecret]:
    path = _webhook_path(webhook_id, "/rotate-secret")
    body = _body({"grace_seconds": "graceSeconds"}, {"grace_seconds": grace_seconds})
    return Call(path, {}, _decoder(WebhookSecret), method="POST", body=body)


def send_test_event(webhook_id: str) -> Call[None]:
    return Call(_webhook_path(webhook_id, "/test"), {}, None, method="POST", body=b"{}")


def list_deliveries(webhook_id: str, values: Mapping[str, object]) -> PageCall[Delivery]:
    path = _webhook_path(webhook_id, "/deliveries")
    return PageCall(path, query(LIST_PARAMS, values), _page_decoder(Delivery))


def resend_delivery(webhook_id: str, event_id: str) -> Call[ReplayQueued]:
    path = _webhook_path(webhook_id, f"/deliveries/{segment(event_id, 'event_id')}/resend")
    return Call(path, {}, _decoder(ReplayQueued), method="POST", body=b"{}")


def replay_webhook(webhook_id: str, since: str) -> Call[ReplayQueued]:
    if not isinstance(since, str) or not since:
        raise ValueError("since must be a cursor (a non-empty string)")
    body = _body({"since": "since"}, {"since": since})
    path = _webhook_path(webhook_id, "/replay")
    return Call(path, {}, _decoder(ReplayQueued), method="POST", body=body)


# -- the event stream (Server-Sent Events) -------------------------------------------------

STREAM_READ_TIMEOUT = 45.0
"""Seconds without a byte before the stream is taken for dead and opened again: the API
sends a comment at least every 15 s."""


@dataclass(frozen=True)
class SseMessage:
    id: str | None
    event: str
    data: str


class SseParser:
    """The Server-Sent Events wire format, line by line (WHATWG HTML, "event stream
    interpretation"): `feed` each line without its end; a blank line ends a message."""

    def __init__(self) -> None:
        self.last_id: str | None = None
        """The last `id:` seen; it outlives its message, as `Last-Event-ID` does."""
        self.retry_ms: int | None = None
        """The reconnection time the server asked for with `retry:`."""
        self._event = ""
        self._data: list[str] = []

    def feed(self, line: str) -> SseMessage | None:
        """The message this line ends, if it ends one."""
        if line == "":
            data, event = self._data, self._event
            self._data, self._event = [], ""
            if not data:
                return None
            return SseMessage(self.last_id, event or "message", "\n".join(data))
        if line.startswith(":"):  # a comment: the keep-alive
            return None
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self.last_id = value
        elif name == "retry" and value.isdigit():
            self.retry_ms = int(value)
        return None


def streamed(message: SseMessage) -> StreamedEvent:
    """The event an SSE message carries, with its cursor (its `id:`)."""
    if message.id is None:
        raise PropdataError("A streamed event has no id.", code="invalid_response")
    try:
        event = EVENT_DECODER.decode(message.data)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise PropdataError(f"A streamed event does not have the expected shape: {exc}",
                            code="invalid_response") from exc  # fmt: skip
    return StreamedEvent(cursor=message.id, event=event, body=message.data)


def wanted(event: Event, types: Sequence[str] | str | None, search_id: str | None) -> bool:
    """Whether the stream's caller asked for this event (the stream itself sends all)."""
    if types is not None:
        names = types.split(",") if isinstance(types, str) else types
        if event.type not in names:
            return False
    return search_id is None or event.search_id == search_id


def stream_headers(settings: Settings, cursor: str | None) -> dict[str, str]:
    headers = {**settings.headers, "Accept": "text/event-stream", "Cache-Control": "no-cache"}
    if cursor is not None:
        headers["Last-Event-ID"] = cursor
    return headers


def reconnect_wait(
    failures: int, error: PropdataError | None, retry: RetryPolicy, retry_ms: int | None
) -> float | None:
    """Seconds before the stream is opened again, or None to raise `error`.

    A stream that ended (the server restarted, a proxy cut it) is opened again after the
    server's `retry:` (else 1 s); a 429, a 503 or a lost connection after the API's
    `Retry-After` or a capped backoff, as often as it takes (`failures` in a row so far);
    any other error is raised, and so is a wait announced longer than `max_retry_wait`.
    """
    if error is None:
        return (retry_ms / 1000.0 if retry_ms is not None else 1.0) + random.uniform(0.0, 0.5)
    failures = min(failures, 30)  # the backoff is capped long before; 2**n stays a float
    forever = RetryPolicy(failures + 1, retry.max_retry_wait, retry.backoff_base,
                          retry.backoff_cap)  # fmt: skip
    return forever.wait(failures, error)


# -- conditional requests -----------------------------------------------------------------


@dataclass(frozen=True)
class Remembered:
    etag: str
    content: bytes


class EtagCache:
    """The ETag and body of the latest answers, by URL, least recently used out first.

    A request for a remembered URL carries `If-None-Match`; a 304 then stands for the
    remembered body. Answers over ETAG_CACHE_MAX_BYTES are not kept; size 0 keeps none.
    """

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError("etag_cache must be 0 or more")
        self.size = size
        self._entries: OrderedDict[str, Remembered] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(path: str, params: Mapping[str, str]) -> str:
        return path + "?" + urlencode(sorted(params.items()))

    def get(self, key: str) -> Remembered | None:
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: str, etag: str | None, content: bytes) -> None:
        if self.size == 0:
            return
        with self._lock:
            if etag is None or len(content) > ETAG_CACHE_MAX_BYTES:
                self._entries.pop(key, None)
                return
            self._entries[key] = Remembered(etag, content)
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def forget(self, key: str) -> None:
        with self._lock:
            self._entries.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


# -- configuration ------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    base_url: str
    headers: dict[str, str] = field(repr=False)  # the key: never in a repr or a log
    timeout: float
    retry: RetryPolicy


def settings(
    api_key: str | None,
    base_url: str | None,
    timeout: float,
    max_retries: int,
    max_retry_wait: float,
) -> Settings:
    """Resolve the key and base URL (arguments first, then PROPDATA_API_KEY and
    PROPDATA_BASE_URL) and check them."""
    key = api_key if api_key is not None else os.environ.get("PROPDATA_API_KEY", "")
    key = key.strip()
    if not key:
        raise AuthenticationError(
            "No API key: pass api_key= or set PROPDATA_API_KEY.", code="missing_api_key"
        )
    if any(ch.isspace() or not ch.isprintable() for ch in key):
        raise AuthenticationError("The API key contains spaces or control characters.",
                                  code="invalid_api_key")  # fmt: skip
    url = (base_url or os.environ.get("PROPDATA_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"base_url must start with http:// or https://, not {url!r}")
    if max_retries < 0:
        raise ValueError("max_retries must be 0 or more")
    headers = {
        "Authorization": f"Bearer {key}",
        "Accept": "application/json",
        "User-Agent": USER_AGENT,
    }
    return Settings(url, headers, timeout, RetryPolicy(max_retries, max_retry_wait))


# -- answers ------------------------------------------------------------------------------


def _int_header(headers: httpx.Headers, name: str) -> int | None:
    raw = headers.get(name)
    if raw is None:
        return None
    try:
        return int(raw.strip())
    except ValueError:
        return None


def rate_limit_of(response: httpx.Response) -> RateLimit | None:
    """The rate-limit and quota headers of an answer; None when it carries none (a 401)."""
    h = response.headers
    found = RateLimit(
        limit=_int_header(h, "X-RateLimit-Limit"),
        remaining=_int_header(h, "X-RateLimit-Remaining"),
        reset=_int_header(h, "X-RateLimit-Reset"),
        quota_limit=_int_header(h, "X-Quota-Limit"),
        quota_remaining=_int_header(h, "X-Quota-Remaining"),
        quota_reset=_int_header(h, "X-Quota-Reset"),
        retry_after=_int_header(h, "Retry-After"),
    )
    return None if found == RateLimit() else found


_ERROR = msgspec.json.Decoder(_ErrorEnvelope)
_FALLBACK_CODES = {
    400: "invalid_parameter",
    401: "invalid_api_key",
    404: "not_found",
    405: "method_not_allowed",
    409: "ambiguous_address",
    429: "rate_limit_exceeded",
    500: "internal_error",
    502: "bad_gateway",
    503: "service_unavailable",
    504: "gateway_timeout",
}


def error_of(response: httpx.Response, rate_limit: RateLimit | None) -> PropdataError:
    """The error an answer of status >= 300 stands for."""
    status = response.status_code
    request_id = response.headers.get("X-Request-Id")
    retry_after = _int_header(response.headers, "Retry-After")
    try:
        body = _ERROR.decode(response.content).error
    except msgspec.DecodeError:
        text = response.text.strip()[:200] or response.reason_phrase or "error"
        code = _FALLBACK_CODES.get(status, f"http_{status}")
        return error_for(status, code, f"HTTP {status}: {text}", request_id=request_id,
                         retry_after=retry_after, rate_limit=rate_limit)  # fmt: skip
    return error_for(
        status,
        body.code,
        body.message,
        request_id=body.requestId or request_id,
        parameter=body.parameter,
        candidates=body.candidates or (),
        retry_after=retry_after,
        rate_limit=rate_limit,
    )


def invalid_answer(response: httpx.Response, exc: Exception) -> PropdataError:
    return PropdataError(
        f"The answer does not have the expected shape: {exc}",
        code="invalid_response",
        status=response.status_code,
        request_id=response.headers.get("X-Request-Id"),
    )


def connection_error(exc: httpx.HTTPError) -> APIConnectionError:
    kind = "timed out" if isinstance(exc, httpx.TimeoutException) else "failed"
    return APIConnectionError(f"The request {kind}: {exc}", code="connection_error")


# -- retries ------------------------------------------------------------------------------

RETRY_STATUSES = frozenset({502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    """When to retry and how long to wait first.

    - 429: `Retry-After` + uniform 0-1 s of jitter (the API's advice).
    - 503 (and 502/504 from a proxy), connection errors and timeouts: `Retry-After` + jitter
      when the answer has one, else capped exponential backoff with jitter
      (0.25-0.5 s, 0.5-1 s, 1-2 s, ... at most 8 s).
    - Any other error: never (a 4xx other than 429 fails the same way again).
    - A POST (it creates something, or queues deliveries) only after a 429 or a 503, which
      the API answers without doing anything; never after a lost connection or a timeout,
      which may have done it.
    - At most `max_retries` retries; an announced wait above `max_retry_wait` seconds (a
      daily quota can announce hours) raises the error at once instead of sleeping.
    """

    max_retries: int = DEFAULT_MAX_RETRIES
    max_retry_wait: float = DEFAULT_MAX_RETRY_WAIT
    backoff_base: float = 0.5
    backoff_cap: float = 8.0

    def wait(
        self, retries_done: int, error: PropdataError, *, idempotent: bool = True
    ) -> float | None:
        """Seconds to sleep before the next attempt, or None to raise `error`."""
        if retries_done >= self.max_retries:
            return None
        retryable = (
            isinstance(error, (RateLimitError, ServiceUnavailableError, APIConnectionError))
            or error.status in RETRY_STATUSES
        )
        if not idempotent:
            retryable = isinstance(error, RateLimitError) or error.status == 503
        if not retryable:
            return None
        if error.retry_after is not None:
            announced = float(max(error.retry_after, 0))
            if announced > self.max_retry_wait:
                return None
            return announced + random.uniform(0.0, 1.0)
        if isinstance(error, RateLimitError):  # a 429 without Retry-After: one second
            return 1.0 + random.uniform(0.0, 1.0)
        step = min(self.backoff_cap, self.backoff_base * 2.0**retries_done)
        return min(step / 2 + random.uniform(0.0, step / 2), self.max_retry_wait)

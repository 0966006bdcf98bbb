"""Typed models of every answer of the propdata API (v1).

Attributes are snake_case; on the wire they are camelCase (`list_price` is `listPrice`).
Every field the API lists for an endpoint is always present, `None` when unknown. Dates are
`datetime.date`, timestamps timezone-aware `datetime.datetime` (UTC), months `"YYYY-MM"`
strings, money whole US dollars (`int`), ratios fractions (`0.0497`).

`tests/test_models_drift.py` checks these against the server's `/openapi.json`: names,
types, required and nullable, enumerations.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Generic, Literal, TypeVar

import msgspec

__all__ = [
    "Address",
    "AuthStatus",
    "Candidate",
    "ChangeType",
    "ChangesMeta",
    "ChangesPage",
    "Comparable",
    "Coordinates",
    "CreatedWebhook",
    "Delivery",
    "DeliveryError",
    "DeliveryStatus",
    "DisabledReason",
    "Estimate",
    "Event",
    "EventType",
    "EventsMeta",
    "EventsPage",
    "Limits",
    "ListingType",
    "Market",
    "MarketHistory",
    "MarketHistoryEntry",
    "MarketSnapshot",
    "Page",
    "PageMeta",
    "PriceEvent",
    "PriceEventSource",
    "PriceEventType",
    "Property",
    "PropertyChange",
    "PropertyHistory",
    "PropertyMatch",
    "PropertyPage",
    "PropertySort",
    "PropertyStatus",
    "PropertySummary",
    "PropertyType",
    "RateLimit",
    "ReplayQueued",
    "SavedSearch",
    "Scores",
    "SearchMeta",
    "ShortAddress",
    "SortOrder",
    "StreamedEvent",
    "TaxRecord",
    "Usage",
    "Valuation",
    "Webhook",
    "WebhookSecret",
    "WebhookStatus",
    "WindowUsage",
]

PropertyStatus = Literal["forSale", "recentlySold", "forRent", "offMarket"]
PropertyType = Literal["singleFamily", "condo", "townhouse", "multiFamily", "land"]
ListingType = Literal["standard", "newConstruction", "foreclosure", "shortSale", "auction"]
PriceEventType = Literal[
    "listedForSale",
    "priceChange",
    "pendingSale",
    "sold",
    "delisted",
    "relisted",
    "listedForRent",
    "rentalRemoved",
]
PriceEventSource = Literal["mls", "publicRecord", "agent", "owner"]
PropertySort = Literal["listPrice", "daysOnMarket", "livingArea", "lastUpdated", "distance"]
SortOrder = Literal["asc", "desc"]
ChangeType = Literal["created", "updated", "removed"]
EventType = Literal[
    "search.entered",
    "search.exited",
    "property.listed",
    "property.priceChanged",
    "property.statusChanged",
    "property.estimateChanged",
    "property.updated",
    "market.updated",
    "webhook.test",
]
WebhookStatus = Literal["enabled", "disabled"]
DisabledReason = Literal["gone", "failing", "owner"]
DeliveryStatus = Literal["pending", "succeeded", "failed"]
DeliveryError = Literal[
    "timeout", "connection", "tls", "redirect", "http_status", "blocked_address", "owner"
]

T = TypeVar("T")


class Model(msgspec.Struct, rename="camel", kw_only=True):
    """Base of every model: camelCase on the wire, unknown wire fields ignored."""

    def to_dict(self) -> dict[str, object]:
        """The model as JSON-ready builtins, with the API's camelCase names."""
        result: dict[str, object] = msgspec.to_builtins(self)
        return result


# -- properties ---------------------------------------------------------------------------


class Address(Model):
    street_address: str | None
    city: str
    state: str
    zip_code: str
    county: str | None = None  # optional in the OpenAPI document, null when unknown
    fips_code: str | None = None


class ShortAddress(Model):
    street_address: str | None
    city: str
    state: str
    zip_code: str


class Candidate(Model):
    """A property at the street address a lookup named (a lookup error's `candidates`)."""

    id: str
    address: ShortAddress


class PriceEvent(Model):
    date: dt.date
    event: PriceEventType
    price: int | None
    source: PriceEventSource


class TaxRecord(Model):
    year: int
    tax_paid: int | None
    assessed_value: int | None


class Scores(Model):
    walkability: int | None
    transit: int | None
    bike: int | None


class Coordinates(Model):
    latitude: float
    longitude: float


class Estimate(Model):
    """A value or monthly rent estimate in USD; `low`-`high` is an 85 % interval."""

    value: int
    low: int
    high: int
    as_of_date: dt.date


class Property(Model):
    """The full record: `GET /v1/properties/{id}`."""

    id: str
    status: PropertyStatus
    list_price: int | None
    address: Address
    bedrooms_total: int | None
    bathrooms_total: float | None
    living_area: int | None
    lot_size: int | None
    year_built: int | None
    property_type: PropertyType | None
    days_on_market: int | None
    price_history: list[PriceEvent]
    tax_history: list[TaxRecord]
    scores: Scores | None
    coordinates: Coordinates | None
    last_updated: dt.datetime
    listing_type: ListingType | None
    original_list_price: int | None
    previous_list_price: int | None
    last_price_change_date: dt.date | None
    removed_date: dt.date | None
    rent_estimate: Estimate | None
    value_estimate: Estimate | None
    gross_yield: float | None
    price_per_square_foot: int | None
    stories: int | None
    parcel_id: str | None
    """The assessor's parcel number."""
    garage_spaces: float | None
    basement_finished_area: int | None
    """Finished area below grade, square feet."""
    fireplaces: int | None
    overall_quality: int | None
    """The assessor's grade of material and finish, 1-10."""
    overall_condition: int | None
    """The assessor's grade of condition, 1-10."""


class PropertyMatch(Model):
    """The property an address lookup found: `GET /v1/properties/lookup`."""

    id: str
    status: PropertyStatus
    list_price: int | None
    address: ShortAddress
    bedrooms_total: int | None
    bathrooms_total: float | None
    living_area: int | None
    last_updated: dt.datetime


class PropertySummary(Model):
    """One item of a property search: `GET /v1/properties`."""

    id: str
    status: PropertyStatus
    list_price: int | None
    address: ShortAddress
    bedrooms_total: int | None
    bathrooms_total: float | None
    living_area: int | None
    days_on_market: int | None
    last_sale_price: int | None
    last_sale_date: dt.date | None
    last_updated: dt.datetime
    distance_miles: float | None = None
    """Miles from a radius search's point (two decimals); None (absent on the wire) without a
    radius."""


class PropertyHistory(Model):
    """`GET /v1/properties/{id}/history`: price events newest first, tax records."""

    id: str
    price_history: list[PriceEvent]
    tax_history: list[TaxRecord]


class Comparable(Model):
    id: str
    address: ShortAddress
    distance_miles: float | None
    sale_date: dt.date
    sale_price: int
    similarity: float


class Valuation(Model):
    """`GET /v1/properties/{id}/valuation`: estimates and the sales that weigh most in them."""

    id: str
    value_estimate: Estimate | None
    rent_estimate: Estimate | None
    gross_yield: float | None
    comparables: list[Comparable]


# -- pages --------------------------------------------------------------------------------


class PageMeta(Model):
    total: int
    limit: int
    offset: int


class Page(Model, Generic[T]):
    """One page of a search; `meta.limit` is the page size the server applied."""

    meta: PageMeta
    data: list[T]

    @property
    def next_offset(self) -> int | None:
        """The offset of the next page, or None when this page is the last."""
        following = self.meta.offset + self.meta.limit
        return following if self.data and following < self.meta.total else None

    @property
    def has_more(self) -> bool:
        return self.next_offset is not None


class SearchMeta(PageMeta):
    """`meta` of a property search page: also the cursor of the next page."""

    next_cursor: str | None
    """Send it as `cursor` (same filters, sort and order) for the next page; None on the
    last page."""


class PropertyPage(Page[T], Generic[T]):
    """One page of a property search: a `Page` whose `meta` carries `next_cursor`."""

    meta: SearchMeta

    @property
    def next_cursor(self) -> str | None:
        """The cursor of the next page, or None when this page is the last."""
        return self.meta.next_cursor

    @property
    def has_more(self) -> bool:
        return self.meta.next_cursor is not None


# -- the change feed ----------------------------------------------------------------------


class PropertyChange(Model):
    """One change of `GET /v1/properties/changes`: drop your copy for a "removed" one, fetch
    the record to apply any other (a 404 means the property was removed since)."""

    id: str
    change_type: ChangeType
    last_updated: dt.datetime


class CursorMeta(Model):
    """`meta` of a page of a log read in order (the change feed, the events)."""

    limit: int
    next_cursor: str
    """Pass it as `since` for the next page; never None (on the last page it is where the
    entries still to come will start)."""


class CursorPage(Model, Generic[T]):
    """One page of a log read in order; an empty `data` means caught up."""

    meta: CursorMeta
    data: list[T]

    @property
    def next_cursor(self) -> str:
        return self.meta.next_cursor


class ChangesMeta(CursorMeta):
    """`meta` of a page of the change feed."""


class ChangesPage(CursorPage[PropertyChange]):
    """One page of the change feed; an empty `data` means caught up."""

    meta: ChangesMeta


# -- markets ------------------------------------------------------------------------------


class MarketSnapshot(Model):
    date: dt.date
    median_list_price: int | None
    median_sold_price: int | None
    active_listings: int
    new_listings_30d: int = msgspec.field(name="newListings30d")
    sold_last_30d: int = msgspec.field(name="soldLast30d")
    median_days_on_market: int | None
    average_price_per_sqft: int | None
    inventory_months: float | None
    list_to_sold_ratio: float | None


class Market(Model):
    """`GET /v1/markets/{zipCode}` and the items of `GET /v1/markets/search`."""

    zip_code: str
    city: str
    state: str
    snapshot: MarketSnapshot


class MarketHistoryEntry(Model):
    month: str
    median_list_price: int | None
    median_sold_price: int | None
    active_listings: int
    sold_count: int
    median_days_on_market: int | None
    average_price_per_sqft: int | None


class MarketHistory(Model):
    """`GET /v1/markets/{zipCode}/history`: entries newest month first."""

    zip_code: str
    city: str
    state: str
    history: list[MarketHistoryEntry]


# -- the key ------------------------------------------------------------------------------


class Limits(Model):
    per_minute: int
    daily: int | None
    default_page_size: int
    max_page_size: int


class WindowUsage(Model):
    used: int
    remaining: int
    reset: int


class Usage(Model):
    minute: WindowUsage
    day: WindowUsage | None


class AuthStatus(Model):
    """`GET /v1/auth/status` (never metered): the key, its limits and its usage."""

    key_id: str
    name: str
    plan: str
    status: str
    limits: Limits
    usage: Usage


# -- bulk exports ---------------------------------------------------------------------------


class ExportFile(Model):
    """One file of an export snapshot: its path in the snapshot, rows, size, SHA-256 (hex)."""

    name: str
    rows: int
    bytes: int
    sha256: str


class Export(Model):
    """A snapshot of the whole data set at one data version (`GET /v1/exports`, Pro and
    Enterprise). After loading it, follow `client.properties.follow_changes(feed_cursor)`."""

    id: str
    created_at: str
    data_version: int
    format: Literal["parquet", "csv"]
    feed_cursor: str
    files: list[ExportFile]
    rows: int


# -- events: saved searches, the event log, webhooks --------------------------------------


class SavedSearch(Model):
    """A saved search: `POST /v1/searches` and the rest of `/v1/searches`.

    `filters` holds `GET /v1/properties`' filter parameters by their wire names (camelCase,
    numbers as numbers, `bbox` as its string); `match_count` is how many records match,
    exact for the data version `data_version` (it grows with every load of the records).
    """

    id: str
    name: str
    filters: dict[str, Any]
    property_ids: list[str]
    created_at: dt.datetime
    match_count: int
    data_version: int


class Event(Model):
    """One event of the owner's log: `GET /v1/events`, the stream, and a webhook's body.

    `data` is the wire's JSON (camelCase names), by type: for the `search.*` and
    `property.*` types `{searchId, searchName, property, previous, changes}` (`property`
    the search item of the record after the change; for `search.exited` of a removed
    record, as it was); for `market.updated` `{searchId, searchName, zipCode, snapshot,
    previous}`; `sequence` numbers the owner's events 1, 2, 3, ... with no gap (0 for
    `webhook.test`), so a receiver that sees 7 after 5 knows it missed 6.
    """

    id: str
    type: str
    """One of `EventType`'s values (a string, so a type added to the API later still reads)."""
    timestamp: dt.datetime
    sequence: int
    data: dict[str, Any]

    @property
    def search_id(self) -> str | None:
        """The saved search the event is for (None for `webhook.test`)."""
        value = self.data.get("searchId")
        return value if isinstance(value, str) else None


class EventsMeta(CursorMeta):
    """`meta` of a page of `GET /v1/events`."""


class EventsPage(CursorPage[Event]):
    """One page of `GET /v1/events`, oldest first; an empty `data` means caught up."""

    meta: EventsMeta


class StreamedEvent(msgspec.Struct, frozen=True, kw_only=True):
    """One event of `GET /v1/events/stream`: the event, its `cursor` (the SSE `id:`; pass
    it as `since` to resume after it) and `body`, its JSON as the API sent it (the body a
    webhook delivery of it carries)."""

    cursor: str
    event: Event
    body: str


class Webhook(Model):
    """A webhook endpoint: `/v1/webhooks`. `event_types` and `search_ids` None: all."""

    id: str
    url: str
    event_types: list[EventType] | None
    search_ids: list[str] | None
    description: str | None
    status: WebhookStatus
    disabled_reason: DisabledReason | None
    created_at: dt.datetime


class CreatedWebhook(Webhook):
    """The endpoint `POST /v1/webhooks` made, with its signing `secret` (`whsec_...`): the
    only answer that shows it."""

    secret: str


class WebhookSecret(Model):
    """`POST /v1/webhooks/{id}/rotate-secret`: the new signing secret."""

    secret: str


class ReplayQueued(Model):
    """`POST /v1/webhooks/{id}/replay`: how many deliveries were queued."""

    queued: int


class Delivery(Model):
    """A row of `GET /v1/webhooks/{id}/deliveries`: one attempt made (`succeeded` or
    `failed`, with that attempt's answer), or a delivery waiting for its attempt number
    `attempt` (`pending`, due at `next_attempt_at`)."""

    event_id: str
    type: EventType
    attempt: int
    status: DeliveryStatus
    response_status: int | None
    error: DeliveryError | None
    duration_ms: int | None
    attempted_at: dt.datetime | None
    next_attempt_at: dt.datetime | None


# -- headers ------------------------------------------------------------------------------


class RateLimit(msgspec.Struct, frozen=True, kw_only=True):
    """The rate-limit and quota headers of one response.

    `limit`/`remaining`/`reset` describe the sliding minute (`X-RateLimit-*`);
    `quota_*` the rolling 24 hours (`X-Quota-*`, None for an unlimited quota);
    `retry_after` is the `Retry-After` of a 429 or 503. Resets are unix seconds.
    """

    limit: int | None = None
    remaining: int | None = None
    reset: int | None = None
    quota_limit: int | None = None
    quota_remaining: int | None = None
    quota_reset: int | None = None
    retry_after: int | None = None

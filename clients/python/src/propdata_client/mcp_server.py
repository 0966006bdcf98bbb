"""The propdata MCP server: the API as tools an AI agent can call (`propdata-client mcp`).

Built on the official MCP Python SDK (`pip install 'propdata-client[mcp]'`). It reads the
key and the API's address from PROPDATA_API_KEY and PROPDATA_BASE_URL, like the client.

Answers are compact JSON: a model's context is precious, so lists are summarised (at most
25 rows, with the total and the next offset), nulls are left out and addresses are one line.
Every failure is a tool error in plain words; a 429 says how many seconds to wait.
"""

# No `from __future__ import annotations`: the MCP SDK reads the tools' annotations at runtime.

import datetime as dt
import hmac
import inspect
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations
from pydantic import Field, ValidationError

from propdata_client._async import AsyncClient
from propdata_client._version import __version__
from propdata_client.errors import (
    AmbiguousAddressError,
    APIConnectionError,
    AuthenticationError,
    InvalidParameterError,
    NotFoundError,
    PropdataError,
    QuotaExceededError,
    RateLimitError,
    ServiceUnavailableError,
)
from propdata_client.models import (
    Address,
    Candidate,
    Event,
    EventType,
    Model,
    PropertySort,
    PropertyStatus,
    PropertyType,
    ShortAddress,
    SortOrder,
)

MAX_ROWS = 25
MAX_HISTORY_EVENTS = 10
MAX_TAX_YEARS = 5
MAX_MARKET_MONTHS = 24

INSTRUCTIONS = """\
US property records and ZIP-code market statistics from the propdata API.
- lookup_address finds one property by street address; get_property gives its details,
  price and tax history and valuation (value and rent estimates, comparable sales).
- search_properties filters properties (location, status, type, price, size) a page at a
  time: at most 25 rows per call, with the total and the offset of the next page.
- get_market summarises a ZIP code's market with its monthly history.
- check_usage shows the key's plan, limits and usage (free: it is never counted).
- watch_search saves a search (filters and/or property ids): from then on each change of a
  matching property is an event (entered, exited, listed, price, status, estimate, other
  fields); it answers with how many records match now. recent_events reads those events.
Each other call counts against the key's per-minute limit and daily quota. When a tool says
to retry after N seconds, wait that long before calling again.
Money is whole US dollars; ratios are fractions (0.05 = 5 %)."""

ZipCode = Annotated[
    str, Field(pattern=r"^[0-9]{5}$", description="Five-digit US ZIP code, such as 50010.")
]
State = Annotated[
    str,
    Field(min_length=2, max_length=2, description="Two-letter US state code, such as IA."),
]
StreetAddress = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        description="Street line, such as '101 Oak Street' or '5 Broadway Apt 2'.",
    ),
]
PropertyId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=64,
        description="The property id, as lookup_address or search_properties return it.",
    ),
]
FILTERS: dict[str, Any] = {
    "zip_code": Annotated[
        str | None, Field(pattern=r"^[0-9]{5}$", description="Five-digit ZIP code.")
    ],
    "city": Annotated[str | None, Field(min_length=1, max_length=100)],
    "state": Annotated[
        str | None, Field(min_length=2, max_length=2, description="Two-letter state code.")
    ],
    "status": Annotated[PropertyStatus | None, Field(description="Listing status.")],
    "property_type": PropertyType | None,
    "min_price": Annotated[int | None, Field(ge=0, description="Minimum list price, USD.")],
    "max_price": Annotated[int | None, Field(ge=0, description="Maximum list price, USD.")],
    "min_beds": Annotated[int | None, Field(ge=0)],
    "max_beds": Annotated[int | None, Field(ge=0)],
    "min_baths": Annotated[float | None, Field(ge=0)],
    "min_sqft": Annotated[int | None, Field(ge=0, description="Minimum living area.")],
    "max_sqft": Annotated[int | None, Field(ge=0, description="Maximum living area.")],
    "min_year_built": Annotated[int | None, Field(ge=0)],
    "max_days_on_market": Annotated[int | None, Field(ge=0)],
    "latitude": Annotated[
        float | None, Field(ge=-90, le=90, description="Centre of a radius search.")
    ],
    "longitude": Annotated[
        float | None, Field(ge=-180, le=180, description="Centre of a radius search.")
    ],
    "radius_miles": Annotated[
        float | None,
        Field(gt=0, le=100, description="Radius in miles around latitude, longitude."),
    ],
}
"""The property filters search_properties and watch_search both take (each optional), by
argument name: the API's names but for `radius_miles` (its `radius`)."""
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=True)
CREATES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                          open_world_hint=True)  # fmt: skip
MAX_EVENT_PAGES = 5  # recent_events reads at most this many pages a call
EVENT_PAGE = 1000  # the page size it asks for (the API clamps it to the plan's maximum)


# -- formatting ---------------------------------------------------------------------------


def _compact(value: Any) -> Any:
    """JSON-ready, without nulls or empty lists (the model reads less)."""
    if isinstance(value, Model):
        value = value.to_dict()
    if isinstance(value, Mapping):
        pairs = ((str(k), _compact(v)) for k, v in value.items())
        return {k: v for k, v in pairs if v is not None and v != [] and v != {}}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_compact(v) for v in value]
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat().replace("+00:00", "Z")
    return value


def _json(value: Any) -> str:
    return json.dumps(_compact(value), separators=(",", ":"), ensure_ascii=False)


def _address(address: Address | ShortAddress) -> str:
    street = address.street_address or "(no street address)"
    return f"{street}, {address.city}, {address.state} {address.zip_code}"


def _wait(seconds: int | None) -> str:
    if seconds is None:
        return "a little while"
    if seconds < 120:
        return f"{seconds} seconds"
    hours, minutes = divmod(round(seconds / 60), 60)
    spoken = f"{hours} h {minutes} min" if hours else f"{minutes} min"
    return f"{seconds} seconds (about {spoken})"


def _candidates(candidates: list[Candidate]) -> str:
    """The properties a lookup error names, for the agent to choose from (or nothing)."""
    if not candidates:
        return ""
    listed = "; ".join(f"{c.id} ({_address(c.address)})" for c in candidates)
    return (
        f" Properties at that street address: {listed}. Call get_property with one of"
        " these ids, or lookup_address again with its street address."
    )


Tool = Callable[..., Awaitable[str]]


def with_filters(tool: Tool) -> Tool:
    """`tool`, which takes `**filters`, with each of FILTERS as an argument of its own (None
    by default) in the signature the MCP SDK reads: after the tool's required arguments,
    before those with defaults."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    signature = inspect.signature(tool)
    own = signature.parameters.values()
    required = [p for p in own if p.default is p.empty and p.kind is not p.VAR_KEYWORD]
    optional = [p for p in own if p.default is not p.empty]
    shared = [inspect.Parameter(name, keyword, default=None, annotation=kind)
              for name, kind in FILTERS.items()]  # fmt: skip
    arguments = [p.replace(kind=keyword) for p in (*required, *shared, *optional)]
    tool.__signature__ = signature.replace(parameters=arguments)  # type: ignore[attr-defined]
    return tool


def api_filters(filters: Mapping[str, Any]) -> dict[str, Any]:
    """The filters given (not None), by the client's argument names."""
    names = {"radius_miles": "radius"}
    return {names.get(k, k): v for k, v in filters.items() if v is not None}


_RETRY_CLAUSE = re.compile(r";?\s*retry after \d+ seconds?", re.IGNORECASE)


def tool_error(exc: PropdataError) -> ToolError:
    """A failure of the API in words an agent can act on."""
    ref = f" (request id {exc.request_id})" if exc.request_id else ""
    if isinstance(exc, RateLimitError):
        said = _RETRY_CLAUSE.sub("", exc.message).strip()
        what = (
            "Daily quota used up" if isinstance(exc, QuotaExceededError) else "Rate limit exceeded"
        )
        text = f"{what}: retry after {_wait(exc.retry_after)}. The API says: {said}"
        if isinstance(exc, QuotaExceededError):
            text += " check_usage shows the key's usage (it is never counted)."
    elif isinstance(exc, AmbiguousAddressError):
        if len(exc.zip_codes) > 1:
            text = (
                f"The address is ambiguous: it matches properties in ZIP codes "
                f"{', '.join(exc.zip_codes)}. Call lookup_address again with zip_code set "
                "to one of them."
            )
        else:
            text = f"The address is ambiguous: {exc.message}"
        text += _candidates(exc.candidates)
    elif isinstance(exc, NotFoundError):
        text = f"Not found: {exc.message}" + _candidates(exc.candidates)
    elif isinstance(exc, InvalidParameterError):
        text = f"Invalid parameter '{exc.parameter}': {exc.message}"
    elif isinstance(exc, AuthenticationError):
        text = (
            f"The API key was refused ({exc.code}): {exc.message} "
            "Set PROPDATA_API_KEY to a valid key and restart the MCP server."
        )
    elif isinstance(exc, ServiceUnavailableError):
        text = (
            f"The propdata service is unavailable: {exc.message} "
            f"Retry after {_wait(exc.retry_after)}."
        )
    elif isinstance(exc, APIConnectionError):
        text = f"Cannot reach the propdata API: {exc.message}"
    else:
        text = f"The propdata API failed ({exc.code}, status {exc.status}): {exc.message}"
    return ToolError(text + ref)


# -- the server ---------------------------------------------------------------------------


class _Server(MCPServer):
    """The SDK's server, with a tool's argument errors in the API's own words, and the API's
    failures (a PropdataError out of any tool) as `tool_error` words them."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                tool = self._tool_manager.get_tool(name)
                schema = tool.parameters.get("properties", {}) if tool else {}
                raise ToolError(argument_error(exc.__cause__, schema)) from None
            if isinstance(exc.__cause__, PropdataError):
                said = tool_error(exc.__cause__)  # after the SDK's "Error executing tool <name>"
                raise ToolError(f"{exc}: {said}") from said
            raise


def argument_error(exc: ValidationError, schema: Mapping[str, Any]) -> str:
    """`Invalid parameter 'name': what it must be.` for each bad argument, as the API words
    a 400, never the validator's own sentences."""
    sentences = []
    for error in exc.errors():
        name = str(error["loc"][0]) if error["loc"] else "arguments"
        ctx = error.get("ctx") or {}
        kind = error["type"]
        if kind == "missing":
            rule = "it is required"
        elif kind == "extra_forbidden":
            rule = f"this tool takes no such argument; it takes {', '.join(sorted(schema))}"
        elif kind == "literal_error":
            rule = f"it must be one of {ctx.get('expected', '')}"
        elif kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
            words = {"greater_than_equal": "at least", "greater_than": "more than",
                     "less_than_equal": "at most", "less_than": "less than"}  # fmt: skip
            rule = f"it must be {words[kind]} {next(iter(ctx.values()), '')}"
        elif kind.startswith("int"):
            rule = "it must be a whole number"
        elif kind.startswith(("float", "decimal")):
            rule = "it must be a number"
        else:
            described = schema.get(name, {}).get("description")
            rule = f"expected: {described}" if described else "it is not a valid value"
        sentences.append(f"Invalid parameter '{name}': {rule}.")
    return " ".join(sentences)


def build_server(client: AsyncClient) -> MCPServer:
    """An MCP server whose tools call the API through `client`."""
    server: MCPServer = _Server(
        "propdata",
        title="propdata: US property and market data",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
    )

    @server.tool(name="lookup_address", title="Look up a property by address",
                 annotations=READ_ONLY)  # fmt: skip
    async def lookup_address(
        street_address: StreetAddress,
        city: Annotated[str, Field(min_length=1, max_length=100, description="City name.")],
        state: State,
        zip_code: Annotated[
            str | None,
            Field(
                pattern=r"^[0-9]{5}$",
                description="Five-digit ZIP code; needed when the address exists in several.",
            ),
        ] = None,
    ) -> str:
        """Find the one property at a US street address (matched after USPS normalisation:
        case, punctuation, Street/St, unit designators). Returns its id, status, list price,
        address, bedrooms, bathrooms and living area; pass the id to get_property for the
        full record. Fails with the candidate ZIP codes when the address is ambiguous."""
        found = await client.properties.lookup(street_address, city, state, zip_code)
        return _json(
            {
                "id": found.id,
                "status": found.status,
                "listPrice": found.list_price,
                "address": _address(found.address),
                "bedrooms": found.bedrooms_total,
                "bathrooms": found.bathrooms_total,
                "livingAreaSqft": found.living_area,
                "lastUpdated": found.last_updated,
            }
        )

    @server.tool(name="search_properties", title="Search properties", annotations=READ_ONLY)
    @with_filters
    async def search_properties(
        bbox: Annotated[
            str | None,
            Field(
                description="A box 'west,south,east,north' in decimal degrees (not with a "
                "radius), e.g. '-95.5,29.7,-95.3,29.8'."
            ),
        ] = None,
        sort: Annotated[
            PropertySort | None,
            Field(description="Sort field (default lastUpdated; distance with a radius)."),
        ] = None,
        order: Annotated[SortOrder | None, Field(description="asc or desc (default desc).")] = None,
        limit: Annotated[
            int, Field(ge=1, le=MAX_ROWS, description="Rows to return, 1 to 25.")
        ] = 10,
        offset: Annotated[
            int, Field(ge=0, description="Rows to skip: the nextOffset of the previous call.")
        ] = 0,
        **filters: Any,
    ) -> str:
        """Search US properties by location (ZIP code, city, state, a radius in miles around
        a point, or a bounding box), status, type, price, bedrooms, bathrooms,
        size, age and days on market. Returns the total number of matches and one page of
        at most 25 summary rows (id, status, list price, address, beds, baths, square feet,
        days on market, last sale); nextOffset, when present, fetches the next page. Price
        filters apply to the list price (monthly rent for forRent). At least one filter is
        advisable: a page is a metered request."""
        page = await client.properties.search(
            **api_filters(filters), bbox=bbox, limit=min(limit, MAX_ROWS), offset=offset,
            sort=sort, order=order,
        )  # fmt: skip
        rows = [
            {
                "id": item.id,
                "status": item.status,
                "listPrice": item.list_price,
                "address": _address(item.address),
                "beds": item.bedrooms_total,
                "baths": item.bathrooms_total,
                "sqft": item.living_area,
                "daysOnMarket": item.days_on_market,
                "lastSalePrice": item.last_sale_price,
                "lastSaleDate": item.last_sale_date,
                **({} if item.distance_miles is None else {"distanceMiles": item.distance_miles}),
            }
            for item in page.data[:MAX_ROWS]
        ]
        return _json(
            {
                "total": page.meta.total,
                "offset": page.meta.offset,
                "returned": len(rows),
                "nextOffset": page.next_offset,
                "properties": rows,
            }
        )

    @server.tool(name="get_property", title="Get a property with history and valuation",
                 annotations=READ_ONLY)  # fmt: skip
    async def get_property(property_id: PropertyId) -> str:
        """The details of one property: status, prices, address with county, size, year
        built, type, scores, its latest price events and tax years, and its valuation (value
        and monthly rent estimates with 85 % intervals, gross yield, up to 5 comparable
        sales). Two metered requests."""
        record = await client.properties.get(property_id)
        valuation = await client.properties.valuation(property_id)
        events = record.price_history
        taxes = record.tax_history
        return _json(
            {
                "id": record.id,
                "status": record.status,
                "listPrice": record.list_price,
                "originalListPrice": record.original_list_price,
                "previousListPrice": record.previous_list_price,
                "lastPriceChangeDate": record.last_price_change_date,
                "removedDate": record.removed_date,
                "listingType": record.listing_type,
                "daysOnMarket": record.days_on_market,
                "address": _address(record.address),
                "county": record.address.county,
                "propertyType": record.property_type,
                "bedrooms": record.bedrooms_total,
                "bathrooms": record.bathrooms_total,
                "livingAreaSqft": record.living_area,
                "lotSize": record.lot_size,
                "yearBuilt": record.year_built,
                "stories": record.stories,
                "parcelId": record.parcel_id,
                "garageSpaces": record.garage_spaces,
                "basementFinishedArea": record.basement_finished_area,
                "fireplaces": record.fireplaces,
                "overallQuality": record.overall_quality,
                "overallCondition": record.overall_condition,
                "pricePerSquareFoot": record.price_per_square_foot,
                "scores": record.scores,
                "coordinates": record.coordinates,
                "lastUpdated": record.last_updated,
                "priceHistory": events[:MAX_HISTORY_EVENTS],
                "olderPriceEvents": max(0, len(events) - MAX_HISTORY_EVENTS) or None,
                "taxHistory": taxes[:MAX_TAX_YEARS],
                "valuation": {
                    "valueEstimate": valuation.value_estimate,
                    "rentEstimate": valuation.rent_estimate,
                    "grossYield": valuation.gross_yield,
                    "comparables": [
                        {
                            "id": c.id,
                            "address": _address(c.address),
                            "salePrice": c.sale_price,
                            "saleDate": c.sale_date,
                            "distanceMiles": c.distance_miles,
                            "similarity": c.similarity,
                        }
                        for c in valuation.comparables[:5]
                    ],
                },
            }
        )

    @server.tool(name="get_market", title="Get a ZIP code's market and its history",
                 annotations=READ_ONLY)  # fmt: skip
    async def get_market(
        zip_code: ZipCode,
        months: Annotated[
            int,
            Field(
                ge=1,
                le=MAX_MARKET_MONTHS,
                description="Months of history, newest first, 1 to 24 (default 12).",
            ),
        ] = 12,
    ) -> str:
        """The housing market of a US ZIP code: today's snapshot (median list and sold
        prices, active and new listings, sales in 30 days, median days on market, price per
        square foot, months of inventory, sold-to-list ratio) and its monthly history (median
        prices, active listings, sales, days on market). Two metered requests."""
        market = await client.markets.get(zip_code)
        history = await client.markets.history(zip_code, months=min(months, MAX_MARKET_MONTHS))
        return _json(
            {
                "zipCode": market.zip_code,
                "city": market.city,
                "state": market.state,
                "snapshot": market.snapshot,
                "history": history.history[:MAX_MARKET_MONTHS],
            }
        )

    @server.tool(name="check_usage", title="Check the API key's usage", annotations=READ_ONLY)
    async def check_usage() -> str:
        """The API key's plan, its limits (requests per minute, daily quota, page sizes) and
        how much of the current minute and 24 hours it has used; resets are UTC times. Free:
        never counted, and it answers even when the key is out of requests."""
        status = await client.auth.status()

        def window(used: int, remaining: int, reset: int) -> dict[str, Any]:
            at = dt.datetime.fromtimestamp(reset, dt.timezone.utc)
            return {"used": used, "remaining": remaining, "resetsAt": at}

        minute, day = status.usage.minute, status.usage.day
        return _json(
            {
                "keyId": status.key_id,
                "name": status.name,
                "plan": status.plan,
                "status": status.status,
                "limits": {
                    "perMinute": status.limits.per_minute,
                    "daily": status.limits.daily
                    if status.limits.daily is not None
                    else "unlimited",
                    "defaultPageSize": status.limits.default_page_size,
                    "maxPageSize": status.limits.max_page_size,
                },
                "minute": window(minute.used, minute.remaining, minute.reset),
                "day": window(day.used, day.remaining, day.reset) if day else "unlimited",
            }
        )

    @server.tool(name="watch_search", title="Watch a search for changes", annotations=CREATES)
    @with_filters
    async def watch_search(
        name: Annotated[
            str, Field(min_length=1, max_length=100, description="A name for the search.")
        ],
        property_ids: Annotated[
            list[str] | None,
            Field(max_length=1000, description="Watch these property ids (at most 1,000)."),
        ] = None,
        **filters: Any,
    ) -> str:
        """Save a search so that changes of the properties it matches become events: a
        property entering or leaving the search, a new listing, a price, status or estimate
        change, any other change of its record. Takes search_properties' filters and/or
        property ids (a property must pass both). Returns the saved search with matchCount,
        how many properties match now (the volume of events to expect). Read the events
        with recent_events. Not counted against the quota; the plan limits how many
        searches an account keeps."""
        saved = await client.searches.create(
            name, filters=api_filters(filters), property_ids=property_ids
        )
        return _json(
            {
                "id": saved.id,
                "name": saved.name,
                "filters": saved.filters,
                "propertyIds": saved.property_ids,
                "matchCount": saved.match_count,
                "createdAt": saved.created_at,
            }
        )

    @server.tool(name="recent_events", title="Read recent property events", annotations=READ_ONLY)
    async def recent_events(
        search_id: Annotated[
            str | None, Field(description="Only this saved search's events (watch_search's id).")
        ] = None,
        types: Annotated[
            list[EventType] | None,
            Field(description="Only these event types, e.g. ['property.priceChanged']."),
        ] = None,
        since: Annotated[
            str | None,
            Field(description="The nextCursor of an earlier call: only events after it."),
        ] = None,
        limit: Annotated[
            int, Field(ge=1, le=MAX_ROWS, description="Events to return, 1 to 25.")
        ] = 10,
    ) -> str:
        """The property events of the account's saved searches (kept 30 days), newest last:
        type, time, the search, the property (id, status, price, address) and which fields
        changed with their earlier values. It reads the log from since (without it, from
        the oldest event kept), a few metered pages at most, and returns the newest events
        it read; caughtUp false means newer ones remain: call again with since=nextCursor.
        Pass nextCursor as since next time to get only events that came after."""
        seen: list[Event] = []
        cursor = since
        caught_up = False
        for _ in range(MAX_EVENT_PAGES):
            page = await client.events.list(
                cursor, types=types, search_id=search_id, limit=EVENT_PAGE
            )
            seen.extend(page.data)
            cursor = page.next_cursor
            if len(page.data) < page.meta.limit:
                caught_up = True
                break
        shown = seen[-limit:]
        return _json(
            {
                "returned": len(shown),
                "omittedOlder": len(seen) - len(shown),
                "caughtUp": caught_up,
                "nextCursor": cursor,
                "events": [_event(e) for e in shown],
            }
        )

    return server


def _event(event: Event) -> dict[str, Any]:
    """An event in few words: what happened, to which property, what changed."""
    data = event.data
    row: dict[str, Any] = {
        "id": event.id,
        "type": event.type,
        "timestamp": event.timestamp,
        "searchId": data.get("searchId"),
        "searchName": data.get("searchName"),
    }
    found = data.get("property")
    if isinstance(found, Mapping):
        address = found.get("address")
        row["property"] = {
            "id": found.get("id"),
            "status": found.get("status"),
            "listPrice": found.get("listPrice"),
            "address": ", ".join(
                str(address[k]) for k in ("streetAddress", "city", "state", "zipCode")
                if address.get(k)
            ) if isinstance(address, Mapping) else None,
        }  # fmt: skip
    for name in ("changes", "previous", "zipCode", "snapshot", "dropped"):
        if name in data:
            row[name] = data[name]
    return row


LOOPBACK = ("127.0.0.1", "localhost", "::1")


class BearerGate:
    """Answer 401 to any HTTP request without `Authorization: Bearer <token>`.

    The MCP server spends the operator's API key on every tool call, so over HTTP it must know
    who calls it: the token is compared in constant time, and never logged.
    """

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = [v for k, v in scope.get("headers", []) if k == b"authorization"]
            if len(given) != 1 or not hmac.compare_digest(given[0], self.expected):
                body = b'{"error": "Send Authorization: Bearer <the MCP token printed at start>."}'
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"), (b"www-authenticate", b"Bearer"),
                    (b"content-length", str(len(body)).encode()),
                ]})  # fmt: skip
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def transport_security(host: str, port: int, hosts: Sequence[str] = (),
                       origins: Sequence[str] = ()) -> TransportSecuritySettings:  # fmt: skip
    """The Host and Origin checks, on whatever address the server binds: the loopback names
    (and `host`) at `port`, plus the names and origins the operator allows."""
    bound = [f"{name}:{port}" for name in ("127.0.0.1", "localhost", "[::1]")]
    if host not in LOOPBACK:
        bound.append(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*bound, *hosts],
        allowed_origins=[f"http://{name}" for name in bound] + list(origins),
    )


async def serve(
    *,
    http: bool = False,
    host: str = "127.0.0.1",
    port: int = 8808,
    path: str = "/mcp",
    max_retry_wait: float = 10.0,
    token: str | None = None,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
) -> None:
    """Run the MCP server until its transport closes: stdio, or streamable HTTP behind a
    bearer token (`token`, required for HTTP) with the Host and Origin checks always on."""
    async with AsyncClient(max_retry_wait=max_retry_wait) as client:
        server = build_server(client)
        if not http:
            await server.run_stdio_async()
            return
        if not token:
            raise ValueError("streamable HTTP needs a bearer token")
        import uvicorn

        app = server.streamable_http_app(
            streamable_http_path=path, host=host,
            transport_security=transport_security(host, port, allowed_hosts, allowed_origins),
        )  # fmt: skip
        config = uvicorn.Config(BearerGate(app, token), host=host, port=port, log_level="warning")
        await uvicorn.Server(config).serve()

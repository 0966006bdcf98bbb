"""The SDK's models and parameters against the live server's /openapi.json.

Fails when the SDK drifts from the server: a field added, removed or renamed, a type, a
required or nullable flag, an enumeration, a query parameter, a path or an operation that
the SDK does not cover.
"""

from __future__ import annotations

import inspect
import re
import typing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx
import msgspec
import pytest

from propdata_client import _core, models
from propdata_client._sync import Markets, Properties

pytestmark = pytest.mark.slow

if TYPE_CHECKING:
    from conftest import Live

# operationId -> (the SDK's model of the whole 200 body, or of its `data`; enveloped?)
OPERATIONS: dict[str, tuple[Any, bool]] = {
    "getProperty": (models.Property, True),
    "lookupProperty": (models.PropertyMatch, True),
    "searchProperties": (models.PropertyPage[models.PropertySummary], False),
    "searchPropertiesAlias": (models.PropertyPage[models.PropertySummary], False),
    "getPropertyHistory": (models.PropertyHistory, True),
    "getPropertyValuation": (models.Valuation, True),
    "getMarket": (models.Market, True),
    "getMarketHistory": (models.MarketHistory, True),
    "searchMarkets": (models.Page[models.Market], False),
    "getAuthStatus": (models.AuthStatus, True),
    "listPropertyChanges": (models.ChangesPage, False),
    "listExports": (list[models.Export], True),
}
NOT_IN_SDK = {
    "getHealth",  # the operators' health check, outside /v1
}


@dataclass(frozen=True)
class Op:
    """An operation of the events surface, known by its method and path (path parameters
    as X), whatever the server names it: the SDK's model of its answer (None: no JSON
    body), enveloped or not, the status of success, its query and its body's fields."""

    model: Any
    enveloped: bool = True
    status: str = "200"
    query: dict[str, str] = field(default_factory=dict)
    body: dict[str, str] | None = None


ROTATE_FIELDS = {"grace_seconds": "graceSeconds"}
EVENT_OPERATIONS: dict[tuple[str, str], Op] = {
    ("post", "/v1/searches"): Op(models.SavedSearch, status="201", body=_core.SEARCH_FIELDS),
    ("get", "/v1/searches"): Op(models.Page[models.SavedSearch], False, query=_core.LIST_PARAMS),
    ("get", "/v1/searches/X"): Op(models.SavedSearch),
    ("patch", "/v1/searches/X"): Op(models.SavedSearch, body=_core.SEARCH_FIELDS),
    ("delete", "/v1/searches/X"): Op(None, status="204"),
    ("get", "/v1/events"): Op(models.EventsPage, False, query=_core.EVENTS_PARAMS),
    ("get", "/v1/events/stream"): Op(None, query=_core.STREAM_PARAMS),
    ("post", "/v1/webhooks"): Op(models.CreatedWebhook, status="201", body=_core.WEBHOOK_FIELDS),
    ("get", "/v1/webhooks"): Op(models.Page[models.Webhook], False, query=_core.LIST_PARAMS),
    ("get", "/v1/webhooks/X"): Op(models.Webhook),
    ("patch", "/v1/webhooks/X"): Op(models.Webhook, body=_core.WEBHOOK_UPDATE_FIELDS),
    ("delete", "/v1/webhooks/X"): Op(None, status="204"),
    ("post", "/v1/webhooks/X/rotate-secret"): Op(models.WebhookSecret, body=ROTATE_FIELDS),
    ("post", "/v1/webhooks/X/test"): Op(None, status="202"),
    ("get", "/v1/webhooks/X/deliveries"): Op(
        models.Page[models.Delivery], False, query=_core.LIST_PARAMS
    ),
    ("post", "/v1/webhooks/X/deliveries/X/resend"): Op(models.ReplayQueued, status="202"),
    ("post", "/v1/webhooks/X/replay"): Op(
        models.ReplayQueued, status="202", body={"since": "since"}
    ),
    ("get", "/v1/exports/X/files/X"): Op(None),  # a file's bytes: `exports.download`
}
EVENT_PATHS = {  # the request each SDK method makes, with "X" in the path parameter
    ("post", "/v1/searches"): _core.create_search({"name": "x"}),
    ("get", "/v1/searches"): _core.list_searches({}),
    ("get", "/v1/searches/X"): _core.get_search("X"),
    ("patch", "/v1/searches/X"): _core.update_search("X", {}),
    ("delete", "/v1/searches/X"): _core.delete_search("X"),
    ("get", "/v1/events"): _core.list_events({}),
    ("post", "/v1/webhooks"): _core.create_webhook({"url": "x"}),
    ("get", "/v1/webhooks"): _core.list_webhooks({}),
    ("get", "/v1/webhooks/X"): _core.get_webhook("X"),
    ("patch", "/v1/webhooks/X"): _core.update_webhook("X", {}),
    ("delete", "/v1/webhooks/X"): _core.delete_webhook("X"),
    ("post", "/v1/webhooks/X/rotate-secret"): _core.rotate_webhook_secret("X", None),
    ("post", "/v1/webhooks/X/test"): _core.send_test_event("X"),
    ("get", "/v1/webhooks/X/deliveries"): _core.list_deliveries("X", {}),
    ("post", "/v1/webhooks/X/deliveries/X/resend"): _core.resend_delivery("X", "X"),
    ("post", "/v1/webhooks/X/replay"): _core.replay_webhook("X", "c"),
    ("get", "/v1/exports/X/files/X"): _core.export_file("X", "X"),
}

QUERY_TABLES: dict[str, dict[str, str]] = {
    "searchProperties": _core.PROPERTY_SEARCH_PARAMS,
    "searchPropertiesAlias": _core.PROPERTY_SEARCH_PARAMS,
    "lookupProperty": _core.LOOKUP_PARAMS,
    "searchMarkets": _core.MARKET_SEARCH_PARAMS,
    "getMarketHistory": _core.MARKET_HISTORY_PARAMS,
    "getProperty": _core.RECORD_PARAMS,
    "getPropertyHistory": _core.RECORD_PARAMS,
    "getPropertyValuation": _core.RECORD_PARAMS,
    "listPropertyChanges": _core.CHANGES_PARAMS,
}
PATHS = {  # the request each SDK method makes, with "X" in the path parameter
    "getProperty": _core.get_property("X").path,
    "lookupProperty": _core.lookup_property({}).path,
    "searchProperties": _core.search_properties({}).path,
    "getPropertyHistory": _core.property_history("X").path,
    "getPropertyValuation": _core.property_valuation("X").path,
    "getMarket": _core.get_market("X").path,
    "getMarketHistory": _core.market_history("X", None).path,
    "searchMarkets": _core.search_markets({}).path,
    "getAuthStatus": _core.auth_status().path,
    "listPropertyChanges": _core.list_changes({}).path,
    "listExports": _core.list_exports().path,
}


# -- one normal form for both sides: {"type", "nullable", "enum", "items", "fields"} -------


def _shape(kind: str, **more: Any) -> dict[str, Any]:
    return {"type": kind, "nullable": False, "enum": None, "items": None, "fields": None, **more}


def from_openapi(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in schema:
        return from_openapi(components[schema["$ref"].rsplit("/", 1)[1]], components)
    for union in ("oneOf", "anyOf"):
        if union in schema:
            options = [o for o in schema[union] if o.get("type") != "null"]
            if len(options) > 1:  # several shapes (an event's data by type): free-form
                kinds = {from_openapi(o, components)["type"] for o in options}
                shape = _shape("object" if kinds == {"object"} else "union")
                shape["nullable"] = len(options) < len(schema[union])
                return shape
            shape = from_openapi(options[0], components)
            shape["nullable"] = len(options) < len(schema[union])
            return shape
    kinds = schema.get("type")
    nullable = False
    if isinstance(kinds, list):
        nullable = "null" in kinds
        (kinds,) = [k for k in kinds if k != "null"]
    if kinds == "array":
        return _shape("array", nullable=nullable, items=from_openapi(schema["items"], components))
    if kinds == "object" or "properties" in schema:
        required = set(schema.get("required", []))
        fields = {
            name: (name in required, from_openapi(sub, components))
            for name, sub in schema.get("properties", {}).items()
        }
        return _shape("object", nullable=nullable, fields=fields)
    enum = schema.get("enum")
    return _shape(
        str(kinds),
        nullable=nullable or (enum is not None and None in enum),
        enum=None if enum is None else sorted(v for v in enum if v is not None),
    )


def from_sdk(info: msgspec.inspect.Type) -> dict[str, Any]:
    mi = msgspec.inspect
    if isinstance(info, mi.UnionType):
        options = [t for t in info.types if not isinstance(t, mi.NoneType)]
        assert len(options) == 1, info
        shape = from_sdk(options[0])
        shape["nullable"] = len(options) < len(info.types)
        return shape
    if isinstance(info, mi.StructType):
        fields = {f.encode_name: (f.required, from_sdk(f.type)) for f in info.fields}
        return _shape("object", fields=fields)
    if isinstance(info, mi.ListType):
        return _shape("array", items=from_sdk(info.item_type))
    if isinstance(info, mi.DictType):  # free-form JSON (filters, an event's data)
        return _shape("object")
    if isinstance(info, mi.LiteralType):
        return _shape("string", enum=sorted(str(v) for v in info.values))
    simple = {
        mi.IntType: "integer",
        mi.FloatType: "number",
        mi.StrType: "string",
        mi.BoolType: "boolean",
        mi.DateType: "string",  # YYYY-MM-DD, decoded to datetime.date
        mi.DateTimeType: "string",  # ISO 8601 UTC, decoded to datetime.datetime
    }
    for kind, name in simple.items():
        if isinstance(info, kind):
            return _shape(name)
    raise AssertionError(f"no rule for {info!r}")


def differences(sdk: dict[str, Any], server: dict[str, Any], path: str = "$") -> list[str]:
    found: list[str] = []
    for key in ("type", "nullable", "enum"):
        if sdk[key] != server[key]:
            found.append(f"{path}: {key} is {sdk[key]!r} in the SDK, {server[key]!r} on the server")
    if sdk["type"] == server["type"] == "array":
        found += differences(sdk["items"], server["items"], path + "[]")
    if sdk["type"] == server["type"] == "object" and sdk["fields"] is not None:
        ours, theirs = sdk["fields"], server["fields"] or {}
        for name in sorted(theirs.keys() - ours.keys()):
            found.append(f"{path}.{name}: on the server, missing from the SDK")
        for name in sorted(ours.keys() - theirs.keys()):
            found.append(f"{path}.{name}: in the SDK, not on the server")
        for name in sorted(ours.keys() & theirs.keys()):
            (req_ours, sub_ours), (req_theirs, sub_theirs) = ours[name], theirs[name]
            if req_ours != req_theirs:
                found.append(f"{path}.{name}: required {req_ours} in the SDK, {req_theirs} on the server")  # fmt: skip
            found += differences(sub_ours, sub_theirs, f"{path}.{name}")
    return found


@pytest.fixture(scope="module")
def openapi(live: Live) -> dict[str, Any]:
    document: dict[str, Any] = httpx.get(live.base_url + "/openapi.json", timeout=10).json()
    return document


def operations(openapi: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    return {
        op["operationId"]: (path, op)
        for path, item in openapi["paths"].items()
        for method, op in item.items()
        if method == "get"
    }


def body_schema(
    openapi: dict[str, Any], op: dict[str, Any], enveloped: bool, status: str = "200"
) -> dict[str, Any]:
    components = openapi["components"]["schemas"]
    schema = op["responses"][status]["content"]["application/json"]["schema"]
    shape = from_openapi(schema, components)
    if enveloped:
        assert set(shape["fields"]) == {"data"}, shape["fields"].keys()
        required, shape = shape["fields"]["data"]
        assert required
    return shape


def every_operation(openapi: dict[str, Any]) -> dict[tuple[str, str], tuple[str, dict[str, Any]]]:
    """Every operation by (method, path with its parameters as X): (path, operation)."""
    methods = {"get", "post", "put", "patch", "delete"}
    return {
        (method, re.sub(r"\{[^}]+\}", "X", path)): (path, op)
        for path, item in openapi["paths"].items()
        for method, op in item.items()
        if method in methods
    }


# -- the tests ----------------------------------------------------------------------------


def test_every_operation_is_covered(openapi: dict[str, Any]) -> None:
    events = {op["operationId"] for key, (_, op) in every_operation(openapi).items()
              if key in EVENT_OPERATIONS}  # fmt: skip
    served = set(operations(openapi)) - NOT_IN_SDK - events
    served_events = {
        key
        for key, (_, op) in every_operation(openapi).items()
        if op.get("operationId") not in OPERATIONS and op.get("operationId") not in NOT_IN_SDK
    }
    assert served == set(OPERATIONS), "operations the SDK does not cover, or no longer served"
    assert served_events == set(EVENT_OPERATIONS), "the events surface differs from the SDK's"


@pytest.mark.parametrize("key", sorted(EVENT_OPERATIONS), ids=" ".join)
def test_events_answers_match_the_schema(openapi: dict[str, Any], key: tuple[str, str]) -> None:
    expected = EVENT_OPERATIONS[key]
    _, op = every_operation(openapi)[key]
    assert expected.status in op["responses"], sorted(op["responses"])
    if expected.model is None:
        return
    server = body_schema(openapi, op, expected.enveloped, expected.status)
    sdk = from_sdk(msgspec.inspect.type_info(expected.model))
    assert differences(sdk, server) == []


@pytest.mark.parametrize("key", sorted(EVENT_OPERATIONS), ids=" ".join)
def test_events_requests_match_the_schema(openapi: dict[str, Any], key: tuple[str, str]) -> None:
    expected = EVENT_OPERATIONS[key]
    _, op = every_operation(openapi)[key]
    params = op.get("parameters", [])
    assert {p["name"] for p in params if p["in"] == "query"} == set(expected.query.values())
    made = EVENT_PATHS.get(key)
    if made is not None:
        assert getattr(made, "method", "GET").lower() == key[0] and made.path == key[1]
    if expected.body is None:
        assert "requestBody" not in op or key[1].endswith("/test")
        return
    components = openapi["components"]["schemas"]
    schema = op["requestBody"]["content"]["application/json"]["schema"]
    fields = from_openapi(schema, components)["fields"]
    assert set(fields) == set(expected.body.values())


def test_search_filters_are_the_property_search_filters(openapi: dict[str, Any]) -> None:
    """A saved search's `filters` take exactly `GET /v1/properties`' filter parameters."""
    _, op = operations(openapi)["searchProperties"]
    filters = {p["name"] for p in op["parameters"] if p["in"] == "query"}
    assert set(_core.SEARCH_FILTERS.values()) == filters - {"limit", "offset", "cursor", "sort",
                                                             "order", "fields"}  # fmt: skip
    _, create = every_operation(openapi)[("post", "/v1/searches")]
    components = openapi["components"]["schemas"]
    schema = create["requestBody"]["content"]["application/json"]["schema"]
    body = from_openapi(schema, components)["fields"]
    declared = body["filters"][1]["fields"]
    if declared:  # the server may describe `filters` field by field, or as free-form JSON
        assert set(declared) == set(_core.SEARCH_FILTERS.values())


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_response_model_matches_the_schema(openapi: dict[str, Any], operation: str) -> None:
    model, enveloped = OPERATIONS[operation]
    _, op = operations(openapi)[operation]
    server = body_schema(openapi, op, enveloped)
    sdk = from_sdk(msgspec.inspect.type_info(model))
    assert differences(sdk, server) == []


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_parameters_and_paths_match(openapi: dict[str, Any], operation: str) -> None:
    path, op = operations(openapi)[operation]
    params = op.get("parameters", [])
    in_query = {p["name"] for p in params if p["in"] == "query"}
    assert set(QUERY_TABLES.get(operation, {}).values()) == in_query
    if operation in PATHS:
        expected = path
        for p in params:
            if p["in"] == "path":
                expected = expected.replace("{" + p["name"] + "}", "X")
        assert PATHS[operation] == expected


def test_lookup_requires_what_the_server_requires(openapi: dict[str, Any]) -> None:
    _, op = operations(openapi)["lookupProperty"]
    required = {p["name"] for p in op["parameters"] if p.get("required")}
    signature = inspect.signature(Properties.lookup)
    ours = {
        _core.LOOKUP_PARAMS[name]
        for name, p in signature.parameters.items()
        if name != "self" and p.default is inspect.Parameter.empty
    }
    assert ours == required


@pytest.mark.parametrize(
    ("operation", "method"),
    [("searchProperties", Properties.search), ("searchMarkets", Markets.search)],
)
def test_search_enumerations_match(openapi: dict[str, Any], operation: str, method: Any) -> None:
    _, op = operations(openapi)[operation]
    hints = typing.get_type_hints(method)
    for p in op["parameters"]:
        enum = p["schema"].get("enum")
        if enum is None:
            continue
        name = next(k for k, v in QUERY_TABLES[operation].items() if v == p["name"])
        literal = [
            a for a in typing.get_args(hints[name]) if typing.get_origin(a) is typing.Literal
        ]
        assert literal, f"{name} is not typed with its values"
        assert sorted(typing.get_args(literal[0])) == sorted(v for v in enum if v is not None)


def test_the_check_sees_drift(openapi: dict[str, Any]) -> None:
    """The comparison is not vacuous: a renamed, retyped or nullable field is reported."""
    _, op = operations(openapi)["getMarket"]
    server = body_schema(openapi, op, True)
    snapshot = server["fields"]["snapshot"][1]["fields"]
    snapshot["medianListPriceUsd"] = snapshot.pop("medianListPrice")
    snapshot["activeListings"][1]["nullable"] = True
    snapshot["inventoryMonths"] = (True, _shape("integer", nullable=True))
    found = differences(from_sdk(msgspec.inspect.type_info(models.Market)), server)
    assert found == [
        "$.snapshot.medianListPriceUsd: on the server, missing from the SDK",
        "$.snapshot.medianListPrice: in the SDK, not on the server",
        "$.snapshot.activeListings: nullable is False in the SDK, True on the server",
        "$.snapshot.inventoryMonths: type is 'number' in the SDK, 'integer' on the server",
    ]

"""The SDK's models and parameters against the live server's /openapi.json.

Fails when the SDK drifts from the server: a field added, removed or renamed, a type, a
required or nullable flag, an enumeration, a query parameter, a path or an operation that
the SDK does not cover.
"""

from __future__ import annotations

import inspect
import typing
from typing import TYPE_CHECKING, Any

import httpx
import msgspec
import pytest

from propdata_client import _core
from propdata_client._sync import Markets, Properties
from propdata_client.models import (
    AuthStatus,
    ChangesPage,
    Market,
    MarketHistory,
    Page,
    Property,
    PropertyHistory,
    PropertyMatch,
    PropertyPage,
    PropertySummary,
    Valuation,
)

pytestmark = pytest.mark.slow

if TYPE_CHECKING:
    from conftest import Live

# operationId -> (the SDK's model of the whole 200 body, or of its `data`; enveloped?)
OPERATIONS: dict[str, tuple[Any, bool]] = {
    "getProperty": (Property, True),
    "lookupProperty": (PropertyMatch, True),
    "searchProperties": (PropertyPage[PropertySummary], False),
    "searchPropertiesAlias": (PropertyPage[PropertySummary], False),
    "getPropertyHistory": (PropertyHistory, True),
    "getPropertyValuation": (Valuation, True),
    "getMarket": (Market, True),
    "getMarketHistory": (MarketHistory, True),
    "searchMarkets": (Page[Market], False),
    "getAuthStatus": (AuthStatus, True),
    "listPropertyChanges": (ChangesPage, False),
}
NOT_IN_SDK = {
    "getHealth",  # the operators' health check, outside /v1
    "streamEvents",  # Server-Sent Events: no JSON answer for a model to match
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
            assert len(options) == 1, schema
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
    if sdk["type"] == server["type"] == "object":
        ours, theirs = sdk["fields"], server["fields"]
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


def body_schema(openapi: dict[str, Any], op: dict[str, Any], enveloped: bool) -> dict[str, Any]:
    components = openapi["components"]["schemas"]
    schema = op["responses"]["200"]["content"]["application/json"]["schema"]
    shape = from_openapi(schema, components)
    if enveloped:
        assert set(shape["fields"]) == {"data"}, shape["fields"].keys()
        required, shape = shape["fields"]["data"]
        assert required
    return shape


# -- the tests ----------------------------------------------------------------------------


def test_every_operation_is_covered(openapi: dict[str, Any]) -> None:
    served = set(operations(openapi)) - NOT_IN_SDK
    assert served == set(OPERATIONS), "operations the SDK does not cover, or no longer served"


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
    found = differences(from_sdk(msgspec.inspect.type_info(Market)), server)
    assert found == [
        "$.snapshot.medianListPriceUsd: on the server, missing from the SDK",
        "$.snapshot.medianListPrice: in the SDK, not on the server",
        "$.snapshot.activeListings: nullable is False in the SDK, True on the server",
        "$.snapshot.inventoryMonths: type is 'number' in the SDK, 'integer' on the server",
    ]

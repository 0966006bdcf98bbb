"""A saved search's `filters`: GET /v1/properties' filter parameters, as a JSON object.

Nothing here says what a filter means or takes. Each parameter's type and range are read
from the search endpoint's own declaration (`search.endpoints.search_properties`, which
Litestar checks and the OpenAPI document shows), and the rules between parameters, the
normalising and the `SearchFilters` they make come from `search.query.parse`, the search's
one parser. Only the spelling differs: numbers are JSON numbers, `bbox` its string.

    checked = check({"city": "Ames", "maxPrice": 350000})   # the filters as stored
    query_of(checked).filters                                # SearchFilters, as a search's
"""

from __future__ import annotations

import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import msgspec
from litestar.openapi.spec import Reference, Schema
from litestar.openapi.spec.enums import OpenAPIType

from propdata.errors import InvalidParameter, expected
from propdata.search import endpoints
from propdata.search.filters import FILTERS
from propdata.search.query import GEO, SearchQuery, parse

PREFIX = "filters."
NOT_FILTERS = ("limit", "offset", "cursor", "sort", "order", "fields")
"""Parameters of a search that are not filters: a saved search has no page, order or fields."""


@dataclass(frozen=True, slots=True)
class Declared:
    """One filter parameter as the search endpoint declares it."""

    kind: Any
    """Its type without None: str, int, float or a Literal of strings."""
    definition: Any
    """Its QueryParameter (ge, le, gt, pattern, min_length, max_length, description)."""


@cache
def declared() -> dict[str, Declared]:
    """Every filter parameter of GET /v1/properties by its wire name, in the endpoint's order."""
    names = {f.parameter for f in FILTERS} | set(GEO) | {"bbox"}
    hints = typing.get_type_hints(endpoints.search_properties, include_extras=True)
    found: dict[str, Declared] = {}
    for name, hint in hints.items():
        if typing.get_origin(hint) is not typing.Annotated:
            continue
        kind, *extra = typing.get_args(hint)
        definition = extra[0] if extra else None
        wire = getattr(definition, "name", None) or name
        if wire not in names:
            continue
        options = [a for a in typing.get_args(kind) if a is not type(None)] or [kind]
        found[wire] = Declared(options[0], definition)
    assert set(found) == names, sorted(names - set(found))
    return found


def check(filters: Mapping[str, Any]) -> dict[str, Any]:
    """The filters as stored: each known, of its type and range, surrounding spaces of text
    dropped, and together a search `parse` takes; else a 400 naming `filters.<name>`."""
    known = declared()
    kept: dict[str, Any] = {}
    for name, raw in filters.items():
        where = PREFIX + name
        if name in NOT_FILTERS:
            raise InvalidParameter(
                where, f"'{name}' is not a filter: a saved search has no page, sort or fields."
            )
        if name not in known:
            raise InvalidParameter(
                where, f"Unknown filter '{name}'; filters takes: {', '.join(known)}."
            )
        kept[name] = _value(where, raw, known[name])
    query_of(kept)
    return kept


def query_of(filters: Mapping[str, Any]) -> SearchQuery:
    """The search of stored filters (`check`ed); a 400 naming `filters.<name>` when the rules
    between them do not hold."""
    try:
        return parse(filters, 1)
    except InvalidParameter as exc:
        raise InvalidParameter(PREFIX + (exc.parameter or ""), exc.message) from None


def _value(where: str, raw: Any, declared: Declared) -> Any:
    kind, definition = declared.kind, declared.definition
    if raw is None:
        raise _invalid(where, declared)
    if kind is int and isinstance(raw, float) and raw.is_integer():
        raw = int(raw)  # JSON Schema's integer: 3.0 is one
    try:
        value = msgspec.convert(raw, kind, strict=True)
    except msgspec.ValidationError:
        raise _invalid(where, declared) from None
    if isinstance(value, str):
        value = value.strip()
        low, high = getattr(definition, "min_length", None), getattr(definition, "max_length", None)
        pattern = getattr(definition, "pattern", None)
        if (low is not None and len(value) < low) or (high is not None and len(value) > high):
            raise _invalid(where, declared)
        if pattern is not None and not re.search(pattern, value):
            raise _invalid(where, declared)
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise _invalid(where, declared)
    bounds = (("ge", float.__ge__), ("le", float.__le__), ("gt", float.__gt__),
              ("lt", float.__lt__))  # fmt: skip
    for attribute, holds in bounds:
        bound = getattr(definition, attribute, None)
        if bound is not None and not holds(float(value), float(bound)):
            raise _invalid(where, declared)
    return value


def _invalid(where: str, declared: Declared) -> InvalidParameter:
    words = expected(declared.kind, declared.definition)
    if declared.kind is str:
        words = f"a string: {words}" if words else "a string"
    return InvalidParameter(
        where, f"Invalid value for '{where}'; expected: {words}." if words else
        f"Invalid value for '{where}'.",
    )  # fmt: skip


def schema() -> Schema:
    """The JSON Schema of `filters` (for the OpenAPI document), from the same declarations:
    each filter with its type and range, no other name."""
    properties: dict[str, Schema | Reference] = {}
    for name, found in declared().items():
        kind, definition = found.kind, found.definition
        description = getattr(definition, "description", None)
        if typing.get_origin(kind) is typing.Literal:
            properties[name] = Schema(type=OpenAPIType.STRING, enum=list(typing.get_args(kind)),
                                      description=description)  # fmt: skip
        elif kind is str:
            properties[name] = Schema(
                type=OpenAPIType.STRING, description=description,
                pattern=getattr(definition, "pattern", None),
                min_length=getattr(definition, "min_length", None),
                max_length=getattr(definition, "max_length", None),
            )  # fmt: skip
        else:
            properties[name] = Schema(
                type=OpenAPIType.INTEGER if kind is int else OpenAPIType.NUMBER,
                description=description,
                minimum=getattr(definition, "ge", None),
                maximum=getattr(definition, "le", None),
                exclusive_minimum=getattr(definition, "gt", None),
            )  # fmt: skip
    return Schema(type=OpenAPIType.OBJECT, properties=properties, additional_properties=False)

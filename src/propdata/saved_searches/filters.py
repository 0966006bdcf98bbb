"""A saved search's `filters`: GET /v1/properties' filter parameters, as a JSON object.

Nothing here says what a filter means or takes. Each parameter's type and range come from
the search's one table of them (`search.parameters.DECLARED`, which the search endpoint's
declarations are held to), and the rules between parameters, the normalising and the
`SearchFilters` they make come from `search.query.parse`, the search's one parser. Only the
spelling differs: numbers are JSON numbers, `bbox` its string. No web framework is loaded:
the command-line event producer checks with these too.

    checked = check({"city": "Ames", "maxPrice": 350000})   # the filters as stored
    query_of(checked).filters                                # SearchFilters, as a search's
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import msgspec

from propdata.errors import InvalidParameter, expected
from propdata.search.parameters import DECLARED, Declared
from propdata.search.query import SearchQuery, parse

PREFIX = "filters."
NOT_FILTERS = ("limit", "offset", "cursor", "sort", "order", "fields")
"""Parameters of a search that are not filters: a saved search has no page, order or fields."""


def declared() -> dict[str, Declared]:
    """Every filter parameter of GET /v1/properties by its wire name, in the endpoint's order."""
    return DECLARED


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
    kind, definition = declared.kind, declared
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
    words = expected(declared.kind, declared)
    if declared.kind is str:
        words = f"a string: {words}" if words else "a string"
    return InvalidParameter(
        where, f"Invalid value for '{where}'; expected: {words}." if words else
        f"Invalid value for '{where}'.",
    )  # fmt: skip

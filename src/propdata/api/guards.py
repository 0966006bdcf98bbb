"""Checks every /v1 request passes before its handler runs (Litestar `before_request`).

contract.md, "Abuse and bad input": no unknown or repeated query parameter; no control
character (NUL included) in any path or query value; integers written as plain ASCII
digits with an optional leading minus (`1e3`, `10.0`, `+5`, `1_0`, ` 5` and other
scripts' digits are refused, where Python's and msgspec's own parsing would take some).
Surrounding spaces of every other value are dropped.
Each refusal is a 400 naming the parameter, before anything reaches a store.
"""

from __future__ import annotations

import re
import types
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Union, get_args, get_origin
from urllib.parse import parse_qsl, urlencode

import msgspec
from litestar import Request

from propdata.api.body import document, read_json
from propdata.api.values import DECIMAL, INTEGER
from propdata.errors import InvalidParameter, NotFound, body_error

_RESERVED = {"request", "scope", "state", "headers", "cookies", "query", "body", "data", "socket"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
"""C0 and C1 control characters, DEL: never part of an address, a name or a number."""
_NUMBERS = {
    int: (
        INTEGER,
        "a whole number in plain digits 0-9 (a leading minus at most; no point,"
        " no exponent, no spaces)",
    ),
    float: (DECIMAL, "a number written as JSON writes one, such as 1.5"),
}


@dataclass(frozen=True, slots=True)
class _Shape:
    """What one handler function takes in its query string."""

    allowed: frozenset[str]
    numbers: dict[str, type]
    """Query names whose values are parsed as int or float."""


_shapes: dict[Any, _Shape] = {}
"""By handler function (handlers are copied per app, the function they wrap is not)."""


def _number_type(annotation: Any) -> type | None:
    """int or float when the annotation is one of them, alone or with None."""
    options = (
        set(get_args(annotation))
        if get_origin(annotation) in (Union, types.UnionType)
        else {annotation}
    )
    options.discard(type(None))
    if len(options) == 1:
        (only,) = options
        if only in (int, float):
            return only  # type: ignore[no-any-return]
    return None


def _shape(handler: Any) -> _Shape:
    shape = _shapes.get(handler.fn)
    if shape is None:
        injected = handler.resolve_dependencies()
        names: set[str] = set()
        numbers: dict[str, type] = {}
        for name, field in handler.parsed_fn_signature.parameters.items():
            if name in _RESERVED or name in injected:
                continue
            wire = getattr(field.kwarg_definition, "name", None) or name
            names.add(wire)
            kind = _number_type(field.annotation)
            if kind is not None:
                numbers[wire] = kind
        shape = _shapes[handler.fn] = _Shape(frozenset(names), numbers)
    return shape


def unknown_parameter(name: str, allowed: Iterable[str]) -> InvalidParameter:
    """The 400 for a query parameter the operation does not take, listing those it does."""
    known = ", ".join(sorted(allowed)) or "none"
    return InvalidParameter(
        name if not _CONTROL.search(name) else "query",
        f"Unknown query parameter '{_CONTROL.sub('?', name)}'; this operation takes: {known}.",
    )


async def check_request(request: Request[Any, Any, Any]) -> None:
    """400 for an unknown or repeated query parameter, a control character in any path or
    query value, or a number not written plainly; the parameter is named. A JSON body is
    decoded strictly (no "1" for 1), its unknown fields refused, before the handler's own
    parsing, which would take a number written as a string."""
    checked_query(request.scope)
    body_type = _body_type(request.scope["route_handler"])
    if body_type is not None:
        check_body(await read_json(request), body_type)


_body_types: dict[Any, Any] = {}


def _body_type(handler: Any) -> Any:
    """The type of a handler's JSON body (`data`), or None when it takes none."""
    if handler.fn not in _body_types:
        field = handler.parsed_fn_signature.parameters.get("data")
        _body_types[handler.fn] = field.annotation if field is not None else None
    return _body_types[handler.fn]


def check_body(body: bytes, body_type: Any) -> None:
    """A 400 naming the field (dotted when nested) when `body` is not JSON of `body_type` or
    breaks a rule every body keeps (`body.document`); an empty body stands for null."""
    if body:
        document(body)
    try:
        msgspec.json.decode(body or b"null", type=body_type, strict=True)
    except msgspec.ValidationError as exc:
        said, _, where = str(exc).partition(" - at `")
        key = "data" + where.rstrip("`").removeprefix("$")
        raise InvalidParameter(*body_error(key.replace("data.", "", 1), said)) from exc


_CHECKED = "propdata.checked_query"


def checked_query(scope: Any) -> list[tuple[str, str]]:
    """The request's query pairs once `check_request`'s rules hold, or a 400 naming the
    parameter. An integer's leading zeros are dropped (`030` is 30), surrounding spaces of
    every other value too, and the scope's query string is rewritten to match, so the response cache's key and the handler's parsing read
    the same values. The metering middleware calls this before it consults the cache, so a
    cached answer never changes whether a request is a 400; a second call is free."""
    state = scope.setdefault("state", {})
    done: list[tuple[str, str]] | None = state.get(_CHECKED)
    if done is not None:
        return done
    raw_path = scope.get("raw_path") or b""
    if b"%2f" in raw_path.lower():
        # The server decodes %2F before routing, so "t-001%2Fhistory" would reach the history
        # of t-001. No id holds a slash: there is no such resource.
        raise NotFound(f"No resource at {scope.get('path', '')}.")
    shape = _shape(scope["route_handler"])
    path_params: dict[str, Any] = scope.get("path_params", {})
    for name, value in path_params.items():
        if isinstance(value, str) and _CONTROL.search(value):
            raise InvalidParameter(name, f"'{name}' must not hold control characters.")
    pairs = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    seen: set[str] = set()
    rewritten = False
    for position, (name, value) in enumerate(pairs):
        if name not in shape.allowed or name in path_params:
            raise unknown_parameter(name, shape.allowed - set(path_params))
        if name in seen:
            raise InvalidParameter(name, f"The query parameter '{name}' is given more than once.")
        seen.add(name)
        if _CONTROL.search(value):
            raise InvalidParameter(name, f"'{name}' must not hold control characters.")
        kind = shape.numbers.get(name)
        if kind is None and value != value.strip():
            # Text as people paste it: surrounding spaces mean nothing (numbers stay strict).
            pairs[position] = (name, value.strip())
            rewritten = True
        elif kind is not None:
            pattern, expected = _NUMBERS[kind]
            if not pattern.fullmatch(value):
                raise InvalidParameter(name, f"'{name}' must be {expected}.")
            if kind is int and _LEADING_ZEROS.match(value):
                pairs[position] = (name, _LEADING_ZEROS.sub(r"\1", value) or "0")
                rewritten = True
    if rewritten:
        scope["query_string"] = urlencode(pairs).encode("ascii")
    state[_CHECKED] = pairs
    return pairs


_LEADING_ZEROS = re.compile(r"^(-?)0+(?=[0-9])")
"""Zeros before an integer's first significant digit (`030`, `-007`, `00`)."""

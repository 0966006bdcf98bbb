"""Request bodies of the writes under /v1 (saved searches, webhook endpoints): JSON objects,
at most 64 KB, each field checked by name.

contract.md, "Events": `Content-Type: application/json`; an unknown field, a bad type or a
bad value is 400 `invalid_parameter` naming it in `parameter`, dotted for nested names
(`filters.minPrice`). A body over 64 KB is 413 `payload_too_large`, read no further.

    body = await json_object(request)
    unknown(body, ("name", "filters"))
    name = value(body, "name", str)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

import msgspec
from litestar import Request
from litestar.exceptions.http_exceptions import RequestEntityTooLarge

from propdata.errors import InvalidParameter, PayloadTooLarge

MAX_BODY = 64 * 1024
"""Bytes a request body may hold: every /v1 handler's `request_max_body_size` (app.py)."""
T = TypeVar("T")
_KINDS = {str: "a string", int: "a whole number", float: "a number", bool: "true or false",
          list: "an array", dict: "an object"}  # fmt: skip


async def read_json(request: Request[Any, Any, Any]) -> bytes:
    """The request's body: at most MAX_BODY bytes (else a 413, read no further) and, unless
    empty (a body the operation lets one leave out), sent as `application/json` (else a 400
    naming `Content-Type`). Litestar keeps it, so a handler's `data` is parsed from it."""
    try:
        body = await request.body()
    except RequestEntityTooLarge:
        raise too_large() from None
    kind = request.headers.get("content-type", "")
    if body and kind.split(";")[0].strip().lower() != "application/json":
        raise InvalidParameter(
            "Content-Type", "Send the body as JSON, with 'Content-Type: application/json'."
        )
    return body


async def json_object(request: Request[Any, Any, Any]) -> dict[str, Any]:
    """The request's body (`read_json`), a JSON object; a 400 naming `body` for anything
    else."""
    try:
        found = msgspec.json.decode(await read_json(request))
    except msgspec.DecodeError:
        raise InvalidParameter("body", "The body is not valid JSON.") from None
    if not isinstance(found, dict):
        raise InvalidParameter("body", "The body must be a JSON object.")
    storable(found, "")
    return found


_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")
"""NUL and lone surrogates (`"\\ud800"` in JSON): text no store can hold or compare."""


def storable(value: Any, where: str) -> None:
    """A 400 naming the field (dotted) of any name or text no store can hold."""
    if isinstance(value, str):
        if _UNSTORABLE.search(value):
            name = where or "body"
            raise InvalidParameter(name, f"'{name}' holds a character no text may hold.")
    elif isinstance(value, list):
        for item in value:
            storable(item, where)
    elif isinstance(value, dict):
        for key, item in value.items():
            storable(key, where or "body")
            storable(item, f"{where}.{key}" if where else str(key))


def too_large() -> PayloadTooLarge:
    return PayloadTooLarge(f"A request body may hold at most {MAX_BODY // 1024} KB.")


def unknown(body: Mapping[str, Any], allowed: Iterable[str], prefix: str = "") -> None:
    """400 naming the first field of `body` not in `allowed` (`prefix` + its name)."""
    known = tuple(allowed)
    for name in body:
        if name not in known:
            raise InvalidParameter(
                f"{prefix}{name}",
                f"Unknown field '{prefix}{name}'; {prefix.rstrip('.') or 'the body'} takes:"
                f" {', '.join(known)}.",
            )


def value(body: Mapping[str, Any], name: str, kind: type[T], prefix: str = "") -> T:
    """`body[name]` as `kind` (strictly: 3.0 is no whole number, "3" no number), or a 400
    naming `prefix` + `name` and saying what it takes."""
    try:
        return msgspec.convert(body[name], kind, strict=True)
    except msgspec.ValidationError:
        what = _KINDS.get(kind, "a value of another kind")
        raise InvalidParameter(f"{prefix}{name}", f"'{prefix}{name}' must be {what}.") from None

"""Request bodies of the writes under /v1 (saved searches, webhook endpoints): JSON objects,
at most 64 KB, each field checked by name.

contract.md, "Events": `Content-Type: application/json`; an unknown field, a bad type or a
bad value is 400 `invalid_parameter` naming it in `parameter`, dotted for nested names
(`filters.minPrice`). A body over 64 KB is 413 `payload_too_large`, read no further.
contract.md, "Abuse, third round": a body nested deeper than 32 levels, a name given twice
in one object, or text holding a bidirectional control character is a 400 too (`document`).

    body = await json_object(request)
    unknown(body, ("name", "filters"))
    name = value(body, "name", str)
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

import msgspec
import numpy as np
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
    """The request's body (`read_json`) as a `document`, a JSON object; a 400 naming `body`
    for anything else."""
    found = document(await read_json(request))
    if not isinstance(found, dict):
        raise InvalidParameter("body", "The body must be a JSON object.")
    return found


MAX_DEPTH = 32
"""Levels of arrays and objects a body may nest (the body itself is the first)."""
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_STEP = np.zeros(256, np.int32)
_STEP[list(b"[{")], _STEP[list(b"]}")] = 1, -1
"""What each byte adds to the depth outside strings: an opening bracket 1, a closing one -1."""


def document(body: bytes) -> Any:
    """The JSON a request body holds, once it nests at most MAX_DEPTH levels, names no field
    twice in one object and holds no text a field may not (`check_text`); else a 400 naming
    the field (`body` for the whole). Every write's body passes here: saved searches
    (`json_object`) and every handler that declares one (`guards.check_body`)."""
    if _deeper_than(body, MAX_DEPTH):
        raise InvalidParameter(
            "body", f"The request body nests arrays and objects deeper than {MAX_DEPTH} levels."
        )
    try:
        found = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        raise InvalidParameter("body", f"The request body is not JSON ({exc}).") from None
    # msgspec keeps the last of a repeated name; Python's parser shows every pair (numbers
    # left unread: only names and text count here). Bounded by MAX_DEPTH above, neither
    # parser recurses past the interpreter's limit.
    check_text(json.loads(body, object_pairs_hook=_Object, parse_int=_unread,
                          parse_float=_unread), "")  # fmt: skip
    return found


def _unread(number: str) -> None:
    return None


def _deeper_than(body: bytes, limit: int) -> bool:
    """Whether brackets outside strings nest past `limit` (read before any parser recurses)."""
    steps = _STEP[np.frombuffer(_STRING.sub(b"", body), np.uint8)]
    return steps.size > 0 and int(np.cumsum(steps).max()) > limit


class _Object(dict[str, Any]):
    """A JSON object as `json.loads` builds it, with the first name it was given twice."""

    repeated: str | None = None

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        if len(self) < len(pairs):
            seen: set[str] = set()
            for name, _ in pairs:
                if name in seen:
                    self.repeated = name
                    break
                seen.add(name)


_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")
"""NUL and lone surrogates (`"\\ud800"` in JSON): text no store can hold or compare."""
_BIDI = re.compile(r"[\u202a-\u202e\u2066-\u2069]")
"""Bidirectional embeddings, overrides and isolates: they make a name or a URL read other
than it is stored ("Trojan Source")."""


def check_text(value: Any, where: str) -> None:
    """A 400 naming the field (dotted) of any name or text in `value` that holds NUL, a lone
    surrogate or a bidirectional control character, or of a name `document` found twice in
    one object."""
    if isinstance(value, str):
        name = where or "body"
        if _UNSTORABLE.search(value):
            raise InvalidParameter(name, f"'{name}' holds a character no text may hold.")
        found = _BIDI.search(value)
        if found:
            raise InvalidParameter(name, f"'{name}' holds a bidirectional control character"
                                         f" (U+{ord(found[0]):04X}), which makes text read"
                                         " other than it is stored.")  # fmt: skip
    elif isinstance(value, list):
        for item in value:
            check_text(item, where)
    elif isinstance(value, dict):
        repeated = getattr(value, "repeated", None)
        if repeated is not None:
            name = f"{where}.{repeated}" if where else repeated
            raise InvalidParameter(name, f"The field '{name}' is given more than once.")
        for key, item in value.items():
            check_text(key, where or "body")
            check_text(item, f"{where}.{key}" if where else str(key))


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

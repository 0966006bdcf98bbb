"""Search cursors: where a walk through one search's pages stands, signed by the store.

A cursor is opaque to clients: base64url of a small JSON array, a dot, and a truncated
HMAC-SHA256 of that array under the store's `cursor_secret` (meta table). It holds

- the data version the walk started under (its order is that version's order),
- a digest of the search (filters, sort, order): a cursor is refused for any other search,
- how many rows the earlier pages delivered (`meta.offset` of the next page),
- the last row's sort value (that version's), its distance (radius searches) and its id,
- the search's total in that version: a page of the walk answered from that version's
  index resumes past the last row without counting the matches again.

It is the same string for the same page of the same search (no nonce), so cached answers
and ETags stay stable. Anything that does not verify is `None`: the service answers 400.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from dataclasses import dataclass
from typing import Any

import msgspec

FORMAT = 2
"""Format 1 was the same without the total (still read: a walk begun before goes on)."""
_TAG = 16
"""Bytes of the HMAC kept: 128 bits, beyond guessing."""


@dataclass(frozen=True, slots=True)
class Cursor:
    version: int
    """The data version whose order the walk follows."""
    search: str
    """`digest` of the search the walk belongs to."""
    delivered: int
    """Rows the walk's earlier pages delivered."""
    value: Any
    """The last row's sort value in that version: int, float, str or None (null)."""
    distance: float | None
    """The last row's exact distance in miles (radius searches), else None."""
    last_id: str
    total: int | None = None
    """The search's `meta.total` in that version; None in a cursor of format 1."""


def digest(*parts: Any) -> str:
    """A short fingerprint of a search: the same filters, sort and order give the same one."""
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def _tag(secret: str, payload: bytes) -> bytes:
    return hmac.new(secret.encode(), payload, hashlib.sha256).digest()[:_TAG]


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def encode(secret: str, cursor: Cursor) -> str:
    payload = msgspec.json.encode(
        [FORMAT, cursor.version, cursor.search, cursor.delivered, cursor.value,
         cursor.distance, cursor.last_id, cursor.total]
    )  # fmt: skip
    return f"{_b64(payload)}.{_b64(_tag(secret, payload))}"


def decode(secret: str, text: str) -> Cursor | None:
    """The cursor `text` holds when this store signed it, else None (malformed, altered,
    truncated, or signed by another store)."""
    if len(text) > 1_000 or text.count(".") != 1:
        return None
    body, tag = text.split(".")
    try:
        payload, sent = _unb64(body), _unb64(tag)
    except (binascii.Error, ValueError):
        return None
    if not hmac.compare_digest(sent, _tag(secret, payload)):
        return None
    try:
        fields = msgspec.json.decode(payload)
        form, version, search, delivered, value, distance, last_id, *rest = fields
        total = int(rest[0]) if form == FORMAT and rest and rest[0] is not None else None
    except (msgspec.DecodeError, TypeError, ValueError):
        return None
    if (form, len(rest)) not in ((1, 0), (FORMAT, 1)):
        return None
    if not isinstance(last_id, str) or not isinstance(search, str):
        return None
    return Cursor(int(version), search, int(delivered), value, distance, last_id, total)

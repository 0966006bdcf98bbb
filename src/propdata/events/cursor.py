"""Event cursors: where a reader of the event log stands (`nextCursor`, the stream's `id:`,
a replay's `since`).

A cursor is opaque to clients: base64url of "e1:<seq>", the `seq` of the last event the
reader has seen (0 before the first). Every owner's events share one numbering, so a cursor
only says where to resume; each reader still sees only its owner's events.

    text = encode(41)
    decode(text, "since")  # 41
"""

from __future__ import annotations

import base64
import binascii

from propdata.errors import InvalidParameter

_VERSION = "e1"


def encode(seq: int) -> str:
    raw = f"{_VERSION}:{seq}".encode("ascii")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode(text: str, parameter: str) -> int:
    """The event number `text` stands for; a 400 naming `parameter` when it is no cursor."""
    try:
        raw = base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
        version, seq = raw.decode("ascii").split(":")
    except (ValueError, binascii.Error, UnicodeDecodeError):
        version, seq = "", ""
    if version != _VERSION or not seq.isdigit() or len(seq) > 18:
        raise InvalidParameter(
            parameter,
            f"'{parameter}' is not an event cursor: pass meta.nextCursor (or an event's"
            " stream id) as it came.",
        )
    return int(seq)

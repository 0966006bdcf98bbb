"""Event cursors: where a reader of the event log stands (`nextCursor`, the stream's `id:`,
a replay's `since`).

A cursor is opaque to clients: base64url of "e2:<sequence>", the owner's `sequence` of the
last event the reader has seen (0 before the first). Sequences are each owner's own (1, 2, 3,
... with no gap), so a cursor says nothing of anyone else's events. A cursor handed out
before sequences were per owner ("e1:<n>": the number of the log's row) is still taken: it
stands for the last of the owner's events at or before that row (`Place.row`).

    text = encode(41)
    decode(text, "since")  # Place(41, row=False)
"""

from __future__ import annotations

import base64
import binascii
from typing import NamedTuple

from propdata.errors import InvalidParameter

_VERSION = "e2"
_ROW = "e1"
"""The cursors of the log's row numbers (every owner's events in one numbering)."""


class Place(NamedTuple):
    """What a cursor stands for: an owner's sequence, or (`row`) a row of the whole log."""

    number: int
    row: bool = False


def encode(sequence: int) -> str:
    raw = f"{_VERSION}:{sequence}".encode("ascii")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode(text: str, parameter: str) -> Place:
    """The place `text` stands for; a 400 naming `parameter` when it is no cursor."""
    try:
        raw = base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
        version, number = raw.decode("ascii").split(":")
    except (ValueError, binascii.Error, UnicodeDecodeError):
        version, number = "", ""
    if version not in (_VERSION, _ROW) or not number.isdigit() or len(number) > 18:
        raise InvalidParameter(
            parameter,
            f"'{parameter}' is not an event cursor: pass meta.nextCursor (or an event's"
            " stream id) as it came.",
        )
    return Place(int(number), row=version == _ROW)

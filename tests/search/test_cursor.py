"""The cursor codec: what it signs comes back whole; anything else is None."""

from __future__ import annotations

import base64

from propdata.search.cursor import Cursor, _b64, _tag, decode, digest, encode

SECRET = "a" * 64


def test_a_cursor_round_trips_exactly() -> None:
    for value, distance in ((250_000, None), ("2026-01-01T00:00:00.5Z", None), (None, None),
                            (None, 0.1 + 0.2), (3, 1e-300)):  # fmt: skip
        cursor = Cursor(7, digest("search", 1), 12_345, value, distance, "syn-0000001", 987_654)
        text = encode(SECRET, cursor)
        assert decode(SECRET, text) == cursor
        assert encode(SECRET, cursor) == text  # no nonce: the same page, the same cursor


def test_a_cursor_without_its_total_is_still_read() -> None:
    """A walk begun under the first format (no total) goes on: its pages count the total."""
    payload = b'[1,7,"0",10,5,null,"syn-0000001"]'
    text = f"{_b64(payload)}.{_b64(_tag(SECRET, payload))}"
    assert decode(SECRET, text) == Cursor(7, "0", 10, 5, None, "syn-0000001", None)
    for other in (b'[2,7,"0",10,5,null,"syn-0000001"]', b'[1,7,"0",10,5,null,"x",3]',
                  b'[3,7,"0",10,5,null,"x",3]', b'[2,7,"0",10,5,null,"x","many"]'):  # fmt: skip
        assert decode(SECRET, f"{_b64(other)}.{_b64(_tag(SECRET, other))}") is None, other


def test_forged_altered_and_foreign_cursors_are_refused() -> None:
    text = encode(SECRET, Cursor(7, digest("s"), 10, 5, None, "x"))
    body, tag = text.split(".")
    forged_payload = base64.urlsafe_b64encode(b'[1,7,"0",10,5,null,"y"]').decode().rstrip("=")
    for bad in (f"{forged_payload}.{tag}", text[:-1], text + "x", body, "", ".", "..",
                "!!!.???", f"{body}.{body}", text.replace(".", "..")):  # fmt: skip
        assert decode(SECRET, bad) is None, bad
    assert decode("b" * 64, text) is None  # another store's secret
    assert digest("s", 1) != digest("s", 2) and digest("s", 1) == digest("s", 1)

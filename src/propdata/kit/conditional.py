"""Conditional requests (RFC 9110 section 13): entity tags and If-None-Match.

An answer's tag is a hash of its exact bytes, so it changes exactly when the answer does:
a load that changes a record changes the record's tag, and one that leaves it alone does
not, whatever else the load did.
"""

from __future__ import annotations

import hashlib

MAX_TAGS = 64
"""Tags looked at in one If-None-Match (a longer list is read up to here, never fails)."""


def entity_tag(body: bytes) -> str:
    """The strong tag of an answer's bytes: 32 hex digits of BLAKE2b, quoted."""
    return '"' + hashlib.blake2b(body, digest_size=16).hexdigest() + '"'


def none_match(header: bytes | None, tag: str) -> bool:
    """Whether If-None-Match `header` names `tag`, so the answer is 304 Not Modified.

    Weak comparison, as RFC 9110 prescribes for If-None-Match: `W/"x"` matches `"x"`; `*`
    matches any current answer. A malformed header matches nothing (the full answer is
    sent, which is always safe).
    """
    if not header:
        return False
    text = header.decode("latin-1")
    if text.strip() == "*":
        return True
    for candidate in text.split(",")[:MAX_TAGS]:
        candidate = candidate.strip()
        if candidate.startswith("W/"):
            candidate = candidate[2:]
        if candidate == tag:
            return True
    return False

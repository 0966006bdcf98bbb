"""API key material: `pmd_live_` + 22 base62 characters (>= 128 random bits) + 6 of checksum.

The checksum lets a malformed or mistyped key be refused without a store lookup; the key
itself is kept only as its SHA-256 hash.
"""

from __future__ import annotations

import hashlib
import re
import secrets

PREFIX = "pmd_live_"
_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_BODY = 22
_CHECK = 6
KEY_PATTERN = re.compile(rf"^{PREFIX}[0-9A-Za-z]{{{_BODY + _CHECK}}}$")


def _base62(number: int, width: int) -> str:
    chars = []
    for _ in range(width):
        number, digit = divmod(number, 62)
        chars.append(_ALPHABET[digit])
    return "".join(reversed(chars))


def _checksum(body: str) -> str:
    digest = hashlib.sha256(body.encode()).digest()
    return _base62(int.from_bytes(digest[:4], "big"), _CHECK)


def new_key() -> str:
    """A fresh random key; 62**22 > 2**130."""
    body = _base62(secrets.randbits(131), _BODY)
    return PREFIX + body + _checksum(body)


def well_formed(key: str) -> bool:
    """True when the key has the right shape and its checksum agrees."""
    if not KEY_PATTERN.match(key):
        return False
    body = key[len(PREFIX) : len(PREFIX) + _BODY]
    return secrets.compare_digest(key[-_CHECK:], _checksum(body))


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def display_prefix(key: str) -> str:
    """What lists and logs may show of a key: the prefix and four characters."""
    return key[: len(PREFIX) + 4]


def new_key_id() -> str:
    return "key_" + secrets.token_hex(6)

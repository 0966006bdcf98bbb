"""Key and token material. API keys: `pmd_live_` + 22 base62 characters (>= 128 random bits) + 6 of checksum.

The checksum lets a malformed or mistyped key be refused without a store lookup; the key
itself is kept only as its SHA-256 hash.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

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


def new_token() -> str:
    """A random secret for a cookie or a mailed link: 256 bits, URL-safe."""
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """How a session or link token is stored: its SHA-256, never the token itself."""
    return hashlib.sha256(token.encode()).hexdigest()


def sign(secret: str, *parts: str) -> str:
    """HMAC-SHA256 of the parts under `secret` (a form token tied to a session)."""
    message = "\x1f".join(parts).encode()
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


SEALED = "gcm."
"""What begins a value `seal` makes. A value without it is in the HMAC-SHA256 counter-mode
format a store may still hold: it is opened (`_unseal_hmac_ctr`), never written. No step
can seal such a value again: its key is a session's cookie token, which the store never
holds."""
_NONCE = 12


def _seal_key(token: str) -> bytes:
    """The AES-256 key of a token: HKDF-SHA256, never the token's SHA-256, which the store
    holds (`token_hash`)."""
    derive = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"propdata seal")
    return derive.derive(token.encode())


def seal(token: str, text: str) -> str:
    """Encrypt a short text under a token the store never holds (only its hash), so a value
    kept server-side until the token's next request cannot be read from the store alone.

    AES-256-GCM (`cryptography`) with a fresh 96-bit nonce, under a key derived from the
    token: `SEALED` + base64url(nonce + ciphertext + tag).
    """
    nonce = secrets.token_bytes(_NONCE)
    body = AESGCM(_seal_key(token)).encrypt(nonce, text.encode(), None)
    return SEALED + base64.urlsafe_b64encode(nonce + body).decode()


def unseal(token: str, sealed: str) -> str | None:
    """The text `seal` encrypted under this token, or None when it was not this token's."""
    if not sealed.startswith(SEALED):
        return _unseal_hmac_ctr(token, sealed)
    try:
        raw = base64.urlsafe_b64decode(sealed[len(SEALED) :].encode())
        data = AESGCM(_seal_key(token)).decrypt(raw[:_NONCE], raw[_NONCE:], None)
    except (ValueError, InvalidTag):  # not base64, too short, or not this token's
        return None
    return data.decode(errors="replace")


def _unseal_hmac_ctr(token: str, sealed: str) -> str | None:
    """Open a value sealed without the `SEALED` marker: HMAC-SHA256 in counter mode as the key
    stream, a 16-byte nonce and a 16-byte HMAC tag. Read only; nothing is sealed this way."""
    try:
        raw = base64.urlsafe_b64decode(sealed.encode())
    except ValueError:
        return None
    nonce, tag, body = raw[:16], raw[16:32], raw[32:]
    expected = hmac.new(token.encode(), b"tag" + nonce + body, hashlib.sha256).digest()[:16]
    if len(nonce) != 16 or not hmac.compare_digest(tag, expected):
        return None
    data = bytes(a ^ b for a, b in zip(body, _stream(token, nonce, len(body)), strict=True))
    return data.decode(errors="replace")


def _stream(token: str, nonce: bytes, size: int) -> bytes:
    blocks = []
    for counter in range((size + 31) // 32):
        message = b"stream" + nonce + counter.to_bytes(4, "big")
        blocks.append(hmac.new(token.encode(), message, hashlib.sha256).digest())
    return b"".join(blocks)[:size]

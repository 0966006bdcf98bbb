"""Passwords: 12 to 128 characters, not one of the 10,000 most common, Argon2id.

The common list holds few entries of 12 characters or more, and people reach 12 by adding
digits or symbols to a common one (`password1234`): such a password counts as common too.

Hashing takes tens of milliseconds and 64 MiB by design, so callers run it off the event loop
(`hash_password` and `verify_password` are coroutines that do).
"""

from __future__ import annotations

import asyncio
import functools
import string
from importlib import resources

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

MIN_LENGTH = 12
MAX_LENGTH = 128
_HASHER = PasswordHasher()  # argon2-cffi's defaults: Argon2id, RFC 9106's low-memory profile


@functools.cache
def _dummy() -> str:
    """A hash to verify against when the email has no account (made on first use: hashing
    at import cost every worker's start 0.14 s)."""
    return _HASHER.hash("a password nobody has: it evens out the time of an unknown email")


@functools.cache
def common_passwords() -> frozenset[str]:
    """The shipped list (accounts/data/common-passwords.txt), lower-cased."""
    text = resources.files("propdata.accounts").joinpath("data/common-passwords.txt").read_text()
    return frozenset(
        line.strip().lower() for line in text.splitlines() if line and not line.startswith("#")
    )


_PADDING = frozenset(string.digits + string.punctuation + " ")
_SHORTEST_WORD = 4
"""A common entry this short or longer, padded, is refused (shorter ones are syllables)."""


def is_common(lowered: str) -> bool:
    """Whether a lower-cased password is a common one, or one with digits, symbols or spaces
    added before or after it."""
    common = common_passwords()
    if lowered in common:
        return True
    for cut in range(_SHORTEST_WORD, len(lowered)):
        head, tail = lowered[:cut], lowered[cut:]
        if head in common and _PADDING.issuperset(tail):
            return True
        head, tail = lowered[:-cut], lowered[-cut:]
        if tail in common and _PADDING.issuperset(head):
            return True
    return False


def problem(password: str, email: str = "") -> str | None:
    """What is wrong with a new password, in words for the person, or None."""
    if len(password) < MIN_LENGTH:
        return f"Use at least {MIN_LENGTH} characters."
    if len(password) > MAX_LENGTH:
        return f"Use at most {MAX_LENGTH} characters."
    lowered = password.lower()
    if is_common(lowered):
        return "That password is one of the most common ones; choose another."
    if email and lowered in (email.lower(), email.lower().partition("@")[0]):
        return "Do not use your email address as your password."
    if len(set(password)) < 4:
        return "That password repeats too few characters; choose another."
    return None


async def hash_password(password: str) -> str:
    return await asyncio.to_thread(_HASHER.hash, password)


async def verify_password(stored: str | None, password: str) -> bool:
    """Whether `password` matches `stored`; with no stored hash (no such account) it takes
    as long as a real check, so the answer's timing does not tell accounts apart."""

    def check() -> bool:
        try:
            return _HASHER.verify(stored or _dummy(), password) and stored is not None
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False

    return await asyncio.to_thread(check)

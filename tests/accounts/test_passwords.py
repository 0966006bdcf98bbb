"""The password policy, Argon2id hashing, and the sealed one-time value of a session."""

from __future__ import annotations

import base64

from propdata.accounts import passwords
from propdata.kit import crypto


def test_policy() -> None:
    assert passwords.problem("correct horse battery staple") is None
    assert "12" in (passwords.problem("elevenchars") or "")
    assert "128" in (passwords.problem("x" * 129) or "")
    assert "common" in (passwords.problem("QWERTY123456") or "")  # case does not help
    assert "email" in (
        passwords.problem("ada.lovelace@example.com", "Ada.Lovelace@example.com") or ""
    )
    assert passwords.problem("aaaaaaaaaaaaaaaa") is not None
    assert len(passwords.common_passwords()) == 10_000


def test_a_common_password_with_digits_or_symbols_added_is_common() -> None:
    for weak in ("password1234", "qwertyuiop123", "iloveyou1234", "Sunshine2024!",
                 "1234password", "dragon!!!!!!!", "monkey123456"):  # fmt: skip
        assert "common" in (passwords.problem(weak) or ""), weak
    for fine in ("correct horse battery staple 42", "tangerine-lorry-mosaic", "Xq7!vR2#pL9m"):
        assert passwords.problem(fine) is None, fine


async def test_argon2id_hashes_and_verifies() -> None:
    stored = await passwords.hash_password("correct horse battery staple")
    assert stored.startswith("$argon2id$")
    assert await passwords.verify_password(stored, "correct horse battery staple")
    assert not await passwords.verify_password(stored, "correct horse battery stapler")
    assert not await passwords.verify_password(None, "anything at all, no account")
    assert not await passwords.verify_password("not a hash", "x")


def _flip_bit(sealed: str, position: int) -> str:
    """The sealed text with one bit of its decoded bytes flipped, re-encoded.

    Editing a character of the base64 text instead can leave the bytes as they were (the
    low bits of the last character before a `=` are padding that decoding drops).
    """
    raw = bytearray(base64.urlsafe_b64decode(sealed.removeprefix(crypto.SEALED)))
    raw[position] ^= 0x01
    return crypto.SEALED + base64.urlsafe_b64encode(bytes(raw)).decode()


def _truncated(sealed: str) -> str:
    raw = base64.urlsafe_b64decode(sealed.removeprefix(crypto.SEALED))
    return crypto.SEALED + base64.urlsafe_b64encode(raw[:-1]).decode()


def test_seal_opens_only_with_its_token() -> None:
    token = crypto.new_token()
    sealed = crypto.seal(token, "pmd_live_secret")
    assert "pmd_live" not in sealed
    assert crypto.unseal(token, sealed) == "pmd_live_secret"
    assert crypto.unseal(crypto.new_token(), sealed) is None
    for position in (0, 12, 26, -1):  # the nonce, the ciphertext's first and last, the tag
        assert crypto.unseal(token, _flip_bit(sealed, position)) is None, position
    assert crypto.unseal(token, _truncated(sealed)) is None
    assert crypto.unseal(token, "!!!") is None
    assert crypto.seal(token, "x") != crypto.seal(token, "x")  # a fresh nonce each time


def test_seal_is_aes_gcm_under_a_key_derived_from_the_token() -> None:
    """`cryptography`'s AES-256-GCM, its key derived from the token by HKDF (the store holds
    the token's SHA-256, so that cannot be the key)."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    token = crypto.new_token()
    sealed = crypto.seal(token, "pmd_live_secret")
    assert sealed.startswith(crypto.SEALED)
    raw = base64.urlsafe_b64decode(sealed.removeprefix(crypto.SEALED))
    key = HKDF(hashes.SHA256(), 32, None, b"propdata seal").derive(token.encode())
    assert AESGCM(key).decrypt(raw[:12], raw[12:], None) == b"pmd_live_secret"
    assert bytes.fromhex(crypto.token_hash(token)) != key


LEGACY_TOKEN = "92-ugjzefPktpD-TkD4gCawYQYTkFf_3P50xOVAL8TM"
LEGACY_SEALED = (
    "x7mh3tLfCMV5L_6ygXEHSANUzd-q3Qdw9JLPSPLVuVMdm2jkYeOb8xOTKkjaDgAbVip7CPntNeYdfpgVjVjbJ4zh"
    "MMzl8pRyTYTTfwqal4Vx9M-WBHqs"
)
"""A flash sealed in the HMAC-SHA256 counter-mode format, as a store may still hold one."""


def test_a_value_sealed_in_the_hmac_counter_mode_format_still_opens() -> None:
    expected = '{"notice":"Saved “Ames”: 12 records match it now."}'
    assert crypto.unseal(LEGACY_TOKEN, LEGACY_SEALED) == expected
    assert crypto.unseal(crypto.new_token(), LEGACY_SEALED) is None
    assert (
        crypto.unseal(LEGACY_TOKEN, _flip_bit(LEGACY_SEALED, 40).removeprefix(crypto.SEALED))
        is None
    )

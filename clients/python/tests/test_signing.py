"""`verify_webhook` and `sign_webhook`: the Standard Webhooks test vectors (the cases of the
specification's own libraries' tests, libraries/*/ in github.com/standard-webhooks/
standard-webhooks) and signatures made by the reference library, `standardwebhooks`."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import time

import pytest
import standardwebhooks

from propdata_client import (
    Event,
    WebhookVerificationError,
    sign_webhook,
    verify_webhook,
    webhook_headers,
)

# The specification's vector: this secret, id, timestamp and body sign to EXPECTED.
VECTOR_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
VECTOR_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
VECTOR_TIMESTAMP = 1614265330
VECTOR_PAYLOAD = '{"test": 2432232314}'
VECTOR_EXPECTED = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
FOREIGN = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="  # a well-formed wrong signature

EVENT = json.dumps({
    "id": "evt_01", "type": "webhook.test", "timestamp": "2026-11-25T12:00:00.000Z",
    "sequence": 7, "data": {},
}, separators=(",", ":"))  # fmt: skip


def signed(payload: str, secret: str = VECTOR_SECRET, *, at: int | None = None) -> dict[str, str]:
    """Headers signed by hand, as the specification describes (not by the code tested)."""
    when = int(time.time()) if at is None else at
    key = base64.b64decode(secret.removeprefix("whsec_"))
    mac = hmac.new(key, f"{VECTOR_ID}.{when}.{payload}".encode(), hashlib.sha256).digest()
    return {
        "webhook-id": VECTOR_ID,
        "webhook-timestamp": str(when),
        "webhook-signature": "v1," + base64.b64encode(mac).decode(),
    }


def test_the_specifications_vector_signs_as_expected() -> None:
    assert (
        sign_webhook(VECTOR_SECRET, VECTOR_ID, VECTOR_TIMESTAMP, VECTOR_PAYLOAD) == VECTOR_EXPECTED
    )
    unprefixed = VECTOR_SECRET.removeprefix("whsec_")
    assert sign_webhook(unprefixed, VECTOR_ID, VECTOR_TIMESTAMP, VECTOR_PAYLOAD) == VECTOR_EXPECTED


def test_a_valid_signature_verifies_and_gives_the_event() -> None:
    found = verify_webhook(EVENT.encode(), signed(EVENT), VECTOR_SECRET)
    assert isinstance(found, Event) and found.id == "evt_01" and found.sequence == 7
    verify_webhook(EVENT, signed(EVENT), VECTOR_SECRET.removeprefix("whsec_"))


@pytest.mark.parametrize("missing", ["webhook-id", "webhook-timestamp", "webhook-signature"])
def test_a_missing_header_fails(missing: str) -> None:
    headers = signed(EVENT)
    del headers[missing]
    with pytest.raises(WebhookVerificationError):
        verify_webhook(EVENT, headers, VECTOR_SECRET)


@pytest.mark.parametrize(
    "signature",
    [FOREIGN, "v1,", "v1,dawfeoifkpqwoekfpqoekf", "v1", "v2," + FOREIGN[3:], "", "garbage,,x"],
)
def test_a_wrong_partial_or_malformed_signature_fails(signature: str) -> None:
    headers = {**signed(EVENT), "webhook-signature": signature}
    with pytest.raises(WebhookVerificationError):
        verify_webhook(EVENT, headers, VECTOR_SECRET)


def test_a_partial_valid_signature_fails() -> None:
    headers = signed(EVENT)
    headers["webhook-signature"] = headers["webhook-signature"][:-4]
    with pytest.raises(WebhookVerificationError):
        verify_webhook(EVENT, headers, VECTOR_SECRET)


@pytest.mark.parametrize("offset", [-301, 301, -3600])
def test_a_timestamp_more_than_five_minutes_away_fails(offset: int) -> None:
    headers = signed(EVENT, at=int(time.time()) + offset)
    with pytest.raises(WebhookVerificationError, match="timestamp"):
        verify_webhook(EVENT, headers, VECTOR_SECRET)


def test_a_timestamp_that_is_not_a_number_fails() -> None:
    headers = {**signed(EVENT), "webhook-timestamp": "hello"}
    with pytest.raises(WebhookVerificationError):
        verify_webhook(EVENT, headers, VECTOR_SECRET)


def test_one_matching_signature_among_several_verifies() -> None:
    headers = signed(EVENT)
    headers["webhook-signature"] = " ".join(
        [FOREIGN, "v2," + FOREIGN[3:], headers["webhook-signature"], FOREIGN]
    )
    assert verify_webhook(EVENT, headers, VECTOR_SECRET).id == "evt_01"


def test_header_names_in_any_case() -> None:
    headers = {k.upper(): v for k, v in signed(EVENT).items()}
    assert verify_webhook(EVENT, headers, VECTOR_SECRET).id == "evt_01"


def test_a_changed_body_fails() -> None:
    headers = signed(EVENT)
    with pytest.raises(WebhookVerificationError):
        verify_webhook(EVENT.replace("7", "8"), headers, VECTOR_SECRET)
    with pytest.raises(WebhookVerificationError):  # re-encoded JSON is another body
        verify_webhook(json.dumps(json.loads(EVENT)), headers, VECTOR_SECRET)


def test_during_a_rotation_either_secret_verifies() -> None:
    new = "whsec_" + base64.b64encode(b"n" * 32).decode()
    both = signed(EVENT)
    both["webhook-signature"] += " " + signed(EVENT, new)["webhook-signature"]
    assert verify_webhook(EVENT, both, new).id == "evt_01"
    assert verify_webhook(EVENT, both, VECTOR_SECRET).id == "evt_01"
    only_new = signed(EVENT, new)
    assert verify_webhook(EVENT, only_new, [VECTOR_SECRET, new]).id == "evt_01"
    with pytest.raises(WebhookVerificationError):
        verify_webhook(EVENT, only_new, VECTOR_SECRET)


def test_unpadded_secrets_verify() -> None:
    for secret in ("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwBr"):
        padded = secret + "=" * (-len(secret) % 4)
        assert verify_webhook(EVENT, signed(EVENT, padded), "whsec_" + secret).id == "evt_01"


def test_signatures_of_the_reference_library_verify() -> None:
    secret = "whsec_" + base64.b64encode(bytes(range(32))).decode()
    when = int(time.time())
    reference = standardwebhooks.Webhook(secret)
    signature = reference.sign(VECTOR_ID, dt.datetime.fromtimestamp(when, dt.timezone.utc), EVENT)
    headers = {"webhook-id": VECTOR_ID, "webhook-timestamp": str(when),
               "webhook-signature": signature}  # fmt: skip
    assert verify_webhook(EVENT, headers, secret).id == "evt_01"
    # and the reference library verifies ours
    ours = webhook_headers(secret, VECTOR_ID, when, EVENT)
    assert ours["webhook-signature"] == signature
    assert reference.verify(EVENT, ours)["id"] == "evt_01"


def test_a_verified_body_that_is_not_an_event_says_so() -> None:
    with pytest.raises(WebhookVerificationError) as caught:
        verify_webhook(VECTOR_PAYLOAD, signed(VECTOR_PAYLOAD), VECTOR_SECRET)
    assert caught.value.code == "invalid_event"


@pytest.mark.parametrize("secret", ["", "   ", "whsec_", "whsec_***"])
def test_a_secret_that_is_not_one_is_a_value_error(secret: str) -> None:
    with pytest.raises(ValueError):
        verify_webhook(EVENT, signed(EVENT), secret)

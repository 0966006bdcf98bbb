"""Webhook signatures (Standard Webhooks): check a delivery, or sign one.

The API signs every delivery as Standard Webhooks does: `webhook-id`, `webhook-timestamp`
(unix seconds) and `webhook-signature` (`v1,` + base64 HMAC-SHA256 of
`{id}.{timestamp}.{body}`, keyed with the secret's base64-decoded bytes after `whsec_`;
several, space-separated, while a secret is being rotated). The checks are those of the
reference library, `standardwebhooks`, which this module wraps.

```python
from propdata_client import WebhookVerificationError, verify_webhook

try:
    event = verify_webhook(body, request.headers, secret)  # the body's bytes, unparsed
except WebhookVerificationError:
    ...  # answer 400, do nothing else
```
"""

from __future__ import annotations

import binascii
import datetime as dt
from collections.abc import Mapping, Sequence

import msgspec
import standardwebhooks

from propdata_client._core import EVENT_DECODER
from propdata_client.errors import WebhookVerificationError
from propdata_client.models import Event

__all__ = ["sign_webhook", "verify_webhook", "webhook_headers"]

TOLERANCE = dt.timedelta(minutes=5)
"""How far a delivery's `webhook-timestamp` may be from now (the reference library's)."""


def _webhook(secret: str) -> standardwebhooks.Webhook:
    if not isinstance(secret, str) or not secret.strip():
        raise ValueError("the webhook secret is empty")
    try:
        return standardwebhooks.Webhook(secret.strip())
    except Exception as exc:  # the library's EmptyWebhookSecretError, binascii.Error
        raise ValueError(f"not a webhook secret (whsec_ + base64): {exc}") from exc


def verify_webhook(
    payload: bytes | str, headers: Mapping[str, str], secret: str | Sequence[str]
) -> Event:
    """The event a webhook delivery carries, once its signature and timestamp check out.

    `payload` is the request body exactly as received (never parsed and re-encoded);
    `headers` any mapping of its headers (names in any case); `secret` the endpoint's
    `whsec_...` secret, or several (the old and the new one while you rotate it). Raises
    WebhookVerificationError when a header is missing, the timestamp is more than 5 minutes
    from now, or no signature matches; ValueError when `secret` is not a secret.
    """
    secrets = [secret] if isinstance(secret, str) else list(secret)
    if not secrets:
        raise ValueError("no webhook secret given")
    hooks = [_webhook(s) for s in secrets]
    data = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else payload
    flat = {str(k).lower(): str(v) for k, v in headers.items()}
    reason = "no signature matches"
    for hook in hooks:
        try:
            hook.verify(data, flat, json_parse=False)
        except standardwebhooks.WebhookVerificationError as exc:
            reason = str(exc) or reason
            continue
        except (ValueError, binascii.Error) as exc:  # a malformed signature header
            reason = f"malformed webhook-signature: {exc}"
            continue
        break
    else:
        raise WebhookVerificationError(f"The webhook does not verify: {reason}.")
    try:
        return EVENT_DECODER.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise WebhookVerificationError(
            f"The webhook verifies but its body is not an event: {exc}", code="invalid_event"
        ) from exc


def sign_webhook(secret: str, message_id: str, timestamp: int, payload: bytes | str) -> str:
    """The `webhook-signature` value of a body (`v1,...`), as the API makes it."""
    data = payload.decode() if isinstance(payload, bytes) else payload
    when = dt.datetime.fromtimestamp(timestamp, tz=dt.timezone.utc)
    return _webhook(secret).sign(msg_id=message_id, timestamp=when, data=data)


def webhook_headers(
    secret: str, message_id: str, timestamp: int, payload: bytes | str
) -> dict[str, str]:
    """The Standard Webhooks headers of a delivery (and its content type)."""
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign_webhook(secret, message_id, timestamp, payload),
        "content-type": "application/json",
    }

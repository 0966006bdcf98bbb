"""`propdata-client listen`: webhooks on a developer's machine without exposing a port.

It follows the account's event stream (`GET /v1/events/stream`) and POSTs each event to a
local URL as the API's webhook delivery would: the same body, the Standard Webhooks
headers, signed with a secret of its own that it prints at start (give it to the receiver
under test in place of the endpoint's secret).
"""

from __future__ import annotations

import base64
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import httpx

from propdata_client._sync import Client
from propdata_client.errors import APIConnectionError, PropdataError
from propdata_client.models import EventType, StreamedEvent
from propdata_client.signing import webhook_headers

FORWARD_TIMEOUT = 15.0
"""Seconds a local receiver has to answer, as the API's deliveries allow."""


def new_secret() -> str:
    """A signing secret as the API makes them: `whsec_` + base64 of 32 random bytes."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


@dataclass(frozen=True)
class Forwarded:
    """One event forwarded: the receiver's status (None when it could not be reached),
    what went wrong, and how long it took."""

    item: StreamedEvent
    status: int | None
    error: str | None
    milliseconds: int


def forward(http: httpx.Client, url: str, secret: str, item: StreamedEvent) -> Forwarded:
    """POST one event to `url`, signed with `secret`, as a webhook delivery."""
    started = time.monotonic()
    headers = webhook_headers(secret, item.event.id, int(time.time()), item.body)
    status: int | None = None
    error: str | None = None
    try:
        answer = http.post(url, content=item.body.encode(), headers=headers,
                           timeout=FORWARD_TIMEOUT, follow_redirects=False)  # fmt: skip
        status = answer.status_code
        if not 200 <= status < 300:
            error = "http_status"
    except httpx.TimeoutException:
        error = "timeout"
    except httpx.TransportError as exc:
        error = f"connection ({exc})"
    elapsed = int((time.monotonic() - started) * 1000)
    return Forwarded(item, status, error, elapsed)


def listen(
    client: Client,
    url: str,
    secret: str,
    *,
    since: str | None = None,
    types: Sequence[EventType] | str | None = None,
    search_id: str | None = None,
    count: int | None = None,
    report: Callable[[Forwarded], None] = lambda _: None,
    http: httpx.Client | None = None,
    on_open: Callable[[], None] | None = None,
    on_retry: Callable[[PropdataError | None, float], None] | None = None,
) -> int:
    """Forward the stream's events to `url` until `count` have been (None: for ever); the
    number forwarded. A receiver that fails is reported, not retried: the stream goes on.
    `on_open` and `on_retry` are the stream's (`client.events.stream`): each opening, and
    each wait before the next after the API could not be reached or ended the stream.
    """
    done = 0
    if count is not None and count <= 0:
        return done
    own = http is None
    transport = http if http is not None else httpx.Client()
    try:
        stream = client.events.stream(since, types=types, search_id=search_id,
                                      on_open=on_open, on_retry=on_retry)  # fmt: skip
        for item in stream:
            report(forward(transport, url, secret, item))
            done += 1
            if count is not None and done >= count:
                break
    finally:
        if own:
            transport.close()
    return done


def retry_said(base_url: str, error: PropdataError | None, wait: float) -> str:
    """What `propdata-client listen` says before it opens the stream again."""
    if error is None:
        what = "the API ended the event stream"
    elif isinstance(error, APIConnectionError):
        what = f"cannot reach the API at {base_url} ({error.message})"
    else:
        what = f"the API refused the event stream ({error.status}: {error.message})"
    return f"propdata-client listen: {what}; retrying in {wait:.1f} s"

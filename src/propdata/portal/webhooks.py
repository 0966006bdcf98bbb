"""The dashboard's webhooks: the account's endpoints with their last deliveries, a form that
adds one (its signing secret shown once), and each endpoint's test, enable, disable,
rotate-secret, delete and resend buttons.

What an endpoint may be (where deliveries may go, how many an account keeps) and what each
button does, `webhooks.service` decides; its refusals are shown on the page in words.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from litestar import Request, Response, post
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath

from propdata.accounts.schemas import ApiKey
from propdata.accounts.service import AccountService
from propdata.accounts.sessions import Flash
from propdata.api.dependencies import Injected
from propdata.config import Settings
from propdata.errors import InvalidField, NotFound
from propdata.events.schemas import EVENT_TYPES
from propdata.portal.pages import Action, Held, Managed, listed_route, managed_form
from propdata.webhooks.schemas import (
    DEFAULT_GRACE,
    MAX_GRACE,
    Delivery,
    Endpoint,
    EndpointChange,
    NewEndpoint,
)
from propdata.webhooks.service import WebhookService, endpoint_view

PAGE = "/dashboard/webhooks"
DELIVERIES_SHOWN = 20
"""Deliveries listed under each endpoint, newest first."""

WHY_DISABLED = {
    "gone": "Disabled because the receiver answered 410 Gone. Enable it again once it takes deliveries.",
    "failing": "Disabled because no delivery succeeded for 5 days. Fix the receiver, then enable it:"
    " the events kept meanwhile are delivered, oldest first.",
    "owner": "Disabled by you. Events are kept meanwhile (30 days) and delivered, oldest first,"
    " when you enable it.",
}
"""A disabled endpoint's `disabledReason`, in words."""
ERRORS = {
    "timeout": "no answer within 15 s",
    "connection": "could not connect",
    "tls": "TLS failed",
    "redirect": "answered a redirect (not followed)",
    "http_status": "answered an error",
    "blocked_address": "blocked address",
}
"""A delivery's `error`, in words."""
GRACES = [(0, "no time: at once"), (3_600, "1 hour"), (DEFAULT_GRACE, "1 day"),
          (MAX_GRACE, "7 days")]  # fmt: skip
"""The rotation form's choices of how long the old secret goes on signing."""


@dataclass(frozen=True, slots=True)
class Row:
    """An endpoint as the page shows it: why it is disabled, its last deliveries."""

    endpoint: Endpoint
    why: str
    deliveries: list[Delivery]


def _page(accounts: Injected[AccountService], webhooks: Injected[WebhookService]) -> Managed:
    """The account's endpoints (as many as its plan holds), each with its last deliveries,
    and the form that adds one; the secret of an endpoint just added or rotated, once."""

    async def held(key: ApiKey, offset: int, per_page: int, flash: Flash) -> Held:
        plan = await webhooks.plan_of(key)
        full = await webhooks.refusal(key)
        total, listed = await webhooks.page(key, per_page, offset)
        rows = []
        for hook in (endpoint_view(row) for row in listed):
            _, deliveries = await webhooks.deliveries(key, hook.id, DELIVERIES_SHOWN, 0)
            rows.append(Row(hook, WHY_DISABLED.get(hook.disabled_reason or "", ""), deliveries))
        shown = None  # the endpoint whose new secret this page shows once
        if flash.secret is not None and flash.secret_of is not None:
            with contextlib.suppress(NotFound):
                shown = await webhooks.get(key, flash.secret_of)
        secret = {"secret": flash.secret, "secret_url": shown.url} if shown else {}
        return Held(rows, total, plan.webhook_endpoints, plan.title, full, secret)

    context = {
        "networks": bool(webhooks.gate.allowed), "loopback": webhooks.gate.loopback,
        "event_types": EVENT_TYPES, "graces": GRACES, "errors": ERRORS, "secret": None,
        "secret_url": "",
    }  # fmt: skip
    return Managed(accounts, PAGE, "webhooks.html", rows="endpoints", kind="webhooks",
                   held=held, context=context)  # fmt: skip


webhooks_page = listed_route(PAGE, _page)


async def _on_page(
    request: Request[Any, Any, Any], settings: Settings, accounts: AccountService,
    webhooks: WebhookService, action: Action,
) -> Response[Any]:  # fmt: skip
    """A form of the page (`pages.managed_form`), its `eventTypes` checkboxes a list."""
    return await managed_form(request, settings, _page(accounts, webhooks), action,
                              repeated=("eventTypes",))  # fmt: skip


@post(PAGE, status_code=303)
async def create_webhook(request: Request[Any, Any, Any], settings: Injected[Settings],
                         accounts: Injected[AccountService],
                         webhooks: Injected[WebhookService]) -> Response[Any]:  # fmt: skip
    """Add an endpoint: `url`, `eventTypes` (repeated; none: all), `description`; its
    signing secret is shown once."""

    async def create(key: ApiKey, form: dict[str, Any]) -> Flash:
        description = str(form.get("description", "")).strip()
        wanted = NewEndpoint(
            url=str(form.get("url", "")).strip(), event_types=form["eventTypes"] or None,
            description=description or None,
        )  # fmt: skip
        made, secret = await webhooks.create(key, wanted)
        return Flash(secret=secret, secret_of=made.id, notice=(
            f"Added {made.url}. Send it a test event to see a delivery below."
        ))  # fmt: skip

    return await _on_page(request, settings, accounts, webhooks, create)


@dataclass(frozen=True, slots=True)
class Press:
    """A press of an endpoint's button: through the account's key, with the form sent."""

    webhooks: WebhookService
    key: ApiKey
    endpoint_id: str
    form: dict[str, Any]


async def _test(p: Press) -> Flash:
    """Send a `webhook.test` event to this endpoint alone."""
    await p.webhooks.test(p.key, p.endpoint_id)
    return Flash(
        notice="A test event is on its way: its delivery is listed below (reload to follow it)."
    )


async def _enable(p: Press) -> Flash:
    """Enable an endpoint: the events kept while it was disabled are delivered, oldest first."""
    hook = await p.webhooks.change(p.key, p.endpoint_id, EndpointChange(status="enabled"))
    return Flash(notice=f"Enabled {hook.url}.")


async def _disable(p: Press) -> Flash:
    """Disable an endpoint: nothing is delivered to it; its events are kept meanwhile."""
    hook = await p.webhooks.change(p.key, p.endpoint_id, EndpointChange(status="disabled"))
    return Flash(notice=f"Disabled {hook.url}. Its events are kept until you enable it.")


async def _rotate(p: Press) -> Flash:
    """A new signing secret, shown once; the old one goes on signing for `graceSeconds`."""
    grace = _grace(str(p.form.get("graceSeconds", "")))
    secret = await p.webhooks.rotate(p.key, p.endpoint_id, grace)
    words = next((w for s, w in GRACES if s == grace), f"{grace:,} seconds")
    more = ("Deliveries are signed with it alone from now." if grace == 0 else
            f"For {words}, deliveries carry signatures by both the old and the new secret.")  # fmt: skip
    return Flash(secret=secret, secret_of=p.endpoint_id, notice=f"A new signing secret. {more}")


def _grace(text: str) -> int:
    text = text.strip()
    if not text:
        return DEFAULT_GRACE
    if not (text.isascii() and text.isdigit()) or int(text) > MAX_GRACE:
        raise InvalidField(
            "graceSeconds",
            f"'graceSeconds' must be a whole number of seconds from 0 to {MAX_GRACE:,}.",
        )
    return int(text)


async def _delete(p: Press) -> Flash:
    """Delete an endpoint: nothing more is delivered to it."""
    hook = await p.webhooks.get(p.key, p.endpoint_id)
    await p.webhooks.delete(p.key, p.endpoint_id)
    return Flash(notice=f"Deleted {hook.url}.")


BUTTONS: dict[str, Callable[[Press], Awaitable[Flash]]] = {
    "test": _test, "enable": _enable, "disable": _disable, "rotate-secret": _rotate,
    "delete": _delete,
}  # fmt: skip
"""An endpoint's buttons, by the last part of the path each posts to."""


def _button(name: str, act: Callable[[Press], Awaitable[Flash]]) -> HTTPRouteHandler:
    """The route of the endpoint's button `name` (`POST {PAGE}/{endpoint_id}/name`): `act`."""

    async def pressed(request: Request[Any, Any, Any], endpoint_id: FromPath[str],
                      settings: Injected[Settings], accounts: Injected[AccountService],
                      webhooks: Injected[WebhookService]) -> Response[Any]:  # fmt: skip
        async def action(key: ApiKey, form: dict[str, Any]) -> Flash:
            return await act(Press(webhooks, key, endpoint_id, form))

        return await _on_page(request, settings, accounts, webhooks, action)

    pressed.__doc__ = act.__doc__
    return post(f"{PAGE}/{{endpoint_id:str}}/{name}", status_code=303)(pressed)


@post(PAGE + "/{endpoint_id:str}/deliveries/{event_id:str}/resend", status_code=303)
async def resend(request: Request[Any, Any, Any], endpoint_id: FromPath[str],
                 event_id: FromPath[str], settings: Injected[Settings],
                 accounts: Injected[AccountService], webhooks: Injected[WebhookService]) -> Response[Any]:  # fmt: skip
    """Deliver that event to that endpoint again (the same event id)."""

    async def again(key: ApiKey, form: dict[str, Any]) -> Flash:
        hook = await webhooks.get(key, endpoint_id)
        await webhooks.resend(key, endpoint_id, event_id)
        return Flash(notice=f"{event_id} is on its way to {hook.url} again.")

    return await _on_page(request, settings, accounts, webhooks, again)


ROUTES = [webhooks_page, create_webhook, *(_button(name, act) for name, act in BUTTONS.items()),
          resend]  # fmt: skip

"""The dashboard's webhooks: the account's endpoints with their last deliveries, a form that
adds one (its signing secret shown once), and each endpoint's test, enable, disable,
rotate-secret, delete and resend buttons.

What an endpoint may be (where deliveries may go, how many an account keeps) and what each
button does, `webhooks.service` decides; its refusals are shown on the page in words.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from litestar import Request, Response, get, post
from litestar.params import FromPath
from litestar.response import Template

from propdata.accounts.schemas import ApiKey
from propdata.accounts.service import AccountService
from propdata.accounts.sessions import Flash
from propdata.api.dependencies import Injected
from propdata.config import Settings
from propdata.errors import InvalidField, NotFound, ServiceError
from propdata.events.schemas import EVENT_TYPES
from propdata.portal.pages import (
    PER_PAGE,
    Action,
    Visit,
    acting_key,
    listed_page,
    managed_form,
    page,
    way_up,
)
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


NO_KEY = (
    "Your account holds no active API key, and webhooks are managed through one: create a key"
    " on the API keys page first."
)


@get(PAGE)
async def webhooks_page(request: Request[Any, Any, Any], settings: Injected[Settings],
                        accounts: Injected[AccountService],
                        webhooks: Injected[WebhookService]) -> Response[Any]:  # fmt: skip
    """The account's endpoints, each with its last deliveries, and the form that adds one."""

    async def render(v: Visit, offset: int) -> Template:
        return await _page(accounts, webhooks, v, offset=offset)

    return await listed_page(request, settings, accounts, render)


async def _page(
    accounts: AccountService, webhooks: WebhookService, v: Visit, status: int = 200,
    error: ServiceError | None = None, form: dict[str, Any] | None = None, offset: int = 0,
) -> Template:  # fmt: skip
    assert v.account is not None and v.session is not None
    flash = await accounts.take_flash(v.session)
    key = await acting_key(accounts, v.account)
    rows: list[Row] = []
    limit, total, plan_title, full = 0, 0, "", None
    if key is not None:
        plan = await webhooks.plan_of(key)
        limit, plan_title = plan.webhook_endpoints, plan.title
        full = await webhooks.refusal(key)
        total, held = await webhooks.page(key, PER_PAGE, offset)
        for hook in (endpoint_view(row) for row in held):
            _, deliveries = await webhooks.deliveries(key, hook.id, DELIVERIES_SHOWN, 0)
            why = WHY_DISABLED.get(hook.disabled_reason or "", "")
            rows.append(Row(hook, why, deliveries))
    form = form or {}
    shown = None  # the endpoint whose new secret this page shows once
    if key is not None and flash.secret is not None and flash.secret_of is not None:
        with contextlib.suppress(NotFound):
            shown = await webhooks.get(key, flash.secret_of)
    return await page(
        accounts, v, "webhooks.html", status=status, headers=error.headers if error else None,
        endpoints=rows, total=total, offset=offset, per_page=PER_PAGE, limit=limit,
        plan_title=plan_title, no_key=NO_KEY if key is None else "", full=full,
        way_up=way_up(full), networks=bool(webhooks.gate.allowed),
        loopback=webhooks.gate.loopback,
        event_types=EVENT_TYPES, chosen_types=form.get("eventTypes", []), graces=GRACES,
        errors=ERRORS, error=error, form=form, notice=flash.notice,
        secret=flash.secret if shown else None, secret_url=shown.url if shown else "",
    )  # fmt: skip


async def _on_page(
    request: Request[Any, Any, Any], settings: Settings, accounts: AccountService,
    webhooks: WebhookService, action: Action,
) -> Response[Any]:  # fmt: skip
    """A form of the page (`pages.managed_form`), its `eventTypes` checkboxes a list."""

    async def again(v: Visit, error: ServiceError, fields: dict[str, Any]) -> Template:
        return await _page(accounts, webhooks, v, error.status, error, fields)

    return await managed_form(request, settings, accounts, path=PAGE, no_key=NO_KEY,
                              action=action, again=again, repeated=("eventTypes",))  # fmt: skip


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


@post(PAGE + "/{endpoint_id:str}/test", status_code=303)
async def test_webhook(request: Request[Any, Any, Any], endpoint_id: FromPath[str],
                       settings: Injected[Settings], accounts: Injected[AccountService],
                       webhooks: Injected[WebhookService]) -> Response[Any]:  # fmt: skip
    """Send a `webhook.test` event to this endpoint alone."""

    async def test(key: ApiKey, form: dict[str, Any]) -> Flash:
        await webhooks.test(key, endpoint_id)
        return Flash(
            notice="A test event is on its way: its delivery is listed below (reload to follow it)."
        )

    return await _on_page(request, settings, accounts, webhooks, test)


@post(PAGE + "/{endpoint_id:str}/enable", status_code=303)
async def enable_webhook(request: Request[Any, Any, Any], endpoint_id: FromPath[str],
                         settings: Injected[Settings], accounts: Injected[AccountService],
                         webhooks: Injected[WebhookService]) -> Response[Any]:  # fmt: skip
    """Enable an endpoint: the events kept while it was disabled are delivered, oldest first."""

    async def enable(key: ApiKey, form: dict[str, Any]) -> Flash:
        hook = await webhooks.change(key, endpoint_id, EndpointChange(status="enabled"))
        return Flash(notice=f"Enabled {hook.url}.")

    return await _on_page(request, settings, accounts, webhooks, enable)


@post(PAGE + "/{endpoint_id:str}/disable", status_code=303)
async def disable_webhook(request: Request[Any, Any, Any], endpoint_id: FromPath[str],
                          settings: Injected[Settings], accounts: Injected[AccountService],
                          webhooks: Injected[WebhookService]) -> Response[Any]:  # fmt: skip
    """Disable an endpoint: nothing is delivered to it; its events are kept meanwhile."""

    async def disable(key: ApiKey, form: dict[str, Any]) -> Flash:
        hook = await webhooks.change(key, endpoint_id, EndpointChange(status="disabled"))
        return Flash(notice=f"Disabled {hook.url}. Its events are kept until you enable it.")

    return await _on_page(request, settings, accounts, webhooks, disable)


@post(PAGE + "/{endpoint_id:str}/rotate-secret", status_code=303)
async def rotate_secret(request: Request[Any, Any, Any], endpoint_id: FromPath[str],
                        settings: Injected[Settings], accounts: Injected[AccountService],
                        webhooks: Injected[WebhookService]) -> Response[Any]:  # fmt: skip
    """A new signing secret, shown once; the old one goes on signing for `graceSeconds`."""

    async def rotate(key: ApiKey, form: dict[str, Any]) -> Flash:
        grace = _grace(str(form.get("graceSeconds", "")))
        secret = await webhooks.rotate(key, endpoint_id, grace)
        words = next((w for s, w in GRACES if s == grace), f"{grace:,} seconds")
        more = ("Deliveries are signed with it alone from now." if grace == 0 else
                f"For {words}, deliveries carry signatures by both the old and the new secret.")  # fmt: skip
        return Flash(secret=secret, secret_of=endpoint_id, notice=f"A new signing secret. {more}")

    return await _on_page(request, settings, accounts, webhooks, rotate)


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


@post(PAGE + "/{endpoint_id:str}/delete", status_code=303)
async def delete_webhook(request: Request[Any, Any, Any], endpoint_id: FromPath[str],
                         settings: Injected[Settings], accounts: Injected[AccountService],
                         webhooks: Injected[WebhookService]) -> Response[Any]:  # fmt: skip
    """Delete an endpoint: nothing more is delivered to it."""

    async def delete(key: ApiKey, form: dict[str, Any]) -> Flash:
        hook = await webhooks.get(key, endpoint_id)
        await webhooks.delete(key, endpoint_id)
        return Flash(notice=f"Deleted {hook.url}.")

    return await _on_page(request, settings, accounts, webhooks, delete)


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


ROUTES = [webhooks_page, create_webhook, test_webhook, enable_webhook, disable_webhook,
          rotate_secret, delete_webhook, resend]  # fmt: skip

"""The dashboard's pages and forms: keys and their usage, plan changes, billing, revocation.

Every form here needs a signed-in session and that session's form token; a refused action
shows the dashboard again with the error.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from litestar import Request, Response, get, post
from litestar.params import FromPath
from litestar.response import Template

from propdata.accounts.billing import Line, month_bounds, statement_csv
from propdata.accounts.schemas import ApiKey
from propdata.accounts.service import AccountService
from propdata.accounts.sessions import Flash
from propdata.api.dependencies import Injected
from propdata.config import Settings
from propdata.errors import ServiceError
from propdata.kit.ratelimit.base import Limiter
from propdata.plans import BY_NAME
from propdata.portal import chart
from propdata.portal.pages import NO_STORE, Visit, checked, link_base, page, see_other, visit


@get("/dashboard")
async def dashboard(request: Request[Any, Any, Any], settings: Injected[Settings],
                    accounts: Injected[AccountService], limiter: Injected[Limiter]) -> Response[Any]:  # fmt: skip
    """The account's keys, their usage against their limits, the account's audit entries."""
    v = await visit(request, settings, accounts)
    if v.account is None or v.session is None:
        return see_other(v, "/login")
    return await _dashboard(request, accounts, limiter, v)


async def _dashboard(
    request: Request[Any, Any, Any], accounts: AccountService, limiter: Limiter, v: Visit,
    status: int = 200, error: ServiceError | None = None, headers: Mapping[str, str] | None = None,
) -> Template:  # fmt: skip
    assert v.account is not None and v.session is not None
    flash = await accounts.take_flash(v.session)
    keys = await accounts.keys_of(v.account)
    now = accounts.clock()
    rows = [await _key_row(key, limiter, now) for key in keys]
    audit = await accounts.audit_of(v.account, 20)
    base = str(request.base_url).rstrip("/")
    return await page(
        accounts, v, "dashboard.html", status=status, headers=headers, keys=rows, new_key=flash.key,
        notice=flash.notice,
        audit=audit, error=error, base_url=base,
        active=sum(1 for key in keys if key.status == "active"),
        no_new_key=await accounts.new_key_refusal(v.account),
    )  # fmt: skip


async def _key_row(key: ApiKey, limiter: Limiter, now: float) -> dict[str, Any]:
    hours = await limiter.hourly(key.window_id, now - 31 * 86_400)
    usage = await limiter.usage(key.window_id, key.per_minute, key.daily)
    if usage.day is not None:
        day = f"{usage.day.used:,} / {usage.day.limit:,}"
    else:  # no daily quota: the last 24 hours' counted requests, from the hourly counts
        start = (int(now) // 3600 - 23) * 3600
        day = f"{sum(n for h, n in hours.items() if h >= start):,} / unlimited"
    newest = max((h for h, n in hours.items() if n > 0), default=None)
    return {
        "key": key,
        "plan_name": BY_NAME[key.plan].title,
        "minute": f"{usage.minute.used:,} / {usage.minute.limit:,}",
        "day": day,
        "last_used": _last_used(newest, key.created_at, now),
        "chart": chart.usage_svg(key.id, hours, now),
        "totals": chart.totals(hours, now),
    }


def _last_used(hour: int | None, created_at: str, now: float) -> str:
    """When the key last made a counted request, in words ("never used" for a key younger
    than the 30 days of counts that has none)."""
    if hour is None:
        created = dt.datetime.fromisoformat(created_at.replace("Z", "+00:00")).timestamp()
        return "never used" if now - created < 30 * 86_400 else "not used in the last 30 days"
    if now - hour < 3600:
        return "last used within the last hour"
    ago = int((now - hour) // 3600)
    if ago < 48:
        return f"last used about {ago} hours ago"
    return "last used " + dt.datetime.fromtimestamp(hour, dt.UTC).strftime("%Y-%m-%d")


async def _signed_in(
    request: Request[Any, Any, Any], settings: Settings, accounts: AccountService
) -> tuple[Visit, dict[str, str], Response[Any] | None]:
    v, form = await checked(request, settings, accounts)
    if v.account is None:
        return v, form, see_other(v, "/login")
    return v, form, None


Action = Callable[[Visit, dict[str, str]], Awaitable[None]]


async def _on_dashboard(
    request: Request[Any, Any, Any], settings: Settings, accounts: AccountService,
    limiter: Limiter, action: Action,
) -> Response[Any]:  # fmt: skip
    """A dashboard form: signed in with the form's token, then `action`; back to the
    dashboard (303), or the dashboard again with the error when the action is refused."""
    v, form, away = await _signed_in(request, settings, accounts)
    if away is not None:
        return away
    try:
        await action(v, form)
    except ServiceError as exc:
        return await _dashboard(request, accounts, limiter, v, exc.status, exc, exc.headers)
    return see_other(v, "/dashboard")


@get("/dashboard/keys")
async def keys_page(request: Request[Any, Any, Any], settings: Injected[Settings],
                    accounts: Injected[AccountService]) -> Response[Any]:  # fmt: skip
    """The keys are listed on the dashboard: go there (a reload after creating a key lands here)."""
    v = await visit(request, settings, accounts)
    return see_other(v, "/dashboard#keys" if v.account else "/login")


@post("/dashboard/keys", status_code=303)
async def create_key(request: Request[Any, Any, Any], settings: Injected[Settings],
                     accounts: Injected[AccountService], limiter: Injected[Limiter]) -> Response[Any]:  # fmt: skip
    """A new Free key, shown once."""

    async def create(v: Visit, form: dict[str, str]) -> None:
        assert v.account is not None and v.session is not None
        _, secret = await accounts.create_key(v.account, form.get("name", ""), v.client)
        await accounts.set_flash(v.session, Flash(key=secret))

    return await _on_dashboard(request, settings, accounts, limiter, create)


@post("/dashboard/keys/{key_id:str}/plan", status_code=303)
async def change_plan(request: Request[Any, Any, Any], key_id: FromPath[str], settings: Injected[Settings],
                      accounts: Injected[AccountService], limiter: Injected[Limiter]) -> Response[Any]:  # fmt: skip
    """Move a key to Free, Developer or Pro: its next API request runs under the new limits."""

    async def change(v: Visit, form: dict[str, str]) -> None:
        assert v.account is not None and v.session is not None
        key = await accounts.change_plan(v.account, key_id, form.get("plan", ""), v.client)
        name = BY_NAME[key.plan].title
        daily = f"{key.daily:,} a day" if key.daily is not None else "no daily quota"
        await accounts.set_flash(v.session, Flash(notice=(
            f"{key.name} is on the {name} plan from its next request: {key.per_minute:,}"
            f" requests a minute, {daily}, pages up to {key.max_page_size}."
        )))  # fmt: skip

    return await _on_dashboard(request, settings, accounts, limiter, change)


@get("/dashboard/keys/{key_id:str}/plan")
async def plan_page(request: Request[Any, Any, Any], key_id: FromPath[str], settings: Injected[Settings],
                    accounts: Injected[AccountService]) -> Response[Any]:  # fmt: skip
    """Confirm a plan change: the plan's price and limits, and the button that applies it."""
    v = await visit(request, settings, accounts)
    if v.account is None:
        return see_other(v, "/login")
    choice = request.query_params.get("plan", "")
    key, offered = await accounts.plan_offer(v.account, key_id, choice)
    return await page(accounts, v, "plan.html", key=key, offer=offered,
                      current=BY_NAME[key.plan].title)  # fmt: skip


@post("/dashboard/keys/{key_id:str}/revoke", status_code=303)
async def revoke_key(request: Request[Any, Any, Any], key_id: FromPath[str], settings: Injected[Settings],
                     accounts: Injected[AccountService], limiter: Injected[Limiter]) -> Response[Any]:  # fmt: skip
    """Revoke a key at once."""

    async def revoke(v: Visit, form: dict[str, str]) -> None:
        assert v.account is not None
        await accounts.revoke(v.account, key_id, v.client)

    return await _on_dashboard(request, settings, accounts, limiter, revoke)


@get("/dashboard/billing")
async def billing_page(request: Request[Any, Any, Any], settings: Injected[Settings],
                       accounts: Injected[AccountService]) -> Response[Any]:  # fmt: skip
    """Each key's plan days this month and last, and what they cost."""
    return await _statement(request, settings, accounts, _statement_page)


@get("/dashboard/billing.csv")
async def billing_csv(request: Request[Any, Any, Any], settings: Injected[Settings],
                      accounts: Injected[AccountService]) -> Response[Any]:  # fmt: skip
    """The statement as CSV."""
    return await _statement(request, settings, accounts, _statement_csv)


Statement = Callable[[AccountService, Visit, list[Line]], Awaitable[Response[Any]]]
"""The billing statement's lines answered in a form (a page, CSV)."""


async def _statement(
    request: Request[Any, Any, Any], settings: Settings, accounts: AccountService,
    answer: Statement,
) -> Response[Any]:  # fmt: skip
    """The signed-in account's billing statement, as `answer` gives it."""
    v = await visit(request, settings, accounts)
    if v.account is None:
        return see_other(v, "/login")
    return await answer(accounts, v, await accounts.billing(v.account))


async def _statement_page(accounts: AccountService, v: Visit, lines: list[Line]) -> Response[Any]:
    months = sorted({line.month for line in lines} | {_month(accounts.clock(), 0),
                     _month(accounts.clock(), 1)}, reverse=True)  # fmt: skip
    totals = {m: sum(line.cost_usd or 0 for line in lines if line.month == m) for m in months}
    custom = {m for m in months if any(line.cost_usd is None for line in lines if line.month == m)}
    return await page(accounts, v, "billing.html", lines=lines, months=months, totals=totals,
                      custom=custom)  # fmt: skip


def _month(now: float, back: int) -> str:
    return month_bounds(now, back)[0]


async def _statement_csv(_: AccountService, v: Visit, lines: list[Line]) -> Response[Any]:
    return Response(statement_csv(lines), media_type="text/csv; charset=utf-8", headers={
        **NO_STORE, "Content-Disposition": 'attachment; filename="propdata-billing.csv"'})  # fmt: skip


@post("/dashboard/verify", status_code=303)
async def resend_verification(request: Request[Any, Any, Any], settings: Injected[Settings],
                              accounts: Injected[AccountService], limiter: Injected[Limiter]) -> Response[Any]:  # fmt: skip
    """Mail the confirmation link again."""

    async def resend(v: Visit, form: dict[str, str]) -> None:
        assert v.account is not None
        await accounts.send_verification(v.account, link_base(request, settings))

    return await _on_dashboard(request, settings, accounts, limiter, resend)


ROUTES = [dashboard, keys_page, billing_page, billing_csv, create_key, change_plan, plan_page,
          revoke_key, resend_verification]  # fmt: skip

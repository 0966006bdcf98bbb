"""The developer portal's pages and forms (portal.md): sign-up, log-in, dashboard, admin.

Server-rendered (Jinja2 through Litestar); every form works without JavaScript. Outside /v1:
no API key, never metered. Each POST carries `csrf_token`, tied to the session itself (or,
with no session, to the browser's form cookie); a POST without a valid one, or with a token of
another session or of before sign-in, gets 403 and changes nothing. What may be done is decided by `accounts.service.AccountService`; this module parses,
answers and renders.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from litestar import Request, Response, Router, get, post
from litestar.background_tasks import BackgroundTask
from litestar.datastructures import Cookie
from litestar.enums import RequestEncodingType
from litestar.exceptions import HTTPException, NotFoundException
from litestar.params import FromPath
from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.response import Redirect, Template
from litestar.template.config import TemplateConfig

from propdata.accounts.keys import CustomLimits
from propdata.accounts.schemas import Account, ApiKey
from propdata.accounts.service import AccountService, Flash
from propdata.api import clients
from propdata.api.dependencies import Injected
from propdata.config import Settings
from propdata.errors import Forbidden, InvalidField, NotFound, ServiceError
from propdata.kit import crypto
from propdata.kit.db import StoreUnavailable
from propdata.kit.ratelimit.base import Limiter
from propdata.kit.requests import request_id
from propdata.plans import BY_NAME
from propdata.portal import chart

log = logging.getLogger("propdata.portal")
TEMPLATES = Path(str(resources.files("propdata.portal").joinpath("templates")))

SESSION_COOKIE = "pd_session"
FORM_COOKIE = "pd_form"
VISIT_STATE = "propdata.portal.visit"
NO_STORE = {"Cache-Control": "no-store"}
_URL_ENCODED = RequestEncodingType.URL_ENCODED.value
_MULTIPART = RequestEncodingType.MULTI_PART.value


@dataclass(slots=True)
class Visit:
    """Who is asking: the signed-in account (if any), the cookies that bind form tokens."""

    account: Account | None
    session: str | None
    form_cookie: str
    new_form_cookie: bool
    client: str
    secure: bool
    form_token: str = ""
    """The token this visitor's forms carry (bound to the session, else to the form cookie)."""


def client_address(request: Request[Any, Any, Any], settings: Settings) -> str:
    """The client of a request, as `api.clients.client_address` finds it."""
    return clients.client_address(request.scope, settings.proxies)


def link_base(request: Request[Any, Any, Any], settings: Settings) -> str:
    """Where mailed links point: PROPDATA_PUBLIC_URL, else the socket the server listens on.
    Never the Host header: a client chooses it, and a reset link must not lead elsewhere."""
    if settings.public_url:
        return settings.public_url.rstrip("/")
    server = request.scope.get("server") or ("127.0.0.1", 8000)
    host, port = server[0], server[1]
    if ":" in str(host):
        host = f"[{host}]"
    return f"{request.scope.get('scheme', 'http')}://{host}:{port}"


async def visit(
    request: Request[Any, Any, Any], settings: Settings, accounts: AccountService
) -> Visit:
    token = request.cookies.get(SESSION_COOKIE)
    account = await accounts.session(token)
    form_cookie = request.cookies.get(FORM_COOKIE) or ""
    new = not (16 <= len(form_cookie) <= 128)
    if new:
        form_cookie = crypto.new_token()
    session = token if account else None
    v = Visit(
        account=account, session=session, form_cookie=form_cookie,
        new_form_cookie=new, client=client_address(request, settings),
        secure=(settings.public_url or "").startswith("https://"),
        form_token=await accounts.form_token(session or form_cookie),
    )  # fmt: skip
    # An error page rendered for this request shows who is signed in (exception handlers
    # cannot look the session up themselves: they are not coroutines).
    request.state[VISIT_STATE] = v
    return v


def _cookies(v: Visit, session: str | None = None, end_session: bool = False) -> list[Cookie]:
    cookies = []
    if v.new_form_cookie:
        cookies.append(Cookie(key=FORM_COOKIE, value=v.form_cookie, httponly=True,
                              samesite="lax", secure=v.secure, path="/"))  # fmt: skip
    if session is not None:
        cookies.append(Cookie(key=SESSION_COOKIE, value=session, httponly=True, samesite="lax",
                              secure=v.secure, path="/", max_age=14 * 86_400))  # fmt: skip
    elif end_session:
        cookies.append(Cookie(key=SESSION_COOKIE, value="", httponly=True, samesite="lax",
                              secure=v.secure, path="/", max_age=0))  # fmt: skip
    return cookies


async def page(
    accounts: AccountService, v: Visit, name: str, status: int = 200,
    headers: Mapping[str, str] | None = None, **context: Any,
) -> Template:  # fmt: skip
    """A page, with what every page needs: the visitor, a form token, the cookies."""
    return Template(
        template_name=name,
        context={"account": v.account, "csrf_token": v.form_token, "plans": BY_NAME, **context},
        status_code=status, headers={**NO_STORE, **(headers or {})}, cookies=_cookies(v),
    )  # fmt: skip


def _see_other(v: Visit, path: str, session: str | None = None, end: bool = False) -> Redirect:
    return Redirect(path=path, status_code=303, cookies=_cookies(v, session, end), headers=NO_STORE)


async def _form(request: Request[Any, Any, Any]) -> dict[str, str]:
    """The form's text fields (at most 64 KiB of body: the router's limit)."""
    content_type = request.headers.get("content-type", "")
    if not content_type.startswith((_URL_ENCODED, _MULTIPART)):
        raise InvalidField("form", "Send the form as application/x-www-form-urlencoded.")
    data = await request.form()
    return {name: value for name, value in data.items() if isinstance(value, str)}


async def _checked(
    request: Request[Any, Any, Any], settings: Settings, accounts: AccountService
) -> tuple[Visit, dict[str, str]]:
    """The visitor and the form, once the form token is the visitor's own; else 403."""
    v = await visit(request, settings, accounts)
    form = await _form(request)
    # Signed in, only the session's own token will do: a form cookie (which another site
    # can plant) binds the forms of sign-in and sign-up alone.
    bound = v.session or ("" if v.new_form_cookie else v.form_cookie)
    if not await accounts.form_token_ok(form.get("csrf_token", ""), bound):
        raise Forbidden(
            "This form has expired or did not come from this site; reload the page and send it again."
        )
    return v, form


# --------------------------------------------------------------------------- public pages
@get("/", name="home")
async def home(request: Request[Any, Any, Any], settings: Injected[Settings],
               accounts: Injected[AccountService]) -> Template:  # fmt: skip
    """What the service offers, the plans, where to start."""
    v = await visit(request, settings, accounts)
    return await page(accounts, v, "home.html", request_base=str(request.base_url).rstrip("/"))


@get("/signup")
async def signup_page(request: Request[Any, Any, Any], settings: Injected[Settings],
                      accounts: Injected[AccountService]) -> Template:  # fmt: skip
    """The sign-up form."""
    v = await visit(request, settings, accounts)
    if v.account:
        return await page(accounts, v, "notice.html", title="You are signed in",
                          message="You already have an account.", link="/dashboard",
                          link_text="Go to your dashboard")  # fmt: skip
    return await page(accounts, v, "signup.html", email="")


@post("/signup", status_code=303)
async def signup(request: Request[Any, Any, Any], settings: Injected[Settings],
                 accounts: Injected[AccountService]) -> Response[Any]:  # fmt: skip
    """Create an account and its Free key; show the key once on the dashboard."""
    v, form = await _checked(request, settings, accounts)
    email = form.get("email", "")
    try:
        signed, secret = await accounts.sign_up(
            email, form.get("password", ""), v.client, link_base(request, settings)
        )
    except ServiceError as exc:
        return await _form_failed(accounts, v, "signup.html", exc, email=email)
    await accounts.set_flash(signed.token, Flash(key=secret))
    return _see_other(v, "/dashboard", session=signed.token)


@get("/login")
async def login_page(request: Request[Any, Any, Any], settings: Injected[Settings],
                     accounts: Injected[AccountService]) -> Template:  # fmt: skip
    """The log-in form."""
    v = await visit(request, settings, accounts)
    return await page(accounts, v, "login.html", email="")


@post("/login", status_code=303)
async def login(request: Request[Any, Any, Any], settings: Injected[Settings],
                accounts: Injected[AccountService]) -> Response[Any]:  # fmt: skip
    """Sign in; a new session token each time (never one a visitor brought)."""
    v, form = await _checked(request, settings, accounts)
    email = form.get("email", "")
    try:
        signed = await accounts.log_in(email, form.get("password", ""), v.client)
    except ServiceError as exc:
        return await _form_failed(accounts, v, "login.html", exc, email=email)
    if v.session:
        await accounts.log_out(v.session)
    return _see_other(v, "/dashboard", session=signed.token)


@post("/logout", status_code=303)
async def logout(request: Request[Any, Any, Any], settings: Injected[Settings],
                 accounts: Injected[AccountService]) -> Response[Any]:  # fmt: skip
    """End the session."""
    v, _ = await _checked(request, settings, accounts)
    if v.session:
        await accounts.log_out(v.session)
    return _see_other(v, "/", end=True)


@get("/forgot")
async def forgot_page(request: Request[Any, Any, Any], settings: Injected[Settings],
                      accounts: Injected[AccountService]) -> Template:  # fmt: skip
    """Ask for a password reset link."""
    v = await visit(request, settings, accounts)
    return await page(accounts, v, "forgot.html", email="")


@post("/forgot")
async def forgot(request: Request[Any, Any, Any], settings: Injected[Settings],
                 accounts: Injected[AccountService]) -> Template:  # fmt: skip
    """Mail a reset link if the account exists; the same answer whether or not it does."""
    v, form = await _checked(request, settings, accounts)
    email = form.get("email", "")
    try:
        address = await accounts.forgot(email, v.client)
    except ServiceError as exc:
        return await _form_failed(accounts, v, "forgot.html", exc, email=email)
    notice = await page(accounts, v, "notice.html", title="Check your mail",
                        message="If an account has that address, we have sent it a link to choose"
                        " a new password. The link works for one hour.")  # fmt: skip
    # After the answer is sent: its time must not tell whether the address has an account.
    notice.background = BackgroundTask(
        _quietly, accounts.mail_reset, address, link_base(request, settings)
    )
    return notice


async def _quietly(job: Callable[..., Awaitable[None]], *args: Any) -> None:
    """Run work the answer has gone without: its failure is logged, never raised."""
    try:
        await job(*args)
    except Exception:
        log.exception("portal: background work %s failed", getattr(job, "__name__", job))


@get("/reset/{token:str}")
async def reset_page(request: Request[Any, Any, Any], token: FromPath[str], settings: Injected[Settings],
                     accounts: Injected[AccountService]) -> Template:  # fmt: skip
    """Choose a new password from a mailed link."""
    v = await visit(request, settings, accounts)
    if not await accounts.reset_link_live(token):
        return await _dead_link(accounts, v)
    return await page(accounts, v, "reset.html", token=token)


@post("/reset/{token:str}", status_code=303)
async def reset(request: Request[Any, Any, Any], token: FromPath[str], settings: Injected[Settings],
                accounts: Injected[AccountService]) -> Response[Any]:  # fmt: skip
    """Set the new password; every other session of the account ends."""
    v, form = await _checked(request, settings, accounts)
    try:
        signed = await accounts.reset(token, form.get("password", ""), v.client)
    except InvalidField as exc:
        if exc.parameter == "token":
            return await _dead_link(accounts, v)
        return await _form_failed(accounts, v, "reset.html", exc, token=token)
    return _see_other(v, "/dashboard", session=signed.token)


async def _dead_link(accounts: AccountService, v: Visit) -> Template:
    return await page(accounts, v, "notice.html", status=400, title="This link no longer works",
                      message="The link has expired or was used already. Ask for a new one.",
                      link="/forgot", link_text="Ask for a new reset link")  # fmt: skip


@get("/verify/{token:str}")
async def verify(request: Request[Any, Any, Any], token: FromPath[str], settings: Injected[Settings],
                 accounts: Injected[AccountService]) -> Template:  # fmt: skip
    """Confirm the email address from the mailed link."""
    v = await visit(request, settings, accounts)
    account = await accounts.verify(token)
    if account is None:
        return await page(accounts, v, "notice.html", status=400, title="This link no longer works",
                          message="The confirmation link has expired or was used already. Sign in"
                          " and ask for a new one from your dashboard.", link="/dashboard",
                          link_text="Go to your dashboard")  # fmt: skip
    if v.account and v.account.id == account.id:
        v.account = account
    return await page(accounts, v, "notice.html", title="Email address confirmed",
                      message=f"{account.email} is confirmed. You can now choose the Developer"
                      " and Pro plans.", link="/dashboard", link_text="Go to your dashboard")  # fmt: skip


# --------------------------------------------------------------------------- the dashboard
@get("/dashboard")
async def dashboard(request: Request[Any, Any, Any], settings: Injected[Settings],
                    accounts: Injected[AccountService], limiter: Injected[Limiter]) -> Response[Any]:  # fmt: skip
    """The account's keys, their usage against their limits, the account's audit entries."""
    v = await visit(request, settings, accounts)
    if v.account is None or v.session is None:
        return _see_other(v, "/login")
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
    v, form = await _checked(request, settings, accounts)
    if v.account is None:
        return v, form, _see_other(v, "/login")
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
    return _see_other(v, "/dashboard")


@get("/dashboard/keys")
async def keys_page(request: Request[Any, Any, Any], settings: Injected[Settings],
                    accounts: Injected[AccountService]) -> Response[Any]:  # fmt: skip
    """The keys are listed on the dashboard: go there (a reload after creating a key lands here)."""
    v = await visit(request, settings, accounts)
    return _see_other(v, "/dashboard#keys" if v.account else "/login")


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
        return _see_other(v, "/login")
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
    v = await visit(request, settings, accounts)
    if v.account is None:
        return _see_other(v, "/login")
    lines = await accounts.billing(v.account)
    months = sorted({line.month for line in lines} | {_month(accounts.clock(), 0),
                     _month(accounts.clock(), 1)}, reverse=True)  # fmt: skip
    totals = {m: sum(line.cost_usd or 0 for line in lines if line.month == m) for m in months}
    custom = {m for m in months if any(line.cost_usd is None for line in lines if line.month == m)}
    return await page(accounts, v, "billing.html", lines=lines, months=months, totals=totals,
                      custom=custom)  # fmt: skip


def _month(now: float, back: int) -> str:
    from propdata.accounts.billing import month_bounds

    return month_bounds(now, back)[0]


@get("/dashboard/billing.csv")
async def billing_csv(request: Request[Any, Any, Any], settings: Injected[Settings],
                      accounts: Injected[AccountService]) -> Response[Any]:  # fmt: skip
    """The statement as CSV."""
    v = await visit(request, settings, accounts)
    if v.account is None:
        return _see_other(v, "/login")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["keyId", "name", "month", "plan", "days", "priceUsdPerMonth", "costUsd"])
    for line in await accounts.billing(v.account):
        writer.writerow([
            line.key_id, line.key_name, line.month, line.plan, f"{line.days:.3f}",
            "" if line.price_usd is None else line.price_usd,
            "" if line.cost_usd is None else f"{line.cost_usd:.2f}",
        ])  # fmt: skip
    return Response(out.getvalue(), media_type="text/csv; charset=utf-8", headers={
        **NO_STORE, "Content-Disposition": 'attachment; filename="propdata-billing.csv"'})  # fmt: skip


@post("/dashboard/verify", status_code=303)
async def resend_verification(request: Request[Any, Any, Any], settings: Injected[Settings],
                              accounts: Injected[AccountService], limiter: Injected[Limiter]) -> Response[Any]:  # fmt: skip
    """Mail the confirmation link again."""

    async def resend(v: Visit, form: dict[str, str]) -> None:
        assert v.account is not None
        await accounts.send_verification(v.account, link_base(request, settings))

    return await _on_dashboard(request, settings, accounts, limiter, resend)


# --------------------------------------------------------------------------- operators
async def _operator(request: Request[Any, Any, Any], settings: Settings,
                    accounts: AccountService, form: bool) -> tuple[Visit, dict[str, str]]:  # fmt: skip
    if form:
        v, fields = await _checked(request, settings, accounts)
    else:
        v, fields = await visit(request, settings, accounts), {}
    if v.account is None:
        raise Forbidden(
            "This page is for the service's operators: log in with an operator's account."
        )
    if not v.account.is_admin:
        raise Forbidden("This page is for the service's operators only; your account is not one.")
    return v, fields


@get("/admin")
async def admin(request: Request[Any, Any, Any], settings: Injected[Settings],
                accounts: Injected[AccountService]) -> Template:  # fmt: skip
    """Every account with its keys, and the audit log (operators only)."""
    v, _ = await _operator(request, settings, accounts, form=False)
    return await _admin(accounts, v)


async def _admin(accounts: AccountService, v: Visit, status: int = 200,
                 error: ServiceError | None = None, form: dict[str, str] | None = None) -> Template:  # fmt: skip
    return await page(
        accounts, v, "admin.html", status=status, error=error, form=form or {},
        people=await accounts.all_accounts(), loose=await accounts.unattached_keys(),
        audit=await accounts.audit_of(None, 100),
    )  # fmt: skip


@post("/admin/keys/{key_id:str}/plan", status_code=303)
async def admin_plan(request: Request[Any, Any, Any], key_id: FromPath[str], settings: Injected[Settings],
                     accounts: Injected[AccountService]) -> Response[Any]:  # fmt: skip
    """Any plan for any key; Enterprise with its own limits. Takes effect on the next request."""
    v, form = await _operator(request, settings, accounts, form=True)
    assert v.account is not None
    try:
        limits = _custom_limits(form)
        await accounts.operator_plan(v.account, key_id, form.get("plan", ""), limits, v.client)
    except ServiceError as exc:
        return await _admin(accounts, v, exc.status, exc, {**form, "key_id": key_id})
    return _see_other(v, "/admin")


def _custom_limits(form: dict[str, str]) -> CustomLimits:
    values: dict[str, int | None] = {}
    for field, name in (("perMinute", "per_minute"), ("daily", "daily"),
                        ("defaultPageSize", "default_page_size"), ("maxPageSize", "max_page_size")):  # fmt: skip
        raw = form.get(field, "").strip()
        if not raw:
            values[name] = None
            continue
        if not (raw.isascii() and raw.isdigit()) or len(raw) > 12 or int(raw) < 1:
            raise InvalidField(field, f"{field} must be a whole number of at least 1, or empty.")
        values[name] = int(raw)
    limits = CustomLimits(**values)
    if (limits.default_page_size and limits.max_page_size
            and limits.default_page_size > limits.max_page_size):  # fmt: skip
        raise InvalidField("defaultPageSize", "defaultPageSize must not exceed maxPageSize.")
    return limits


@post("/admin/accounts/disable", status_code=303)
async def admin_disable(request: Request[Any, Any, Any], settings: Injected[Settings],
                        accounts: Injected[AccountService]) -> Response[Any]:  # fmt: skip
    """Disable an account: its keys get 401 revoked_api_key at once, its sessions end."""
    v, form = await _operator(request, settings, accounts, form=True)
    assert v.account is not None
    try:
        await accounts.disable(v.account.email, form.get("email", ""), v.client)
    except ServiceError as exc:
        return await _admin(accounts, v, exc.status, exc, form)
    return _see_other(v, "/admin")


# --------------------------------------------------------------------------- errors as pages
async def _form_failed(accounts: AccountService, v: Visit, template: str, exc: ServiceError,
                       **kept: Any) -> Template:  # fmt: skip
    """The form again, with what the person typed (never the password) and the message."""
    return await page(
        accounts, v, template, status=exc.status, headers=exc.headers, error=exc, **kept
    )


def _error_page(request: Request[Any, Any, Any], status: int, title: str, message: str,
                headers: Mapping[str, str] | None = None) -> Template:  # fmt: skip
    """An error as a page, with the way forward for who is asking: a signed-in person is
    sent to the dashboard, never to log in."""
    v: Visit | None = request.state.get(VISIT_STATE)
    account = v.account if v else None
    if account is not None:
        link, link_text = "/dashboard", "Go to your dashboard"
    elif status in (401, 403) and v is not None:
        link, link_text = "/login", "Log in"
    else:
        link, link_text = "/", "Go to the home page"
    return Template(
        template_name="notice.html", status_code=status,
        headers={**NO_STORE, **(headers or {})},
        context={"account": account, "csrf_token": v.form_token if v else "",
                 "visitor_unknown": v is None, "plans": BY_NAME, "title": title,
                 "message": message, "request_id": request_id(request.scope), "link": link,
                 "link_text": link_text},
    )  # fmt: skip


def _service_error(request: Request[Any, Any, Any], exc: ServiceError) -> Template:
    titles = {403: "Not allowed", 404: "Not found", 429: "Too many attempts"}
    return _error_page(request, exc.status, titles.get(exc.status, "That did not work"),
                       exc.message, exc.headers)  # fmt: skip


def _http_error(request: Request[Any, Any, Any], exc: HTTPException) -> Template:
    if isinstance(exc, NotFoundException):
        return _error_page(request, 404, "Not found", "There is no page at this address.")
    status = exc.status_code if 400 <= exc.status_code < 600 else 400
    headers = {"Allow": "GET, HEAD, POST"} if status == 405 else None
    message = "Use the page's own form." if status == 405 else str(exc.detail)
    return _error_page(request, status, "That did not work", message, headers)


_NOT_PAGES = ("/v1/", "/static/", "/openapi.json", "/health", "/docs")


def wants_page(request: Request[Any, Any, Any]) -> bool:
    """Whether an error should be a page: a browser (Accept: text/html) outside the API."""
    path = request.url.path
    if path == "/v1" or path.startswith(_NOT_PAGES):
        return False
    return "text/html" in request.headers.get("accept", "")


def error_page(request: Request[Any, Any, Any], exc: HTTPException) -> Template:
    """A path no route takes, or a method a page does not take, as a page for a browser."""
    return _http_error(request, exc)


def _unavailable(request: Request[Any, Any, Any], exc: StoreUnavailable) -> Template:
    log.error("portal: store unavailable (request %s): %s", request_id(request.scope), exc)
    return _error_page(request, 503, "Back shortly",
                       "A store behind the service is unreachable; try again in a few seconds.",
                       {"Retry-After": "5"})  # fmt: skip


def _internal(request: Request[Any, Any, Any], exc: Exception) -> Template:
    rid = request_id(request.scope)
    log.exception("portal: unhandled error in request %s", rid, exc_info=exc)
    return _error_page(request, 500, "Something broke on our side",
                       f"Quote request id {rid} if you write to us about it.")  # fmt: skip


def templates() -> TemplateConfig[JinjaTemplateEngine]:
    """Jinja2 over the package's templates, autoescaped."""
    return TemplateConfig(directory=TEMPLATES, engine=JinjaTemplateEngine)


def router() -> Router:
    """The portal's pages: outside /v1, never metered, no API key."""
    return Router(
        path="/",
        route_handlers=[
            home, signup_page, signup, login_page, login, logout, forgot_page, forgot,
            reset_page, reset, verify, dashboard, keys_page, billing_page, billing_csv, create_key, change_plan, plan_page, revoke_key,
            resend_verification, admin, admin_plan, admin_disable,
        ],
        exception_handlers={
            ServiceError: _service_error, HTTPException: _http_error,
            StoreUnavailable: _unavailable, Exception: _internal, NotFound: _service_error,
        },
        request_max_body_size=64 * 1024,
        include_in_schema=False,
    )  # fmt: skip

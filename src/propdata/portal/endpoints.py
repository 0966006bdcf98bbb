"""The developer portal's router (portal.md): sign-up, log-in, password reset, error pages.

Server-rendered (Jinja2 through Litestar); every form works without JavaScript. Outside /v1:
no API key, never metered. `router()` lists every page: the ones here, the dashboard's
(`portal.dashboard`, its saved searches `portal.searches` and webhooks `portal.webhooks`) and
the operators' (`portal.admin`); what every page shares (the visit, form tokens, cookies) is
in `portal.pages`. What may be done is decided by the services (`accounts.service`,
`saved_searches.service`, `webhooks.service`); these modules parse, answer and render.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from litestar import Request, Response, Router, get, post
from litestar.background_tasks import BackgroundTask
from litestar.enums import ScopeType
from litestar.exceptions import HTTPException, NotFoundException
from litestar.params import FromPath
from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.response import Template
from litestar.template.config import TemplateConfig
from litestar.types import Scope

from propdata.accounts.service import AccountService
from propdata.accounts.sessions import Flash
from propdata.api.dependencies import Injected
from propdata.config import Settings
from propdata.errors import InvalidField, NotFound, ServiceError
from propdata.kit.db import StoreUnavailable
from propdata.kit.requests import request_id
from propdata.plans import BY_NAME
from propdata.portal import admin, dashboard, exports, searches, webhooks
from propdata.portal.pages import (
    NO_STORE,
    SESSION_COOKIE,
    VISIT_STATE,
    Visit,
    checked,
    link_base,
    page,
    see_other,
    visit,
)

log = logging.getLogger("propdata.portal")
R = TypeVar("R", bound=Response[Any])
TEMPLATES = Path(str(resources.files("propdata.portal").joinpath("templates")))


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

    async def sign_up(v: Visit, email: str, password: str) -> Response[Any]:
        signed, secret = await accounts.sign_up(
            email, password, v.client, link_base(request, settings)
        )
        await accounts.set_flash(signed.token, Flash(key=secret))
        return see_other(v, "/dashboard", session=signed.token)

    return await _email_form(request, settings, accounts, "signup.html", sign_up)


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

    async def log_in(v: Visit, email: str, password: str) -> Response[Any]:
        signed = await accounts.log_in(email, password, v.client)
        if v.session:
            await accounts.log_out(v.session)
        return see_other(v, "/dashboard", session=signed.token)

    return await _email_form(request, settings, accounts, "login.html", log_in)


@post("/logout", status_code=303)
async def logout(request: Request[Any, Any, Any], settings: Injected[Settings],
                 accounts: Injected[AccountService]) -> Response[Any]:  # fmt: skip
    """End the session."""
    v, _ = await checked(request, settings, accounts)
    if v.session:
        await accounts.log_out(v.session)
    return see_other(v, "/", end=True)


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

    async def ask(v: Visit, email: str, _: str) -> Template:
        address = await accounts.forgot(email, v.client)
        notice = await page(accounts, v, "notice.html", title="Check your mail",
                            message="If an account has that address, we have sent it a link to"
                            " choose a new password. The link works for one hour.")  # fmt: skip
        # After the answer is sent: its time must not tell whether the address has an account.
        notice.background = BackgroundTask(
            _quietly, accounts.mail_reset, address, link_base(request, settings)
        )
        return notice

    return await _email_form(request, settings, accounts, "forgot.html", ask)


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
    v, form = await checked(request, settings, accounts)
    try:
        signed = await accounts.reset(token, form.get("password", ""), v.client)
    except InvalidField as exc:
        if exc.parameter == "token":
            return await _dead_link(accounts, v)
        return await _form_failed(accounts, v, "reset.html", exc, token=token)
    return see_other(v, "/dashboard", session=signed.token)


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


# --------------------------------------------------------------------------- errors as pages
async def _form_failed(accounts: AccountService, v: Visit, template: str, exc: ServiceError,
                       **kept: Any) -> Template:  # fmt: skip
    """The form again, with what the person typed (never the password) and the message."""
    return await page(
        accounts, v, template, status=exc.status, headers=exc.headers, error=exc, **kept
    )


async def _email_form(
    request: Request[Any, Any, Any], settings: Settings, accounts: AccountService,
    template: str, answer: Callable[[Visit, str, str], Awaitable[R]],
) -> R | Template:  # fmt: skip
    """A form of an `email` (and `password`: sign-up, log-in): `answer` of the visit, the
    email and the password; refused, the form (`template`) again, with the email typed."""
    v, form = await checked(request, settings, accounts)
    email = form.get("email", "")
    try:
        return await answer(v, email, form.get("password", ""))
    except ServiceError as exc:
        return await _form_failed(accounts, v, template, exc, email=email)


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


async def find_visitor(exc: Exception, scope: Scope) -> None:
    """Look up who is asking before an error page is drawn for a request no portal handler
    took (a path no route takes, a method a path does not): the page's handler cannot, not
    being a coroutine. A signed-in person's page then leads to the dashboard and keeps
    "Log out". Runs for every error (a Litestar `after_exception` hook), so it returns at
    once for anything but a browser's page with a session cookie."""
    if scope["type"] != ScopeType.HTTP or VISIT_STATE in scope.setdefault("state", {}):
        return
    request: Request[Any, Any, Any] = Request(scope)
    if not wants_page(request) or SESSION_COOKIE not in request.cookies:
        return
    services = scope["litestar_app"].state.get("services")
    if services is None:
        return
    try:
        await visit(request, services.settings, services.accounts)
    except Exception:  # the page is drawn for a visitor of unknown standing instead
        log.exception("portal: no session lookup for the error page of %s", request.url.path)


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
            reset_page, reset, verify, *dashboard.ROUTES, *searches.ROUTES, *webhooks.ROUTES, *exports.ROUTES,
            *admin.ROUTES,
        ],
        exception_handlers={
            ServiceError: _service_error, HTTPException: _http_error,
            StoreUnavailable: _unavailable, Exception: _internal, NotFound: _service_error,
        },
        request_max_body_size=64 * 1024,
        include_in_schema=False,
    )  # fmt: skip

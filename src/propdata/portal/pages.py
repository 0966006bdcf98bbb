"""What every portal page shares: the visit, its cookies and form token, page rendering.

A `Visit` is who is asking: the signed-in account (if any) and the cookies that bind form
tokens. Each POST carries `csrf_token`, tied to the session itself (or, with no session, to
the browser's form cookie); `checked` answers 403 to a POST without a valid one, or with a
token of another session or of before sign-in, before anything changes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from litestar import Request, Response, get
from litestar.datastructures import Cookie
from litestar.di import Provide
from litestar.enums import RequestEncodingType
from litestar.handlers import HTTPRouteHandler
from litestar.response import Redirect, Template

from propdata.accounts.schemas import Account, ApiKey
from propdata.accounts.service import AccountService
from propdata.accounts.sessions import Flash
from propdata.api import clients
from propdata.api.dependencies import Injected
from propdata.config import Settings
from propdata.errors import Forbidden, InvalidField, PlanLimitReached, ServiceError
from propdata.kit import crypto
from propdata.plans import BY_NAME
from propdata.portal.fields import LABELS, said

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
    """A page, with what every page needs: the visitor, a form token, the cookies, the fields'
    `labels`; a refused form's `error` is said in its field's label (`error_text`)."""
    error = context.get("error")
    text = said(error) if isinstance(error, ServiceError) else ""
    return Template(
        template_name=name,
        context={"account": v.account, "csrf_token": v.form_token, "plans": BY_NAME,
                 "error_text": text, "labels": LABELS, **context},
        status_code=status, headers={**NO_STORE, **(headers or {})}, cookies=_cookies(v),
    )  # fmt: skip


def see_other(v: Visit, path: str, session: str | None = None, end: bool = False) -> Redirect:
    return Redirect(path=path, status_code=303, cookies=_cookies(v, session, end), headers=NO_STORE)


async def _form(request: Request[Any, Any, Any]) -> dict[str, str]:
    """The form's text fields (at most 64 KiB of body: the router's limit)."""
    content_type = request.headers.get("content-type", "")
    if not content_type.startswith((_URL_ENCODED, _MULTIPART)):
        raise InvalidField("form", "Send the form as application/x-www-form-urlencoded.")
    data = await request.form()
    return {name: value for name, value in data.items() if isinstance(value, str)}


async def checked(
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


async def acting_key(accounts: AccountService, account: Account) -> ApiKey | None:
    """The key through which the account's saved searches and webhooks are managed: one of
    its active keys (each sees the account's; the services read the account's plan from all
    of them), or None when it holds none."""
    return next((key for key in await accounts.keys_of(account) if key.status == "active"), None)


def way_up(refusal: PlanLimitReached | None) -> bool:
    """Whether a plan a person may choose on the dashboard raises the limit that refused."""
    return (
        refusal is not None
        and refusal.raised_by is not None
        and BY_NAME[refusal.raised_by].self_serve
    )


PER_PAGE = 20
"""Rows a listed page shows (saved searches, webhook endpoints) before its next page."""


def offset_of(request: Request[Any, Any, Any]) -> int:
    """Where a listed page starts (`?offset=`); anything but plain digits: the start."""
    raw = request.query_params.get("offset", "")
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 9 else 0


@dataclass(frozen=True, slots=True)
class Held:
    """One page of what an account manages through its key, and what its plan lets it hold."""

    rows: list[Any]
    total: int
    limit: int
    plan_title: str
    full: PlanLimitReached | None
    """Why the account may add no more, when its plan's limit is reached."""
    shown: Mapping[str, Any] = field(default_factory=dict)
    """What else the page shows of them (a webhook endpoint's new secret, once)."""


_NOTHING_HELD = Held([], 0, 0, "", None)


@dataclass(frozen=True, slots=True)
class Managed:
    """A page listing what an account manages through its key (saved searches, webhook
    endpoints) with the form that adds one, for one request: `listed_route` shows it,
    `managed_form` sends its forms and shows it again with a refusal."""

    accounts: AccountService
    path: str
    template: str
    rows: str
    """The rows' name in the template."""
    kind: str
    """What the page lists, in words ("saved searches")."""
    held: Callable[[ApiKey, int, int, Flash], Awaitable[Held]]
    """What the account's key holds: so many rows (`PER_PAGE`) from an offset; given the
    flash the page shows."""
    context: Mapping[str, Any] = field(default_factory=dict)
    """What else the template needs."""

    @property
    def no_key(self) -> str:
        """Why an account without an active key manages none: said on the page, and the
        refusal (403) of its forms."""
        return (
            f"Your account holds no active API key, and {self.kind} are managed through one:"
            " create a key on the API keys page first."
        )

    async def draw(
        self, v: Visit, *, offset: int = 0, error: ServiceError | None = None,
        form: dict[str, Any] | None = None,
    ) -> Template:  # fmt: skip
        """The page at `offset` of its rows; or again, with a form's refusal (`error`, its
        status) and what the form held."""
        assert v.account is not None and v.session is not None
        flash = await self.accounts.take_flash(v.session)
        key = await acting_key(self.accounts, v.account)
        held = _NOTHING_HELD if key is None else await self.held(key, offset, PER_PAGE, flash)
        return await page(
            self.accounts, v, self.template, status=error.status if error else 200,
            headers=error.headers if error else None, total=held.total, offset=offset,
            per_page=PER_PAGE, limit=held.limit, plan_title=held.plan_title, full=held.full,
            way_up=way_up(held.full), no_key=self.no_key if key is None else "", error=error,
            form=form or {}, notice=flash.notice,
            **{self.rows: held.rows, **self.context, **held.shown},
        )  # fmt: skip


def listed_route(path: str, build: Callable[..., Managed]) -> HTTPRouteHandler:
    """The GET route of a managed page at `path`, at the request's offset, for a person
    signed in; `build` makes the page of the services its parameters name (the app's
    dependencies)."""

    async def listed(request: Request[Any, Any, Any], settings: Injected[Settings],
                     managed: Injected[Managed]) -> Response[Any]:  # fmt: skip
        v = await visit(request, settings, managed.accounts)
        if v.account is None or v.session is None:
            return see_other(v, "/login")
        return await managed.draw(v, offset=offset_of(request))

    listed.__doc__ = build.__doc__
    return get(path, dependencies={"managed": Provide(build, sync_to_thread=False)})(listed)


Action = Callable[[ApiKey, dict[str, Any]], Awaitable[Flash]]
"""What a managed page's form does through the account's key; the flash the page shows next."""


async def managed_form(
    request: Request[Any, Any, Any], settings: Settings, managed: Managed, action: Action,
    repeated: tuple[str, ...] = (),
) -> Response[Any]:  # fmt: skip
    """A form of a managed page: signed in with the form's token, then `action` through the
    account's key (in its 60 management requests a minute), whose flash the page shows next
    (303); or the page again with the service's refusal (an account without an active key:
    `managed.no_key`). `repeated`: fields read as lists."""
    accounts = managed.accounts
    v, form = await checked(request, settings, accounts)
    if v.account is None or v.session is None:
        return see_other(v, "/login")
    fields: dict[str, Any] = dict(form)
    if repeated:
        sent = await request.form()
        for name in repeated:
            fields[name] = [value for value in sent.getall(name, []) if isinstance(value, str)]
    try:
        key = await acting_key(accounts, v.account)
        if key is None:
            raise Forbidden(managed.no_key)
        await accounts.manage(key)
        flash = await action(key, fields)
    except ServiceError as exc:
        return await managed.draw(v, error=exc, form=fields)
    await accounts.set_flash(v.session, flash)
    return see_other(v, managed.path)

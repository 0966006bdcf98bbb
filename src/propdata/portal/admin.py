"""The operators' pages: every account with its keys, any plan for any key, disabling accounts.

Only a signed-in account marked as an operator gets past `_operator`; everyone else gets 403.
"""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, get, post
from litestar.params import FromPath
from litestar.response import Template

from propdata.accounts.keys import CustomLimits
from propdata.accounts.service import AccountService
from propdata.api.dependencies import Injected
from propdata.config import Settings
from propdata.errors import Forbidden, InvalidField, ServiceError
from propdata.portal.pages import Visit, checked, page, see_other, visit


async def _operator(request: Request[Any, Any, Any], settings: Settings,
                    accounts: AccountService, form: bool) -> tuple[Visit, dict[str, str]]:  # fmt: skip
    if form:
        v, fields = await checked(request, settings, accounts)
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
    return see_other(v, "/admin")


def _custom_limits(form: dict[str, str]) -> CustomLimits:
    values: dict[str, int | None] = {}
    for field, name in (("perMinute", "per_minute"), ("daily", "daily"),
                        ("defaultPageSize", "default_page_size"), ("maxPageSize", "max_page_size"),
                        ("savedSearches", "saved_searches"), ("webhookEndpoints", "webhook_endpoints"),
                        ("eventsPerDay", "events_per_day")):  # fmt: skip
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
    return see_other(v, "/admin")


ROUTES = [admin, admin_plan, admin_disable]

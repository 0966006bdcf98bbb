"""The dashboard's exports: the snapshots of the whole data set with their size, rows and
date, and a download link per file, for an account that holds a Pro or Enterprise key;
others see which plan gives them. Who may, `exports.service.refusal` decides.

A download counts as one request of the account's key that gives it exports (its active
key of the highest plan), exactly as `GET /v1/exports/{id}/files/{name}` with that key
would: the dashboard is no way around a key's limits."""

from __future__ import annotations

from typing import Any

import anyio
from litestar import Request, Response, get
from litestar.params import FromPath

from propdata.accounts.middleware import count_one, refund_one
from propdata.accounts.schemas import ApiKey
from propdata.accounts.service import AccountService
from propdata.api.dependencies import Injected
from propdata.config import Settings
from propdata.errors import ServiceError
from propdata.exports.endpoints import file_response
from propdata.exports.service import ExportService, refusal
from propdata.kit.ratelimit.base import Limiter
from propdata.plans import BY_NAME, highest
from propdata.portal.pages import page, see_other, visit, way_up

PAGE = "/dashboard/exports"


def _plan_refusal(keys: list[ApiKey]) -> tuple[str, Any]:
    """The account's plan (the highest of its active `keys`) and why it has no exports."""
    plan = highest(key.plan for key in keys)
    return plan.title, refusal(plan.name, "your account")


async def _active(accounts: AccountService, account: Any) -> list[ApiKey]:
    return [key for key in await accounts.keys_of(account) if key.status == "active"]


def _paying(keys: list[ApiKey]) -> ApiKey:
    """The key a download counts against: of the highest plan, the oldest."""
    top = highest(key.plan for key in keys)
    return min((k for k in keys if BY_NAME[k.plan] == top), key=lambda k: (k.created_at, k.id))


@get(PAGE)
async def exports_page(request: Request[Any, Any, Any], settings: Injected[Settings],
                       accounts: Injected[AccountService],
                       exports: Injected[ExportService]) -> Response[Any]:  # fmt: skip
    """The snapshots, newest first, each file a download link; or what plan gives them."""
    v = await visit(request, settings, accounts)
    if v.account is None or v.session is None:
        return see_other(v, "/login")
    plan_title, refused = _plan_refusal(await _active(accounts, v.account))
    snapshots = [] if refused else await anyio.to_thread.run_sync(exports.manifests)
    return await page(
        accounts, v, "exports.html", snapshots=snapshots, refused=refused,
        way_up=way_up(refused), plan_title=plan_title, page_path=PAGE,
    )  # fmt: skip


@get(PAGE + "/{export_id:str}/files/{name:path}")
async def download(request: Request[Any, Any, Any], settings: Injected[Settings],
                   accounts: Injected[AccountService], exports: Injected[ExportService],
                   limiter: Injected[Limiter], export_id: FromPath[str],
                   name: FromPath[str]) -> Response[Any]:  # fmt: skip
    """One file of a snapshot, for a signed-in account whose plan has exports; one request
    of its paying key (a 429 page when that key has none left)."""
    v = await visit(request, settings, accounts)
    if v.account is None or v.session is None:
        return see_other(v, "/login")
    keys = await _active(accounts, v.account)
    _, refused = _plan_refusal(keys)
    if refused is not None:
        raise refused
    key = _paying(keys)
    decision = await count_one(limiter, key)
    try:
        answer = await file_response(request, exports, export_id, name)
    except ServiceError as failed:
        await refund_one(limiter, key, decision, failed.status)
        raise
    answer.headers["Content-Disposition"] = (
        f'attachment; filename="{export_id}-{name.strip("/").replace("/", "_")}"'
    )
    return answer


ROUTES = [exports_page, download]

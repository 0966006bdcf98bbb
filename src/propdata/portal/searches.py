"""The dashboard's saved searches: the account's searches with their match counts, a form
that saves one from the search filters (each field named as the API's parameter), deletion.

The form is read here (empty fields left out, numbers as numbers); what a search may hold,
and how many an account may keep, `saved_searches.service` decides; its refusals are shown on the
page in words, with the form as it was sent.
"""

from __future__ import annotations

import re
import typing
from dataclasses import dataclass
from typing import Any, Literal

from litestar import Request, Response, get, post
from litestar.params import FromPath
from litestar.response import Template

from propdata.accounts.schemas import ApiKey
from propdata.accounts.service import AccountService
from propdata.accounts.sessions import Flash
from propdata.api.dependencies import Injected
from propdata.api.values import DECIMAL
from propdata.config import Settings
from propdata.errors import ServiceError
from propdata.portal.fields import LABELS, Label
from propdata.portal.pages import (
    PER_PAGE,
    Visit,
    acting_key,
    listed_page,
    managed_form,
    page,
    way_up,
)
from propdata.saved_searches.filters import declared
from propdata.saved_searches.schemas import SavedSearch
from propdata.saved_searches.service import SavedSearchService

PAGE = "/dashboard/searches"


@dataclass(frozen=True, slots=True)
class Field:
    """A filter of the form: the API's parameter, what a person reads, how it is typed."""

    name: str
    label: str
    kind: Any
    """The parameter's type as the search endpoint declares it (str, int, float, a Literal)."""
    hint: str = ""

    @property
    def numeric(self) -> bool:
        return self.kind in (int, float)

    @property
    def choices(self) -> tuple[str, ...]:
        return typing.get_args(self.kind) if typing.get_origin(self.kind) is Literal else ()


def fields() -> tuple[Field, ...]:
    """Every filter GET /v1/properties takes, in its order: the form's fields."""
    made = []
    for name, found in declared().items():
        label = LABELS.get(name, Label(name))
        made.append(Field(name, label.text, found.kind, label.hint))
    return tuple(made)


_IDS = re.compile(r"[\s,]+")
_INTEGER = re.compile(r"-?[0-9]+")


def filters_of(form: dict[str, str]) -> dict[str, Any]:
    """The filters a form holds, by parameter name: empty fields left out, a number field
    that holds a number as that number (anything else as typed, for the service to refuse
    naming the field)."""
    filters: dict[str, Any] = {}
    for field in fields():
        text = form.get(field.name, "").strip()
        if not text:
            continue
        if field.kind is int and _INTEGER.fullmatch(text):
            filters[field.name] = int(text)
        elif field.kind is float and DECIMAL.fullmatch(text):
            filters[field.name] = float(text)
        else:
            filters[field.name] = text
    return filters


def property_ids_of(form: dict[str, str]) -> list[str]:
    """The ids of the form's `propertyIds` (separated by commas, spaces or lines)."""
    return [part for part in _IDS.split(form.get("propertyIds", "")) if part]


NO_KEY = (
    "Your account holds no active API key, and saved searches are managed through one: create"
    " a key on the API keys page first."
)


@get(PAGE)
async def searches_page(request: Request[Any, Any, Any], settings: Injected[Settings],
                        accounts: Injected[AccountService],
                        saved_searches: Injected[SavedSearchService]) -> Response[Any]:  # fmt: skip
    """The account's saved searches with their match counts, and the form that saves one."""

    async def render(v: Visit, offset: int) -> Template:
        return await _page(accounts, saved_searches, v, offset=offset)

    return await listed_page(request, settings, accounts, render)


async def _page(
    accounts: AccountService, saved_searches: SavedSearchService, v: Visit, status: int = 200,
    error: ServiceError | None = None, form: dict[str, Any] | None = None, offset: int = 0,
) -> Template:  # fmt: skip
    assert v.account is not None and v.session is not None
    flash = await accounts.take_flash(v.session)
    key = await acting_key(accounts, v.account)
    listed: list[SavedSearch] = []
    limit, total, plan_title, full = 0, 0, "", None
    if key is not None:
        plan = await accounts.keys.plan_of(key)
        limit, plan_title = plan.saved_searches, plan.title
        found = await saved_searches.page(key, PER_PAGE, offset)
        listed, total = found.data, found.meta.total
        full = await saved_searches.refusal(key)
    return await page(
        accounts, v, "searches.html", status=status, headers=error.headers if error else None,
        searches=listed, total=total, offset=offset, per_page=PER_PAGE, limit=limit,
        plan_title=plan_title, fields=fields(), full=full, way_up=way_up(full),
        no_key=NO_KEY if key is None else "", error=error, form=form or {}, notice=flash.notice,
    )  # fmt: skip


@post(PAGE, status_code=303)
async def create_search(request: Request[Any, Any, Any], settings: Injected[Settings],
                        accounts: Injected[AccountService],
                        saved_searches: Injected[SavedSearchService]) -> Response[Any]:  # fmt: skip
    """Save a search from the form's name and filters; its match count shows at once."""

    async def create(key: ApiKey, form: dict[str, Any]) -> Flash:
        body: dict[str, Any] = {"name": form.get("name", ""), "filters": filters_of(form)}
        ids = property_ids_of(form)
        if ids:
            body["propertyIds"] = ids
        if not body["filters"] and ids:
            del body["filters"]
        made = await saved_searches.create(key, body)
        records = "record matches" if made.match_count == 1 else "records match"
        return Flash(notice=(
            f"Saved “{made.name}”: {made.match_count:,} {records} it now. You will get an event"
            " whenever one of them changes, or a record enters or leaves it."
        ))  # fmt: skip

    async def again(v: Visit, error: ServiceError, form: dict[str, Any]) -> Template:
        return await _page(accounts, saved_searches, v, error.status, error, form)

    return await managed_form(request, settings, accounts, path=PAGE, no_key=NO_KEY,
                              action=create, again=again)  # fmt: skip


@post(PAGE + "/{search_id:str}/delete", status_code=303)
async def delete_search(request: Request[Any, Any, Any], search_id: FromPath[str],
                        settings: Injected[Settings], accounts: Injected[AccountService],
                        saved_searches: Injected[SavedSearchService]) -> Response[Any]:  # fmt: skip
    """Delete a saved search: it produces no more events."""

    async def delete(key: ApiKey, _: dict[str, Any]) -> Flash:
        gone = await saved_searches.get(key, search_id)
        await saved_searches.delete(key, search_id)
        return Flash(notice=f"Deleted “{gone.name}”.")

    async def again(v: Visit, error: ServiceError, _: dict[str, Any]) -> Template:
        return await _page(accounts, saved_searches, v, error.status, error)

    return await managed_form(request, settings, accounts, path=PAGE, no_key=NO_KEY,
                              action=delete, again=again)  # fmt: skip


ROUTES = [searches_page, create_search, delete_search]

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

from litestar import Request, Response, post
from litestar.params import FromPath

from propdata.accounts.schemas import ApiKey
from propdata.accounts.service import AccountService
from propdata.accounts.sessions import Flash
from propdata.api.dependencies import Injected
from propdata.api.values import DECIMAL
from propdata.config import Settings
from propdata.portal.fields import LABELS, Label
from propdata.portal.pages import Held, Managed, listed_route, managed_form
from propdata.saved_searches.filters import declared
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


def _page(
    accounts: Injected[AccountService], saved_searches: Injected[SavedSearchService]
) -> Managed:
    """The account's saved searches with their match counts (as many as its plan holds), and
    the form that saves one."""

    async def held(key: ApiKey, offset: int, per_page: int, _: Flash) -> Held:
        plan = await accounts.keys.plan_of(key)
        found = await saved_searches.page(key, per_page, offset)
        full = await saved_searches.refusal(key)
        return Held(found.data, found.meta.total, plan.saved_searches, plan.title, full)

    return Managed(accounts, PAGE, "searches.html", rows="searches", kind="saved searches",
                   held=held, context={"fields": fields()})  # fmt: skip


searches_page = listed_route(PAGE, _page)


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

    return await managed_form(request, settings, _page(accounts, saved_searches), create)


@post(PAGE + "/{search_id:str}/delete", status_code=303)
async def delete_search(request: Request[Any, Any, Any], search_id: FromPath[str],
                        settings: Injected[Settings], accounts: Injected[AccountService],
                        saved_searches: Injected[SavedSearchService]) -> Response[Any]:  # fmt: skip
    """Delete a saved search: it produces no more events."""

    async def delete(key: ApiKey, _: dict[str, Any]) -> Flash:
        gone = await saved_searches.get(key, search_id)
        await saved_searches.delete(key, search_id)
        return Flash(notice=f"Deleted “{gone.name}”.")

    return await managed_form(request, settings, _page(accounts, saved_searches), delete)


ROUTES = [searches_page, create_search, delete_search]

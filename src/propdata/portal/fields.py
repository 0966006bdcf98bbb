"""What a person reads for each form field of the portal, and a refusal said in those words.

The services name a refused value by its API parameter (`filters.state`, `url`, `name`), as
the API's 400 does; a page says it with the field's label instead. `LABELS` is the one map
from parameter to label, shared by every page's form (the saved-search form takes its
fields' labels and placeholders from it too); `said` turns a refusal into what the page shows.

    said(InvalidParameter("filters.state", "Invalid value for 'filters.state'; ..."))
    # 'State: the two-letter code, such as TX.'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from propdata.errors import ServiceError, expected
from propdata.saved_searches.filters import PREFIX, declared


@dataclass(frozen=True, slots=True)
class Label:
    """A field as a person reads it."""

    text: str
    hint: str = ""
    """The empty field's placeholder."""
    takes: str = ""
    """What the field takes, said to a person (empty: the declaration's words, for the
    search filters, such as "a number from -90 to 90")."""


LABELS: dict[str, Label] = {
    # the saved-search form: GET /v1/properties' filters, then its own fields
    "zipCode": Label("ZIP code", "e.g. 50010", "five digits, such as 50010"),
    "city": Label("City", "e.g. Ames", "a city's name, such as Ames"),
    "state": Label("State", "e.g. IA", "the two-letter code, such as TX"),
    "status": Label("Status"),
    "propertyType": Label("Property type"),
    "minPrice": Label("Price from ($)", "", "a whole number of dollars, such as 250000"),
    "maxPrice": Label("Price up to ($)", "", "a whole number of dollars, such as 400000"),
    "minBeds": Label("Beds, at least", "", "a whole number, such as 3"),
    "maxBeds": Label("Beds, at most", "", "a whole number, such as 5"),
    "minBaths": Label("Baths, at least", "", "a number, such as 2 or 1.5"),
    "minSqft": Label("Square feet from", "", "a whole number, such as 1200"),
    "maxSqft": Label("Square feet up to", "", "a whole number, such as 3000"),
    "minYearBuilt": Label("Built in or after", "", "a year, such as 1990"),
    "maxDaysOnMarket": Label("Days listed, at most", "", "a whole number of days, such as 30"),
    "latitude": Label("Latitude", "e.g. 42.0267"),
    "longitude": Label("Longitude", "e.g. -93.6465"),
    "radius": Label("Radius (miles)", "e.g. 5"),
    "bbox": Label(
        "Box",
        "west,south,east,north",
        "four numbers, west,south,east,north, such as -93.70,41.98,-93.57,42.08",
    ),
    "filters": Label("Filters"),
    "propertyIds": Label("Watch these records too"),
    "name": Label("Name"),
    # the webhooks form
    "url": Label("URL"),
    "description": Label("Description"),
    "eventTypes": Label("Event types"),
    "searchIds": Label("Saved searches"),
    "graceSeconds": Label("Old secret valid for"),
    # the account's forms
    "email": Label("Email"),
    "password": Label("Password"),
    "plan": Label("Plan"),
}
"""Every form field by its parameter (the API's name, which is also the form field's)."""

_QUOTED = re.compile(r"'(?:" + re.escape(PREFIX) + r")?([A-Za-z]+)(?:\[\d+\])?'")
_POSITION = re.compile(r"\b([A-Za-z]+)\[\d+\]")


def label(parameter: str) -> Label | None:
    """The label of a parameter as a refusal names it (`filters.state`, `eventTypes[2]`)."""
    name = _POSITION.sub(r"\1", parameter).removeprefix(PREFIX).split(".")[0]
    return LABELS.get(name)


def said(error: ServiceError) -> str:
    """The refusal as the page shows it: a value the field cannot take is the field's label
    and what it takes ("State: the two-letter code, such as TX."); any other message names
    each field it quotes by its label. A message that names no field is as the service said."""
    found = label(error.parameter) if error.parameter else None
    if found is None:
        return error.message
    if error.message.startswith("Invalid value for"):
        return f"{found.text}: {_takes(error.parameter or '', found, error.message)}."
    return _POSITION.sub(_named, _QUOTED.sub(_named, error.message))


def _named(reference: re.Match[str]) -> str:
    found = LABELS.get(reference[1])
    return f"“{found.text}”" if found is not None else reference[0]


def _takes(parameter: str, found: Label, message: str) -> str:
    if found.takes:
        return found.takes
    filter_ = declared().get(parameter.removeprefix(PREFIX))
    words = expected(filter_.kind, filter_) if filter_ is not None else None
    if words:
        return words
    _, _, after = message.partition("expected: ")
    return after.rstrip(".") or "check what you typed"

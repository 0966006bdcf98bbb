"""A refused form field is said in its label, from the services' own refusals: what a
person meets on the saved-search and webhook forms, never an API parameter path."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from propdata.errors import InvalidParameter, PlanLimitReached, ServiceError
from propdata.portal.fields import LABELS, said
from propdata.portal.searches import fields
from propdata.saved_searches import filters
from propdata.saved_searches.service import _checked


def refusal(check: Callable[..., object], *args: object) -> ServiceError:
    with pytest.raises(ServiceError) as refused:
        check(*args)
    return refused.value


@pytest.mark.parametrize(
    ("wanted", "shown"),
    [
        ({"state": "Texas"}, "State: the two-letter code, such as TX."),
        ({"zipCode": "7701"}, "ZIP code: five digits, such as 50010."),
        ({"minBeds": -1}, "Beds, at least: a whole number, such as 3."),
        ({"latitude": 91.0, "longitude": 0.0, "radius": 1.0}, "Latitude: a number from -90 to 90."),
        ({"minPrice": 500000, "maxPrice": 100000},
         "“Price from ($)” (500000) is greater than “Price up to ($)” (100000)."),
        ({"latitude": 42.0, "longitude": -93.0},
         "“Radius (miles)” is missing: a radius search takes latitude, longitude and radius together."),
    ],
)  # fmt: skip
def test_a_filter_refused_is_said_in_its_label(wanted: dict[str, object], shown: str) -> None:
    error = refusal(filters.check, wanted)
    assert error.parameter and error.parameter.startswith("filters.")
    assert said(error) == shown


def test_the_search_forms_other_fields_and_the_webhook_form() -> None:
    named = refusal(lambda: _checked({"name": "", "filters": {"state": "IA"}}, partial=False))
    assert said(named) == "“Name” must hold 1 to 100 characters."
    ids = refusal(lambda: _checked({"name": "x", "propertyIds": ["bad id!"]}, partial=False))
    assert said(ids).startswith("“Watch these records too” must hold property ids")
    types = InvalidParameter("eventTypes", "eventTypes[1] 'nope' is not an event type; one of a.")
    assert said(types) == "“Event types” 'nope' is not an event type; one of a."


def test_a_refusal_that_names_no_field_is_as_the_service_said() -> None:
    limit = PlanLimitReached("The Free plan holds at most 3 saved searches.", raised_by="developer")
    assert said(limit) == limit.message
    assert said(InvalidParameter("colour", "Invalid value for 'colour'.")) == (
        "Invalid value for 'colour'."
    )


def test_every_search_field_has_a_label_of_the_shared_map() -> None:
    for field in fields():
        assert field.label == LABELS[field.name].text, field.name
        assert not field.label.startswith(("min", "max")), field.name

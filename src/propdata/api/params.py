"""Query and path parameters several operations take, declared once, and their checks.

A parameter's `description` is also what a 400 for a malformed value says it expects
(errors.validation_handler reads it), so the reference and the error agree.
"""

from __future__ import annotations

import re
from typing import Annotated

from litestar.openapi.spec import Example
from litestar.params import PathParameter, QueryParameter

from propdata.errors import InvalidParameter
from propdata.kit.addresses import city_key
from propdata.kit.geography import US_STATES, ZIP

MAX_INT = 2**53 - 1
"""Largest integer a query parameter takes: exact in JSON and in both stores."""

ZIP_PATTERN = re.compile(ZIP)
INTEGER = re.compile(r"-?[0-9]+")
"""contract.md: an integer is plain ASCII digits with an optional leading minus (fullmatch)."""
DECIMAL = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")
"""A number as JSON writes one (what OpenAPI's `number` means): ASCII digits, an optional
fraction and exponent; no nan, no infinity, no underscores, no spaces, no other scripts."""
TEXT = r"[A-Za-z0-9]"
"""Names and streets hold at least one letter or digit; anything else cannot match."""
# Every US state code in either case, spelled out: JSON Schema patterns take no flags.
STATE = (
    "^(" + "|".join("".join(f"[{c}{c.lower()}]" for c in code) for code in sorted(US_STATES)) + ")$"
)
NON_NEGATIVE = {"minimum": 0}
"""Litestar leaves `minimum: 0` out of the OpenAPI document for optional parameters (it
tests `ge` for truth), so it is restated in schema_extra; the runtime check is the same."""

CITY = QueryParameter(
    min_length=1, max_length=100, pattern=TEXT,
    description="City name, any case, with at least one letter or digit",
)  # fmt: skip
STATE_CODE = QueryParameter(
    name="state", pattern=STATE, description="Two-letter US state code, any case, such as IA"
)
ZIP_CODE = QueryParameter(pattern=ZIP, description="Five-digit ZIP code, such as 50010")

# Used as they are: wrapping an Annotated alias in another QueryParameter would drop its
# constraints from the OpenAPI document. Required variants are Annotated[str, CITY] etc.
CityQuery = Annotated[str | None, CITY]
StateQuery = Annotated[str | None, STATE_CODE]
ZipQuery = Annotated[str | None, ZIP_CODE]
ZipPath = Annotated[
    str,
    PathParameter(
        pattern=ZIP, description="Five-digit ZIP code, such as 50010",
        examples=[Example(value="50010")],
    ),
]  # fmt: skip
PageLimit = Annotated[
    int | None,
    QueryParameter(
        ge=1, le=MAX_INT,
        description="Page size, a whole number of at least 1: the plan's default when"
        " absent, clamped to the plan's maximum (meta.limit shows the size applied)",
    ),
]  # fmt: skip
PageOffset = Annotated[
    int,
    QueryParameter(ge=0, le=MAX_INT, description="Results to skip", schema_extra=NON_NEGATIVE),
]


def state_code(value: str | None, parameter: str = "state") -> str | None:
    """Two-letter US state code, case-insensitive in, upper-case out."""
    if value is None:
        return None
    code = value.upper()
    if code not in US_STATES:
        raise InvalidParameter(parameter, f"'{value}' is not a two-letter US state code.")
    return code


def city_filter(city: str | None) -> str | None:
    """Normalised city for matching; blank is a 400."""
    if city is None:
        return None
    key = city_key(city)
    if not key:
        raise InvalidParameter("city", "'city' must not be blank.")
    return key


def zip_code(value: str, parameter: str = "zipCode") -> str:
    """A five-digit ZIP code, else a 400."""
    if not ZIP_PATTERN.fullmatch(value):
        raise InvalidParameter(parameter, f"'{value}' is not a five-digit ZIP code.")
    return value


def check_range(low: float | None, high: float | None, low_name: str, high_name: str) -> None:
    """400 when both bounds are given and the lower exceeds the upper."""
    if low is not None and high is not None and low > high:
        raise InvalidParameter(
            low_name, f"'{low_name}' ({low}) is greater than '{high_name}' ({high})."
        )

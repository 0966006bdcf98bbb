"""Query and path parameters several operations take, declared once, and their checks.

A parameter's `description` is also what a 400 for a malformed value says it expects
(errors.validation_handler reads it), so the reference and the error agree.
"""

from __future__ import annotations

from typing import Annotated

from litestar.openapi.spec import Example
from litestar.params import PathParameter, QueryParameter

from propdata.api.values import MAX_INT, STATE, TEXT
from propdata.kit.geography import ZIP

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


def token_query(description: str) -> QueryParameter:
    """A query parameter holding a cursor or an id the API handed out, passed as it came."""
    return QueryParameter(
        min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_-]+$", description=description
    )


# Used as they are: wrapping an Annotated alias in another QueryParameter would drop its
# constraints from the OpenAPI document. Required variants are Annotated[str, CITY] etc.
CityQuery = Annotated[str | None, CITY]
StateQuery = Annotated[str | None, STATE_CODE]
ZipQuery = Annotated[str | None, ZIP_CODE]


def path_parameter(
    description: str,
    example: str,
    *,
    pattern: str,
    max_length: int | None = None,
    min_length: int | None = None,
) -> PathParameter:
    """A path parameter, with the example the reference shows (and /docs fills in)."""
    return PathParameter(
        min_length=min_length, max_length=max_length, pattern=pattern,
        description=description, examples=[Example(value=example)],
    )  # fmt: skip


ZipPath = Annotated[str, path_parameter("Five-digit ZIP code, such as 50010", "50010", pattern=ZIP)]
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

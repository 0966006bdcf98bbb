"""Values several parameters take, and their checks, with no web framework: what the
search's parser and the saved searches' filters check with, in a process that serves
nothing (the command-line event producer). `api.params` declares the parameters."""

from __future__ import annotations

import re

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

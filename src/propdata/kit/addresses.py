"""USPS-style address keys for exact lookup.

The stored record and the lookup query go through the same `street_key`, so "1510 First
Avenue, Apt 112" and "1510 FIRST AVE #112" meet. The abbreviation tables are
usaddress-scourgify's (USPS Publication 28); a token pass over them costs about 3 µs where
a full scourgify parse costs 100 µs, which matters when a million records load.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from scourgify import normalize_address_record
from scourgify.address_constants import (
    AMBIGUOUS_DIRECTIONALS,
    DIRECTIONAL_REPLACEMENTS,
    OCCUPANCY_TYPE_ABBREVIATIONS,
    STREET_TYPE_ABBREVIATIONS,
)
from scourgify.exceptions import AddressNormalizationError

_DIRECTIONS = {**DIRECTIONAL_REPLACEMENTS, **AMBIGUOUS_DIRECTIONALS}
# Designators that take a unit number. Words such as FRONT, REAR, KEY, UPPER or SIDE are also
# USPS designators but far more often part of a street name, so they are left as they are.
_NUMBERED = {"APARTMENT", "BUILDING", "DEPARTMENT", "FLOOR", "ROOM", "SUITE", "UNIT", "SPACE",
             "STOP", "TRAILER", "HANGER", "SLIP", "PIER", "LOT"}  # fmt: skip
_UNITS = {k for k in _NUMBERED if k in OCCUPANCY_TYPE_ABBREVIATIONS} | {
    OCCUPANCY_TYPE_ABBREVIATIONS[k] for k in _NUMBERED if k in OCCUPANCY_TYPE_ABBREVIATIONS
}
_UNITS |= {"APT", "UNIT", "STE", "SUITE", "BLDG", "FL", "RM", "NO", "NUM", "NUMBER", "#"}
_UNIT_ID = re.compile(r"^(\d[\w-]*|[A-Z]|[A-Z]?\d+[A-Z]?)$")
_ORDINALS = {
    "FIRST": "1ST", "SECOND": "2ND", "THIRD": "3RD", "FOURTH": "4TH", "FIFTH": "5TH",
    "SIXTH": "6TH", "SEVENTH": "7TH", "EIGHTH": "8TH", "NINTH": "9TH", "TENTH": "10TH",
}  # fmt: skip
_CLEAN = re.compile(r"[^A-Z0-9#/\- ]+")
_SPACES = re.compile(r"\s+")


def street_key(street: str) -> str:
    """Normalise a street line: upper case, no punctuation, USPS suffixes, directionals, units.

    Every unit designator (APT, UNIT, STE, #, ...) becomes "#", so the designator a source
    chose does not decide a match; the unit number itself still must agree.

    >>> street_key("1510 First Avenue, Apt. 112")
    '1510 1ST AVE # 112'
    """
    number, space, rest = street.partition(" ")
    if not (space and number.isdigit() and number.isascii()):
        return _street_key(street)
    # A house number, then the rest: the number stays as it is and changes nothing after it
    # (no character run, token or position crosses the space), so the rest's key is the
    # same after any number, and a load meets each street name many times.
    tail = _TAILS.get(rest)
    if tail is None:
        tail = _street_key("0 " + rest)[2:]  # "0 " with the number's position for the rest
        if len(_TAILS) >= _TAILS_KEPT:
            _TAILS.clear()  # a load goes place by place: the streets of the next ones
        _TAILS[rest] = tail
    return f"{number} {tail}" if tail else number


_TAILS: dict[str, str] = {}
"""The key of what follows a house number, by that text (see `street_key`)."""
_TAILS_KEPT = 20_000


def _street_key(street: str) -> str:
    text = _CLEAN.sub(" ", street.upper().replace(".", "").replace(",", " "))
    text = text.replace("#", " # ")
    tokens = _SPACES.split(text.strip())
    out: list[str] = []
    for position, token in enumerate(tokens):
        following = tokens[position + 1] if position + 1 < len(tokens) else ""
        if position > 1 and token in _UNITS and (token == "#" or _UNIT_ID.match(following)):
            out.append("#")  # a unit designator followed by its number: "APT 5", "UNIT B", "# 112"
        elif token in _DIRECTIONS:
            out.append(_DIRECTIONS[token])
        elif token in _ORDINALS:
            out.append(_ORDINALS[token])
        elif position > 0 and token in STREET_TYPE_ABBREVIATIONS:
            out.append(STREET_TYPE_ABBREVIATIONS[token])
        elif token:
            out.append(token)
    collapsed: list[str] = []
    for token in out:
        if token == "#" and collapsed and collapsed[-1] == "#":
            continue
        collapsed.append(token)
    return " ".join(collapsed)


_CITY_WORDS = {"SAINT": "ST", "FORT": "FT", "MOUNT": "MT"}
"""City words people write both ways, to the short form: "Saint Paul" is "St. Paul"."""
_CITY_DROPPED = re.compile(r"[.'\u2019]")
_CITY_SPLIT = re.compile(r"[^A-Z0-9]+")


def city_key(city: str) -> str:
    """Normalise a city name for filters and lookup: upper case, letters and digits only,
    single spaces, and Saint/Fort/Mount as St/Ft/Mt.

    >>> city_key("Saint Mary's-of-the-Woods")
    'ST MARYS OF THE WOODS'
    """
    words = _CITY_SPLIT.split(_CITY_DROPPED.sub("", city.upper()))
    return " ".join(_CITY_WORDS.get(word, word) for word in words if word)


ZIP_OR_ZIP4 = r"^[0-9]{5}(-[0-9]{4})?$"
"""A ZIP code as people write it: five digits, or ZIP+4 (`50010-1234`)."""
_ZIP_OR_ZIP4 = re.compile(ZIP_OR_ZIP4)


def zip5(value: str) -> str | None:
    """The five-digit ZIP code of a ZIP or ZIP+4, or None when it is neither."""
    value = value.strip()
    return value[:5] if _ZIP_OR_ZIP4.match(value) else None


class OneLine(NamedTuple):
    """A one-line address split into its parts; those the line leaves out are None."""

    street: str
    city: str | None
    state: str | None
    zip_code: str | None


def split_address(line: str) -> OneLine | None:
    """Split "123 Main St Apt 4, Ames, IA 50010" into street (with its unit), city, state
    and ZIP code with usaddress-scourgify, or None when it holds no street address."""
    try:
        parts = normalize_address_record(line)
    except AddressNormalizationError:
        return None
    street = " ".join(p for p in (parts["address_line_1"], parts["address_line_2"]) if p)
    if not street:
        return None
    return OneLine(street, parts["city"], parts["state"], parts["postal_code"])

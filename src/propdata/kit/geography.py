"""Real US reference geography, the one home of states, ZIP codes, counties and FIPS codes.

Every data source (demo sets, synthetic generator, importers), the market builder and the
API's parameter checks read it here; nothing else calls `zipcodes` or `addfips`.

    >>> county_fips("Story", "IA"), bare_county("Juneau City and Borough")
    ('19169', 'Juneau')
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

US_STATES = frozenset(
    {
        "AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "DC", "FL", "GA", "HI", "ID", "IL",
        "IN", "IA", "KS", "KY", "LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE",
        "NV", "NH", "NJ", "NM", "NY", "NC", "ND", "OH", "OK", "OR", "PA", "RI", "SC", "SD",
        "TN", "TX", "UT", "VT", "VA", "WA", "WV", "WI", "WY", "PR", "VI", "GU", "AS", "MP",
    }
)  # fmt: skip
"""Two-letter codes of the states, DC and the inhabited territories."""
ZIP = r"^[0-9]{5}$"
"""A ZIP code: five ASCII digits (a JSON Schema pattern too: no flags, no \\d)."""
FIPS = ZIP
"""A county FIPS code: state and county, five ASCII digits with leading zeros."""

_COUNTY_WORDS = re.compile(
    r"\s+(city and borough|census area|municipality|municipio|county|parish|borough)$",
    re.IGNORECASE,
)
"""The county-type word a name may end with; the longest alternative is tried first, so
"Juneau City and Borough" loses all three words, not just "Borough"."""


@dataclass(frozen=True, slots=True)
class ZipCode:
    """One ZIP code of the `zipcodes` package: its primary city, state and county."""

    code: str
    city: str
    state: str
    county: str | None
    """The bare county name (see `bare_county`); None when the package gives none."""
    fips: str | None
    """The state+county FIPS code; None when the county is unknown to addfips."""
    latitude: float
    longitude: float


def bare_county(name: str) -> str:
    """A county name without its county-type word: "Story County" -> "Story".

    Virginia's independent cities keep "city" ("Richmond city" is not Richmond County).
    """
    return _COUNTY_WORDS.sub("", name.strip())


@functools.lru_cache(maxsize=1)
def _fips_table() -> Any:
    import addfips  # loads its county tables on first use only

    return addfips.AddFIPS()


@functools.lru_cache(maxsize=8192)
def county_fips(county: str, state: str) -> str | None:
    """The 5-digit state+county FIPS code of a county name ("Story", "IA" -> "19169"), or None.

    The name may carry its county-type word ("Story County").
    """
    code = _fips_table().get_county_fips(county, state=state)
    return str(code) if code else None


def _zipcodes() -> Any:
    import zipcodes  # reads its table on first use only

    return zipcodes


def _delivery(row: dict[str, Any]) -> bool:
    """A STANDARD (delivery) ZIP code in use, with a centroid. UNIQUE ones belong to one
    organisation (Ames has three, all Iowa State University) and no house has one."""
    return bool(row["zip_code_type"] == "STANDARD" and row["active"] and row["lat"] and row["long"])


def _zip_code(row: dict[str, Any]) -> ZipCode:
    county = row["county"] or None
    state = str(row["state"])
    return ZipCode(
        code=str(row["zip_code"]),
        city=str(row["city"]),
        state=state,
        county=bare_county(county) if county else None,
        fips=county_fips(county, state) if county else None,
        latitude=float(row["lat"]),
        longitude=float(row["long"]),
    )


@functools.cache
def delivery_zips() -> tuple[ZipCode, ...]:
    """Every delivery ZIP code, sorted by code; read once per process (about a second)."""
    rows = sorted(
        (row for row in _zipcodes().list_all() if _delivery(row)), key=lambda r: str(r["zip_code"])
    )
    return tuple(_zip_code(row) for row in rows)


@functools.cache
def zip_code(code: str) -> ZipCode | None:
    """One ZIP code of the package, of any kind, or None when it does not know it."""
    rows = _zipcodes().matching(code) if re.fullmatch(ZIP, code) else []
    return _zip_code(rows[0]) if rows and rows[0]["lat"] and rows[0]["long"] else None


@functools.cache
def city_zips(city: str, state: str) -> tuple[ZipCode, ...]:
    """The delivery ZIP codes of one city, in the package's order."""
    return tuple(
        _zip_code(row) for row in _zipcodes().filter_by(city=city, state=state) if _delivery(row)
    )


def zip_places(codes: Iterable[str]) -> dict[str, tuple[str, str]]:
    """(primary city, state) of each ZIP code the package knows, of any kind; others absent."""
    table = _all_places()
    return {code: table[code] for code in codes if code in table}


def _places_file() -> Path:
    """Where `_all_places` keeps the package's table: the user's cache folder, one file per
    version of the package."""
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "propdata" / f"zip-places-{_zipcodes().__version__}.json"


@functools.cache
def _all_places() -> dict[str, tuple[str, str]]:
    """Every ZIP code's (primary city, state), as the package has it. The package reads its
    whole table at its first question of any kind (1-2 s: most of a one-record import), so
    the answer is kept in a file made from it once per package version, read in about 20 ms;
    without a writable cache folder, the package is asked each time."""
    path = _places_file()
    with contextlib.suppress(OSError, ValueError):
        kept: dict[str, list[str]] = msgspec.json.decode(path.read_bytes())
        return {code: (place[0], place[1]) for code, place in kept.items()}
    table = _package_places()
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        draft = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        draft.write_bytes(msgspec.json.encode(table))
        os.replace(draft, path)  # whole or not at all, whichever process writes it
    return table


def _package_places() -> dict[str, tuple[str, str]]:
    return {str(z["zip_code"]): (str(z["city"]), str(z["state"])) for z in _zipcodes().list_all()}

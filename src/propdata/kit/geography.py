"""Real US geography shared by every data source."""

from __future__ import annotations

import functools
from typing import Any


@functools.lru_cache(maxsize=1)
def _fips_table() -> Any:
    import addfips  # loads its county tables on first use only

    return addfips.AddFIPS()


@functools.lru_cache(maxsize=8192)
def county_fips(county: str, state: str) -> str | None:
    """The 5-digit state+county FIPS code of a county name ("Story", "IA" -> "19169"), or None."""
    code = _fips_table().get_county_fips(county, state=state)
    return str(code) if code else None

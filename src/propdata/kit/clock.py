"""How stored records tell time."""

from __future__ import annotations

import datetime as dt


def iso_ms(at: float) -> str:
    """ISO-8601 UTC with milliseconds and Z: how events and saved searches tell time.

    iso_ms(0.25)  # '1970-01-01T00:00:00.250Z'
    """
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"

"""Step 12 (data store): the zipcodes package's city and state of each ZIP code with records.

The table's layout is frozen; its rows come from the zipcodes package through
`kit.geography.zip_places` (NULL for a ZIP the package does not know), as the market
statistics name the ZIP (markets.builder). Every full rebuild rewrites them; a load reads its
ZIP codes here, so a command need not load the package's whole table for a few ZIPs.
"""

from __future__ import annotations

from propdata.kit.db import Database
from propdata.kit.geography import zip_places
from propdata.kit.steps import Step
from propdata.migrations.steps.base import DATA, run

SQLITE = (
    """CREATE TABLE IF NOT EXISTS zip_places (
        zip_code TEXT PRIMARY KEY,
        city TEXT,
        state TEXT
    )""",
)

POSTGRESQL = SQLITE


async def _apply(db: Database) -> None:
    await run(db, SQLITE, POSTGRESQL)
    codes = [str(row[0]) for row in await db.fetch_all("SELECT DISTINCT zip_code FROM properties")]
    found = zip_places(codes) if codes else {}
    await db.executemany(
        "INSERT INTO zip_places (zip_code, city, state) VALUES (?, ?, ?)"
        " ON CONFLICT (zip_code) DO NOTHING",
        [(code, *found.get(code, (None, None))) for code in codes],
    )


STORE = DATA
STEP = Step(12, "the zipcodes package's city and state of each ZIP code with records", _apply)

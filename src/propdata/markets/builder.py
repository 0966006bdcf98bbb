"""The market statistics builder: market_snapshots and market_history from the stored records.

`rebuild` runs at every full rebuild (a load that changes little recomputes only the ZIP
codes it touched: `compute_zips`, `replace_zips`). It streams the properties and their
price histories in pages ordered by property id (two indexed range reads per page) into a
`markets.tally.Tally`, which keeps what the statistics count as numpy arrays and reduces
them to the rows at the end. Nothing per property outlives its page.

    zips = await rebuild(db, date(2026, 11, 21))

docs/markets.md defines every number precisely; the definitions here follow it.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from multiprocessing.connection import Connection
from typing import Any, NamedTuple

from propdata.kit import memory
from propdata.kit.addresses import city_key
from propdata.kit.db import Database, connect, optimistic
from propdata.kit.geography import zip_places
from propdata.markets.repository import MarketStatsWriter, PlaceCount
from propdata.markets.tally import Calendar, Tally
from propdata.properties.repository import PropertyRepository

PAGE = 20_000
"""Properties per page: bounds memory (one page of histories) while keeping round trips few."""
ATTEMPTS = 3
"""Lock-free passes tried before a rebuild reads under the write lock (see `rebuild`)."""

_PROPERTY_FIELDS = ("id", "zip_code", "status", "list_price", "living_area")
"""What `Tally.add` reads of each property, in this order."""


async def rebuild(
    db: Database, as_of: dt.date, progress: Callable[[int], None] | None = None
) -> int:
    """Recompute market_snapshots and market_history for every ZIP code with property records.

    The statistics are those of docs/markets.md, as of `as_of` (D): the snapshot describes
    the window (D - 30 days, D], the history one entry per calendar month for up to the 60
    months ending with D's month. Events dated after D are ignored. The old rows of both
    tables are replaced in one transaction, so a rebuild that fails or is killed leaves the
    previous statistics whole, and ZIP codes that no longer have records lose theirs. The
    same transaction bumps the data version, so cached answers built on the old statistics
    are never served again (kit/cache.py keys carry the version).

    The records are read without holding the write lock, so API traffic that writes is not
    held up for the length of a rebuild. When a load commits while the records are read
    (the data version moves), the pass is thrown away and run again; after ATTEMPTS such
    passes the last one reads inside the write transaction, where no load can interleave.

    `progress` is called with the number of properties read after each page (again from
    zero when a pass is repeated). Returns the number of ZIP codes with statistics.

        zips = await rebuild(db, date(2026, 11, 21), progress=bar.advance)
    """
    versions = PropertyRepository(db)
    return await optimistic(
        db, versions.data_version, lambda: compute(db, as_of, progress),
        lambda rows: write(db, rows), ATTEMPTS,
    )  # fmt: skip


class MarketRows(NamedTuple):
    """What a rebuild stores."""

    snapshots: list[tuple[Any, ...]]
    history: list[tuple[Any, ...]]
    places: list[tuple[str, str | None, str | None]]
    """The zipcodes package's (zip_code, city, state) of the ZIPs it was asked about (city
    and state None when it does not know one), for the store's `zip_places`."""


async def compute(
    db: Database, as_of: dt.date, progress: Callable[[int], None] | None = None
) -> MarketRows:
    """The rows `rebuild` stores, read from the store as it is (no lock, nothing written):
    one half of `rebuild`, for a caller that runs it beside other work (ingest.pipeline)."""
    return await _compute(MarketStatsWriter(db), Calendar.of(as_of), progress)


def compute_in_child(sender: Connection, store: str, as_of: dt.date) -> None:
    """`compute` in a child process (ingest.pipeline runs it beside the estimates): open
    the store at `store`, send ("progress", n) after each page, then ("rows", rows), or
    ("error", why) when it fails."""

    async def go() -> MarketRows:
        db = await connect(store)
        try:
            return await compute(db, as_of, lambda n: sender.send(("progress", n)))
        finally:
            await db.close()

    try:
        sender.send(("rows", asyncio.run(go())))
    except Exception as exc:  # the parent computes them itself
        sender.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        sender.close()


async def write(db: Database, rows: MarketRows) -> int:
    """Replace the stored statistics with `rows` and bump the data version; inside a
    transaction (the other half of `rebuild`). Returns the number of ZIP codes."""
    stats = MarketStatsWriter(db)
    await stats.replace(rows.snapshots, rows.history)
    await stats.replace_zip_places(rows.places)
    await PropertyRepository(db).bump_data_version()
    return len(rows.snapshots)


# -- reading ----------------------------------------------------------------------------------


async def _compute(
    stats: MarketStatsWriter, calendar: Calendar, progress: Callable[[int], None] | None
) -> MarketRows:
    """One full pass over the records: the rows to store (every ZIP asked of the package)."""
    with memory.no_cycle_collection():
        tally = Tally(calendar)
        before: str | None = None
        while True:
            page = await stats.property_page(_PROPERTY_FIELDS, before, PAGE)
            if not page:
                break
            # The page runs from page[0] (highest id) down to page[-1] (lowest id).
            tally.add(page, await stats.histories_between(page[-1][0], page[0][0]))
            before = page[-1][0]
            if progress is not None:
                progress(len(page))
        return await _rows(stats, tally, {})


async def _rows(
    stats: MarketStatsWriter, tally: Tally, known: dict[str, tuple[str, str] | None]
) -> MarketRows:
    """The rows of a tally, in ZIP order; `known`: the zipcodes package's answers already
    stored (`zip_places`), the other ZIPs are asked of it."""
    places, asked = await _places(stats, tally.zip_codes(), known)
    snapshots, history = tally.rows(places)
    return MarketRows(snapshots, history, asked)


# -- some ZIP codes only (a load's) -------------------------------------------------------------


async def compute_zips(db: Database, zip_codes: Iterable[str], as_of: dt.date) -> MarketRows:
    """The rows `rebuild` would store for the given ZIP codes (none for a ZIP without
    records), read from their records only: a load recomputes the ZIPs it touched.

    Every number of a ZIP comes from its own records and their events, folded the same way
    as a full pass (medians and means do not depend on the order records come in), so the
    rows equal a full rebuild's for these ZIPs.
    """
    stats = MarketStatsWriter(db)
    tally = Tally(Calendar.of(as_of))
    wanted = sorted(set(zip_codes))
    with memory.no_cycle_collection():
        records = await stats.properties_in(_PROPERTY_FIELDS, wanted)
        for at in range(0, len(records), PAGE):
            page = records[at : at + PAGE]
            tally.add(page, await stats.histories_of([row[0] for row in page]))
        return await _rows(stats, tally, await stats.zip_places(wanted))


async def replace_zips(db: Database, zip_codes: Iterable[str], rows: MarketRows) -> int:
    """Replace the statistics of the given ZIP codes with `rows` (of `compute_zips`), which
    are then no longer `stale`; inside a transaction, which the caller also bumps the data
    version in. Returns the number of ZIP codes with statistics."""
    stats = MarketStatsWriter(db)
    wanted = sorted(set(zip_codes))
    await stats.replace_zips(wanted, rows.snapshots, rows.history)
    await stats.add_zip_places(rows.places)
    await stats.clear_stale(wanted)
    return len(rows.snapshots)


async def defer_zips(db: Database, zip_codes: Iterable[str]) -> None:
    """Leave the given ZIP codes' statistics to a later `compute_zips` (`stale` names them
    until `replace_zips` stores theirs, or a rebuild all); inside the load's transaction."""
    await MarketStatsWriter(db).mark_stale(zip_codes)


async def stale(db: Database) -> list[str]:
    """The ZIP codes `defer_zips` left whose statistics are not recomputed yet."""
    return await MarketStatsWriter(db).stale()


async def stored_as_of(db: Database) -> set[str]:
    """The dates the stored statistics are computed as of (one after a rebuild)."""
    return await MarketStatsWriter(db).snapshot_dates()


async def _places(
    stats: MarketStatsWriter, zip_codes: Sequence[str], known: dict[str, tuple[str, str] | None]
) -> tuple[dict[str, tuple[str, str]], list[tuple[str, str | None, str | None]]]:
    """(city, state) of each ZIP: the zipcodes package's, else the records' most common.

    The package's answer is taken from `known` (stored by an earlier rebuild or load) when
    there, else asked of the package, whose first question loads its whole table (most of a
    second). Returns the places and the package's answers to the questions asked.
    """
    asked = [code for code in zip_codes if code not in known]
    found = zip_places(asked) if asked else {}
    places = {code: place for code in zip_codes if (place := known.get(code)) is not None}
    places.update(found)
    unknown = [code for code in zip_codes if code not in places]
    if unknown:
        places.update(most_common_places(await stats.place_counts(unknown)))
    return places, [(code, *found.get(code, (None, None))) for code in asked]


def most_common_places(rows: Iterable[PlaceCount]) -> dict[str, tuple[str, str]]:
    """Per ZIP, the most common (city, state) of its records.

    Cities are counted by `city_key`, so "Ames" and "AMES" are one city; the spelling shown
    is that city's most common one. Ties go to the alphabetically first key and spelling.
    """
    by_zip: dict[str, dict[tuple[str, str], dict[str, int]]] = {}
    for row in rows:
        spellings = by_zip.setdefault(row.zip_code, {}).setdefault(
            (city_key(row.city), row.state), {}
        )
        spellings[row.city] = spellings.get(row.city, 0) + int(row.records)
    places: dict[str, tuple[str, str]] = {}
    for zip_code, cities in by_zip.items():
        key = min(cities, key=lambda k: (-sum(cities[k].values()), k))
        spelling = min(cities[key], key=lambda c: (-cities[key][c], c))
        places[zip_code] = (spelling, key[1])
    return places

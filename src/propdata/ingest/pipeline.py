"""What every data load is: the records loaded, then the estimates, then the market statistics.

The command line (`propdata data demo|generate|import|rebuild`), the benchmark's data build
and the tests all go through `run` (or `rebuild` alone), so a store is never left with new
records and old estimates or statistics by one caller forgetting a step.

    outcome = await run(db, [synthetic_source(100_000, seed=1, as_of=today)], today)
    outcome.reports[0].inserted, outcome.estimates.values, outcome.markets
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from propdata.ingest import demo, readers, synthetic
from propdata.ingest.loader import Item, LoadReport, load
from propdata.kit.db import Database
from propdata.markets.builder import rebuild as rebuild_markets
from propdata.properties.repository import PropertyRepository
from propdata.valuation.rebuild import RebuildSummary, rebuild_valuations

Advance = Callable[[int], None]


class Tracker(Protocol):
    """Shows a long job's progress (the command line's bars); `task` starts one bar."""

    def task(self, description: str, total: int | None) -> Advance: ...


@dataclass(frozen=True, slots=True)
class Source:
    """Records to load and where they go."""

    description: str
    """What a progress bar and a summary call it: "Ames, IA (real)"."""
    origin: str
    """The origin the records are stored under ("ames", "synthetic", "import")."""
    items: Iterable[Item]
    total: int | None
    """How many items to expect, when known (for the progress bar)."""
    replace: bool
    """Remove every stored record of `origin` first (a rebuilt demo or synthetic set)."""


@dataclass(slots=True)
class Outcome:
    """What a pipeline run did, and how long each phase took."""

    reports: list[LoadReport] = field(default_factory=list)
    """One per source, in order."""
    names: list[str] = field(default_factory=list)
    """The sources' descriptions, in the same order."""
    estimates: RebuildSummary | None = None
    markets: int | None = None
    """ZIP codes with statistics; None when no rebuild ran (the load changed nothing)."""
    seconds: dict[str, float] = field(default_factory=dict)
    """Wall time of each phase: "load", "estimates", "markets"."""


async def run(
    db: Database, sources: Sequence[Source], as_of: dt.date, tracker: Tracker | None = None
) -> Outcome:
    """Load every source, each in its own transaction, then rebuild the estimates and the
    market statistics when any load changed the store."""
    outcome = Outcome()
    start = time.perf_counter()
    for source in sources:
        advance = tracker.task(source.description, source.total) if tracker else None
        report = await load(
            db, source.items, origin=source.origin, as_of=as_of, progress=advance,
            replace_origin=source.replace,
        )  # fmt: skip
        outcome.reports.append(report)
        outcome.names.append(source.description)
    outcome.seconds["load"] = time.perf_counter() - start
    changed = any(report.changed for report in outcome.reports)
    # ... or an earlier load died between its commit and its rebuild: finish that too.
    if changed or await PropertyRepository(db).rebuild_pending():
        await rebuild(db, as_of, tracker, outcome)
    return outcome


async def rebuild(
    db: Database, as_of: dt.date, tracker: Tracker | None = None, outcome: Outcome | None = None
) -> Outcome:
    """Recompute the value and rent estimates, then the market statistics, as of `as_of`,
    and clear the mark of a load whose rebuild had not run (unless a load came meanwhile)."""
    outcome = outcome or Outcome()
    properties = PropertyRepository(db)
    pending = await properties.rebuild_pending()
    start = time.perf_counter()
    advance: Advance | None = None
    if tracker is not None:
        # Every property is read once and written once.
        total = 2 * await properties.count()
        advance = tracker.task("value and rent estimates", total or None)
    outcome.estimates = await rebuild_valuations(db, as_of, progress=advance)
    outcome.seconds["estimates"] = time.perf_counter() - start
    start = time.perf_counter()
    advance = tracker.task("market statistics", None) if tracker else None
    outcome.markets = await rebuild_markets(db, as_of, progress=advance)
    outcome.seconds["markets"] = time.perf_counter() - start
    if pending is not None:
        await properties.clear_rebuild_pending(pending)
    return outcome


# -- the sources the command line offers ------------------------------------------------------


def demo_sources(properties: int, seed: int, as_of: dt.date) -> list[Source]:
    """The demo set: the real Ames and Grinnell sales, then `properties` synthetic ones."""
    return [
        Source("Ames, IA (real)", "ames", demo.ames_records(as_of), 2_930, replace=True),
        Source("Grinnell, IA (real)", "grinnell", demo.grinnell_records(as_of), 929, replace=True),
        synthetic_source(properties, seed, as_of),
    ]


def synthetic_source(properties: int, seed: int, as_of: dt.date) -> Source:
    """`properties` synthetic records replacing the stored synthetic set."""
    return Source(
        "synthetic national set", "synthetic",
        synthetic.generate_apart(properties, seed, as_of),
        properties, replace=True,
    )  # fmt: skip


def file_source(path: Path, as_of: dt.date) -> Source:
    """A CSV (API shape or RESO) or JSON Lines file; raises ValueError for an unreadable one."""
    return Source(path.name, "import", readers.read_file(path, as_of), None,
                  replace=False)  # fmt: skip

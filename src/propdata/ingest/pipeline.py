"""What every data load is: the records loaded, then the estimates, then the market statistics.

The command line (`propdata data demo|generate|import|rebuild`), the benchmark's data build
and the tests all go through `run` (or `rebuild` alone), so a store is never left with new
records and old estimates or statistics by one caller forgetting a step.

A load that changes little is finished incrementally in its own transaction (`finish`): its
new and changed records are valued with the stored models and the statistics of the ZIP
codes it touched are recomputed, committed with the records as one data version.
`refit_reason` says when a load is finished by a full `rebuild` after its commit instead.

    outcome = await run(db, [synthetic_source(100_000, seed=1, as_of=today)], today)
    outcome.reports[0].inserted, outcome.estimates.values, outcome.markets
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import multiprocessing
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from propdata.ingest import readers, synthetic
from propdata.ingest.loader import Committed, Item, LoadReport, load
from propdata.kit.db import Database, address, optimistic
from propdata.markets import builder as market_builder
from propdata.markets.builder import MarketRows
from propdata.markets.builder import rebuild as rebuild_markets
from propdata.properties.repository import PropertyRepository
from propdata.valuation import rebuild as valuation
from propdata.valuation.rebuild import RebuildSummary, rebuild_valuations
from propdata.valuation.stored import MarketCache

log = logging.getLogger(__name__)

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
    meta: Mapping[str, str] | None = None
    """Written to the store's `meta` table in the load's transaction (`loader.load`)."""
    committed: Committed | None = None
    """Awaited in the load's transaction with its report (`loader.load`)."""
    listing_feed: bool = False
    """The records are RESO listings, dated by arithmetic (`loader.load`)."""


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
    valued: int | None = None
    """Records valued with the stored models by the loads finished incrementally, None when
    none was (`markets` then adds up the touched ZIP codes that have statistics, over those
    loads; `estimates` stays None unless a full rebuild followed)."""
    refit: str | None = None
    """Why a load that changed the store was finished by a full rebuild."""


async def run(
    db: Database,
    sources: Sequence[Source],
    as_of: dt.date,
    tracker: Tracker | None = None,
    *,
    refit_share: float | None = None,
    defer_markets: bool = False,
    blocks: MarketCache | None = None,
) -> Outcome:
    """Load every source, each in its own transaction, and bring the estimates and the
    market statistics up to date when any load changed the store: incrementally, in each
    load's own transaction (`finish`, with `defer_markets` and the training `blocks` kept
    between loads), or by a full `rebuild` after them when `refit_reason` gives one.

    `refit_share`: the share of REFIT_SHARE's rule (None: REFIT_SHARE itself); `math.inf`
    leaves the refit to the other reasons (a follower's: the day's first commit refits)."""
    outcome = Outcome()
    earlier = await PropertyRepository(db).rebuild_pending()
    share = REFIT_SHARE if refit_share is None else refit_share

    async def finished(report: LoadReport) -> bool:
        # The load's records, their estimates and statistics commit together: one data
        # version, never a record served without its estimate. Once a full rebuild is due
        # the loads leave their mark for it.
        if earlier is not None or outcome.refit is not None:
            return False
        outcome.refit = await refit_reason(db, [report], as_of, share)
        if outcome.refit is not None:
            return False
        await finish(db, report, as_of, outcome, defer_markets=defer_markets, blocks=blocks)
        return True

    start = time.perf_counter()
    for source in sources:
        advance = tracker.task(source.description, source.total) if tracker else None
        report = await load(
            db, source.items, origin=source.origin, as_of=as_of, progress=advance,
            replace_origin=source.replace, meta=source.meta, committed=source.committed,
            finish=finished, listing_feed=source.listing_feed,
        )  # fmt: skip
        outcome.reports.append(report)
        outcome.names.append(source.description)
    outcome.seconds["load"] = (
        time.perf_counter()
        - start
        - sum(outcome.seconds.get(phase, 0.0) for phase in ("estimates", "markets"))
    )
    if earlier is not None:
        # An earlier load died between its commit and its rebuild: what it changed is not
        # known, so everything is recomputed.
        outcome.refit = "an earlier load was not finished"
    if outcome.refit is not None:
        await rebuild(db, as_of, tracker, outcome)
    return outcome


REFIT_SHARE = 0.10
"""A load is finished by a full rebuild (the models refitted) once the records inserted,
updated or removed since the last fit exceed this share of the records it was fitted over.
Below it the stored models stand: docs/import.md, "Live data", gives the reason."""


async def refit_reason(
    db: Database, reports: Sequence[LoadReport], as_of: dt.date, share: float = REFIT_SHARE
) -> str | None:
    """Why these loads must be finished by a full rebuild; None when `live` may finish them.

    A full rebuild when no model is stored, when the stored models or statistics describe
    another day than `as_of` (the valuation date and the statistics' 30-day window move
    with it), or when the records changed since the fit exceed `share` of those it was
    fitted over.
    """
    models = await valuation.stored_models(db)
    if len(models) < 2:
        return "no stored model"
    day = as_of.isoformat()
    if any(model.as_of != day for model in models):
        return f"the stored models were fitted as of {models[0].as_of}, not {day}"
    if await market_builder.stored_as_of(db) - {day}:
        return f"the stored market statistics are not as of {day}"
    records = sum(report.loaded + report.removed for report in reports)
    changed = max(model.changed for model in models) + records
    fitted = models[0].properties
    if changed > share * fitted:
        return (f"{changed:,} records changed since the fit over {fitted:,}"
                f" (more than {share:.0%})")  # fmt: skip
    return None


async def finish(
    db: Database,
    report: LoadReport,
    as_of: dt.date,
    outcome: Outcome,
    *,
    defer_markets: bool = False,
    blocks: MarketCache | None = None,
) -> None:
    """Inside a load's transaction, before its commit: value the records it inserted or
    updated with the stored models, recompute the statistics of the ZIP codes it touched
    (and of those an earlier deferred load left), and count its records against the refit
    rule. `outcome` adds up what was done and how long it took.

    What it stores equals what a full rebuild with the same models gives those records and
    ZIP codes (tests/ingest/test_live.py).

    `defer_markets`: the touched ZIP codes are only named (`markets.builder.defer_zips`),
    their statistics left to `finish_markets` (or the next load that recomputes any), so a
    caller committing many loads in a row recomputes each ZIP code once for all of them.
    """
    ids = list(dict.fromkeys(report.written))
    zips = set(report.zips)
    start = time.perf_counter()
    outcome.valued = (outcome.valued or 0) + await valuation.estimate(db, ids, as_of, blocks)
    if report.removed:
        await valuation.forget_removed(db)
    _took(outcome, "estimates", start)
    start = time.perf_counter()
    if defer_markets:
        await market_builder.defer_zips(db, zips)
    else:
        zips.update(await market_builder.stale(db))
        rows = await market_builder.compute_zips(db, zips, as_of)
        recomputed = await market_builder.replace_zips(db, zips, rows)
        outcome.markets = (outcome.markets or 0) + recomputed
    _took(outcome, "markets", start)
    await valuation.count_changes(db, report.loaded + report.removed)


def _took(outcome: Outcome, phase: str, start: float) -> None:
    outcome.seconds[phase] = outcome.seconds.get(phase, 0.0) + time.perf_counter() - start


async def finish_markets(db: Database, as_of: dt.date) -> int:
    """Recompute the statistics of the ZIP codes deferred loads left (`live`'s
    `defer_markets`), in one transaction that bumps the data version: then they equal a full
    rebuild's. Returns how many ZIP codes were recomputed (0: none was left)."""
    async with db.transaction():
        zips = await market_builder.stale(db)
        if not zips:
            return 0
        rows = await market_builder.compute_zips(db, zips, as_of)
        await market_builder.replace_zips(db, zips, rows)
        await PropertyRepository(db).bump_data_version()
    return len(zips)


async def rebuild(
    db: Database, as_of: dt.date, tracker: Tracker | None = None, outcome: Outcome | None = None
) -> Outcome:
    """Recompute the value and rent estimates, then the market statistics, as of `as_of`,
    and clear the mark of a load whose rebuild had not run (unless a load came meanwhile).

    From APART_FROM properties the two are computed side by side (`_side_by_side`) and
    stored in one transaction; the stored results are the same either way.
    """
    outcome = outcome or Outcome()
    properties = PropertyRepository(db)
    pending = await properties.rebuild_pending()
    count = await properties.count()
    # Every property is read once and written once for the estimates, read once for markets.
    estimates = tracker.task("value and rent estimates", 2 * count or None) if tracker else None
    store = address(db)
    if count >= APART_FROM and store is not None:
        markets = tracker.task("market statistics", count or None) if tracker else None
        await _side_by_side(db, store, as_of, estimates, markets, outcome)
    else:
        start = time.perf_counter()
        outcome.estimates = await rebuild_valuations(db, as_of, progress=estimates)
        outcome.seconds["estimates"] = time.perf_counter() - start
        start = time.perf_counter()
        markets = tracker.task("market statistics", count or None) if tracker else None
        outcome.markets = await rebuild_markets(db, as_of, progress=markets)
        outcome.seconds["markets"] = time.perf_counter() - start
    if pending is not None:
        await properties.clear_rebuild_pending(pending)
    if not any(report.analyzed for report in outcome.reports):
        await properties.optimize()  # the loads since the last rebuild add up (ANALYZE_SHARE)
    return outcome


APART_FROM = 50_000
"""Stored properties from which `rebuild` computes the market statistics in a child process
while this one computes the estimates (below, starting a process costs more than it saves)."""
ATTEMPTS = 3
"""Lock-free passes tried before the side-by-side rebuild computes under the write lock."""


async def _side_by_side(
    db: Database,
    store: str,
    as_of: dt.date,
    estimates: Advance | None,
    markets: Advance | None,
    outcome: Outcome,
) -> None:
    """The estimates computed here while a child process computes the market statistics
    from the same committed data (two cores: the statistics' pure-Python pass no longer
    adds to the wall time), then both stored in one transaction, written only if no load
    committed meanwhile (`kit.db.optimistic`, as each rebuild alone does).

    The two do not depend on each other: the statistics read the records and their
    histories, never the estimates. A child that fails leaves the statistics to be
    computed here, as the one-after-the-other path does.
    """
    start = time.perf_counter()
    seconds: dict[str, float] = {}

    async def compute() -> tuple[valuation.Valuations, MarketRows]:
        child = _MarketsApart(store, as_of, markets)
        try:
            valued = await valuation.compute(db, as_of, estimates)
        except BaseException:
            child.stop()
            raise
        rows = await child.rows()
        seconds["markets"] = child.seconds  # its own wall time, from its start to its rows
        if rows is None:  # the child failed: compute them here
            here = time.perf_counter()
            rows = await market_builder.compute(db, as_of, markets)
            seconds["markets"] = time.perf_counter() - here
        return valued, rows

    async def write(both: tuple[valuation.Valuations, MarketRows]) -> None:
        valued, rows = both
        outcome.estimates = await valuation.write(db, valued, estimates)
        outcome.markets = await market_builder.write(db, rows)

    await optimistic(db, PropertyRepository(db).data_version, compute, write, ATTEMPTS)
    # Each one's own time (they overlap): the estimates' computing, then writing both.
    outcome.seconds["estimates"] = time.perf_counter() - start
    outcome.seconds["markets"] = seconds.get("markets", 0.0)


class _MarketsApart:
    """`markets.builder.compute` in a child process (spawned: the parent has threads),
    reporting progress and then its rows through a pipe."""

    def __init__(self, store: str, as_of: dt.date, progress: Advance | None) -> None:
        context = multiprocessing.get_context("spawn")
        self._receiver, sender = context.Pipe(duplex=False)
        self._child = context.Process(
            target=market_builder.compute_in_child, args=(sender, store, as_of), name="propdata-markets",
            daemon=True,
        )  # fmt: skip
        self._started = time.perf_counter()
        self._child.start()
        sender.close()
        self._progress = progress
        self.seconds = 0.0
        """Wall seconds from the child's start to its rows."""

    async def rows(self) -> MarketRows | None:
        """The child's rows; None when it failed (logged)."""
        try:
            return await asyncio.to_thread(self._collect)
        except Exception:
            log.exception("the market statistics process failed; computing them here")
            return None
        finally:
            self.stop()

    def _collect(self) -> MarketRows:
        while True:
            try:
                kind, value = self._receiver.recv()
            except EOFError:
                raise RuntimeError(
                    f"the process ended without its rows (exit code {self._child.exitcode})"
                ) from None
            if kind == "progress":
                if self._progress is not None:
                    self._progress(value)
            elif kind == "rows":
                self.seconds = time.perf_counter() - self._started
                rows: MarketRows = value
                return rows
            else:
                raise RuntimeError(value)

    def stop(self) -> None:
        self._receiver.close()
        if self._child.is_alive():
            self._child.terminate()
        self._child.join()


# -- the sources the command line offers ------------------------------------------------------


def demo_sources(properties: int, seed: int, as_of: dt.date) -> list[Source]:
    """The demo set: the real Ames, Grinnell, Sacramento and Durham sales, then `properties`
    synthetic ones."""
    from propdata.ingest import demo  # its data sets' reader, pandas, takes 0.5 s to import

    return [
        Source("Ames, IA (real)", "ames", demo.ames_records(as_of), 2_930, replace=True),
        Source(
            "Sacramento, CA (real)", "sacramento", demo.sacramento_records(as_of), 932, replace=True
        ),
        Source("Durham, NC (real)", "durham", demo.durham_records(as_of), 98, replace=True),
        Source(
            "Grinnell, IA (real)",
            "grinnell",
            demo.grinnell_records(as_of),
            len(demo.grinnell_houses()),
            replace=True,
        ),
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
                  replace=False, listing_feed=readers.is_reso(path))  # fmt: skip

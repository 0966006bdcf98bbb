"""What every `propdata` command shares: the typer apps, the store a command runs against,
the progress bars of long jobs, and the live line and signals of commands that run until
stopped."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, Self, TypeVar

import typer
from rich.console import Console
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from propdata.config import ConfigError, Settings, load_settings
from propdata.kit.db import Database, StoreUnavailable, connect
from propdata.migrations.schema import initialised, migrate, migrate_accounts

if TYPE_CHECKING:
    from propdata.valuation.stored import MarketCache

app = typer.Typer(
    help="US property records and ZIP-level market statistics over HTTP.", no_args_is_help=True
)
keys_app = typer.Typer(help="Create, list, change and revoke API keys.", no_args_is_help=True)
accounts_app = typer.Typer(
    help="The portal's accounts: create operators, list, disable.", no_args_is_help=True
)
data_app = typer.Typer(help="Build, load and generate the data set.", no_args_is_help=True)
sources_app = typer.Typer(
    help="RESO Web API feeds that `propdata data replicate` follows: add, list, remove.",
    no_args_is_help=True,
)
app.add_typer(keys_app, name="keys")
app.add_typer(data_app, name="data")
app.add_typer(accounts_app, name="accounts")
app.add_typer(sources_app, name="sources")
err = Console(stderr=True)
log = logging.getLogger("propdata")
T = TypeVar("T")


def settings_or_exit() -> Settings:
    try:
        return load_settings()
    except ConfigError as exc:
        err.print(f"[red]configuration error:[/red] {exc}")
        raise typer.Exit(2) from exc


class NoStore(Exception):
    """The store a command that only reads or manages was pointed at was never made."""


def no_store(settings: Settings) -> typer.Exit:
    err.print(
        f"[red]error:[/red] there is no store at {settings.store_label}, and this command does"
        " not make one. Point PROPDATA_DATABASE_URL at the store your server uses (`make run`"
        " uses var/propdata.db in the repository's folder), or make a store with"
        " `propdata data demo` or `propdata data import FILE`.",
        soft_wrap=True,  # a path broken over two lines cannot be copied
    )
    return typer.Exit(2)


def check_store(settings: Settings, *, create: bool, announce: bool = True) -> None:
    """Say which store a command uses; refuse a missing embedded store unless `create`."""
    if announce:
        err.print(f"store: {settings.store_label}", highlight=False, soft_wrap=True)
    if not create and settings.store_file is not None and not settings.store_file.exists():
        raise no_store(settings)


async def require_made(settings: Settings) -> None:
    """Raise NoStore when a PostgreSQL store was never migrated (an embedded one: its file
    is checked before anything opens it)."""
    if settings.store_file is not None:
        return
    db = await connect(settings.database_url)
    try:
        if not await initialised(db):
            raise NoStore
    finally:
        await db.close()


def run(
    work: Callable[[Database, Settings], Awaitable[T]],
    *,
    create: bool = False,
    announce: bool = True,
) -> T:
    """Run `work` against the data store. Only commands that load data (`create`) may make
    a store that does not exist: a key made in a store no server reads is lost."""
    settings = settings_or_exit()
    check_store(settings, create=create, announce=announce)

    async def main() -> T:
        db = await connect(settings.database_url)
        try:
            if not create and not await initialised(db):
                raise NoStore
            await migrate(db)
            return await work(db, settings)
        finally:
            await db.close()

    try:
        return asyncio.run(main())
    except NoStore:
        raise no_store(settings) from None
    except (sqlite3.DatabaseError, StoreUnavailable, OSError) as exc:
        # A full disk, a store that cannot be reached or written: a sentence, not a
        # traceback. Every write is one transaction, so nothing of the failed step stays.
        err.print(f"[red]error:[/red] the store could not be used: {exc}. Nothing of this"
                  " step was stored; the data is as it was before it.")  # fmt: skip
        raise typer.Exit(1) from exc


def training_blocks(settings: Settings) -> MarketCache:
    """A cache of the stored models' decoded training blocks, within
    PROPDATA_VALUATION_CACHE_MB, for a command that loads again and again to keep between
    its loads (`data replicate`, `data import --follow`)."""
    from propdata.valuation.stored import MarketCache

    return MarketCache(settings.valuation_cache_bytes)


def progress_bars() -> Progress:
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err, transient=False,
    )  # fmt: skip


class LiveLine:
    """A running command's progress on standard error: a live line on a terminal, a plain
    line every PLAIN_EVERY seconds otherwise. Used as a context manager::

        with LiveLine("feed", "feed: asking the feed") as view:
            view.show("feed: 10 records")
    """

    PLAIN_EVERY = 5.0

    def __init__(self, name: str, waiting: str) -> None:
        self.name, self.waiting = name, waiting
        self.live: Live | None = None
        self.printed = time.monotonic()

    def __enter__(self) -> Self:
        if err.is_terminal:
            self.live = Live(Text(self.waiting), console=err, refresh_per_second=4, transient=False)
            self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.__exit__(None, None, None)

    def say(self, line: str) -> None:
        """Print a line of its own, above the live line."""
        err.print(line, highlight=False, soft_wrap=True, markup=False)

    def show(self, line: str) -> None:
        """Make `line` the live line (a plain line at most every PLAIN_EVERY seconds)."""
        if self.live is not None:
            self.live.update(Text(line))
        elif time.monotonic() - self.printed >= self.PLAIN_EVERY:
            err.print(line, highlight=False, soft_wrap=True)
            self.printed = time.monotonic()


@contextlib.contextmanager
def stopped_by_signals(stop: threading.Event) -> Iterator[None]:
    """Set `stop` at the first SIGINT or SIGTERM (the work finishes the step in hand); exit at
    once at the second, which rolls back an open transaction. The handlers are restored."""

    def on_signal(signum: int, _: object) -> None:
        if stop.is_set():
            show_cursor = b"\x1b[?25h" if err.is_terminal else b""  # a live line hid it
            os.write(2, show_cursor + b"stopped at once; the commit under way is rolled back\n")
            os._exit(128 + signum)
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class Bars:
    """The pipeline's progress as rich bars on standard error."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    def task(self, description: str, total: int | None) -> Callable[[int], None]:
        task = self.progress.add_task(description, total=total)
        return lambda n: self.progress.advance(task, n)


def pipeline_step(
    work: Callable[[Database, Settings, Bars], Awaitable[Any]], *, create: bool = False
) -> Any:
    """Run a pipeline step with progress bars; print what it did."""

    async def go(db: Database, settings: Settings) -> Any:
        with progress_bars() as progress:
            outcome = await work(db, settings, Bars(progress))
        summary(outcome)
        produced = await produce_events(db, settings)
        if produced:
            err.print(f"Events: {produced:,} produced for saved searches.")
        return outcome

    return run(go, create=create)


async def produce_events(db: Database, settings: Settings) -> int:
    """The saved searches' events of what the step committed (nothing to do, and the keys'
    store left closed, when no saved search watches the data): how many were produced."""
    from propdata.events.repository import ImageRepository

    if not await ImageRepository(db).pending():
        return 0
    # Only when a saved search watches the data: the producer brings the search's parser
    # and matching code with it (no web framework: tests/saved_searches/test_filters.py).
    from propdata.events.produce import produce

    accounts = db if settings.accounts_url == settings.database_url else None
    if accounts is None:
        accounts = await connect(settings.accounts_url)
    try:
        await migrate_accounts(accounts)
        produced = await produce(db, accounts)
    finally:
        if accounts is not db:
            await accounts.close()
    return produced


def summary(outcome: Any) -> None:
    for line in summary_lines(outcome):
        err.print(line)


def summary_lines(outcome: Any) -> list[str]:
    """What a pipeline step did, a sentence a line."""
    lines = [f"{what}: {report.inserted} new, {report.updated} updated,"
             f" {report.unchanged} unchanged, {len(report.rejects)} rejected."
             for report, what in zip(outcome.reports, outcome.names, strict=True)]  # fmt: skip
    if outcome.estimates is not None:
        e = outcome.estimates
        lines.append(f"Estimates: {e.values:,} values and {e.rents:,} rents, learnt from"
                     f" {e.sales:,} sales and {e.rentals:,} rentals.")  # fmt: skip
    if getattr(outcome, "valued", None) is not None:
        lines.append(f"Estimates: {outcome.valued:,} records valued with the stored models.")
        lines.append(f"Market statistics recomputed for the {outcome.markets} ZIP codes touched.")
    elif outcome.markets is not None:
        lines.append(f"Market statistics for {outcome.markets} ZIP codes.")
    return lines


def finish_interrupted_load(settings: Settings) -> None:
    """Rebuild what a load that died after its commit left undone, before serving. Said in
    the server's log (`kit.logs`, as `serve` configured it), never on the console."""
    from propdata.properties.repository import PropertyRepository

    async def main() -> None:
        db = await connect(settings.database_url)  # a server may start on a store of its own
        try:
            await migrate(db)
            if not await PropertyRepository(db).rebuild_pending():
                return  # the usual case: the pipeline (it imports pandas, 0.3 s) is not needed
            from propdata.ingest import pipeline

            log.warning("a data load was interrupted before its rebuild; finishing it first")
            for line in summary_lines(await pipeline.rebuild(db, settings.today())):
                log.info(line)
            produced = await produce_events(db, settings)
            if produced:
                log.info("events: %d produced for saved searches", produced)
        finally:
            await db.close()

    try:
        asyncio.run(main())
    except (sqlite3.DatabaseError, StoreUnavailable, OSError) as exc:
        log.error("the store could not be used: %s", exc)
        raise typer.Exit(1) from exc

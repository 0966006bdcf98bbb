"""`propdata sources` and `propdata data replicate`: RESO Web API feeds (docs/replication.md)."""

from __future__ import annotations

import csv
import os
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console

from propdata.cli.base import (
    LiveLine,
    data_app,
    err,
    run,
    sources_app,
    stopped_by_signals,
    training_blocks,
)
from propdata.config import Settings
from propdata.kit.db import Database

if TYPE_CHECKING:
    from propdata.replication.schemas import Auth, SourceConfig
    from propdata.replication.service import PassTotals

T = TypeVar("T")

_out = Console()


def _fail(exc: Exception, code: int = 2) -> typer.Exit:
    message = getattr(exc, "message", None) or str(exc)
    err.print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True, markup=True)
    return typer.Exit(code)


def _config(
    name: str, url: str, token_env: str | None, oauth_token_url: str | None,
    client_id: str | None, client_secret_env: str | None, scope: str | None,
    filter_: str | None, page_size: int, requests_per_hour: int, overlap: int,
    entity_events: str | None = None,
) -> SourceConfig:  # fmt: skip
    """The source `sources add` describes, every option checked (InvalidParameter names it)."""
    from propdata.errors import InvalidParameter
    from propdata.replication import schemas as s

    oauth = [oauth_token_url, client_id, client_secret_env]
    if token_env is not None and any(v is not None for v in [*oauth, scope]):
        raise InvalidParameter(
            "--token-env", "--token-env (a static token) and the --oauth-* options exclude each other"
        )  # fmt: skip
    auth: Auth
    if token_env is not None:
        auth = s.Auth(kind="token", token_env=s.check_env(token_env, "--token-env"))
    elif any(v is not None for v in oauth):
        names = ("--oauth-token-url", "--client-id", "--client-secret-env")
        missing = [n for n, v in zip(names, oauth, strict=True) if v is None]
        if missing:
            raise InvalidParameter(
                missing[0], f"OAuth2 client credentials need {', '.join(missing)}"
            )
        assert oauth_token_url is not None and client_id is not None
        assert client_secret_env is not None
        if not client_id.strip() or len(client_id) > 256 or any(ord(c) < 33 for c in client_id):
            raise InvalidParameter("--client-id", "--client-id must be 1-256 visible characters")
        if scope is not None and (len(scope) > 512 or any(ord(c) < 32 for c in scope)):
            raise InvalidParameter("--scope", "--scope must be one line of at most 512 characters")
        auth = s.Auth(
            kind="oauth", token_url=s.check_url(oauth_token_url, "--oauth-token-url"),
            client_id=client_id, secret_env=s.check_env(client_secret_env, "--client-secret-env"),
            scope=scope,
        )  # fmt: skip
    else:
        if scope is not None:
            raise InvalidParameter("--scope", "--scope goes with the --oauth-* options")
        auth = s.Auth()
    return s.SourceConfig(
        name=s.check_name(name), url=s.check_url(url), auth=auth,
        filter=None if filter_ is None else s.check_filter(filter_),
        page_size=s.check_range(page_size, s.PAGE_SIZE, "--page-size"),
        requests_per_hour=s.check_range(requests_per_hour, s.REQUESTS_PER_HOUR,
                                        "--requests-per-hour"),
        overlap=s.check_range(overlap, s.OVERLAP, "--overlap"),
        events_url=None if entity_events is None else s.check_events_url(entity_events, url),
    )  # fmt: skip


@sources_app.command("add")
def sources_add(
    name: Annotated[str, typer.Argument(help="The source's name: its records' ids are NAME-ListingKey.")],
    url: Annotated[str, typer.Argument(help="The Property collection: https://host/odata/Property.")],
    token_env: Annotated[str | None, typer.Option("--token-env", help="Variable holding a static bearer token.")] = None,
    oauth_token_url: Annotated[str | None, typer.Option("--oauth-token-url", help="OAuth2 token URL (client credentials).")] = None,
    client_id: Annotated[str | None, typer.Option("--client-id", help="OAuth2 client id.")] = None,
    client_secret_env: Annotated[str | None, typer.Option("--client-secret-env", help="Variable holding the OAuth2 client secret.")] = None,
    scope: Annotated[str | None, typer.Option("--scope", help="OAuth2 scope, when the feed asks for one.")] = None,
    filter_: Annotated[str | None, typer.Option("--filter", help="OData $filter ANDed to every request.")] = None,
    page_size: Annotated[int, typer.Option("--page-size", help="Records asked per page ($top).")] = 1_000,
    requests_per_hour: Annotated[int, typer.Option("--requests-per-hour", help="At most this many requests an hour (and 2 a second).")] = 7_200,
    overlap: Annotated[int, typer.Option("--overlap", help="Seconds before the watermark each pass asks again from.")] = 300,
    entity_events: Annotated[str | None, typer.Option("--entity-events", help="The feed's EntityEvent collection (RESO RCP-27, same host): follow its events instead of ModificationTimestamp.")] = None,
) -> None:  # fmt: skip
    """Add a RESO Web API source (secrets only by the names of environment variables)."""
    from propdata.errors import ServiceError
    from propdata.replication.service import SourceService

    try:
        config = _config(name, url, token_env, oauth_token_url, client_id, client_secret_env,
                         scope, filter_, page_size, requests_per_hour, overlap,
                         entity_events)  # fmt: skip
    except ServiceError as exc:
        raise _fail(exc) from exc

    async def work(db: Database, settings: Settings) -> None:
        await SourceService(db).add(config)

    try:
        run(work, create=True)
    except ServiceError as exc:
        raise _fail(exc) from exc
    for variable in (config.auth.token_env, config.auth.secret_env):
        if variable is not None and not os.environ.get(variable):
            err.print(f"note: {variable} is not set here; set it where `propdata data replicate"
                      f" {config.name}` runs.", highlight=False, soft_wrap=True)  # fmt: skip
    err.print(f"Source {config.name} added; replicate it with `propdata data replicate"
              f" {config.name}`.", highlight=False, soft_wrap=True)  # fmt: skip


@sources_app.command("list")
def sources_list() -> None:
    """List the sources: URL, watermark, last pass, records, rejects, state."""
    from propdata.replication.service import SourceService, describe

    async def work(db: Database, settings: Settings) -> list[dict[str, Any]]:
        return [describe(s) for s in await SourceService(db).all()]

    rows = run(work, announce=False)
    if not rows:
        err.print("No sources; add one with `propdata sources add NAME URL`.")
        return
    for r in rows:  # a block a source: URLs fit no table on a narrow terminal
        _out.print(f"{r['name']}  {r['url']}", highlight=False, soft_wrap=True, markup=False)
        _out.print(
            f"  watermark {r['watermark'] or '-'}, last pass {r['lastPass'] or '-'},"
            f" records {r['records']:,}, removed {r['removed']:,}, rejects {r['rejects']:,},"
            f" state {r['state']}", highlight=False, soft_wrap=True, markup=False,
        )  # fmt: skip
        _out.print(f"  follows {r['follows']}", highlight=False, soft_wrap=True, markup=False)
        filtered = f"; filter {r['filter']}" if r["filter"] else ""
        _out.print(f"  credentials: {r['credentials']}{filtered}", highlight=False,
                   soft_wrap=True, markup=False)  # fmt: skip


def _unless_replicated(name: str, work: Callable[[Database, Settings], Awaitable[T]]) -> T:
    """Run `work` on the store; a bad input or a source being replicated ends the command
    with the message (status 2)."""
    from propdata.errors import ServiceError
    from propdata.replication.service import LeaseHeld

    try:
        return run(work)
    except ServiceError as exc:
        raise _fail(exc) from exc
    except LeaseHeld as exc:
        raise _fail(ValueError(f"source {name} is being replicated; stop that first")) from exc


@sources_app.command("set")
def sources_set(
    name: Annotated[str, typer.Argument(help="The source to change.")],
    entity_events: Annotated[str | None, typer.Option("--entity-events", help="Follow this EntityEvent collection (same host), from a catch-up pass by timestamp.")] = None,
    no_entity_events: Annotated[bool, typer.Option("--no-entity-events", help="Follow ModificationTimestamp again, from the timestamp watermark.")] = False,
    page_size: Annotated[int | None, typer.Option("--page-size", help="Records asked per page ($top).")] = None,
    requests_per_hour: Annotated[int | None, typer.Option("--requests-per-hour", help="At most this many requests an hour (and 2 a second).")] = None,
    overlap: Annotated[int | None, typer.Option("--overlap", help="Seconds before the watermark each pass asks again from.")] = None,
) -> None:  # fmt: skip
    """Change how a source is followed (events or timestamps) and its manners; its records
    and watermark stay."""
    from propdata.errors import InvalidParameter, ServiceError
    from propdata.replication import schemas as s
    from propdata.replication.service import KEEP, Keep, SourceService, describe

    try:
        if entity_events is not None and no_entity_events:
            raise InvalidParameter("--entity-events", "--entity-events and --no-entity-events"
                                   " exclude each other")  # fmt: skip
        checked = (
            None if page_size is None else s.check_range(page_size, s.PAGE_SIZE, "--page-size"),
            None if requests_per_hour is None
            else s.check_range(requests_per_hour, s.REQUESTS_PER_HOUR, "--requests-per-hour"),
            None if overlap is None else s.check_range(overlap, s.OVERLAP, "--overlap"),
        )  # fmt: skip
    except ServiceError as exc:
        raise _fail(exc) from exc

    async def work(db: Database, settings: Settings) -> s.Source:
        service = SourceService(db)
        events: str | Keep | None = None if no_entity_events else KEEP
        if entity_events is not None:
            events = s.check_events_url(entity_events, (await service.get(name)).config.url)
        return await service.change(name, events, *checked)

    changed = _unless_replicated(name, work)
    config = changed.config
    err.print(f"Source {name} follows {describe(changed)['follows']}; page size"
              f" {config.page_size:,}, at most"
              f" {config.requests_per_hour:,} requests an hour, overlap {config.overlap} s.",
              highlight=False, soft_wrap=True)  # fmt: skip


@sources_app.command("remove")
def sources_remove(
    name: Annotated[str, typer.Argument(help="The source to remove.")],
    delete_records: Annotated[bool, typer.Option("--delete-records", help="Also remove its records from the store.")] = False,
) -> None:  # fmt: skip
    """Remove a source (and, with --delete-records, its records, as removals)."""
    from propdata.replication.service import SourceService

    async def work(db: Database, settings: Settings) -> int:
        return await SourceService(db).remove(name, settings.today(), delete_records=delete_records)

    removed = _unless_replicated(name, work)
    tail = f" and {removed:,} of its records" if delete_records else ""
    err.print(f"Source {name}{tail} removed.", highlight=False, soft_wrap=True)


@data_app.command("replicate")
def data_replicate(
    name: Annotated[str, typer.Argument(help="The source (see `propdata sources list`).")],
    every: Annotated[int | None, typer.Option("--every", min=1, help="Seconds between passes; without it, one pass.")] = None,
    rejects: Annotated[Path | None, typer.Option("--rejects", help="Where rejected records are added (default NAME.rejects.csv).")] = None,
    wait: Annotated[bool, typer.Option("--wait", help="Wait while another replicator of the source runs, instead of exiting.")] = False,
) -> None:  # fmt: skip
    """Replicate a RESO Web API source into the store: one pass, or one every --every seconds
    until SIGINT/SIGTERM (which finish the page in hand)."""
    from propdata.errors import ServiceError
    from propdata.replication.client import FeedError
    from propdata.replication.service import LeaseHeld, PassTotals, Replicator

    stop = threading.Event()
    target = rejects if rejects is not None else Path(f"{name}.rejects.csv")

    async def work(db: Database, settings: Settings) -> PassTotals:
        import asyncio

        replicator = Replicator(db, name, os.environ, settings.today, should_stop=stop.is_set,
                                blocks=training_blocks(settings))  # fmt: skip
        totals = PassTotals()
        with _ReplicateView(name, target) as view:
            while not stop.is_set():
                try:
                    await replicator.run_pass(totals, view.page)
                except LeaseHeld:
                    if not wait:
                        raise
                    view.say(f"{name}: another replicator holds the source; waiting")
                    await _pause(stop, 5.0, asyncio.sleep)
                    continue
                except FeedError as exc:
                    if every is None:
                        raise
                    view.say(f"{exc}; trying again in {every} s from the watermark")
                if every is None:
                    break
                await _pause(stop, float(every), asyncio.sleep)
        return totals

    try:
        with stopped_by_signals(stop):
            totals = run(work, create=True)
    except ServiceError as exc:
        raise _fail(exc) from exc
    except LeaseHeld as exc:
        raise _fail(ValueError(f"source {name} is being replicated by another process (it"
                               " holds the lease); exiting. --wait waits for it."), 3) from exc  # fmt: skip
    except FeedError as exc:
        raise _fail(exc, 1) from exc
    err.print(_summary(name, totals), highlight=False, soft_wrap=True)
    if totals.rejected:
        err.print(f"Rejected records are in {target}.", highlight=False, soft_wrap=True)


async def _pause(stop: threading.Event, seconds: float, sleep: Any) -> None:
    deadline = time.monotonic() + seconds
    while not stop.is_set() and time.monotonic() < deadline:
        await sleep(min(0.2, max(0.0, deadline - time.monotonic())))


def _summary(name: str, totals: PassTotals) -> str:
    return (f"{name}: {totals.read:,} records read in {totals.pages:,} pages ({totals.inserted:,}"
            f" new, {totals.updated:,} updated, {totals.unchanged:,} unchanged, {totals.removed:,}"
            f" removed, {totals.rejected:,} rejected), {totals.rate():,.0f} records/s, watermark"
            f" {totals.watermark.shown() or '-'}")  # fmt: skip


class _ReplicateView(LiveLine):
    """`data replicate`'s progress: the pass's totals as the live line, each page's rejects
    into the rejects file."""

    def __init__(self, name: str, target: Path) -> None:
        super().__init__(name, f"{name}: asking the feed")
        self.target = target

    def page(self, totals: PassTotals) -> None:
        if totals.rejects:
            fresh = not self.target.exists() or self.target.stat().st_size == 0
            with self.target.open("a", encoding="utf-8", newline="") as handle:
                writer = csv.writer(handle)
                if fresh:
                    writer.writerow(["id", "reason"])
                for r in totals.rejects:
                    writer.writerow([r.id or "", r.reason])
        self.show(_summary(self.name, totals))

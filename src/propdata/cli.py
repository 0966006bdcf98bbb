"""The `propdata` command: serve, keys, data."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from propdata.config import ConfigError, Settings, load_settings
from propdata.kit import crypto
from propdata.kit.db import Database, StoreUnavailable, connect
from propdata.migrations.schema import initialised, migrate
from propdata.plans import BY_NAME, NAMES, choice

if TYPE_CHECKING:
    # Imported where used: `propdata serve` needs neither, and they cost its start-up
    # (Litestar, Argon2) about 0.35 s before the workers are even started.
    from propdata.accounts.keys import KeyService
    from propdata.accounts.service import AccountService

app = typer.Typer(
    help="US property records and ZIP-level market statistics over HTTP.", no_args_is_help=True
)
keys_app = typer.Typer(help="Create, list, change and revoke API keys.", no_args_is_help=True)
accounts_app = typer.Typer(
    help="The portal's accounts: create operators, list, disable.", no_args_is_help=True
)
data_app = typer.Typer(help="Build, load and generate the data set.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")
app.add_typer(data_app, name="data")
app.add_typer(accounts_app, name="accounts")
err = Console(stderr=True)
T = TypeVar("T")


def _settings() -> Settings:
    try:
        return load_settings()
    except ConfigError as exc:
        err.print(f"[red]configuration error:[/red] {exc}")
        raise typer.Exit(2) from exc


class NoStore(Exception):
    """The store a command that only reads or manages was pointed at was never made."""


def _no_store(settings: Settings) -> typer.Exit:
    err.print(
        f"[red]error:[/red] there is no store at {settings.store_label}, and this command does"
        " not make one. Point PROPDATA_DATABASE_URL at the store your server uses (`make run`"
        " uses var/propdata.db in the repository's folder), or make a store with"
        " `propdata data demo` or `propdata data import FILE`.",
        soft_wrap=True,  # a path broken over two lines cannot be copied
    )
    return typer.Exit(2)


def _check_store(settings: Settings, *, create: bool, announce: bool = True) -> None:
    """Say which store a command uses; refuse a missing embedded store unless `create`."""
    if announce:
        err.print(f"store: {settings.store_label}", highlight=False, soft_wrap=True)
    if not create and settings.store_file is not None and not settings.store_file.exists():
        raise _no_store(settings)


async def _require_made(settings: Settings) -> None:
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


def _run(
    work: Callable[[Database, Settings], Awaitable[T]],
    *,
    create: bool = False,
    announce: bool = True,
) -> T:
    """Run `work` against the data store. Only commands that load data (`create`) may make
    a store that does not exist: a key made in a store no server reads is lost."""
    settings = _settings()
    _check_store(settings, create=create, announce=announce)

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
        raise _no_store(settings) from None
    except (sqlite3.DatabaseError, StoreUnavailable, OSError) as exc:
        # A full disk, a store that cannot be reached or written: a sentence, not a
        # traceback. Every write is one transaction, so nothing of the failed step stays.
        err.print(f"[red]error:[/red] the store could not be used: {exc}. Nothing of this"
                  " step was stored; the data is as it was before it.")  # fmt: skip
        raise typer.Exit(1) from exc


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err, transient=False,
    )  # fmt: skip


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    workers: Annotated[int, typer.Option(min=1, help="Worker processes.")] = 1,
) -> None:
    """Serve the API (uvicorn with uvloop and httptools)."""
    from propdata.kit import multiproc
    from propdata.kit.serving import server
    from propdata.kit.serving.limits import ClientLimits

    settings = _settings()
    _finish_interrupted_load()
    # The workers share the host's memory budgets (the embedded cache's: config.cache_mb).
    os.environ["PROPDATA_WORKERS"] = str(workers)
    limits = ClientLimits(settings.head_timeout, settings.body_timeout, settings.max_connections)
    # The folder every worker counts its metrics in (kit/multiproc.py), made before any of
    # them imports prometheus_client.
    with multiproc.metrics_folder():
        server.run(
            "propdata.app:asgi", limits=limits, announce=_listening,
            factory=True, host=host, port=port, workers=workers,
            loop="uvloop", log_level="warning", access_log=False,
        )  # fmt: skip


def _listening(url: str, workers: int) -> None:
    print(f"propdata: listening on {url} with {workers} worker{'s' if workers > 1 else ''}",
          file=sys.stderr, flush=True)  # fmt: skip


def _finish_interrupted_load() -> None:
    """Rebuild what a load that died after its commit left undone, before serving."""
    from propdata.properties.repository import PropertyRepository

    async def pending(db: Database, settings: Settings) -> bool:
        return await PropertyRepository(db).rebuild_pending() is not None

    if not _run(pending, create=True):  # a server may start on a store of its own
        return  # the usual case: the pipeline (it imports pandas, 0.3 s) is not needed
    from propdata.ingest import pipeline

    async def work(db: Database, settings: Settings, bars: _Bars) -> Any:
        if not await PropertyRepository(db).rebuild_pending():
            return pipeline.Outcome()
        err.print("A data load was interrupted before its rebuild; finishing it first.")
        return await pipeline.rebuild(db, settings.today(), bars)

    _pipeline(work)


# -- keys ---------------------------------------------------------------------------------


def _keys(work: Callable[[KeyService], Awaitable[T]]) -> T:
    """Run a key command against the accounts store, which no data load ever locks."""
    from propdata.accounts.keys import KeyCommandError, KeyService
    from propdata.app import open_stores

    settings = _settings()
    _check_store(settings, create=False)

    async def main() -> T:
        await _require_made(settings)
        db, accounts = await open_stores(settings)
        try:
            return await work(KeyService(accounts))
        finally:
            if accounts is not db:
                await accounts.close()
            await db.close()

    try:
        return asyncio.run(main())
    except NoStore:
        raise _no_store(settings) from None
    except KeyCommandError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc


_PLAN_HELP = f"{choice(NAMES)}."
_CUSTOM = f"({choice(tuple(name for name in NAMES if BY_NAME[name].customisable))})"
PerMinute = Annotated[
    int | None, typer.Option("--per-minute", help=f"Custom per-minute limit {_CUSTOM}.")
]
Daily = Annotated[int | None, typer.Option("--daily", help=f"Custom daily quota {_CUSTOM}.")]
DefaultPage = Annotated[
    int | None, typer.Option("--default-page-size", help=f"Custom default page size {_CUSTOM}.")
]
MaxPage = Annotated[
    int | None, typer.Option("--max-page-size", help=f"Custom maximum page size {_CUSTOM}.")
]


@keys_app.command("create")
def keys_create(
    plan: Annotated[str, typer.Option(help=_PLAN_HELP)],
    name: Annotated[str | None, typer.Option(help="A label for the key.")] = None,
    per_minute: PerMinute = None,
    daily: Daily = None,
    default_page_size: DefaultPage = None,
    max_page_size: MaxPage = None,
    account: Annotated[
        str | None, typer.Option(help="The email of the portal account that holds the key.")
    ] = None,
) -> None:
    """Create a key; the key itself is printed once, alone on the last line."""
    from propdata.accounts.keys import CustomLimits

    limits = CustomLimits(per_minute, daily, default_page_size, max_page_size)
    if account is None:
        key, secret = _keys(lambda svc: svc.create(plan.lower(), name, limits))
    else:
        key, secret = _accounts(
            lambda svc: svc.create_key_for(account, plan.lower(), name, limits, actor="cli")
        )
    err.print(
        f"Created {key.id} ({key.name}) on the {key.plan} plan. Keep the key: it is not shown again."
    )
    print(secret)


@keys_app.command("list")
def keys_list() -> None:
    """List keys (ids, names, plans, status; never the keys themselves)."""
    keys = _keys(lambda svc: svc.all())
    table = Table(
        "id", "name", "prefix", "plan", "per minute", "daily", "page size", "status", "created"
    )
    for k in keys:
        table.add_row(k.id, k.name, k.prefix + "…", k.plan, str(k.per_minute),
                      "unlimited" if k.daily is None else str(k.daily),
                      f"{k.default_page_size}/{k.max_page_size}", k.status, k.created_at)  # fmt: skip
    # Piped output (scripts, tests) gets the whole table rather than an 80-column squeeze.
    Console(width=None if sys.stdout.isatty() else 200).print(table)


KeyArgument = Annotated[
    str,
    typer.Argument(
        help="The key id (key_…), or - to read the key itself from standard input. The key"
        " itself as an argument works too, but lands in shell history and `ps`."
    ),
]


def _which_key(argument: str) -> str:
    """The key id or key an operator named: `-` reads the key from standard input."""
    if argument == "-":
        return sys.stdin.readline().strip()
    if argument.startswith(crypto.PREFIX):
        err.print(
            "[yellow]warning:[/yellow] a key on the command line is kept in shell history and"
            " shown by `ps`; name the key by its id, or pass - and the key on standard input."
        )
    return argument


@keys_app.command("plan")
def keys_plan(
    key: KeyArgument,
    plan: Annotated[str, typer.Argument(help=_PLAN_HELP)],
    per_minute: PerMinute = None,
    daily: Daily = None,
    default_page_size: DefaultPage = None,
    max_page_size: MaxPage = None,
) -> None:
    """Move a key to another plan (custom limits are reset); effective on its next request."""
    from propdata.accounts.keys import CustomLimits

    limits = CustomLimits(per_minute, daily, default_page_size, max_page_size)
    named = _which_key(key)
    updated = _keys(lambda svc: _audited(svc).command_plan(named, plan.lower(), limits))
    err.print(f"{updated.id} is now on the {updated.plan} plan ({updated.per_minute}/min,"
              f" {'unlimited' if updated.daily is None else updated.daily}/day).")  # fmt: skip


def _audited(keys: KeyService) -> AccountService:
    """The keys' store as accounts, whose changes go to the audit log (no mail, no limits)."""
    from propdata.accounts.service import AccountService
    from propdata.kit.mail import OutboxMailer
    from propdata.kit.ratelimit.sqlite import SQLiteLimiter

    return AccountService(
        keys.db, keys, SQLiteLimiter(":memory:"), OutboxMailer("var/outbox", "cli")
    )


@keys_app.command("revoke")
def keys_revoke(key: KeyArgument) -> None:
    """Revoke a key; its next request is refused."""
    named = _which_key(key)
    revoked = _keys(lambda svc: _audited(svc).command_revoke(named))
    err.print(f"{revoked.id} is revoked.")


# -- accounts -----------------------------------------------------------------------------


def _accounts(work: Callable[[AccountService], Awaitable[T]]) -> T:
    """Run an accounts command against the accounts store (never locked by a data load)."""
    from propdata.accounts.keys import KeyCommandError, KeyService
    from propdata.accounts.service import AccountService
    from propdata.app import open_stores
    from propdata.errors import ServiceError
    from propdata.kit.mail import mailer_for
    from propdata.kit.ratelimit.sqlite import SQLiteLimiter

    settings = _settings()
    _check_store(settings, create=False)

    async def main() -> T:
        await _require_made(settings)
        db, store = await open_stores(settings)
        try:
            # These commands send no mail and count no attempts; the service still needs both.
            mailer = mailer_for(settings.smtp_url, settings.outbox_path, settings.mail_from)
            return await work(
                AccountService(store, KeyService(store), SQLiteLimiter(":memory:"), mailer)
            )
        finally:
            if store is not db:
                await store.close()
            await db.close()

    try:
        return asyncio.run(main())
    except NoStore:
        raise _no_store(settings) from None
    except (KeyCommandError, ServiceError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from exc


Email = Annotated[str, typer.Argument(help="The account's email address.")]


@accounts_app.command("create")
def accounts_create(
    email: Email,
    admin: Annotated[bool, typer.Option("--admin", help="An operator: may open /admin.")] = False,
) -> None:
    """Create an account (email counted as confirmed); the password is read from stdin."""
    if sys.stdin.isatty():
        import getpass

        password = getpass.getpass("Password (12 to 128 characters): ")
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    made = _accounts(lambda svc: svc.create_account(email, password, admin=admin, actor="cli"))
    err.print(f"Created {made.email}{' (operator)' if made.is_admin else ''}.")


@accounts_app.command("list")
def accounts_list() -> None:
    """List accounts with their status and number of keys."""
    people = _accounts(lambda svc: svc.all_accounts())
    table = Table("email", "status", "role", "confirmed", "active keys", "keys", "created")
    for person, keys in people:
        table.add_row(person.email, person.status, "operator" if person.is_admin else "developer",
                      "yes" if person.verified else "no",
                      str(sum(1 for k in keys if k.status == "active")), str(len(keys)),
                      person.created_at)  # fmt: skip
    Console(width=None if sys.stdout.isatty() else 200).print(table)


@accounts_app.command("disable")
def accounts_disable(email: Email) -> None:
    """Disable an account: its keys answer 401 revoked_api_key at once, its sessions end."""
    done = _accounts(lambda svc: svc.disable("cli", email, "cli"))
    err.print(f"{done.email} is disabled.")


@accounts_app.command("admin")
def accounts_admin(email: Email) -> None:
    """Make an account an operator (it may open /admin)."""
    done = _accounts(lambda svc: svc.set_admin(email, actor="cli"))
    err.print(f"{done.email} is an operator.")


# -- data ---------------------------------------------------------------------------------


class _Bars:
    """The pipeline's progress as rich bars on standard error."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    def task(self, description: str, total: int | None) -> Callable[[int], None]:
        task = self.progress.add_task(description, total=total)
        return lambda n: self.progress.advance(task, n)


def _pipeline(
    work: Callable[[Database, Settings, _Bars], Awaitable[Any]], *, create: bool = False
) -> Any:
    """Run a pipeline step with progress bars; print what it did."""

    async def go(db: Database, settings: Settings) -> Any:
        with _progress() as progress:
            outcome = await work(db, settings, _Bars(progress))
        _summary(outcome)
        return outcome

    return _run(go, create=create)


def _summary(outcome: Any) -> None:
    for report, what in zip(outcome.reports, outcome.names, strict=True):
        err.print(f"{what}: {report.inserted} new, {report.updated} updated,"
                  f" {report.unchanged} unchanged, {len(report.rejects)} rejected.")  # fmt: skip
    if outcome.estimates is not None:
        e = outcome.estimates
        err.print(f"Estimates: {e.values:,} values and {e.rents:,} rents, learnt from"
                  f" {e.sales:,} sales and {e.rentals:,} rentals.")  # fmt: skip
    if outcome.markets is not None:
        err.print(f"Market statistics for {outcome.markets} ZIP codes.")


@data_app.command("demo")
def data_demo(
    properties: Annotated[int, typer.Option(help="Synthetic properties to generate.")] = 100_000,
    seed: Annotated[int, typer.Option(help="Seed of the synthetic set.")] = 1,
    if_missing: Annotated[
        bool, typer.Option("--if-missing", help="Do nothing when data exists.")
    ] = False,
) -> None:
    """Build (or rebuild) the demo set: the real Ames and Grinnell sales plus a synthetic set."""
    from propdata.ingest import pipeline
    from propdata.properties.repository import PropertyRepository

    async def work(db: Database, settings: Settings, bars: _Bars) -> Any:
        if if_missing and await PropertyRepository(db).count():
            err.print("Demo data already present; nothing to do.")
            return pipeline.Outcome()
        as_of = settings.today()
        return await pipeline.run(db, pipeline.demo_sources(properties, seed, as_of), as_of, bars)

    _pipeline(work, create=True)


@data_app.command("generate")
def data_generate(
    properties: Annotated[int, typer.Option(min=0, help="How many synthetic properties.")],
    seed: Annotated[int, typer.Option(help="Seed; the same seed and date give the same data.")] = 1,
) -> None:
    """Replace the synthetic records with N new ones (real and imported records stay)."""
    from propdata.ingest import pipeline

    async def work(db: Database, settings: Settings, bars: _Bars) -> Any:
        as_of = settings.today()
        source = pipeline.synthetic_source(properties, seed, as_of)
        return await pipeline.run(db, [source], as_of, bars)

    _pipeline(work, create=True)


@data_app.command("import")
def data_import(
    file: Annotated[
        Path, typer.Argument(exists=True, dir_okay=False, help="CSV or JSON Lines file.")
    ],
    rejects: Annotated[Path | None, typer.Option(help="Where to write the rejects report.")] = None,
) -> None:
    """Load a CSV (API shape or RESO columns) or JSON Lines file; bad rows go to a report."""
    from propdata.ingest import pipeline, readers

    async def work(db: Database, settings: Settings, bars: _Bars) -> Any:
        as_of = settings.today()
        try:
            source = pipeline.file_source(file, as_of)
        except ValueError as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from exc
        return await pipeline.run(db, [source], as_of, bars)

    outcome = _pipeline(work, create=True)
    report = outcome.reports[0]
    if report.rejects:
        target = rejects or file.with_name(file.name + ".rejects.csv")
        readers.write_rejects(target, report.rejects)
        err.print(f"{len(report.rejects)} rows rejected; see {target}")
        raise typer.Exit(1)  # the good rows are loaded; a script still learns of the rest


@data_app.command("init")
def data_init() -> None:
    """Make an empty store (data and keys) or bring an existing one's schema up to date."""
    from propdata.app import open_stores

    settings = _settings()
    _check_store(settings, create=True)

    async def main() -> None:
        db, accounts = await open_stores(settings)
        if accounts is not db:
            await accounts.close()
        await db.close()

    asyncio.run(main())
    err.print("The store is ready.")


@data_app.command("status")
def data_status() -> None:
    """Show the store: records by origin and status, the last load, the search index; exit 1
    while a load's rebuild is still to be done."""
    from propdata.properties.repository import PropertyRepository
    from propdata.search.snapshot import Snapshots

    async def work(db: Database, settings: Settings) -> dict[str, Any]:
        repo = PropertyRepository(db)
        return {
            "counts": await repo.counts(), "version": await repo.data_version(),
            "pending": await repo.rebuild_pending(), "last": await repo.last_load(),
            "namespace": await repo.cache_namespace(),
        }  # fmt: skip

    settings = _settings()
    found = _run(work, announce=False)  # the store is the report's first line
    print(f"store: {settings.store_label}")
    counts: list[tuple[str, str, int]] = found["counts"]
    print(f"properties: {sum(n for _, _, n in counts)}")
    origins: dict[str, dict[str, int]] = {}
    for origin, status, n in counts:
        origins.setdefault(origin, {})[status] = n
    for origin, statuses in origins.items():
        parts = ", ".join(f"{status} {n:,}" for status, n in statuses.items())
        print(f"  {origin}: {sum(statuses.values()):,} ({parts})")
    print(f"data version: {found['version']}")
    last = found["last"]
    if last is None:
        print("last load that changed records: none")
    else:
        print(f"last load that changed records: {last['at']}, {last['origin']}: {last['inserted']} new,"
              f" {last['updated']} updated, {last['unchanged']} unchanged,"
              f" {last['removed']} removed, {last['rejected']} rejected")  # fmt: skip
    print(f"search index: {_index_state(settings, found['namespace'], Snapshots)}")
    if found["pending"]:
        print("rebuild: pending (a load's estimates and market statistics were not rebuilt;"
              " run `propdata data rebuild`, or start `propdata serve`, to finish it)")  # fmt: skip
        raise typer.Exit(1)
    print("rebuild: done")


def _index_state(settings: Settings, namespace: str, snapshots: Any) -> str:
    """Whether this host holds the search index snapshot of the store's data version."""
    if not settings.search_index:
        return "off (PROPDATA_SEARCH_INDEX=0: searches are answered by the store)"
    if settings.index_path is None:
        return "in memory only (an in-memory store has no snapshot folder)"
    kept = snapshots(settings.index_path)
    if kept.identity(namespace) is None:
        return (f"not built for this data version in {settings.index_path} (the first server"
                " to start builds it; searches are answered by the store meanwhile)")  # fmt: skip
    return f"ready for this data version, in {kept.path(namespace)}"


@data_app.command("rebuild")
def data_rebuild() -> None:
    """Recompute the value and rent estimates and the market statistics (as of
    PROPDATA_AS_OF, default today); every load does this by itself."""
    from propdata.ingest import pipeline

    async def work(db: Database, settings: Settings, bars: _Bars) -> Any:
        return await pipeline.rebuild(db, settings.today(), bars)

    _pipeline(work)


@data_app.command("backup")
def data_backup(
    file: Annotated[Path, typer.Argument(dir_okay=False, help="Where to write the backup.")],
) -> None:
    """Copy the live embedded store (data, and keys beside it) to FILE; servers and loads go
    on meanwhile. FILE is itself a store: PROPDATA_DATABASE_URL=FILE serves it."""
    _store_files(file, backing_up=True)


@data_app.command("restore")
def data_restore(
    file: Annotated[
        Path, typer.Argument(exists=True, dir_okay=False, help="A backup made by data backup.")
    ],
) -> None:
    """Write the backup FILE (and its siblings) over the embedded store; running servers
    answer from the restored data from their next request."""
    _store_files(file, backing_up=False)


def _store_files(file: Path, *, backing_up: bool) -> None:
    from propdata.migrations import backup

    settings = _settings()
    with _progress() as progress:
        task = progress.add_task("backing up" if backing_up else "restoring", total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        try:
            if backing_up:
                copied = backup.backup(settings.database_url, file, advance)
            else:
                copied = backup.restore(file, settings.database_url, advance)
        except (ValueError, FileNotFoundError) as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from exc
    for c in copied:
        err.print(f"{c.part}: {c.source} -> {c.target} ({c.pages:,} pages)")


@data_app.command("copy")
def data_copy(
    to: Annotated[str, typer.Option("--to", help="Target store URL, e.g. postgresql://host/db.")],
    source: Annotated[
        str | None,
        typer.Option("--from", help="Source store URL (default: PROPDATA_DATABASE_URL)."),
    ] = None,
) -> None:
    """Copy the whole store (data, keys, plans, statistics) into an empty one and verify it."""
    from propdata.app import open_stores
    from propdata.migrations.transfer import TransferError, copy_stores

    settings = _settings()

    async def work() -> list[Any]:
        src, src_accounts = await open_stores(
            load_settings(database_url=source or settings.database_url)
        )
        dst, dst_accounts = await open_stores(load_settings(database_url=to))
        try:
            with _progress() as progress:
                tasks: dict[str, Any] = {}

                def advance(table: str, n: int) -> None:
                    if table not in tasks:
                        tasks[table] = progress.add_task(f"copying {table}", total=None)
                    progress.advance(tasks[table], n)

                return await copy_stores((src, src_accounts), (dst, dst_accounts), progress=advance)
        finally:
            for db in {id(d): d for d in (src, src_accounts, dst, dst_accounts)}.values():
                await db.close()

    try:
        reports = asyncio.run(work())
    except TransferError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    table = Table("table", "source rows", "target rows", "sha256 equal")
    for r in reports:
        table.add_row(r.table, str(r.source_rows), str(r.target_rows), "yes" if r.equal else "NO")
    Console(width=None if sys.stdout.isatty() else 200).print(table)
    if not all(r.equal for r in reports):
        err.print("[red]the copy differs from its source[/red]")
        raise typer.Exit(1)
    err.print("Copied; every table's count and checksum match.")


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)

"""`propdata data`: make, load, generate, rebuild, back up and copy a store."""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from propdata.cli.base import (
    Bars,
    LiveLine,
    check_store,
    data_app,
    err,
    pipeline_step,
    progress_bars,
    run,
    settings_or_exit,
    stopped_by_signals,
    training_blocks,
)
from propdata.config import Settings, load_settings
from propdata.kit.db import Database

if TYPE_CHECKING:
    from propdata.search.keeper import HostIndex


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

    async def work(db: Database, settings: Settings, bars: Bars) -> Any:
        if if_missing and await PropertyRepository(db).count():
            err.print("Demo data already present; nothing to do.")
            return pipeline.Outcome()
        as_of = settings.today()
        return await pipeline.run(db, pipeline.demo_sources(properties, seed, as_of), as_of, bars)

    pipeline_step(work, create=True)


@data_app.command("generate")
def data_generate(
    properties: Annotated[int, typer.Option(min=0, help="How many synthetic properties.")],
    seed: Annotated[int, typer.Option(help="Seed; the same seed and date give the same data.")] = 1,
) -> None:
    """Replace the synthetic records with N new ones (real and imported records stay)."""
    from propdata.ingest import pipeline

    async def work(db: Database, settings: Settings, bars: Bars) -> Any:
        as_of = settings.today()
        source = pipeline.synthetic_source(properties, seed, as_of)
        return await pipeline.run(db, [source], as_of, bars)

    pipeline_step(work, create=True)


@data_app.command("import")
def data_import(
    file: Annotated[
        Path,
        typer.Argument(
            exists=True,
            dir_okay=False,
            allow_dash=True,
            help="CSV or JSON Lines file; with --follow, - reads standard input.",
        ),
    ],
    rejects: Annotated[Path | None, typer.Option(help="Where to write the rejects report.")] = None,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow",
            help="Keep reading as lines are added (tail -f), committing every second or"
            " 1,000 records, until Ctrl-C or SIGTERM (which commit what was read and exit 0)."
            " Started again on the same file it goes on where it stopped; standard input"
            " (-) cannot resume and is read from where it stands.",
        ),
    ] = False,
) -> None:
    """Load a CSV (API shape or RESO columns) or JSON Lines file; bad rows go to a report."""
    from propdata.ingest import pipeline, readers

    if follow:
        _follow(file, rejects)
        return
    if str(file) == "-":
        err.print("[red]error:[/red] standard input (-) is read with --follow only")
        raise typer.Exit(2)

    async def work(db: Database, settings: Settings, bars: Bars) -> Any:
        as_of = settings.today()
        try:
            source = pipeline.file_source(file, as_of)
        except ValueError as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from exc
        return await pipeline.run(db, [source], as_of, bars)

    outcome = pipeline_step(work, create=True)
    report = outcome.reports[0]
    if report.rejects:
        target = rejects or _rejects_path(file)
        readers.write_rejects(target, report.rejects)
        err.print(f"{len(report.rejects)} rows rejected; see {target}")
        raise typer.Exit(1)  # the good rows are loaded; a script still learns of the rest


def _rejects_path(file: Path) -> Path:
    return file.with_name(file.name + ".rejects.csv")


def _follow(file: Path, rejects: Path | None) -> None:
    """`data import --follow`: see ingest/follow.py and docs/import.md."""
    from propdata.ingest import follow, readers

    path = None if str(file) == "-" else file
    kind = None
    if path is not None:
        try:
            kind = readers.format_of(path)
        except ValueError as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from exc
    target = rejects if rejects is not None or path is None else _rejects_path(path)
    stop = threading.Event()

    async def work(db: Database, settings: Settings) -> follow.Totals:
        blocks = training_blocks(settings)
        mark, why = await follow.resume(db, path) if path is not None else (follow.Mark(), None)
        if why is not None:
            err.print(why, highlight=False, soft_wrap=True)
        elif mark.offset:
            err.print(f"{path}: going on after the {mark.offset:,} bytes ({mark.lines:,} lines)"
                      " committed before", highlight=False, soft_wrap=True)  # fmt: skip
        header = None
        if kind == "csv" and mark.offset and path is not None:
            header = readers.read_header(path)[1]
        followed = follow.Followed(path, mark, kind, header)
        with _FollowView(followed.name, target, fresh=not mark.offset) as view:
            return await follow.follow(db, followed, settings.today(), stop, view.committed,
                                       blocks)  # fmt: skip

    try:
        with stopped_by_signals(stop):
            totals = run(work, create=True)
    except ValueError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from exc
    err.print(f"{totals.records:,} records committed in {totals.commits:,} commits"
              f" ({totals.inserted:,} new, {totals.updated:,} updated, {totals.unchanged:,}"
              f" unchanged), {totals.rejected:,} rejected.", highlight=False, soft_wrap=True)  # fmt: skip
    if totals.rejected and target is not None:
        err.print(f"Rejected rows are in {target}.", highlight=False, soft_wrap=True)
    if not stop.is_set() and totals.rejected:  # standard input ended, as a file import does
        raise typer.Exit(1)


class _FollowView(LiveLine):
    """What `data import --follow` shows: each reject as it is committed, and the totals as
    the live line; the rejects are added to the rejects report as well."""

    def __init__(self, name: str, target: Path | None, *, fresh: bool) -> None:
        super().__init__(name, f"{name}: waiting for records")
        self.target, self.fresh = target, fresh

    def committed(self, report: Any, totals: Any) -> None:
        from propdata.ingest import readers

        for r in sorted(report.rejects, key=lambda r: r.line):
            named = f" ({r.id})" if r.id else ""
            self.say(f"rejected: line {r.line}{named}: {r.reason}")
        if report.rejects and self.target is not None:
            readers.write_rejects(self.target, report.rejects, append=not self.fresh)
            self.fresh = False
        self.show(f"{self.name}: {totals.records:,} records committed ({totals.inserted:,} new,"
                  f" {totals.updated:,} updated, {totals.unchanged:,} unchanged),"
                  f" {totals.rejected:,} rejected, {totals.rate():,.0f} records/s")  # fmt: skip


@data_app.command("init")
def data_init() -> None:
    """Make an empty store (data and keys) or bring an existing one's schema up to date."""
    from propdata.app import open_stores

    settings = settings_or_exit()
    check_store(settings, create=True)

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
    from propdata.search.keeper import host_index
    from propdata.search.repository import SearchRepository
    from propdata.search.snapshot import Snapshots

    async def work(db: Database, settings: Settings) -> dict[str, Any]:
        repo = PropertyRepository(db)
        folder = settings.index_path if settings.search_index else None
        return {
            "counts": await repo.counts(), "version": await repo.data_version(),
            "pending": await repo.rebuild_pending(), "last": await repo.last_load(),
            "index": None if folder is None else await host_index(
                SearchRepository(db), Snapshots(folder)),
        }  # fmt: skip

    settings = settings_or_exit()
    found = run(work, announce=False)  # the store is the report's first line
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
    print(f"search index: {_index_state(settings, found['index'])}")
    if found["pending"]:
        print("rebuild: pending (a load's estimates and market statistics were not rebuilt;"
              " run `propdata data rebuild`, or start `propdata serve`, to finish it)")  # fmt: skip
        raise typer.Exit(1)
    print("rebuild: done")


def _index_state(settings: Settings, found: HostIndex | None) -> str:
    """What a server on this host answers searches of the current data from: its workers'
    rule (`search.keeper.host_index`), so that this agrees with its `/health`."""
    if not settings.search_index:
        return "off (PROPDATA_SEARCH_INDEX=0: searches are answered by the store)"
    if settings.index_path is None or found is None:
        return "in memory only (an in-memory store has no snapshot folder)"
    if found.base is None:
        return (f"not built for this data in {settings.index_path} (the first server to start"
                " builds it; searches are answered by the store meanwhile)")  # fmt: skip
    from propdata.search.snapshot import Snapshots

    where = Snapshots(settings.index_path).path(found.base)
    changes = "no change" if not found.behind else f"{found.behind:,} change" + (
        "s" if found.behind > 1 else "")  # fmt: skip
    return (
        f"ready for this data: the snapshot in {where}, and {changes} since it"
        " (each server's workers read them onto it)"
    )


@data_app.command("rebuild")
def data_rebuild() -> None:
    """Recompute the value and rent estimates and the market statistics (as of
    PROPDATA_AS_OF, default today); every load does this by itself."""
    from propdata.ingest import pipeline

    async def work(db: Database, settings: Settings, bars: Bars) -> Any:
        return await pipeline.rebuild(db, settings.today(), bars)

    pipeline_step(work)


@data_app.command("export")
def data_export(
    fmt: Annotated[
        str, typer.Option("--format", help="parquet (default) or csv.", show_default=False)
    ] = "parquet",
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            file_okay=False,
            help="The folder the snapshot's own folder is made in (default:"
            " PROPDATA_EXPORT_DIR, which GET /v1/exports serves).",
        ),
    ] = None,
    priority: Annotated[
        str,
        typer.Option(
            "--priority",
            help="idle (default): use the CPU only when nothing else of this session wants"
            " it, and pause between batches while other processes are busy (docs/export.md);"
            " normal: as any command, never pausing.",
            show_default=False,
        ),
    ] = "idle",
) -> None:
    """Write a snapshot of one data version: properties by state, markets, market history
    and manifest.json; loads may go on meanwhile."""
    from propdata.exports.schemas import FORMATS
    from propdata.exports.snapshot import PACE, export, yield_cpu
    from propdata.kit.pacing import Pacer

    if fmt not in FORMATS:
        err.print(f"[red]error:[/red] --format must be parquet or csv, not {fmt!r}")
        raise typer.Exit(2)
    if priority not in ("idle", "normal"):
        err.print(f"[red]error:[/red] --priority must be idle or normal, not {priority!r}")
        raise typer.Exit(2)
    pacer = None
    if priority == "idle":
        yield_cpu()
        pacer = Pacer.of_this_machine(PACE)

    async def work(db: Database, settings: Settings) -> Any:
        root = out or Path(settings.export_dir)
        with progress_bars() as progress:
            task = progress.add_task("exporting records", total=None)

            def advance(done: int, total: int) -> None:
                progress.update(task, completed=done, total=total)

            made = await export(db, root, fmt, progress=advance, pacer=pacer)  # type: ignore[arg-type]
            return made, root

    manifest, root = run(work)
    size = sum(f.bytes for f in manifest.files)
    err.print(
        f"Export {manifest.id}: {manifest.rows:,} records of data version"
        f" {manifest.data_version} in {len(manifest.files)} files ({size / 1e6:,.1f} MB),"
        f" {root / manifest.id}. Follow the change feed from feedCursor {manifest.feed_cursor}."
    )
    if pacer is not None and pacer.pauses:
        err.print(f"It gave way to other work {pacer.pauses} times, {pacer.slept:,.1f} s in all.")
    print(root / manifest.id)


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

    settings = settings_or_exit()
    with progress_bars() as progress:
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
    """Copy the whole store (data, statistics, models, keys, accounts, saved searches, events,
    webhooks) into an empty one and verify it."""
    from propdata.app import open_stores
    from propdata.events.produce import produce
    from propdata.migrations.transfer import TransferError, copy_stores

    settings = settings_or_exit()

    async def work() -> list[Any]:
        src, src_accounts = await open_stores(
            load_settings(database_url=source or settings.database_url)
        )
        dst, dst_accounts = await open_stores(load_settings(database_url=to))
        try:
            # The change images stay behind: what they still hold becomes events first.
            produced = await produce(src, src_accounts)
            if produced:
                err.print(f"Events: {produced:,} produced for saved searches before the copy.")
            with progress_bars() as progress:
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

"""`propdata data import FILE` end to end: what an operator waits for when a few new records
reach a big store, the command's process start-up included.

    .venv/bin/python bench/cli_loads.py --properties 20000 --sizes 1,1000
    .venv/bin/python bench/cli_loads.py --properties 20000 --sizes 1,1000 --postgres

For each size (1, 1,000 and 10,000 records; 1, 10 and 100 in a smoke run), on a fresh copy
of the make bench store (SQLite; on PostgreSQL the bench schema itself, the records removed
again after each run as bench/live_loads.py's `undo` does):

1. `propdata data import FILE` on a JSON Lines file of that many new synthetic records,
   timed from the process's start to its exit. The store must be finished incrementally
   (the stored models stand, `ingest.pipeline.refit_reason` gives no reason): the command
   says so ("valued with the stored models") and the models' change count grows by the
   records loaded. A load that refits fails its row.
2. The same file through `pipeline.run` in this process, on another fresh copy: the
   pipeline's own seconds (load, estimates, markets), without start-up.

Beside them, the start-up alone (`propdata data import --help`) and with the pipeline's
imports (a process importing the CLI and `ingest.pipeline`), best of three each: the command
less the pipeline and the imports is the store's opening, the first use of the ZIP code
table (this process has it in memory already) and the output. bench/run.py runs the same
(`measure`, `measure_postgres`) and puts it in the make bench table (`rows`).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

import bench_data  # noqa: E402
import follow  # noqa: E402

TARGETS_S = {1: 1.0, 1_000: 3.0, 10_000: 15.0}
"""Seconds the whole command may take, by records imported."""
SIZES = (1, 1_000, 10_000)
SMOKE_SIZES = (1, 10, 100)
"""A smoke store (3,000 properties) refits above 10 % of its records: a few hundred."""
LETTERS = "defghijk"
"""Row numbers 5d, 5e, ...: beside 5a-5c, the store's build."""
INCREMENTAL = "valued with the stored models"
"""What the command prints when the stored models finished the load (`cli.base.summary`)."""


@dataclass
class Size:
    records: int
    command_s: float | None = None
    """Wall seconds of `propdata data import FILE`, process start to exit."""
    exit_code: int = 0
    inserted: int | None = None
    incremental: bool = False
    """The command's output and the models' change count both say the stored models stood."""
    refit: str = ""
    """Why the command's load was not finished incrementally (what it printed)."""
    pipeline_s: float | None = None
    phases: dict[str, float] = field(default_factory=dict)
    pipeline_refit: str | None = None
    skipped: str = ""
    output: str = ""


@dataclass
class LoadsRun:
    label: str
    startup_s: float
    """Best of three `propdata data import --help`: interpreter, CLI imports, typer."""
    imports_s: float
    """Best of three: a process importing the CLI and the pipeline, nothing run."""
    sizes: list[Size] = field(default_factory=list)


def _propdata() -> str:
    return str(Path(sys.executable).parent / "propdata")


def _env(url: str, as_of: dt.date) -> dict[str, str]:
    return {**os.environ, "PROPDATA_DATABASE_URL": url, "PROPDATA_AS_OF": as_of.isoformat(),
            "PROPDATA_LOG_LEVEL": "WARNING"}  # fmt: skip


def _best_of_three(argv: list[str]) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=True)
        best = min(best, time.perf_counter() - start)
    return best


def startup_seconds() -> tuple[float, float]:
    """The process start-up of `propdata data import` with nothing to do (`--help`), and
    of a process that imports what a load uses (the CLI, the pipeline) and stops."""
    imports = "import propdata.cli, propdata.ingest.pipeline"
    # An installed package has its bytecode (pip compiles it); the editable checkout has
    # none, and PYTHONDONTWRITEBYTECODE (set on this machine) would have every run compile
    # propdata's modules again (about 0.14 s): compile them once, as an install does.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "src")], check=True)
    return (
        _best_of_three([_propdata(), "data", "import", "--help"]),
        _best_of_three([sys.executable, "-c", imports]),
    )


def write_file(path: Path, size: int, seed: int, as_of: dt.date) -> None:
    """`size` new synthetic records (ids live-0000001...), as JSON Lines."""
    path.write_bytes(b"".join(follow.new_lines(size, seed, as_of)))


async def _models(url: str) -> tuple[int, dict[str, int]]:
    """Records the stored models were fitted over, and each model's change count."""
    from propdata.ingest import pipeline
    from propdata.kit.db import connect

    db = await connect(url)
    try:
        models = await pipeline.valuation.stored_models(db)
    finally:
        await db.close()
    return (models[0].properties if models else 0), {m.kind: m.changed for m in models}


async def _set_changed(url: str, changed: dict[str, int]) -> None:
    """Put the models' change counts back (an undone import leaves its records counted)."""
    from propdata.kit.db import connect

    db = await connect(url)
    try:
        async with db.transaction():
            for kind, count in changed.items():
                await db.execute("UPDATE valuation_models SET changed = ? WHERE kind = ?",
                                 (count, kind))  # fmt: skip
    finally:
        await db.close()


def command(url: str, path: Path, as_of: dt.date, result: Size) -> None:
    """Run `propdata data import FILE` against `url`; fill in `result`."""
    _, before = asyncio.run(_models(url))
    start = time.perf_counter()
    done = subprocess.run([_propdata(), "data", "import", str(path)], env=_env(url, as_of),
                          capture_output=True, text=True, timeout=1800)  # fmt: skip
    result.command_s = time.perf_counter() - start
    result.exit_code = done.returncode
    result.output = done.stderr + done.stdout
    for line in result.output.splitlines():
        if line.startswith(f"{path.name}: ") and " new," in line:
            result.inserted = int(line.split(": ", 1)[1].split(" new,")[0].replace(",", ""))
    _, after = asyncio.run(_models(url))
    counted = bool(after) and all(after[k] - before.get(k, 0) == result.records for k in after)
    result.incremental = INCREMENTAL in result.output and counted
    if not result.incremental:
        said = [line for line in result.output.splitlines() if line.startswith("Estimates:")]
        result.refit = said[0] if said else f"exit {done.returncode}: {result.output[-300:]!r}"


async def _in_process(url: str, path: Path, as_of: dt.date, result: Size) -> None:
    from propdata.ingest import pipeline
    from propdata.kit.db import connect

    db = await connect(url)
    try:
        start = time.perf_counter()
        outcome = await pipeline.run(db, [pipeline.file_source(path, as_of)], as_of)
        result.pipeline_s = time.perf_counter() - start
    finally:
        await db.close()
    result.phases = dict(outcome.seconds)
    result.pipeline_refit = outcome.refit


def _plan(url: str, sizes: tuple[int, ...], counted: int = 1) -> dict[int, str]:
    """The sizes the store's refit rule would refit, with why (not measured); `counted`:
    how many times each size's records count against the rule (an undone import: twice)."""
    from propdata.ingest import pipeline

    fitted, changed = asyncio.run(_models(url))
    room = pipeline.REFIT_SHARE * fitted - max(changed.values(), default=0)
    return {
        size: f"not measured: {size:,} records would refit the models (fitted over"
        f" {fitted:,}; a load above {pipeline.REFIT_SHARE:.0%} of them refits)"
        for size in sizes
        if not fitted or counted * size > room
    }


def _copy(base: Path, target: Path) -> Path:
    """A copy of the checkpointed store (the search index is not needed by a load)."""
    for stale in target.parent.glob(target.name + "*"):
        stale.unlink()
    return bench_data.copy_store(base, target)


def sizes_of(args: Any) -> tuple[int, ...]:
    """bench/run.py's sizes (SIZES, or SMOKE_SIZES with --smoke), or this script's --sizes."""
    chosen: tuple[int, ...] | None = getattr(args, "load_sizes", None)
    return chosen or (SMOKE_SIZES if args.smoke else SIZES)


def _sized(run: LoadsRun, skip: dict[int, str], folder: Path, args: Any, log: Any,
           where: str = "") -> Iterator[tuple[Size, Path]]:  # fmt: skip
    """Each size of `sizes_of(args)` in turn, its result added to `run`: a size `skip` names
    is logged and passed over; for the others, the result and the file of its new records."""
    for size in sizes_of(args):
        result = Size(size, skipped=skip.get(size, ""))
        run.sizes.append(result)
        if result.skipped:
            log(f"data import of {size:,}{where}: {result.skipped}")
            continue
        path = folder / f"new-{size}.jsonl"
        write_file(path, size, args.seed + 20, args.as_of)
        yield result, path


def _undo(url: str, changed: dict[str, int]) -> None:
    """Undo an import into the PostgreSQL store at `url` and put the models' change counts
    back to `changed`."""
    from live_loads import undo

    asyncio.run(undo(url))
    asyncio.run(_set_changed(url, changed))


def measure(base_store: Path, args: Any) -> LoadsRun:
    """Each size on its own fresh copies of the SQLite store at `base_store`; `args` is
    bench/run.py's (--folder, --seed, --as-of, --smoke)."""
    from harness import log

    folder = args.folder / "loads"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    bench_data.checkpoint(base_store)
    run = LoadsRun("embedded", *startup_seconds())
    skip = _plan(str(base_store), sizes_of(args))
    for result, path in _sized(run, skip, folder, args, log):
        command(str(_copy(base_store, folder / "command.db")), path, args.as_of, result)
        asyncio.run(_in_process(str(_copy(base_store, folder / "pipeline.db")), path,
                                args.as_of, result))  # fmt: skip
        _log(log, run.label, result, run.startup_s)
    for stale in folder.glob("*.db*"):
        stale.unlink()
    return run


def measure_postgres(url: str, args: Any) -> LoadsRun:
    """The same on the PostgreSQL store at `url`: each import undone after it (the records
    removed, the touched statistics recomputed, the models' change counts put back)."""
    from harness import log

    folder = args.folder / "loads-postgres"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    run = LoadsRun("scale-out", *startup_seconds())
    skip = _plan(url, sizes_of(args), counted=2)  # the undo counts its removals
    for result, path in _sized(run, skip, folder, args, log, " (PostgreSQL)"):
        _, changed = asyncio.run(_models(url))
        try:
            command(url, path, args.as_of, result)
        finally:
            _undo(url, changed)
        try:
            asyncio.run(_in_process(url, path, args.as_of, result))
        finally:
            _undo(url, changed)
        _log(log, run.label, result, run.startup_s)
    shutil.rmtree(folder, ignore_errors=True)
    return run


def _log(log: Any, label: str, r: Size, startup_s: float) -> None:
    how = "incremental" if r.incremental else f"NOT INCREMENTAL ({r.refit})"
    log(f"data import of {r.records:,} ({label}): {r.command_s:.2f} s end to end, {how};"
        f" pipeline.run {r.pipeline_s:.2f} s; start-up {startup_s:.2f} s")  # fmt: skip


def rows(run: LoadsRun) -> list[Any]:
    """The make bench table's rows of `run`: one per size."""
    from harness import Row

    out: list[Any] = []
    for letter, r in zip(LETTERS, run.sizes, strict=False):
        noun = "record" if r.records == 1 else "records"
        scenario = f"5{letter}. data import of {r.records:,} new {noun}, end to end"
        wanted = TARGETS_S.get(r.records)
        target = f"≤ {wanted:g} s" if wanted is not None else "—"
        if r.skipped or r.command_s is None:
            out.append(Row(scenario, run.label, result=r.skipped or "not measured",
                           target=target))  # fmt: skip
            continue
        phases = ", ".join(f"{k} {v:.2f} s" for k, v in r.phases.items())
        rest = r.command_s - (r.pipeline_s or 0.0) - run.imports_s
        if r.incremental:
            how = "incremental (valued with the stored models)"
        else:
            how = f"**refitted, not incremental**: {r.refit}"
        if r.exit_code:
            how += f"; exit code {r.exit_code}"
        in_process = (
            f"pipeline.run in-process {r.pipeline_s:.2f} s ({phases})"
            + (f", refitted: {r.pipeline_refit}" if r.pipeline_refit else "")
            if r.pipeline_s is not None
            else "pipeline.run not measured"
        )
        result = (
            f"{r.command_s:.2f} s for the command, {r.inserted if r.inserted is not None else '?'}"
            f" new, {how}; {in_process}; start-up {run.startup_s:.2f} s (`data import --help`),"
            f" {run.imports_s:.2f} s with the pipeline's imports; the rest {rest:.2f} s (the"
            " store's opening, the first use of the ZIP code table, the output)"
        )
        met = (
            None if wanted is None else r.incremental and not r.exit_code and r.command_s <= wanted
        )
        if not r.incremental:
            met = False  # loudly, whatever the size
        out.append(Row(scenario, run.label, result=result, target=target, met=met))
    return out


def main(argv: list[str] | None = None) -> int:
    import harness

    p = harness.script_parser(__doc__)
    p.add_argument("--properties", type=int, default=1_000_000)
    p.add_argument("--sizes", default=",".join(map(str, SIZES)))
    p.add_argument("--postgres", action="store_true", help="the PostgreSQL bench store too")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--as-of", type=dt.date.fromisoformat, default=dt.date(2026, 11, 21))
    p.add_argument("--folder", type=Path, default=BENCH / ".data")
    args = p.parse_args(argv)
    args.smoke = False
    args.load_sizes = tuple(int(s) for s in args.sizes.split(","))
    build = asyncio.run(
        bench_data.ensure_sqlite(args.folder, args.properties, args.seed, args.as_of)
    )
    found = rows(measure(Path(build.url), args))
    if args.postgres:
        pg = asyncio.run(bench_data.ensure_postgres(
            args.folder, harness.PG_URL, args.properties, args.seed, args.as_of))  # fmt: skip
        found += rows(measure_postgres(pg.url, args))
    harness.report("cli_loads.py", argv, args, found, judged=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Get by id against the bare ASGI app, for one or more source trees, side by side.

    .venv/bin/python bench/by_id.py --properties 30000 [--tree /other/checkout/src ...] \
        [--seconds 5] [--rounds 3] [--scaleout] [--py-spy folder]

`make bench`'s first row (get by id, as a fraction of bench/bare.py answering the same bytes
on the same server) without the rest of the run: a small store is built or reused as
bench/run.py builds it, then each round serves the bare app and then each tree (`propdata
serve` with that tree's `src` first on PYTHONPATH; this checkout's by default) in turn, each
measured by wrk right after the bare app, so every ratio has its own bare figure taken
beside it. Two ratios: of answers a second (make bench's), and of the workers' CPU time an
answer (bare's over ours), which moves much less with other jobs on the machine. With --scaleout the same again on PostgreSQL and Redis. With --py-spy, each
tree's workers are recorded by py-spy during its last round (a flame graph per worker, SVG;
`--spy-format raw` for collapsed stacks).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import statistics
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

import bench_data  # noqa: E402  (bench/ is not a package)
import harness  # noqa: E402


def record(
    server: harness.Server, args: argparse.Namespace, name: str
) -> list[subprocess.Popen[bytes]]:
    """py-spy on each worker of `server` for the warm-up and the run, into `args.py_spy`."""
    spy = str(Path(sys.executable).parent / "py-spy")
    seconds = str(round(args.warmup + args.seconds))
    suffix = "svg" if args.spy_format == "flamegraph" else "txt"
    spies = []
    for i, pid in enumerate(server.worker_pids()):
        out = str(args.py_spy / f"{name}-{i}.{suffix}")
        argv = [spy, "record", "--pid", str(pid), "--duration", seconds, "--rate", "250",
                "--nonblocking", "--format", args.spy_format, "--output", out]  # fmt: skip
        spies.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return spies


def cpu_per_answer(server: harness.Server, paths: Path, args: argparse.Namespace, key: str | None,
                   what: str) -> tuple[float, float]:  # fmt: skip
    """(answers a second, the workers' CPU µs an answer) of one wrk run after a warm-up."""
    server.wait_idle()
    harness.wrk(server.base, paths, args.warmup, args, key)
    server.wait_idle()
    before = server.cpu_seconds()
    load = harness.wrk(server.base, paths, args.seconds, args, key)
    used = server.cpu_seconds() - before
    answered = load.requests - load.failed
    cpu = used / max(1, answered) * 1e6
    harness.log(
        f"{what}: {load.rps:,.0f} rps, {cpu:.0f} µs CPU an answer, p99 {load.ms('p99'):.2f} ms"
    )
    return load.rps, cpu


def run_store(label: str, store_env: dict[str, str], key: str, args: argparse.Namespace,
              reqs: harness.Requests, logs: Path) -> dict[str, list[tuple[float, float]]]:  # fmt: skip
    ids, id_paths = reqs.ids, reqs.id_paths
    bodies_file = logs / f"bare-bodies-{label}.tsv"
    ratios: dict[str, list[tuple[float, float]]] = {tree: [] for tree in args.tree}
    for round_ in range(args.rounds):
        for n, tree in enumerate(args.tree):
            env = {**store_env, "PYTHONPATH": f"{tree}{os.pathsep}{BENCH}"}
            name = f"{label}-tree{n}"
            with harness.propdata_server(name, env, 0, args, logs) as server:
                answers = harness.check_ok(server.base, id_paths, key, "get by id")
                if not bodies_file.exists():
                    with bodies_file.open("wb") as out:
                        for path, answer in zip(id_paths, answers, strict=True):
                            out.write(path.encode() + b"\t" + answer.content + b"\n")
                bare_server = harness.uvicorn_server(
                    "bare", Path(sys.executable), "bare:app",
                    {"BENCH_BARE_BODIES": str(bodies_file)}, args.workers, id_paths[0], logs,
                    http="propdata.kit.serving.protocol:BoundedHttpToolsProtocol",
                )  # fmt: skip
                with bare_server:
                    bare = cpu_per_answer(bare_server, ids, args, None, f"{label} bare")
                spies = []
                if args.py_spy and round_ == args.rounds - 1:
                    server.wait_idle()
                    spies = record(server, args, name)
                ours = cpu_per_answer(server, ids, args, key, f"{label} {tree}")
                for spy in spies:
                    spy.wait(60)
            ratio = (ours[0] / bare[0], bare[1] / ours[1])
            ratios[tree].append(ratio)
            harness.log(f"{label} {tree}: throughput {ratio[0]:.3f} of bare's, CPU {ratio[1]:.3f}")
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--properties", type=int, default=30_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--tree", action="append", help="a checkout's src folder (repeatable)")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--scaleout", action="store_true")
    parser.add_argument("--folder", type=Path, default=BENCH / ".data")
    parser.add_argument("--py-spy", type=Path, help="record flame graphs into this folder")
    parser.add_argument("--spy-format", default="flamegraph", help="py-spy's: flamegraph, raw")
    args = parser.parse_args()
    args.tree = [str(Path(t).resolve()) for t in args.tree or [ROOT / "src"]]
    args.as_of, args.duration, args.wrk_threads = dt.date(2026, 11, 21), args.seconds, 1
    args.wrk, args.ids, args.searches, args.cursor_page = harness.ensure_wrk(), 5_000, 100, 20
    if args.py_spy:
        args.py_spy.mkdir(parents=True, exist_ok=True)
    logs = args.folder / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    for stale in logs.glob("bare-bodies-*.tsv"):
        stale.unlink()
    build = asyncio.run(
        bench_data.ensure_sqlite(args.folder, args.properties, args.seed, args.as_of)
    )
    db_path = Path(build.url)
    for stale in db_path.parent.glob(db_path.stem + "-usage.db*"):
        stale.unlink()
    key = asyncio.run(bench_data.create_key(str(db_path)))
    sample = bench_data.sample(str(db_path), args.ids, 200, args.seed)
    reqs = harness.make_requests(args.folder / "requests", sample, args)
    results = {"embedded": run_store("embedded", {"PROPDATA_DATABASE_URL": str(db_path)}, key,
                                     args, reqs, logs)}  # fmt: skip
    if args.scaleout:
        pg = asyncio.run(bench_data.ensure_postgres(args.folder, harness.PG_URL, args.properties,
                                                    args.seed, args.as_of))  # fmt: skip
        pg_key = asyncio.run(bench_data.create_key(pg.url))
        env = {"PROPDATA_DATABASE_URL": pg.url, "PROPDATA_REDIS_URL": harness.REDIS_URL}
        results["scale-out"] = run_store("scale-out", env, pg_key, args, reqs, logs)
    print("| store | tree | throughput / bare's | bare's CPU an answer / ours | rounds |")
    print("|---|---|---|---|---|")
    for label, ratios in results.items():
        for tree, values in ratios.items():
            rps, cpu = (
                statistics.median(v[0] for v in values),
                statistics.median(v[1] for v in values),
            )
            rounds = ", ".join(f"{a:.3f}/{b:.3f}" for a, b in values)
            print(f"| {label} | {tree} | {rps:.3f} | {cpu:.3f} | {rounds} |")


if __name__ == "__main__":
    main()

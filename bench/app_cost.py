"""CPU time of the application alone per request: no server, no network, no wrk.

    .venv/bin/python bench/app_cost.py --store bench/.data/sqlite-p200000-s7-2026-11-21 \
        --requests bench/.data/requests [--rounds 5] [--per-round 3000] [--stub limiter,read]
    PROPDATA_DATABASE_URL='postgresql://...?search_path=...' PROPDATA_REDIS_URL=redis://... \
        .venv/bin/python bench/app_cost.py --store ... --requests ...   # scale-out

The ASGI app of `propdata serve` (HeadAsGet around create_app, cache off) is started in this
process and called directly with the paths of one of `bench/run.py`'s request lists (`--list`:
by id, the default, or search, radius..., once the search index is ready), one after
another (`--concurrency N`: N at a time, as a worker's connections under load); each round's
process CPU time is divided by its requests. What the server and the
kernel add (uvicorn, httptools, socket writes) is left out, and so is other jobs' noise in
the ratio of a make bench run, so a change to the application shows up plainly. `--stub`
replaces the limiter's admission (`limiter`) or the property read (`read`) by a constant
answer, or takes the request observer (metrics and the request log) out (`observer`), to
measure what each costs inside a request; with `--alternate` the stubs apply to every other
round only, so one process measures both ways, interleaved. Run it for two trees,
interleaved. The request log goes to standard error: redirect it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from pathlib import Path
from typing import Any


async def run(args: argparse.Namespace) -> list[float]:
    from propdata.accounts.keys import CustomLimits, keys_of
    from propdata.app import HeadAsGet, create_app
    from propdata.config import load_settings

    settings = load_settings()
    async with keys_of(settings.database_url) as keys:
        _, secret = await keys.create("enterprise", "app-cost", CustomLimits(per_minute=10**9))
    litestar = create_app(settings)
    app = HeadAsGet(litestar)
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    started = asyncio.Event()

    async def lifespan_send(message: dict[str, Any]) -> None:
        if message["type"] == "lifespan.startup.complete":
            started.set()

    await inbox.put({"type": "lifespan.startup"})
    life = asyncio.create_task(
        app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, inbox.get, lifespan_send)
    )
    await started.wait()
    paths = (Path(args.requests) / f"{args.list}.txt").read_text().split()
    services = litestar.state.services
    for _ in range(600):  # searches: measure the index's path, not SQL's while it builds
        if await services.search.index_status() != "building":
            break
        await asyncio.sleep(0.1)
    stubs = set(filter(None, args.stub.split(",")))
    originals: list[tuple[Any, str, Any]] = []  # (object, attribute, unstubbed value)
    if "observer" in stubs:
        originals.append((litestar, "asgi_handler", litestar.asgi_handler))
        litestar.asgi_handler = litestar.asgi_handler.app  # type: ignore[attr-defined]
    if "limiter" in stubs:
        decision = await services.limiter.admit("app-cost-stub", 10**9, None, 20)

        async def admit(*_: Any, **__: Any) -> Any:
            return decision

        originals.append((services.limiter, "admit", services.limiter.admit))
        services.limiter.admit = admit
    if "read" in stubs and args.list == "ids":
        one = await services.properties.detail(paths[0].rsplit("/", 1)[1])

        async def detail(_: str) -> Any:
            return one

        originals.append((services.properties, "detail", services.properties.detail))
        services.properties.detail = detail
    auth = ("Bearer " + secret).encode()
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    def scope(target: str) -> dict[str, Any]:
        path, _, query = target.partition("?")
        return {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
                "http_version": "1.1", "server": ("127.0.0.1", 8000),
                "client": ("127.0.0.1", 50000), "scheme": "http", "method": "GET",
                "root_path": "", "path": path, "raw_path": path.encode(),
                "query_string": query.encode(),
                "headers": [(b"host", b"127.0.0.1:8000"), (b"authorization", auth)],
                "state": {}}  # fmt: skip

    rounds: list[float] = []
    stubbed = [(obj, name, getattr(obj, name)) for obj, name, _ in originals]
    n = args.per_round
    for r in range(args.rounds):
        if args.alternate:  # stubs on odd rounds only
            for obj, name, value in stubbed if r % 2 else originals:
                setattr(obj, name, value)
        start = time.process_time()
        if args.concurrency == 1:
            for i in range(n):
                sent.clear()
                await app(scope(paths[(r * n + i) % len(paths)]), receive, send)
        else:  # groups of requests in flight together, as a worker's connections under load
            for i in range(0, n, args.concurrency):
                sent.clear()
                group = range(i, min(n, i + args.concurrency))
                await asyncio.gather(
                    *(app(scope(paths[(r * n + j) % len(paths)]), receive, send) for j in group)
                )
        rounds.append((time.process_time() - start) / n * 1e6)
        assert sent[0]["status"] == 200, sent[0]
    await inbox.put({"type": "lifespan.shutdown"})
    await life
    return rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True, help="the folder bench/run.py built")
    parser.add_argument("--requests", required=True, help="the folder of request lists")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--per-round", type=int, default=3000)
    parser.add_argument(
        "--stub", default="", help="limiter,read: replaced by a constant; observer: taken out"
    )
    parser.add_argument(
        "--alternate", action="store_true", help="apply the stubs to every other round only"
    )
    parser.add_argument("--list", default="ids", help="the request list: ids, search, radius...")
    parser.add_argument(
        "--concurrency", type=int, default=1, help="requests in flight together (default 1)"
    )
    args = parser.parse_args()
    os.environ.setdefault("PROPDATA_DATABASE_URL", str(Path(args.store) / "propdata.db"))
    os.environ.update({"PROPDATA_CACHE_TTL": "0", "PROPDATA_LOG_LEVEL": "ERROR",
                       "PROPDATA_AS_OF": "2026-11-21"})  # fmt: skip
    rounds = asyncio.run(run(args))
    ways = [("", rounds)]
    if args.alternate:
        ways = [("unstubbed ", rounds[0::2]), (f"stubbed ({args.stub}) ", rounds[1::2])]
    for way, values in ways:
        print(f"app CPU µs per {args.list} request, {way}median {statistics.median(values):.0f}"
              f" (rounds: {', '.join(f'{x:.0f}' for x in values)})")  # fmt: skip


if __name__ == "__main__":
    main()

"""`propdata serve`: the API and the portal under uvicorn, and beside its workers a
`propdata deliver` process that sends the webhook deliveries at a lower CPU priority."""

from __future__ import annotations

import asyncio
import os
import signal
from typing import TYPE_CHECKING, Annotated

import typer

from propdata.cli.base import app, err, finish_interrupted_load, settings_or_exit
from propdata.kit import logs

if TYPE_CHECKING:
    from propdata.config import Settings


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    workers: Annotated[int, typer.Option(min=1, help="Worker processes.")] = 1,
    deliveries: Annotated[
        str,
        typer.Option(
            help="process (default): webhook deliveries from a `propdata deliver` process"
            " started beside the workers, at a lower CPU priority; workers: from the workers,"
            " between requests.",
        ),
    ] = "process",
) -> None:
    """Serve the API (uvicorn with uvloop and httptools)."""
    from propdata.kit import multiproc
    from propdata.kit.serving import server
    from propdata.kit.serving.deliverer import Deliverer
    from propdata.kit.serving.limits import ClientLimits

    if deliveries not in ("process", "workers"):
        err.print(f"[red]error:[/red] --deliveries must be process or workers, not {deliveries!r}")
        raise typer.Exit(2)
    # The workers read it (Settings.deliveries): with a deliverer beside them, they send none.
    os.environ["PROPDATA_DELIVERIES"] = "apart" if deliveries == "process" else "workers"
    settings = settings_or_exit()
    # Every line from here, uvicorn's and the workers' included, in PROPDATA_LOG_FORMAT.
    logs.configure(settings.log_level, settings.log_format)
    logs.notice(f"store: {settings.store_label}")
    finish_interrupted_load(settings)
    # The workers share the host's memory budgets (the embedded cache's: config.cache_mb).
    os.environ["PROPDATA_WORKERS"] = str(workers)
    limits = ClientLimits(settings.head_timeout, settings.body_timeout, settings.max_connections)
    # The folder every worker counts its metrics in (kit/multiproc.py), made before any of
    # them imports prometheus_client.
    with multiproc.metrics_folder(), Deliverer(deliveries == "process"):
        server.run(
            "propdata.app:asgi", limits=limits, announce=_listening,
            factory=True, host=host, port=port, workers=workers,
            loop="uvloop", log_level="warning", access_log=False,
            log_config=logs.logging_config(settings.log_level, settings.log_format),
        )  # fmt: skip


@app.command()
def deliver(
    nice: Annotated[
        int, typer.Option(min=0, max=19, help="Added to the process's nice value (0: none).")
    ] = 10,
) -> None:
    """Send webhook deliveries, and produce the events they carry, until SIGTERM or Ctrl-C.
    `propdata serve` runs one beside its workers; start more (on any host of the store) for
    more deliveries, with PROPDATA_DELIVERIES=apart for servers started otherwise."""
    settings = settings_or_exit()
    logs.configure(settings.log_level, settings.log_format)
    if nice:
        os.nice(nice)  # the workers' answers first: deliveries take the CPU they leave
    asyncio.run(_deliver(settings))


async def _deliver(settings: Settings) -> None:
    from propdata.app import build_services, delivery_loops

    services = await build_services(settings)
    loops = delivery_loops(services)
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(signum, stop.set)
    await loops.start()
    logs.notice("delivering webhooks")
    orphaned = asyncio.create_task(_until_orphaned(os.getppid()))
    try:
        await asyncio.wait([asyncio.create_task(stop.wait()), orphaned],
                           return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
    finally:
        orphaned.cancel()
        await loops.stop()
        await services.close()


def _listening(url: str, workers: int) -> None:
    logs.notice(f"listening on {url} with {workers} worker{'s' if workers > 1 else ''}")


async def _until_orphaned(parent: int, every: float = 1.0) -> None:
    """Return once the process that started this one has ended (a `serve` killed without
    stopping its deliverer): no deliverer outlives its server."""
    while os.getppid() == parent:  # noqa: ASYNC110 (no event tells of a parent's end)
        await asyncio.sleep(every)

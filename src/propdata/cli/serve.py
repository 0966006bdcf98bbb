"""`propdata serve`: the API and the portal under uvicorn."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from propdata.cli.base import app, finish_interrupted_load, settings_or_exit
from propdata.kit import logs


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
    with multiproc.metrics_folder():
        server.run(
            "propdata.app:asgi", limits=limits, announce=_listening,
            factory=True, host=host, port=port, workers=workers,
            loop="uvloop", log_level="warning", access_log=False,
            log_config=logs.logging_config(settings.log_level, settings.log_format),
        )  # fmt: skip


def _listening(url: str, workers: int) -> None:
    logs.notice(f"listening on {url} with {workers} worker{'s' if workers > 1 else ''}")

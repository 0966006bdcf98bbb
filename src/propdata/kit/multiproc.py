"""The folder every worker of one `propdata serve` counts its metrics in.

prometheus_client chooses between one process's counts and a folder of every process's
counts when it is first imported, from `PROMETHEUS_MULTIPROC_DIR`; so `propdata serve` makes
a fresh folder of its own and names it in the environment before anything imports it, and
its workers inherit the name. This module imports nothing of prometheus_client at import.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

from propdata.kit.processes import alive

FOLDER_ENV = "PROMETHEUS_MULTIPROC_DIR"

log = logging.getLogger("propdata")

_PID = re.compile(r"_(\d+)\.db$")


@contextlib.contextmanager
def metrics_folder() -> Iterator[None]:
    """While `propdata serve` runs: a private, empty folder for its workers' metrics, named
    in the environment they inherit, removed when it stops. An earlier server's counts are
    never added to this one's. A host without a writable temporary folder serves each
    worker's own counts (logged) rather than not at all."""
    before = os.environ.get(FOLDER_ENV)
    try:
        folder = tempfile.TemporaryDirectory(prefix="propdata-metrics-")
    except OSError as exc:
        log.warning("no folder for the workers' metrics (%s): /metrics shows the counts of"
                    " the worker that answers it", exc)  # fmt: skip
        os.environ.pop(FOLDER_ENV, None)
        yield
        return
    os.environ[FOLDER_ENV] = folder.name
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(FOLDER_ENV, None)
        else:
            os.environ[FOLDER_ENV] = before
        folder.cleanup()


def forget_dead_workers() -> None:
    """Drop the live gauges of workers that have died (uvicorn starts others in their place);
    their counters stay, so totals never go down."""
    folder = os.environ.get(FOLDER_ENV)
    if not folder:
        return
    from prometheus_client.multiprocess import mark_process_dead

    pids = {int(m.group(1)) for f in Path(folder).glob("*.db") if (m := _PID.search(f.name))}
    for pid in pids - {os.getpid()}:
        if not alive(pid):
            mark_process_dead(pid, folder)  # type: ignore[no-untyped-call]


def worker_stopped() -> None:
    """This worker's live gauges go with it."""
    folder = os.environ.get(FOLDER_ENV)
    if folder:
        from prometheus_client.multiprocess import mark_process_dead

        mark_process_dead(os.getpid(), folder)  # type: ignore[no-untyped-call]

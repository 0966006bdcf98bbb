"""datasette over the benchmark's SQLite file, as an ASGI factory for uvicorn.

    BENCH_DATASETTE_DB=propdata.db bench/.datasette-venv/bin/uvicorn datasette_app:app \
        --factory --app-dir bench --workers 2 --loop uvloop --http httptools

Runs in datasette's own environment (bench/.datasette-venv), never propdata's. Served the
way propdata is (same server, loop, parser and worker count) so the comparison is of the
applications. The file is opened immutable (read-only, no locking, row counts taken once at
start), the fastest way datasette serves a file. Facet suggestions are off: they are extra
queries an API client never asked for; counts are on, as our meta.total is exact.
"""

from __future__ import annotations

import os
from typing import Any

from datasette.app import Datasette


def app() -> Any:
    ds = Datasette(
        immutables=[os.environ["BENCH_DATASETTE_DB"]],
        settings={
            "max_returned_rows": 1000,
            "sql_time_limit_ms": 10_000,
            "suggest_facets": False,
            "default_page_size": 100,
            "num_sql_threads": 3,
        },
    )
    return ds.app()

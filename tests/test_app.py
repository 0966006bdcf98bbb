"""The application as a served worker builds it: what its process loads."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

# A worker that starts and stops its app, with its loops, as `propdata serve` runs one
# (deliveries apart), then prints the modules it loaded. Driven by hand: Litestar's test
# client would load httpx itself.
_WORKER = """
import asyncio, sys
from propdata.app import asgi

async def main():
    app = asgi()
    inbox = asyncio.Queue()
    await inbox.put({"type": "lifespan.startup"})
    said = []
    async def send(message):
        said.append(message["type"])
        if message["type"] == "lifespan.startup.complete":
            await inbox.put({"type": "lifespan.shutdown"})
    await app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, inbox.get, send)
    assert said == ["lifespan.startup.complete", "lifespan.shutdown.complete"], said

asyncio.run(main())
print(" ".join(sorted(sys.modules)))
"""

ELSEWHERE = {
    "pyarrow": "snapshots are written by `propdata data export`, a process of its own",
    "httpx": "webhook deliveries are sent by `propdata deliver`",
    "redis": "Redis is the scale-out limiter's, cache's and wake-ups'",
    "asyncpg": "PostgreSQL is the scale-out store's",
}
"""Libraries an embedded worker never uses, and who does: each would be megabytes of every
worker's memory (docs/measurements.md, "What a served worker holds")."""


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The modules of a worker that started and stopped on an embedded store."""
    store = tmp_path_factory.mktemp("worker") / "propdata.db"
    env = {**os.environ, "PROPDATA_DATABASE_URL": str(store), "PROPDATA_DELIVERIES": "apart"}
    env.pop("PROPDATA_REDIS_URL", None)
    done = subprocess.run([sys.executable, "-c", _WORKER], env=env, capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_the_worker_built_its_app(loaded: list[str]) -> None:
    assert "propdata.exports.service" in loaded and "propdata.webhooks.service" in loaded


@pytest.mark.parametrize("library", sorted(ELSEWHERE))
def test_an_embedded_worker_never_loads_what_other_processes_use(
    loaded: list[str], library: str
) -> None:
    assert [m for m in loaded if m.split(".")[0] == library] == [], ELSEWHERE[library]

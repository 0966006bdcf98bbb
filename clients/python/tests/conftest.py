"""A real `propdata serve` for the SDK's and the MCP server's tests.

The store is the server's own test catalogue (tests/factories.py: 42 records in four ZIP
codes, one address in two ZIP codes for the 409), built with the server's test helpers;
keys are made with the operator's command line, as a user of the API gets them. The
server runs with its response cache off so that every request of a limit test is counted.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
if str(REPO) not in sys.path:  # the server's test helpers (tests.conftest, tests.live)
    sys.path.insert(0, str(REPO))

from propdata.ingest.loader import load  # noqa: E402
from tests.conftest import Store, build_store, new_store, open_db  # noqa: E402
from tests.factories import AS_OF  # noqa: E402
from tests.live import run_apart, running_server  # noqa: E402

from stubserver import Receiver  # noqa: E402


def propdata_command() -> list[str]:
    script = Path(sys.executable).with_name("propdata")
    return [str(script)] if script.exists() else [sys.executable, "-m", "propdata"]


def _int(value: str | None) -> int | None:
    return None if value is None else int(value)


@dataclass(frozen=True)
class Live:
    """A running server over a test store, and the operator's command line on its store."""

    base_url: str
    store: Store

    def _cli(self, *args: str, stdin: str | None = None) -> str:
        env = {**os.environ, **self.store.env(), "PROPDATA_LOG_LEVEL": "ERROR"}
        done = subprocess.run([*propdata_command(), *args], env=env, input=stdin,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    def key(self, plan: str = "enterprise", *, per_minute: int | None = None,
            daily: int | None = None) -> str:  # fmt: skip
        """A new key from `propdata keys create` (printed alone on stdout's last line)."""
        args = ["keys", "create", "--plan", plan]
        if per_minute is not None:
            args += ["--per-minute", str(per_minute)]
        if daily is not None:
            args += ["--daily", str(daily)]
        key = self._cli(*args).strip().splitlines()[-1]
        assert key.startswith("pmd_live_"), key
        return key

    def keys(self, *specs: str) -> list[str]:
        """Several keys at once (each command takes a second or so): "free",
        "enterprise:daily=1", "enterprise:per_minute=2,daily=5"."""

        def make(spec: str) -> str:
            plan, _, limits = spec.partition(":")
            values = dict(item.split("=") for item in limits.split(",") if item)
            return self.key(plan, per_minute=_int(values.get("per_minute")),
                            daily=_int(values.get("daily")))  # fmt: skip

        with ThreadPoolExecutor(len(specs)) as pool:
            return list(pool.map(make, specs))

    def set_plan(self, key: str, plan: str) -> None:
        """`propdata keys plan - PLAN`, the key on standard input: effective on its next
        request."""
        self._cli("keys", "plan", "-", plan, stdin=key + "\n")

    def revoke(self, key: str) -> None:
        self._cli("keys", "revoke", "-", stdin=key + "\n")

    def load(self, records: Iterable[Any], *, origin: str = "import",
             replace_origin: bool = False) -> None:  # fmt: skip
        """A data load into the server's store (the loader of `propdata data import`, without
        the estimates' rebuild, as the store was built): the server answers from it on its
        next request."""

        async def go() -> None:
            db = await open_db(self.store)
            try:
                report = await load(db, enumerate(records, 1), origin=origin,  # type: ignore[arg-type]
                                    as_of=AS_OF, replace_origin=replace_origin)  # fmt: skip
                assert not report.rejects, report.rejects
            finally:
                await db.close()

        run_apart(go())


@contextmanager
def _serving(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[Live]:
    """`propdata serve` over a fresh test store in a folder `name`, its cache off."""
    store = run_apart(new_store("embedded", tmp_path_factory.mktemp(name)))
    run_apart(build_store(store))
    with running_server({**store.env(), "PROPDATA_CACHE_TTL": "0"}) as base_url:
        yield Live(base_url, store)


@pytest.fixture(scope="session")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with _serving(tmp_path_factory, "sdk-store") as served:
        yield served


@pytest.fixture(scope="module")
def own_live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """A server of the module's own over a fresh test store, for tests that load data (the
    session's `live` keeps the catalogue as it is)."""
    with _serving(tmp_path_factory, "sdk-own-store") as served:
        yield served


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A webhook receiver on loopback, served on a thread for the test."""
    r = Receiver()
    thread = threading.Thread(target=r.server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield r
    r.server.shutdown()
    r.server.server_close()


@pytest.fixture(scope="session")
def operator() -> type[Live]:
    """`Live` itself, for a test that starts a server of its own."""
    return Live


@pytest.fixture(scope="session")
def key(live: Live) -> str:
    """An Enterprise key with room for every read test."""
    return live.key("enterprise", per_minute=1_000_000)


@pytest.fixture(autouse=True)
def _no_ambient_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests pass their key and URL explicitly unless they test the environment."""
    monkeypatch.delenv("PROPDATA_API_KEY", raising=False)
    monkeypatch.delenv("PROPDATA_BASE_URL", raising=False)

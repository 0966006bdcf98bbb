"""Every search index keeper a test makes stops with the test; `mixed`, the store of the
index's comparisons with SQL.

A keeper that was warmed looks at the data version every `KeeperSettings.poll` seconds until it is
closed (an app closes its own in its lifespan). The tests share one event loop for the
session, so the look of a keeper a test left open would go on against a store the test
closed, and on PostgreSQL open its pool again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from propdata.ingest import synthetic
from propdata.ingest.loader import load
from propdata.search.keeper import IndexKeeper
from tests.conftest import Store, build_store, drop_store, new_store, open_db
from tests.factories import AS_OF


@pytest.fixture(scope="module")
async def mixed(backend: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Store]:
    """The test catalogue plus 1,500 synthetic properties: nulls, ties and many places (a
    store for each test module that asks for it)."""
    made = await new_store(backend, tmp_path_factory.mktemp(f"mixed-{backend}"))
    await build_store(made)
    db = await open_db(made)
    report = await load(db, synthetic.generate(1_500, 3, AS_OF), origin="synthetic", as_of=AS_OF)
    assert not report.rejects
    await db.close()
    yield made
    await drop_store(made)


@pytest.fixture
async def fresh_store(backend: str, tmp_path: Path) -> AsyncIterator[Store]:
    """The test catalogue in a store of its own (a test that loads into it)."""
    made = await new_store(backend, tmp_path / "store")
    await build_store(made)
    yield made
    await drop_store(made)


@pytest.fixture(autouse=True)
def keepers_stop(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    made: list[IndexKeeper] = []
    original = IndexKeeper.__init__

    def init(self: IndexKeeper, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(IndexKeeper, "__init__", init)
    yield
    for keeper in made:
        loop = keeper.working_on()
        # An app's own loop (another thread) has closed its keeper itself.
        if loop is not None and not loop.is_running() and not loop.is_closed():
            loop.run_until_complete(keeper.close())

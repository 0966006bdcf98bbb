"""Every search index keeper a test makes stops with the test.

A keeper that was warmed looks at the data version every `KeeperSettings.poll` seconds until it is
closed (an app closes its own in its lifespan). The tests share one event loop for the
session, so the look of a keeper a test left open would go on against a store the test
closed, and on PostgreSQL open its pool again.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from propdata.search.keeper import IndexKeeper


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
        tasks = [t for t in (keeper._poller, keeper._building, keeper._folding) if t is not None]
        loops = {t.get_loop() for t in tasks if not t.done()}
        for loop in loops:  # an app's own loop (another thread) has closed its keeper itself
            if not loop.is_running() and not loop.is_closed():
                loop.run_until_complete(keeper.close())

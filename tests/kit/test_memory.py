"""A served worker's start-up objects are frozen out of the cyclic collector's sight, so a
full collection walks only what was made since (tens of ms less of a pause per collection)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from propdata import app as app_module
from propdata.kit import memory


@pytest.fixture
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_what_lives_at_the_freeze_is_out_of_the_collectors_sight(unfrozen: None) -> None:
    kept = [[n] for n in range(10_000)]
    memory.freeze_startup_objects()
    assert gc.get_freeze_count() >= len(kept)
    assert all(not any(inner is held for held in gc.get_objects(2)) for inner in kept[:3])
    made_after = [[n] for n in range(3)]
    assert any(held is made_after for held in gc.get_objects())


def test_a_served_worker_freezes_after_its_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROPDATA_DATABASE_URL", ":memory:")
    monkeypatch.setattr(app_module, "configure", lambda *_: None)  # the tests' own logging
    served = app_module.asgi()
    assert served.app.on_startup[-1] is memory.freeze_startup_objects  # type: ignore[attr-defined]

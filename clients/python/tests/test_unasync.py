"""`Client` is generated from `AsyncClient`: the committed `_sync.py` is what the generator makes."""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path
from types import ModuleType

import pytest

from propdata_client import _async, _sync

TOOL = Path(__file__).resolve().parents[1] / "tools" / "unasync.py"


def _unasync() -> ModuleType:
    spec = importlib.util.spec_from_file_location("unasync", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_sync_client_is_what_the_generator_makes() -> None:
    unasync = _unasync()
    assert unasync.TARGET.read_text() == unasync.generate(), (
        "_sync.py differs from what _async.py makes: edit _async.py, then run"
        " python clients/python/tools/unasync.py"
    )


def test_the_generator_turns_async_code_into_sync_code() -> None:
    made = _unasync().generate()
    assert "async " not in made and "await " not in made and "Async" not in made
    assert "asyncio" not in made and "Awaitable" not in made


@pytest.mark.parametrize(
    ("sync", "asynchronous"),
    [
        (_sync.Client, _async.AsyncClient),
        (_sync.Properties, _async.AsyncProperties),
        (_sync.Markets, _async.AsyncMarkets),
        (_sync.Auth, _async.AsyncAuth),
    ],
)
def test_both_clients_have_the_same_methods_and_parameters(sync: type, asynchronous: type) -> None:
    def api(cls: type) -> dict[str, list[str]]:
        return {
            name: list(inspect.signature(member).parameters)
            for name, member in vars(cls).items()
            if not name.startswith("_") and callable(member)
        }

    assert api(sync) == api(asynchronous)
    assert api(sync)

"""The `rig` fixture: each limiter test runs against every backend."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.conftest import FakeClock
from tests.kit.ratelimit.rig import KINDS, Rig, forget, make_limiter, new_key


@pytest.fixture(params=KINDS)
async def rig(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Rig]:
    clock = FakeClock()
    limiter = await make_limiter(request.param, clock, tmp_path)
    key = new_key()
    yield Rig(limiter, clock, key, request.param, tmp_path)
    await limiter.close()
    if request.param == "redis":
        forget(key)

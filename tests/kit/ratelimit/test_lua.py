"""The Redis limiter's scripts are package files that Redis compiles as read."""

from __future__ import annotations

from importlib import resources

import pytest

from propdata.kit.ratelimit.redis import SCRIPT_HEAD, read_script
from tests.conftest import BACKENDS, REDIS_URL, unreachable

SCRIPTS = sorted(
    entry.name
    for entry in resources.files("propdata.kit.ratelimit").joinpath("lua").iterdir()
    if entry.name.endswith(".lua") and entry.name != SCRIPT_HEAD
)


def test_the_limiter_reads_each_script_it_ships() -> None:
    assert SCRIPTS == ["admit.lua", "attempt.lua", "hold.lua", "hourly.lua"]


@pytest.mark.parametrize("name", SCRIPTS)
async def test_redis_compiles_each_script_with_its_constants_in(name: str) -> None:
    if "scaleout" not in BACKENDS:
        pytest.skip("the scale-out backend is not tested in this run")
    text = read_script(name)
    assert "@" not in text.replace("'@'", ""), "a constant was left out"
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
    try:
        sha = await client.script_load(text)  # a script that does not compile raises
    except (OSError, ConnectionError) as exc:
        unreachable("Redis at " + REDIS_URL, exc)
        raise
    finally:
        await client.aclose()
    assert len(sha) == 40

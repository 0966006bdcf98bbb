"""kit.loops: the one shape of the worker's always-running work."""

from __future__ import annotations

import asyncio

import pytest

from propdata.kit.loops import Loops, TaskLoop


async def _forever() -> None:
    await asyncio.Event().wait()


async def _dies() -> None:
    raise ValueError("broken")


async def test_loops_start_report_and_stop_in_one_place() -> None:
    loops = Loops([TaskLoop("first", _forever), TaskLoop("second", _dies)])
    assert loops.health() == {"first": "stopped", "second": "stopped"}
    await loops.start()
    await asyncio.sleep(0)  # the second one's only turn
    assert loops.health() == {"first": "ok", "second": "failing: ValueError"}
    await loops.stop()
    await loops.stop()  # twice is harmless
    assert loops.health() == {"first": "stopped", "second": "stopped"}


def test_two_loops_of_one_name_are_refused() -> None:
    with pytest.raises(ValueError, match="two loops"):
        Loops([TaskLoop("same", _forever), TaskLoop("same", _forever)])

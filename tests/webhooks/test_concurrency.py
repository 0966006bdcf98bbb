"""Dispatchers together and across crashes: two dispatchers on separate connections deliver
each of 1,000 events to each endpoint exactly once (PostgreSQL's SKIP LOCKED claims), and a
dispatcher killed mid-delivery (kill -9) leaves the delivery to be made again once its lease
runs out."""

from __future__ import annotations

import asyncio
import collections
import os
import signal
import sys
from pathlib import Path

import pytest

from propdata.accounts.owners import owner_of
from propdata.kit.db import address, connect
from propdata.webhooks.schemas import NewEndpoint
from tests.live import until
from tests.webhooks.deliver_apart import LEASE
from tests.webhooks.helpers import Rig, api_key
from tests.webhooks.receiver import receiving

KEY = api_key()
OWNER = owner_of(KEY)
ROOT = Path(__file__).resolve().parents[2]


async def test_two_dispatchers_deliver_each_event_to_each_endpoint_once(rig: Rig) -> None:
    if rig.db.dialect != "postgresql":
        pytest.skip("many dispatchers share the work on PostgreSQL; SQLite has one a host")
    url = address(rig.db)
    assert url is not None
    others = [await connect(url), await connect(url)]
    async with receiving() as receiver:
        for n in (1, 2):
            await rig.service.create(KEY, NewEndpoint(url=f"{receiver.url}{n}"))
        tasks = []
        for db in others:
            dispatcher = Rig(db, clock=rig.clock).dispatcher(batch=50)
            rig.dispatchers.append(dispatcher)
            tasks.append(asyncio.create_task(dispatcher.run()))
        for _ in range(10):
            await rig.events(OWNER, 100)
            await rig.wakeups.notify("events")

        async def all_in() -> bool:
            return len(receiver.received) >= 2000

        await until(all_in, "every delivery made", 120)
        await asyncio.sleep(2 * 1.0)  # anything sent twice would arrive meanwhile
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    for db in others:
        await db.close()
    counts = collections.Counter((r.path, r.headers["webhook-id"]) for r in receiver.received)
    assert len(counts) == 2000
    assert max(counts.values()) == 1, [k for k, v in counts.items() if v > 1][:5]
    row = await rig.db.fetch_one(
        "SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'succeeded' AND attempt = 1"
    )
    assert row is not None and row[0] == 2000


async def test_a_delivery_in_flight_when_its_process_is_killed_is_made_again(rig: Rig) -> None:
    store = address(rig.db)
    assert store is not None
    answered = asyncio.Event()
    async with receiving(delay=0.0) as receiver:
        # The first request is held open (the process dies with it in flight); the rest are
        # answered at once.
        async def hold(_: object) -> None:
            if len(receiver.received) == 1:
                answered.set()
                await asyncio.sleep(60)

        receiver.before_answer = hold
        row, _ = await rig.service.create(KEY, NewEndpoint(url=receiver.url))
        (event_id,) = await rig.events(OWNER)
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.webhooks.deliver_apart", cwd=ROOT,
            env={**os.environ, "PROPDATA_TEST_STORE": store}, stdout=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        try:
            await asyncio.wait_for(answered.wait(), 60)
        finally:
            os.kill(process.pid, signal.SIGKILL)
            await asyncio.wait_for(process.wait(), 10)
        # The lease the dead process took (on the real clock, seconds ago) runs out.
        rig.clock.advance(LEASE + 30)
        assert await rig.dispatcher().run_once() == 1
    assert [r.headers["webhook-id"] for r in receiver.received] == [event_id, event_id]
    _, (delivery,) = await rig.service.deliveries(KEY, row.id, 10, 0)
    assert (delivery.status, delivery.attempt) == ("succeeded", 1)

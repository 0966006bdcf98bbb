"""A dispatcher in a process of its own (tests kill it mid-delivery): the store's address in
PROPDATA_TEST_STORE, deliveries allowed to 127.0.0.1, a lease of LEASE seconds."""

from __future__ import annotations

import asyncio
import ipaddress
import os

from propdata.kit.db import connect
from propdata.kit.wakeup import LocalWakeups
from propdata.webhooks.addresses import Gate
from propdata.webhooks.dispatcher import Dispatcher

LEASE = 2.0


async def main() -> None:
    db = await connect(os.environ["PROPDATA_TEST_STORE"])
    gate = Gate(allowed=(ipaddress.ip_network("127.0.0.1/32"),))
    print("ready", flush=True)
    await Dispatcher(db, gate, LocalWakeups(), lease=LEASE).run()


if __name__ == "__main__":
    asyncio.run(main())

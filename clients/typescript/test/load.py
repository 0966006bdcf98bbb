"""A data load into the test server's store, for the feed and ETag tests: `load.py ID
FIELD=NUMBER ...` loads the catalogue's record ID (tests/factories.py) with those fields
(snake_case) changed, through the loader of `propdata data import`, without the estimates'
rebuild (as test/server.py built the store). PROPDATA_DATABASE_URL names the store."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from tests.factories import AS_OF, catalogue  # noqa: E402

from propdata.ingest.loader import load  # noqa: E402
from propdata.kit.db import connect  # noqa: E402
from propdata.migrations.schema import migrate  # noqa: E402


async def main(pid: str, changes: dict[str, int]) -> None:
    (found,) = [r for r in catalogue() if r.id == pid]
    db = await connect(os.environ["PROPDATA_DATABASE_URL"])
    try:
        await migrate(db)
        report = await load(db, [(1, msgspec.structs.replace(found, **changes))],
                            origin="import", as_of=AS_OF)  # fmt: skip
        assert not report.rejects, report.rejects
    finally:
        await db.close()


if __name__ == "__main__":
    pairs = dict(arg.split("=", 1) for arg in sys.argv[2:])
    asyncio.run(main(sys.argv[1], {name: int(value) for name, value in pairs.items()}))

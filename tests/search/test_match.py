"""`matches` over records as the API gives them: the same records SQL finds.

The test catalogue plus 1,500 synthetic properties (nulls, ties, many places), each read
back through `PropertyService.detail` (the wire record) and as its JSON; the generated
searches of test_index, each matched against every record at once and one by one.
"""

from __future__ import annotations

import msgspec

from propdata.kit.addresses import city_key
from propdata.properties.service import PropertyService
from propdata.search.engines import SqlEngine
from propdata.search.filters import SearchFilters
from propdata.search.match import Batch, columns, matches
from propdata.search.query import SearchQuery
from propdata.search.repository import SearchRepository
from tests.conftest import Store, open_db
from tests.search.test_index import places, searches


async def test_wire_records_match_what_sql_finds(mixed: Store) -> None:
    db = await open_db(mixed)
    try:
        ids = [row[0] for row in await db.fetch_all("SELECT id FROM properties ORDER BY id")]
        properties = PropertyService(db)
        details = [await properties.detail(i) for i in ids]
        wire = [msgspec.to_builtins(d) for d in details]
        assert columns(details[0]) == columns(wire[0])
        batch = Batch.of(details)
        sql = SqlEngine(SearchRepository(db), offset_cap=None)
        checked = 0
        for f in (query.filters for query in searches(await places(db), 120)):
            found = await sql.find(SearchQuery(f, limit=len(ids)), None)
            expected = {r.id for r in found.rows}
            kept = matches(f, batch).tolist()
            assert {i for i, keep in zip(ids, kept, strict=True) if keep} == expected, f
            assert matches(f, wire).tolist() == kept, f
            checked += bool(expected)
        assert checked > 40
        one = details[0]
        assert matches(SearchQuery(SearchFilters(zip_code=one.address.zip_code)), one) is True
        assert matches(SearchFilters(city=city_key(one.address.city)), wire[0]) is True
        assert matches(SearchFilters(min_price=1), {"id": "x", "state": "IA"}) is False
        assert matches(SearchFilters(), []).tolist() == []
    finally:
        await db.close()

"""A base index and a delta of the changes since answer what SQL answers over the same data.

Generated records are written and indexed (the base, at its change feed position); then
rounds of random changes (records changed in every searched column, removed, created with
ids between and around the others) are committed, each read back from the feed as the next
version's delta (`search.live.Delta`), and every version, and that version folded into one
index (`search.fold.fold`), answers generated searches with the total, ids, order,
distances and cursor pages SQL gives (`test_index.compare`).
"""

from __future__ import annotations

import os
import random
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from propdata.kit.addresses import city_key
from propdata.kit.db import Database
from propdata.properties.repository import PropertyRepository, PropertyRow
from propdata.properties.schemas import PROPERTY_TYPES, STATUSES
from propdata.search import arrays
from propdata.search import index as index_module
from propdata.search import live as live_module
from propdata.search.build_snapshot import read_rows
from propdata.search.filters import SORT_COLUMNS, SearchFilters
from propdata.search.fold import fold
from propdata.search.index import INDEX_COLUMNS, ITEM_COLUMNS, SearchIndex
from propdata.search.indexer import IndexBuilder
from propdata.search.live import Delta, LiveIndex
from propdata.search.query import SearchQuery
from propdata.search.repository import SearchRepository
from tests.search.test_index import compare
from tests.search.test_parity import CITIES, LATITUDE, LONGITUDE, NUMBERS, ORIGIN, Rig, records
from tests.search.test_parity import rig as rig
from tests.search.test_parity import searches as filter_sets

EXAMPLES = int(os.environ.get("PROPDATA_PARITY_EXAMPLES", "30"))
COLUMNS = INDEX_COLUMNS + ITEM_COLUMNS


async def _nothing() -> None:
    return None


@st.composite
def changed_row(draw: st.DrawFn, row: PropertyRow) -> PropertyRow:
    """`row` with some searched columns drawn again (any may become missing)."""
    values = row._asdict()
    if draw(st.booleans()):
        city = draw(st.sampled_from(CITIES))
        values.update(city=city, city_key=city_key(city))
    if draw(st.booleans()):
        values["status"] = draw(st.sampled_from(STATUSES))
    if draw(st.booleans()):
        values["zip_code"] = draw(st.sampled_from(["50010", "50011", "50014", "50020"]))
    if draw(st.booleans()):
        values["property_type"] = draw(st.none() | st.sampled_from(PROPERTY_TYPES))
    for name, strategy in NUMBERS.items():
        if draw(st.booleans()):
            values[name] = draw(st.none() | strategy)
    if draw(st.booleans()):
        values["last_updated"] = f"2026-11-{draw(st.integers(1, 25)):02d}T00:00:00Z"
    if draw(st.booleans()):
        placed = draw(st.booleans())
        values.update(latitude=draw(LATITUDE) if placed else None,
                      longitude=draw(LONGITUDE) if placed else None)  # fmt: skip
    return PropertyRow(**values)


@st.composite
def changes(
    draw: st.DrawFn, stored: dict[str, PropertyRow], round_: int
) -> tuple[list[PropertyRow], list[str], list[str]]:
    """(rows to write, of them the ids already stored, ids to remove) of one commit."""
    ids = sorted(stored)
    touched = draw(st.lists(st.sampled_from(ids), unique=True, max_size=8)) if ids else []
    removed = [i for i in touched if draw(st.integers(0, 3)) == 0]
    updated = [draw(changed_row(stored[i])) for i in touched if i not in removed]
    created = []
    for n in range(draw(st.integers(0, 6))):
        # between stored ids ("p-0105" sorts after "p-010"), before them all, after them all
        name = draw(st.sampled_from([f"p-{draw(st.integers(0, 30)):03d}{round_}{n}",
                                     f"a-{round_}{n}", f"z-{round_}{n}"]))  # fmt: skip
        if name in stored or any(r.id == name for r in created):
            continue
        template = draw(st.sampled_from(list(stored.values()))) if stored else _blank()
        created.append(draw(changed_row(template._replace(id=name))))
    return updated + created, [r.id for r in updated], removed


async def _commit(
    db: Database, rows: list[PropertyRow], replaced: list[str], removed: list[str]
) -> None:
    properties = PropertyRepository(db)
    async with db.transaction():
        for gone in removed:
            await db.execute("DELETE FROM properties WHERE id = ?", (gone,))
        await properties.write(rows, [], replaced)
        await properties.bump_data_version()


async def _base(db: Database) -> SearchIndex:
    return await read_rows(SearchRepository(db), None, 7, _nothing)


async def _next_version(db: Database, delta: Delta) -> LiveIndex:
    repo = SearchRepository(db)
    read = await repo.changed_rows(COLUMNS, delta.feed, delta.feed + 10_000)
    assert read.since == delta.mark  # the same feed, followed
    view = delta.apply(read.namespace, read.last, read.rows)
    delta.mark = read.mark
    return view


@st.composite
def queries(draw: st.DrawFn, rows: list[PropertyRow]) -> list[SearchQuery]:
    """Searches of every kind: filters alone and together, every sort and order, offsets
    that start in the delta's part or past it."""
    found = []
    for filters in draw(filter_sets(rows)):
        sorts = list(SORT_COLUMNS) + (["distance"] if filters.near is not None else [])
        sort = draw(st.sampled_from(sorts))
        order = draw(st.sampled_from(["asc", "desc"]))
        limit = draw(st.sampled_from([1, 2, 5, 100]))
        offset = draw(st.sampled_from([0, 0, 1, 3, 8, 20]))
        found.append(SearchQuery(filters, sort, order, limit, offset))
    return found


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          derandomize=EXAMPLES <= 30, database=None)  # fmt: skip
@given(data=st.data())
def test_the_base_and_a_delta_answer_what_sql_answers(rig: Rig, data: st.DataObject) -> None:
    rows = data.draw(records())
    rig.run(_replace_all(rig.db, rows))
    stored = {r.id: r for r in rows}
    base = rig.run(_base(rig.db))
    delta = Delta(base)
    for round_ in range(data.draw(st.integers(1, 3))):
        written, replaced, removed = data.draw(changes(stored, round_))
        rig.run(_commit(rig.db, written, replaced, removed))
        for gone in removed:
            del stored[gone]
        stored.update((r.id, r) for r in written)
        live = rig.run(_next_version(rig.db, delta))
        assert live.size == len(stored)
        folded = fold(live, delta.mark)  # the version as one index: a new snapshot's
        assert folded.size == len(stored) and folded.feed == live.feed
        for query in data.draw(queries(list(stored.values()))):
            rig.run(compare(live, rig.db, query))  # type: ignore[arg-type]
            rig.run(compare(folded, rig.db, query))
            with pytest.MonkeyPatch.context() as tuned:  # every side walks its orders
                tuned.setattr(live_module, "_SORT_DIRECTLY", 0)
                tuned.setattr(index_module, "_RESUME_SHARE", 1)  # every cursor page resumes
                tuned.setattr(arrays, "_FIRST_CHUNK", 2)
                tuned.setattr(arrays, "_LAST_CHUNK", 4)
                rig.run(compare(live, rig.db, query))  # type: ignore[arg-type]
        every = SearchFilters()
        for sort in SORT_COLUMNS:
            for order in ("asc", "desc"):
                for offset in (0, 3, len(stored) // 2):
                    rig.run(compare(live, rig.db, SearchQuery(every, sort, order, 4, offset)))  # type: ignore[arg-type]


async def _replace_all(db: Database, rows: list[PropertyRow]) -> None:
    """The stored records are `rows` and no others."""
    properties = PropertyRepository(db)
    async with db.transaction():
        await db.execute("DELETE FROM properties")
        await properties.write(rows, [], [])
        await properties.bump_data_version()


def _blank() -> PropertyRow:
    """A record with nothing searched but what every record has."""
    values: dict[str, Any] = dict.fromkeys(PropertyRow._fields)
    values.update(id="p-000", origin=ORIGIN, status="forSale", city="Ames",
                  city_key=city_key("Ames"), state="IA", zip_code="50010",
                  last_updated="2026-11-01T00:00:00Z", content_hash="x")  # fmt: skip
    return PropertyRow(**values)


def _generated(count: int, seed: int, prefix: str = "g") -> list[tuple[Any, ...]]:
    """Rows of `COLUMNS` in id order: nulls in the sorted columns, many ties."""
    rng = random.Random(seed)
    found = []
    for n in range(count):
        listed = rng.random() < 0.8
        found.append((
            f"{prefix}-{n:06d}", rng.choice(("50010", "50011", "50014")), "AMES", "IA",
            rng.choice(STATUSES), rng.choice(PROPERTY_TYPES),
            rng.randrange(50_000, 900_000, 5_000) if listed else None,
            rng.choice((None, 1, 2, 3, 4, 5)), rng.choice((None, 1.0, 1.5, 2.0, 3.0)),
            rng.choice((None, *range(600, 4_000, 50))), rng.choice((None, *range(1900, 2026))),
            rng.randrange(0, 400) if listed else None,
            f"2026-11-{rng.randint(1, 25):02d}T00:00:00Z", 42.0 + rng.random(),
            -93.6 + rng.random(), "1 Main St", "Ames", None, None,
        ))  # fmt: skip
    return found


def test_a_deep_cursor_page_resumes_past_its_row_without_evaluating_the_search() -> None:
    """Given the walk's total (which its cursor carries), a page after a cursor's row deep
    in a search tests the filters on the rows it walks past that row: a few dozen of
    40,000, where a page by offset evaluates the search over every row. Both are the same
    page, on a base alone and on a base with a delta (changed, new and removed records)."""
    rows = _generated(40_000, 5)
    builder = IndexBuilder("s.1")
    builder.add([row[: len(INDEX_COLUMNS)] for row in rows])
    base = builder.finish()
    touched = random.Random(6).sample(rows, 300)
    changed: list[tuple[str, Any]] = [(row[0], None) for row in touched[:100]]  # removed
    changed += [(old[0], (old[0], *new[1:]))
                for old, new in zip(touched[100:], _generated(200, 7), strict=True)]  # fmt: skip
    changed += [(row[0], row) for row in _generated(200, 8, prefix="g-0100")]  # ids between
    live = Delta(base).apply("s.2", 1, changed)
    assert live.delta.size == 400 and live.alive is not None
    searched = [
        (SearchFilters(min_beds=2), "listPrice", "desc"),
        (SearchFilters(status="forSale", min_year_built=1940), "livingArea", "asc"),
        (SearchFilters(property_type="condo"), "daysOnMarket", "asc"),  # into the nulls
        (SearchFilters(), "lastUpdated", "desc"),
    ]
    for index in (LiveIndex.plain(base), live):
        for filters, sort, order in searched:
            before = index.search(SearchQuery(filters, sort, order, 10, 4_990))
            assert before is not None and before.tested == index.size and len(before.ids) == 10
            query = SearchQuery(filters, sort, order, 11, 0)
            resumed = index.search(query, before.ids[-1], total=before.total)
            by_offset = index.search(SearchQuery(filters, sort, order, 11, 5_000))
            assert resumed == by_offset, (filters, sort, order)
            assert resumed is not None and resumed.ids
            assert 0 < resumed.tested <= 1_000, (filters, sort, order, resumed.tested)
            recounted = index.search(query, before.ids[-1])  # a cursor without its total
            assert recounted == resumed and recounted is not None
            assert recounted.tested == index.size


def test_a_delta_grown_commit_by_commit_is_the_index_of_its_rows_built_at_once() -> None:
    """Each commit's rows are merged into the delta's id order (not all sorted again) and
    its sort orders are made when a search first walks one: after commits of new,
    changed (ids before, between and after the others) and removed records, the delta's
    index is, array for array, the one a builder makes of its rows in one go."""
    base = IndexBuilder("s.1")
    base.add([row[: len(INDEX_COLUMNS)] for row in _generated(2_000, 1)])
    delta = Delta(base.finish())
    rng = random.Random(3)
    latest: dict[str, Any] = {}
    for commit in range(12):
        fresh = _generated(60, 10 + commit, prefix=rng.choice(["a", "g-0", "g-1", "z"]))
        alive = sorted(i for i, row in latest.items() if row is not None)
        again = rng.sample(alive, min(len(alive), 20))
        edits = _generated(len(again), 40 + commit)
        changed: list[tuple[str, Any]] = [(row[0], row) for row in fresh]
        changed += [(i, None if n % 4 == 0 else (i, *edit[1:]))
                    for n, (i, edit) in enumerate(zip(again, edits, strict=True))]  # fmt: skip
        for i, row in changed:
            latest[i] = row
        live = delta.apply("s.2", commit + 1, changed)
        rows = sorted((row for row in latest.values() if row is not None), key=lambda r: r[0])
        once = IndexBuilder("s.2")
        once.add(rows)
        expected = once.finish()
        got = live.delta
        assert got.size == expected.size == len(rows)
        assert bytes(got.id_bytes) == bytes(expected.id_bytes)
        assert np.array_equal(got.id_offsets, expected.id_offsets)
        for column in SORT_COLUMNS.values():
            assert np.array_equal(got.orders[column], expected.orders[column]), column
        assert np.array_equal(got.updated_rank, expected.updated_rank)
        assert np.array_equal(got.geo_order, expected.geo_order)
        for name in expected.nums:
            assert np.array_equal(got.nums[name], expected.nums[name], equal_nan=True), name

"""What `search.match.matches` costs: many saved searches over one batch of changed records.

    .venv/bin/python bench/match_rate.py                      # 10,000 records, 1,000 searches
    .venv/bin/python bench/match_rate.py --records 50000 --searches 2000
    .venv/bin/python bench/match_rate.py --producer           # the event producer's whole pass

Generated records and searches (a third of them with a radius, a third with a city), the
batch made once, then each search matched against the whole batch.

`--producer` times what the event producer does with a claimed batch of change images
(`events.produce.evaluate`): 10,000 changed records (a price cut, a sale, a new bedroom, a
new listing; before and after), 1,000 saved searches of 200 owners, both sides matched and
every event's data built (the search items, the changed fields). Target: 2 s.
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from propdata.properties.schemas import STATUSES
from propdata.search.filters import SearchFilters
from propdata.search.match import Batch, matches

CITIES = ("Ames", "Des Moines", "Nevada", "Boone")


def records(count: int, rng: random.Random) -> list[dict[str, Any]]:
    return [
        {"id": f"p{n}", "zip_code": f"5{rng.randint(0, 999):04d}", "city": rng.choice(CITIES),
         "state": rng.choice(["IA", "NE", "MN"]), "status": rng.choice(STATUSES),
         "property_type": "condo", "list_price": rng.choice([None, rng.randint(50_000, 900_000)]),
         "bedrooms": rng.randint(0, 6), "bathrooms": rng.choice([1.0, 1.5, 2.0, None]),
         "living_area": rng.randint(500, 4_000), "year_built": rng.randint(1900, 2025),
         "days_on_market": rng.randint(0, 300), "latitude": rng.uniform(41, 43),
         "longitude": rng.uniform(-95, -92)}
        for n in range(count)
    ]  # fmt: skip


def searches(count: int, rng: random.Random) -> list[SearchFilters]:
    found = []
    for n in range(count):
        f = SearchFilters(state=rng.choice(["IA", "NE"]), status=rng.choice(STATUSES),
                          min_price=rng.randint(0, 300_000), max_price=rng.randint(300_000, 900_000),
                          min_beds=rng.randint(0, 4))  # fmt: skip
        if n % 3 == 0:
            f.near = (rng.uniform(41, 43), rng.uniform(-95, -92), rng.uniform(1, 50))
        elif n % 3 == 1:
            f.city = rng.choice(CITIES).upper()
        found.append(f)
    return found


def rows(count: int, rng: random.Random) -> list[dict[str, Any]]:
    """Stored rows (every `properties` column) as change images hold them."""
    from propdata.properties.repository import PropertyRow

    found = []
    for n, r in enumerate(records(count, rng)):
        row: dict[str, Any] = dict.fromkeys(PropertyRow._fields)
        row.update(r, id=f"p{n}", origin="import", city_key=r["city"].upper(),
                   street_address=f"{n} Main St", last_updated="2026-11-20T00:00:00Z",
                   value_value=300_000, value_low=280_000, value_high=320_000,
                   value_as_of="2026-11-20", content_hash="x")  # fmt: skip
        found.append(row)
    return found


def changes(rows: list[dict[str, Any]]) -> list[Any]:
    """A change of each row, in turn: a price cut, a sale, a bedroom more, a new listing."""
    from propdata.events.produce import Change

    found = []
    for n, before in enumerate(rows):
        after = dict(before)
        kind = n % 4
        if kind == 0 and after["list_price"]:
            after["list_price"] = int(after["list_price"] * 0.95)
        elif kind == 1:
            after["status"] = "recentlySold"
        elif kind == 2:
            after["bedrooms"] = (after["bedrooms"] or 0) + 1
        found.append(Change(before["id"], None if kind == 3 else before, after))
    return found


def watches(filters: list[SearchFilters], owners: int = 200) -> list[Any]:
    """Saved searches of these filters, shared out over `owners` owners in turn."""
    from propdata.events.produce import Watch

    return [Watch(f"srch_{n}", f"acct:{n % owners}", f"search {n}", f, None, None)
            for n, f in enumerate(filters)]  # fmt: skip


def producer(count: int, searches_count: int, rng: random.Random) -> None:
    from propdata.events.produce import evaluate

    changed = changes(rows(count, rng))
    saved = watches(searches(searches_count, rng))
    started = time.perf_counter()
    drafts = evaluate(saved, changed)
    done = time.perf_counter()
    print(f"producer: {count:,} changed records, {searches_count:,} saved searches of 200 owners:"
          f" {done - started:.2f} s ({len(drafts):,} events)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--searches", type=int, default=1_000)
    parser.add_argument("--producer", action="store_true", help="time the event producer's pass")
    args = parser.parse_args()
    rng = random.Random(1)
    if args.producer:
        producer(args.records, args.searches, rng)
        return
    changed, saved = records(args.records, rng), searches(args.searches, rng)
    started = time.perf_counter()
    batch = Batch.of(changed)
    made = time.perf_counter()
    hits = sum(int(matches(f, batch).sum()) for f in saved)
    done = time.perf_counter()
    print(f"{args.records:,} records, {args.searches:,} searches: the batch {made - started:.2f} s,"
          f" the searches {done - made:.2f} s, {done - started:.2f} s in all ({hits:,} matches)")  # fmt: skip


if __name__ == "__main__":
    main()

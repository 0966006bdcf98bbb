"""What `search.match.matches` costs: many saved searches over one batch of changed records.

    .venv/bin/python bench/match_rate.py                      # 10,000 records, 1,000 searches
    .venv/bin/python bench/match_rate.py --records 50000 --searches 2000

Generated records and searches (a third of them with a radius, a third with a city), the
batch made once, then each search matched against the whole batch.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--searches", type=int, default=1_000)
    args = parser.parse_args()
    rng = random.Random(1)
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

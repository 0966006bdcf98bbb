"""A national synthetic property set over real ZIP codes, reproducible from a seed.

    for line, record in generate(100_000, seed=7, as_of=date(2025, 6, 15)):
        ...

Same (n, seed, as_of) and the same `zipcodes`/`addfips` data give the same records, byte for
byte: all randomness comes from one `random.Random(seed)` and nothing reads the clock.

The model (docs/data.md has the long form):

- Places: active STANDARD ZIP codes with a centroid in the 50 states and DC; county FIPS from
  `addfips`. About 150 records per chosen ZIP, ZIPs drawn with weight = state population x
  the ZIP's share of its state's "metro mass" (how many ZIP centroids lie in the ~50 km
  square around it), so big metros get more ZIPs and more records.
- Prices: a state level (typical home value), raised in dense ZIPs, with per-ZIP and
  per-property noise and 1-7 % yearly appreciation back in time.
- Histories: each property gets a final episode that sets its status (about 20 % forSale,
  10 % recentlySold, 10 % forRent, 60 % offMarket), preceded by a renewal process of earlier
  episodes (listed sales, off-market sales, delistings, rentals) with ~3 years between them,
  so sales and listings flow steadily through every month of the last ten years. Every
  history follows `lifecycle.TRANSITIONS` and is checked with `lifecycle.check_history`.

The modules: `tables` (the data tables), `rng` (the random source), `places` (ZIP codes,
streets, buildings), `history` (price histories), `homes` (one home and its record).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

from propdata.ingest.synthetic.homes import make
from propdata.ingest.synthetic.places import Area, World, Zip, plan, zip_table
from propdata.ingest.synthetic.rng import Rng
from propdata.ingest.synthetic.tables import PROPERTY_TYPES
from propdata.properties.schemas import PropertyDetail

__all__ = ["PROPERTY_TYPES", "Zip", "generate", "zip_table"]


def generate(n: int, seed: int, as_of: dt.date) -> Iterator[tuple[int, PropertyDetail]]:
    """Yield n synthetic records (1-based number, record) with ids `syn-0000001`...."""
    if n < 0:
        raise ValueError("n must not be negative")
    if n == 0:
        return
    rng = Rng(seed)
    width = max(7, len(str(n)))
    world = World(as_of)
    number = 0
    for place, count in plan(rng, zip_table(), n):
        area = Area(rng, place, count, as_of)
        for _ in range(count):
            number += 1
            yield number, make(rng, world, area, f"syn-{number:0{width}d}")

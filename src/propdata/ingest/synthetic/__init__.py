"""A national synthetic property set over real ZIP codes, reproducible from a seed.

    for line, record in generate(100_000, seed=7, as_of=date(2025, 6, 15)):
        ...

Same (n, seed, as_of) and the same `zipcodes`/`addfips` data give the same records, byte for
byte: all randomness comes from one `random.Random(seed)` and nothing reads the clock.
The build day moves only the calendar: every draw is made in days (or whole years) before
as_of and the same on any day, so ids, addresses, coordinates, sizes, prices, statuses and
scores depend on (n, seed) alone; dates, timestamps, `yearBuilt` and tax years are that
many days or years before as_of.

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
import multiprocessing
from collections.abc import Iterator
from multiprocessing.connection import Connection

import msgspec

from propdata.ingest.synthetic.homes import make
from propdata.ingest.synthetic.places import Area, World, Zip, plan, zip_table
from propdata.ingest.synthetic.rng import Rng
from propdata.ingest.synthetic.tables import PROPERTY_TYPES
from propdata.properties.schemas import PropertyDetail

__all__ = ["PROPERTY_TYPES", "Zip", "generate", "generate_apart", "zip_table"]


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
        area = Area(rng, place, count)
        for _ in range(count):
            number += 1
            yield number, make(rng, world, area, f"syn-{number:0{width}d}")


APART_FROM = 20_000
"""`generate_apart` makes sets at least this big in a child process (below, starting one
costs more than it saves)."""
CHUNK = 2_000
"""Records a message from the child (about 3 MB)."""


def generate_apart(n: int, seed: int, as_of: dt.date) -> Iterator[tuple[int, PropertyDetail]]:
    """`generate`'s records, the same in the same order, made by a child process while the
    caller consumes them: a load checks and writes one chunk while the next is generated, so
    on two cores generation no longer adds to a load's wall time.

    The child sends chunks of CHUNK records as MessagePack (exact for every field: encode
    and decode give back equal records) through a pipe, which holds it back once a chunk
    is waiting, so memory stays bounded. A consumer that stops early ends the child.
    """
    if n < APART_FROM:
        yield from generate(n, seed, as_of)
        return
    context = multiprocessing.get_context("spawn")  # no fork of a threaded parent
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(
        target=_produce,
        args=(sender, n, seed, as_of, CHUNK),
        name="propdata-synthetic",
        daemon=True,
    )
    child.start()
    sender.close()
    decode = msgspec.msgpack.Decoder(list[PropertyDetail]).decode
    number = 0
    try:
        while True:
            try:
                data = receiver.recv_bytes()
            except EOFError:
                raise RuntimeError(
                    f"the synthetic generator process ended after {number} of {n} records"
                    f" (exit code {child.exitcode})"
                ) from None
            if not data:  # the end (a chunk is never empty bytes)
                break
            for record in decode(data):
                number += 1
                yield number, record
    finally:
        receiver.close()
        if child.is_alive() and number < n:
            child.terminate()
        child.join()


def _produce(sender: Connection, n: int, seed: int, as_of: dt.date, size: int) -> None:
    """The child's side of `generate_apart`."""
    encode = msgspec.msgpack.Encoder().encode
    chunk: list[PropertyDetail] = []
    try:
        for _, record in generate(n, seed, as_of):
            chunk.append(record)
            if len(chunk) == size:
                sender.send_bytes(encode(chunk))
                chunk = []
        if chunk:
            sender.send_bytes(encode(chunk))
        sender.send_bytes(b"")
    except BrokenPipeError:  # the consumer stopped early
        pass
    finally:
        sender.close()

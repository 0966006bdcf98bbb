"""A fitted model as the store keeps it: a small header and one block of training sales per
market, all in numpy's own formats (no pickle).

A full rebuild fits each model once (`valuation.rebuild`) and stores it; a load values its
new and changed records with it, reading the header and only the blocks of their markets.
`Fitted` is what valuing needs, whether it was just fitted or read back: the model (None
when no market had enough sales to fit one), the market and state vocabularies the codes
of `Homes` refer to, each market's training count (the MIN_MARKET_SALES gate) and newest
training day (the STALE_DAYS rule), and per training sale its property id, day and price
(what a stored comparable names).

    header, blocks = encode(fitted)
    fitted = decode(header, blocks)
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import sys
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

import numpy as np

from propdata.valuation import boost
from propdata.valuation import model as avm
from propdata.valuation.homes import EXTRAS, FloatArray, Homes, IntArray, Params, no_extras
from propdata.valuation.regression import Design, Levels, Regression


@dataclass(frozen=True, slots=True)
class Fitted:
    """One fitted model and everything valuing a home with it needs."""

    model: avm.Model | None
    """None when no market had MIN_MARKET_SALES to learn from: no estimates of this kind."""
    as_of: str
    """The day it was fitted as of: it learnt from the events dated on or before it."""
    zips: list[str]
    """Market (ZIP code) of each market code of the model's homes."""
    states: list[str]
    """State of each state code."""
    counts: IntArray
    """Training sales per market code."""
    newest: IntArray
    """Newest training day per market code (days since homes.EPOCH; -1 for none)."""
    ids: list[str]
    """Property id of each training sale (the model's `core.sales`, in order)."""
    day: IntArray
    price: FloatArray
    owners: Mapping[str, tuple[Mapping[str, int], int]] = field(default_factory=dict)
    """Per market read back (`assemble`): the codes of its training sales' ids, and what
    to add to them (`owner_codes` looks a home up in its own market's)."""


_FIELDS = [
    ("zip_code", "<i8"), ("state", "<i8"), ("market", "<i8"), ("latitude", "<f8"),
    ("longitude", "<f8"), ("living_area", "<f8"), ("lot_size", "<f8"), ("bedrooms", "<f8"),
    ("bathrooms", "<f8"), ("year_built", "<f8"), ("kind", "<i8"), ("month", "<f8"),
    ("residual", "<f8"), ("day", "<i8"), ("price", "<f8"),
]  # fmt: skip
BLOCK = np.dtype([*_FIELDS, ("extras", "<f8", (len(EXTRAS),))])
"""One training sale of a market's block: its home at the sale month (but its owner, which
is its property id), its regression residual, day and price."""
_PLAIN_BLOCK = np.dtype(_FIELDS)
"""A block of a model stored without EXTRAS (its header has no `extras`): none known."""
_HOME_FIELDS = tuple(name for name in BLOCK.names or () if name not in ("residual", "day", "price"))


class Block(NamedTuple):
    """The training sales of one market, in the model's order."""

    zip_code: str
    ids: list[str]
    sales: bytes
    """BLOCK records."""


def encode(fitted: Fitted) -> tuple[bytes, list[Block]]:
    """The header (everything but the training sales) and one block per market."""
    arrays: dict[str, np.typing.NDArray[np.generic]] = {
        "as_of": np.array(fitted.as_of),
        "zips": np.array(fitted.zips, dtype=np.str_),
        "states": np.array(fitted.states, dtype=np.str_),
        "counts": fitted.counts,
        "newest": fitted.newest,
        "extras": np.array(EXTRAS, dtype=np.str_),
    }
    blocks: list[Block] = []
    if fitted.model is not None:
        core, calibration = fitted.model.core, fitted.model.calibration
        regression = core.regression
        arrays |= {
            "params": np.array(json.dumps(asdict(core.params))),
            "fills": regression.design.fills, "knots": regression.design.knots,
            "beta": regression.beta,
            "state_level": regression.states.level, "state_trend": regression.states.trend,
            "state_center": regression.states.center,
            "zip_level": regression.zips.level, "zip_trend": regression.zips.trend,
            "zip_center": regression.zips.center,
            "scale": calibration.scale, "edges": calibration.edges,
            "low": calibration.low, "high": calibration.high,
            "errors": np.array(calibration.errors), "factor": calibration.factor,
        }  # fmt: skip
        if fitted.model.boost is not None:
            arrays["boost"] = np.array(fitted.model.boost.text())
        blocks = _blocks(fitted)
    buffer = io.BytesIO()
    np.savez(buffer, allow_pickle=False, **arrays)
    return buffer.getvalue(), blocks


def _blocks(fitted: Fitted) -> list[Block]:
    assert fitted.model is not None
    core = fitted.model.core
    records = np.empty(len(core.sales), dtype=BLOCK)
    for name in _HOME_FIELDS:
        records[name] = getattr(core.sales, name)
    records["residual"], records["day"], records["price"] = core.residual, fitted.day, fitted.price
    # Stable: a market's sales keep the model's order, which decides ties among comparables.
    order = np.argsort(core.sales.market, kind="stable")
    markets = core.sales.market[order]
    bounds = np.flatnonzero(np.diff(markets)) + 1
    ids = fitted.ids
    return [
        Block(fitted.zips[int(markets[group[0]])], [ids[i] for i in order[group].tolist()],
              records[order[group]].tobytes())
        for group in np.split(np.arange(len(order)), bounds)
        if len(group)
    ]  # fmt: skip


def decode(header: bytes, blocks: Sequence[Block]) -> Fitted:
    """The model of `header` with the training sales of `blocks` (all of them, or only the
    markets to be valued: comparables come from the subject's own market only)."""
    block = _header(header).block
    return assemble(header, [decode_market(block, b) for b in blocks])


@dataclass(frozen=True, slots=True)
class Market:
    """The training sales of one market decoded (`decode_market`), what `assemble` joins:
    a `MarketCache` keeps them between loads."""

    zip_code: str
    ids: list[str]
    owner: IntArray
    """A code per sale: its id's place among the market's distinct ids, in the order of
    their first sale."""
    codes: dict[str, int]
    """The code of each distinct id."""
    columns: dict[str, np.typing.NDArray[Any]]
    """_HOME_FIELDS, residual, day and price, each contiguous."""
    nbytes: int
    """Memory it holds (arrays, ids and their list), as `MarketCache` counts it."""


def block_dtype(header: bytes) -> np.dtype[Any]:
    """The dtype of the records of `header`'s blocks (`decode_market`'s first argument)."""
    return _header(header).block


def decode_market(block_type: np.dtype[Any], block: Block) -> Market:
    """One block decoded (its records of `block_type`, as `block_dtype` gives it)."""
    records = np.frombuffer(block.sales, dtype=block_type)
    first = dict.fromkeys(block.ids)
    codes = dict(zip(first, range(len(first)), strict=True))
    owner = np.fromiter(map(codes.__getitem__, block.ids), dtype=np.int64, count=len(block.ids))
    columns: dict[str, np.typing.NDArray[Any]] = {"extras": no_extras(len(records))}
    columns |= {name: np.ascontiguousarray(records[name]) for name in block_type.names or ()}
    columns["day"] = columns["day"].astype(np.int64)
    columns["price"] = columns["price"].astype(np.float64)
    for array in (owner, *columns.values()):
        array.flags.writeable = False  # shared by every Fitted assembled from it
    size = sum(a.nbytes for a in columns.values()) + owner.nbytes + 8 * len(block.ids)
    size += sum(map(sys.getsizeof, block.ids))
    size += 100 * len(codes)  # the dict's table and its ints, roughly
    return Market(block.zip_code, block.ids, owner, codes, columns, size)


def assemble(header: bytes, markets: Sequence[Market]) -> Fitted:
    """The model of `header` with the training sales of `markets`, in their order: what
    `decode` gives for their blocks. A property's code is its place among the distinct ids
    in the order of their first sale, market after market (its sales are all in its own
    market)."""
    head = _header(header)
    if not markets:
        markets = [decode_market(head.block, Block("", [], b""))]
    ids = [i for m in markets for i in m.ids]

    def joined(name: str) -> np.typing.NDArray[Any]:
        return np.concatenate([m.columns[name] for m in markets])

    day, price = joined("day"), joined("price")
    if head.model is None:
        return Fitted(None, head.as_of, head.zips, head.states, head.counts, head.newest, ids,
                      day, price)  # fmt: skip
    params, regression, calibration, stage = head.model
    offsets = np.cumsum([0] + [len(m.codes) for m in markets[:-1]]).tolist()
    owner = np.concatenate([m.owner + at for m, at in zip(markets, offsets, strict=True)])
    owners = {m.zip_code: (m.codes, at) for m, at in zip(markets, offsets, strict=True)}
    sales = Homes(owner=owner, **{name: joined(name) for name in _HOME_FIELDS})
    core = avm.Core(params, regression, sales, joined("residual"))
    model = avm.Model(core, calibration, stage)
    return Fitted(model, head.as_of, head.zips, head.states, head.counts, head.newest, ids, day,
                  price, owners)  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Header:
    """What a header holds: all of a `Fitted` but its training sales."""

    as_of: str
    zips: list[str]
    states: list[str]
    counts: IntArray
    newest: IntArray
    block: np.dtype[Any]
    """The dtype of its blocks' records."""
    model: tuple[Params, Regression, avm.Calibration, boost.Boost | None] | None
    """The model's parts but its training sales (None: no model)."""


@functools.lru_cache(maxsize=4)
def _header(header: bytes) -> _Header:
    """A header decoded, remembered: a load valuing page after page reads the same one."""
    with np.load(io.BytesIO(header), allow_pickle=False) as archive:
        a = {name: archive[name] for name in archive.files}
    for array in a.values():
        array.flags.writeable = False  # shared by every Fitted decoded from this header
    as_of, zips, states = str(a["as_of"]), a["zips"].tolist(), a["states"].tolist()
    counts, newest = a["counts"].astype(np.int64), a["newest"].astype(np.int64)
    counts.flags.writeable = newest.flags.writeable = False
    block = BLOCK if "extras" in a else _PLAIN_BLOCK
    if "beta" not in a:
        return _Header(as_of, zips, states, counts, newest, block, None)
    params = Params(**json.loads(str(a["params"])))
    regression = Regression(
        Design(a["fills"], a["knots"]), a["beta"],
        Levels(a["state_level"], a["state_trend"], a["state_center"]),
        Levels(a["zip_level"], a["zip_trend"], a["zip_center"]),
    )  # fmt: skip
    factor = a["factor"] if "factor" in a else np.zeros(0)  # stored before the factor: none
    calibration = avm.Calibration(
        a["scale"], a["edges"], a["low"], a["high"], int(a["errors"]), factor
    )
    stage = boost.read(str(a["boost"])) if "boost" in a else None
    return _Header(as_of, zips, states, counts, newest, block,
                   (params, regression, calibration, stage))  # fmt: skip


def owner_codes(fitted: Fitted, ids: Sequence[str], zip_codes: Sequence[str]) -> IntArray:
    """Owner codes of homes to value (read back, `assemble`) in markets `zip_codes`: the
    code of their own training sales in their market where they have some (their own sales
    weigh more among their comparables, which come from their market only), else one of
    their own."""
    assert fitted.model is not None or not fitted.ids
    fresh = 0  # past every code of a training sale
    if fitted.model is not None and fitted.ids:
        fresh = int(fitted.model.core.sales.owner.max()) + 1
    out = np.empty(len(ids), dtype=np.int64)
    for n, (property_id, zip_code) in enumerate(zip(ids, zip_codes, strict=True)):
        codes, at = fitted.owners.get(zip_code, _NO_MARKET)
        code = codes.get(property_id)
        out[n] = fresh + n if code is None else code + at
    return out


_NO_MARKET: tuple[Mapping[str, int], int] = ({}, 0)


def code_of(vocabulary: Sequence[str], values: Sequence[str]) -> IntArray:
    """Codes of `values` in a stored vocabulary; a value it lacks gets a code past its end
    (a market or state the model never saw: no level, no training count)."""
    codes = {value: n for n, value in enumerate(vocabulary)}
    fresh: dict[str, int] = {}
    out = np.empty(len(values), dtype=np.int64)
    for n, value in enumerate(values):
        code = codes.get(value)
        if code is None:
            code = fresh.setdefault(value, len(codes) + len(fresh))
        out[n] = code
    return out


Generation = tuple[str, str, int, bytes]
"""Which stored model a market's sales belong to: (store, kind, version, digest of the
header). A rebuild stores its models under a new version, so a refit is a new generation."""


def generation(store: str, kind: str, version: int, header: bytes) -> Generation:
    """The generation of the model of `kind` stored as `header` under `version` in `store`."""
    return store, kind, version, hashlib.blake2b(header, digest_size=16).digest()


class MarketCache:
    """Decoded training blocks of the stored models (`Market`s), by generation and ZIP code,
    within a budget of bytes: the least recently used go first. Holds one generation per
    store and kind: the first market of a new one drops the older one's.

    Loads in a row (a replication pass's pages, `data import --follow`'s commits) value
    records of the same markets again and again; a market's block is read and decoded once.

        found = cache.get(gen, zips)          # {zip: Market} of those held
        cache.put(gen, [decode_market(...)])  # the others, once read
    """

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.used = 0
        self._markets: OrderedDict[tuple[Generation, str], Market] = OrderedDict()
        self._current: dict[tuple[str, str], Generation] = {}

    def resize(self, budget: int) -> None:
        """Set the budget (0 keeps nothing), dropping what no longer fits."""
        self.budget = budget
        self._fit()

    def get(self, gen: Generation, zip_codes: Sequence[str]) -> dict[str, Market]:
        """The markets of `zip_codes` held for `gen`."""
        self._switch(gen)
        found: dict[str, Market] = {}
        for zip_code in zip_codes:
            market = self._markets.get((gen, zip_code))
            if market is not None:
                self._markets.move_to_end((gen, zip_code))
                found[zip_code] = market
        return found

    def put(self, gen: Generation, markets: Sequence[Market]) -> None:
        """Keep `markets` of `gen`, dropping the least recently used beyond the budget."""
        self._switch(gen)
        for market in markets:
            if market.nbytes > self.budget:
                continue
            old = self._markets.pop((gen, market.zip_code), None)
            self.used += market.nbytes - (old.nbytes if old is not None else 0)
            self._markets[(gen, market.zip_code)] = market
        self._fit()

    def clear(self) -> None:
        self._markets.clear()
        self._current.clear()
        self.used = 0

    def _switch(self, gen: Generation) -> None:
        if self._current.setdefault(gen[:2], gen) == gen:
            return
        self._current[gen[:2]] = gen
        for key in [k for k in self._markets if k[0][:2] == gen[:2] and k[0] != gen]:
            self.used -= self._markets.pop(key).nbytes

    def _fit(self) -> None:
        while self.used > self.budget and self._markets:
            self.used -= self._markets.popitem(last=False)[1].nbytes

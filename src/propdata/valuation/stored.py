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
import io
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
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
    head = _header(header)
    records = np.frombuffer(b"".join(b.sales for b in blocks), dtype=head.block)
    ids = [i for b in blocks for i in b.ids]
    day, price = records["day"].astype(np.int64), records["price"].astype(np.float64)
    if head.model is None:
        return Fitted(None, head.as_of, head.zips, head.states, head.counts, head.newest, ids,
                      day, price)  # fmt: skip
    params, regression, calibration, stage = head.model
    # A property's code: its place among the distinct ids in the order of their first sale.
    first = dict.fromkeys(ids)
    codes = dict(zip(first, range(len(first)), strict=True))
    columns: dict[str, Any] = {"extras": no_extras(len(records))}
    columns |= {name: np.ascontiguousarray(records[name]) for name in head.block.names or ()}
    sales = Homes(
        owner=np.fromiter(map(codes.__getitem__, ids), dtype=np.int64, count=len(ids)),
        **{name: columns[name] for name in _HOME_FIELDS},
    )
    core = avm.Core(params, regression, sales, np.ascontiguousarray(records["residual"]))
    model = avm.Model(core, calibration, stage)
    return Fitted(model, head.as_of, head.zips, head.states, head.counts, head.newest, ids, day,
                  price)  # fmt: skip


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


def owner_codes(fitted: Fitted, ids: Sequence[str]) -> IntArray:
    """Owner codes of homes to value: the code of their own training sales where they have
    some (their own sales weigh more among their comparables), else one of their own."""
    assert fitted.model is not None or not fitted.ids
    owners: dict[str, int] = {}
    if fitted.model is not None:
        codes = fitted.model.core.sales.owner.tolist()
        owners = dict(zip(fitted.ids, codes, strict=True))
    fresh = len(owners)
    out = np.empty(len(ids), dtype=np.int64)
    for n, property_id in enumerate(ids):
        code = owners.get(property_id)
        out[n] = fresh + n if code is None else code
    return out


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

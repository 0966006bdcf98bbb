"""What the valuation model reads: homes as columns at a month, the model's clock, and its
settings (`Params`), which every step of an estimate takes.

Land, and any home without a living area, gets no estimate (`supported`). `Vocabulary`,
`floats` and `kind_codes` build `Homes` columns from the store's values.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
Float32Array = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

KINDS = ("singleFamily", "condo", "townhouse", "multiFamily", "land")
"""Property types by code; -1 is unknown (a source that does not say)."""
LAND = KINDS.index("land")
EXTRAS = (
    "stories", "garage_spaces", "basement_finished_area", "fireplaces", "overall_quality",
    "overall_condition",
)  # fmt: skip
"""Features some sources carry and others leave null: the columns of `Homes.extras`, in
this order (the store's column names)."""
EPOCH = dt.date(2000, 1, 1)
MONTH_DAYS = 30.4375


@dataclass(frozen=True, slots=True)
class Params:
    """The model's settings; the defaults were chosen on the held-out sales of
    docs/valuation.md."""

    neighbours: int = 12
    """Comparable sales per estimate."""
    miles: float = 0.35
    """Distance at which the place term of the dissimilarity reaches 1."""
    log_area: float = 0.25
    years_built: float = 15.0
    rooms: float = 2.0
    log_lot: float = 1.0
    months: float = 48.0
    kind: float = 1.0
    """Dissimilarity added when the property types differ."""
    shrink: float = 1.5
    own_weight: float = 10.0
    """Weight multiplier of the subject's own earlier sales among its comparables (a repeat
    sale says more about a house than a neighbour's)."""
    """Comparable weight that stands for 'no correction' (the regression's own vote)."""
    ridge: float = 1.0
    clip: float = 0.4
    """Comparable residuals are clipped to +-clip (log): one odd sale must not swing a value."""
    huber: float = 0.15
    """Regression residuals beyond this (log) are down-weighted (Huber), a few rounds."""
    zip_prior: float = 8.0
    """Sales a ZIP's level needs before it counts as much as its state's."""
    trend_prior: float = 8.0 * 24.0**2
    """Same for its trend (sales times squared months from their mean)."""
    time_knots: float = 12.0
    """Months between knots of the national price curve."""
    folds: int = 5
    calibration_bins: int = 8
    calibration_cap: int = 100_000
    """Out-of-fold errors used at most (a sample; keeps a million-sale fit quick)."""
    coverage: float = 0.85
    market_prior: float = 50.0
    """Out-of-fold errors a market needs before its own error size counts as much as all
    markets' together."""
    conformal_months: float = 12.0
    """The newest sales, this many months back, calibrate each market's interval as
    forecasts (valued by a model fitted on the sales before them)."""
    conformal_prior: float = 50.0
    """Such sales a market (a state) needs before its own coverage correction counts as
    much as its state's (all markets')."""
    boost_rounds: int = 100
    """Trees of the second stage (`valuation.boost`); 0: no second stage."""
    boost_leaves: int = 31
    """Leaves per tree of the second stage."""
    boost_min_sales: int = 200
    """Out-of-fold errors the second stage needs before cross-validation may choose it."""


@dataclass(frozen=True, slots=True)
class Homes:
    """Columns of some homes, each at a month: its features, its place and that month.

    Float columns hold NaN for unknown. `owner` identifies the property (the sales of one
    house share it); `market` is where its comparables may come from.
    """

    owner: IntArray
    zip_code: IntArray
    state: IntArray
    market: IntArray
    latitude: FloatArray
    longitude: FloatArray
    living_area: FloatArray
    lot_size: FloatArray
    bedrooms: FloatArray
    bathrooms: FloatArray
    year_built: FloatArray
    kind: IntArray
    extras: FloatArray
    """One column per name of EXTRAS (rows are homes), NaN where unknown."""
    month: FloatArray

    def __len__(self) -> int:
        return len(self.owner)

    def take(self, index: IntArray | BoolArray) -> Homes:
        """The homes at `index` (positions or a mask)."""
        return Homes(**{name: getattr(self, name)[index] for name in _COLUMNS})

    def at(self, month: FloatArray | float) -> Homes:
        """The same homes, valued at another month."""
        months = np.broadcast_to(np.asarray(month, dtype=np.float64), self.month.shape).copy()
        return replace(self, month=months)


_COLUMNS = tuple(Homes.__dataclass_fields__)


def month_of(date: dt.date | str) -> float:
    """Months since 2000-01-01, fractional: the model's clock."""
    day = dt.date.fromisoformat(date) if isinstance(date, str) else date
    return (day - EPOCH).days / MONTH_DAYS


def supported(homes: Homes) -> BoolArray:
    """Homes the model values: not land, and with a living area (never a guess without one)."""
    mask: BoolArray = (homes.kind != LAND) & (homes.living_area > 0)
    return mask


# -- building Homes from columns -------------------------------------------------------------


@dataclass(slots=True)
class Vocabulary:
    """Codes for strings (ZIP codes, states, towns), first seen first."""

    codes: dict[str, int] = field(default_factory=dict)

    def encode(self, values: Sequence[str]) -> IntArray:
        codes = self.codes
        return np.fromiter(
            (codes.setdefault(v, len(codes)) for v in values), dtype=np.int64, count=len(values)
        )


def no_extras(n: int) -> FloatArray:
    """`Homes.extras` of n homes that carry none of EXTRAS."""
    return np.full((n, len(EXTRAS)), np.nan)


def floats(values: Sequence[float | int | None]) -> FloatArray:
    """A float column from values that may be None (NaN)."""
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def kind_codes(values: Sequence[str | None]) -> IntArray:
    """Property type codes (KINDS); -1 for unknown."""
    lookup = {kind: code for code, kind in enumerate(KINDS)}
    return np.fromiter((lookup.get(v, -1) if v else -1 for v in values), dtype=np.int64,
                       count=len(values))  # fmt: skip

"""The model's second stage: a gradient-boosted model (LightGBM) of what the first stage,
the hedonic regression corrected by comparables (`valuation.model`), gets wrong.

It learns from the first stage's out-of-fold errors of the training sales (each valued by
a first stage fitted without it, as a new sale would be), given the home, its place and
month, the first stage's estimate and its comparables' spread, and the record's optional
fields (`homes.EXTRAS`; LightGBM takes NaN as unknown). Whether to boost at all is chosen
by 5-fold cross-validation on those errors only.

The fitted trees are kept as LightGBM's own text model: stored beside the regression
(`valuation.stored`), read back, they predict exactly as when fitted. A few homes at a time
(a load's, a replication page's: up to NUMPY_ROWS) are predicted by walking the trees of that
text in numpy, bit for bit what LightGBM's own predictor gives (tests/valuation/test_boost.py);
more go to LightGBM. So LightGBM, which takes a second or more to import (pandas, scipy), is
imported only to fit a second stage or to value many homes at once, never by a load of a few
records or by a command that values nothing.

LightGBM's library needs the system's OpenMP runtime (libgomp on Linux, libomp on macOS).
Where it cannot be loaded, `fit` chooses no second stage (said once in the log), and a stored
one is predicted in numpy whatever the number of homes: the service runs, with the estimates
of the model it was given, rather than failing.

    stage, setting, crossed = fit(homes, log_value, spread, error, params)
    log_value + stage.predict(subjects, subject_log_value, subject_spread)
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from propdata.valuation.homes import BoolArray, FloatArray, Homes, IntArray, Params

if TYPE_CHECKING:
    import lightgbm as lgb

log = logging.getLogger(__name__)

Setting = dict[str, Any]
NUMPY_ROWS = 2_000
"""Homes up to which the stored trees are walked in numpy (100 trees of 31 leaves: 0.2 ms
for one home, 3 ms for 250, 14 ms for 1,000, against LightGBM's 3 ms for 1,000 after its
import); beyond, LightGBM predicts."""
_SEED = 7
_FOLDS = 5
_COMMON: Setting = {
    "learning_rate": 0.1, "min_data_in_leaf": 40, "lambda_l2": 1.0, "max_bin": 255,
    "seed": _SEED, "deterministic": True, "force_row_wise": True, "num_threads": 1,
    "verbosity": -1,
}  # fmt: skip


def settings(params: Params) -> tuple[Setting | None, ...]:
    """The candidates cross-validation chooses from: none (the first stage alone), and
    absolute-error boosting (robust to the odd sale, as the regression's Huber weights)."""
    if not params.boost_rounds:
        return (None,)
    return (None, {**_COMMON, "objective": "l1", "num_leaves": params.boost_leaves})


def features(homes: Homes, log_value: FloatArray, spread: FloatArray) -> FloatArray:
    """The second stage's inputs, one row per home."""
    lot = np.where(homes.lot_size > 0, homes.lot_size, np.nan)
    return np.column_stack([
        homes.latitude, homes.longitude, np.log(homes.living_area), np.log(lot),
        homes.bedrooms, homes.bathrooms, homes.year_built, homes.kind.astype(np.float64),
        homes.month, log_value, spread, homes.extras,
    ])  # fmt: skip


class Boost:
    """A fitted second stage: log corrections of the first stage's estimates, from
    LightGBM's text model."""

    def __init__(self, text: str, booster: lgb.Booster | None = None) -> None:
        self._text = text
        self._trees = _trees(text)
        self._booster = booster

    def predict(self, homes: Homes, log_value: FloatArray, spread: FloatArray) -> FloatArray:
        return self.correct(features(homes, log_value, spread))

    def correct(self, x: FloatArray) -> FloatArray:
        """The corrections of rows of `features`."""
        if len(x) > NUMPY_ROWS and (lgb := lightgbm()) is not None:
            if self._booster is None:
                self._booster = lgb.Booster(model_str=self._text)
            return np.asarray(self._booster.predict(x, num_threads=1), dtype=np.float64)
        return _walk(self._trees, x)

    def text(self) -> str:
        """LightGBM's text model: what `read` takes back."""
        return self._text


@dataclass(frozen=True, slots=True)
class _Trees:
    """The trees of a text model side by side, a row each, padded: per split node its
    feature, threshold, where a missing value goes and its children (a leaf -1-n as
    LightGBM numbers them), and the leaves' values. `root` is where each tree starts:
    node 0, or its only leaf (-1) for a tree of one leaf."""

    root: IntArray
    feature: IntArray
    threshold: FloatArray
    default_left: BoolArray
    missing: IntArray
    left: IntArray
    right: IntArray
    leaf: FloatArray


_ZERO = float(np.float32(1e-35))
"""LightGBM's kZeroThreshold (a float): values this close to 0 are 0 to its trees."""
_MISSING_ZERO, _MISSING_NAN = 1, 2
"""Bits 2-3 of a split's decision_type: which values are missing (else none is)."""
_DEFAULT_LEFT = 2
"""Bit 1 of decision_type: a missing value goes left."""


def _trees(text: str) -> _Trees:
    """The trees of LightGBM's text model of a regression; ValueError for what `_walk`
    cannot predict as LightGBM does (categorical or linear trees, a transformed output)."""
    head, *blocks = text.split("\nTree=")
    fields = dict(line.split("=", 1) for line in head.splitlines() if "=" in line)
    objective = fields.get("objective", "").split()
    plain = bool(objective) and objective[0].startswith("regression") and "sqrt" not in objective
    if fields.get("num_class") != "1" or not plain:
        raise ValueError(f"not a text model of a plain regression: {fields.get('objective')}")
    trees = []
    for block in blocks:
        tree = dict(line.split("=", 1) for line in block.split("\n\n")[0].splitlines()[1:])
        if tree.get("num_cat", "0") != "0" or tree.get("is_linear", "0") != "0":
            raise ValueError("categorical or linear trees are not read here")
        trees.append(tree)
    splits = max([len(_column(t, "split_feature", np.int64)) for t in trees] + [1])
    leaves = max([len(_column(t, "leaf_value", np.float64)) for t in trees] + [1])

    def padded(name: str, dtype: type[np.generic], width: int) -> Any:
        out = np.zeros((len(trees), width), dtype=dtype)
        for row, tree in enumerate(trees):
            values = _column(tree, name, dtype)
            out[row, : len(values)] = values
        return out

    decision = padded("decision_type", np.int64, splits)
    feature = padded("split_feature", np.int64, splits)
    return _Trees(
        np.array([0 if len(_column(t, "split_feature", np.int64)) else -1 for t in trees]),
        feature, padded("threshold", np.float64, splits), (decision & _DEFAULT_LEFT) != 0,
        (decision >> 2) & 3, padded("left_child", np.int64, splits),
        padded("right_child", np.int64, splits), padded("leaf_value", np.float64, leaves),
    )  # fmt: skip


def _column(tree: dict[str, str], name: str, dtype: type[np.generic]) -> Any:
    """One of a tree's space-separated lists (empty where a tree of one leaf has none)."""
    return np.array(tree.get(name, "").split(), dtype=dtype)


def _walk(trees: _Trees, x: FloatArray) -> FloatArray:
    """The trees' sum for each row of `x`, as LightGBM's predictor adds it: each tree's leaf
    in tree order, each split as its NumericalDecision takes it (a NaN where NaN is not the
    missing value counts as 0; a missing value goes its default way; else value <= threshold
    goes left).

    Every (row, tree) pair steps down one level at a time together, so a call costs a few
    numpy operations a level of the deepest tree, not a level of each tree."""
    x = np.where(np.abs(x) <= _ZERO, 0.0, x)  # its predictor keeps only values beyond _ZERO
    count, width = trees.feature.shape
    flat = x.ravel()
    feature, threshold = trees.feature.ravel(), trees.threshold.ravel()
    missing_of, default_left = trees.missing.ravel(), trees.default_left.ravel()
    lefts, rights = trees.left.ravel(), trees.right.ravel()
    node = np.tile(trees.root, len(x))  # pair p: row p // count, tree p % count
    pairs = np.flatnonzero(node >= 0)
    base = (pairs % count) * width  # where a pair's tree starts in the flattened arrays
    start = (pairs // count) * x.shape[1]  # where its row starts in `flat`
    cell = base + node[pairs]
    while len(pairs):
        value = flat[start + feature[cell]]
        missing = missing_of[cell]
        nan = np.isnan(value)
        value = np.where(nan & (missing != _MISSING_NAN), 0.0, value)
        default = (nan & (missing == _MISSING_NAN)) | (
            (missing == _MISSING_ZERO) & (np.abs(value) <= _ZERO)
        )
        left = np.where(default, default_left[cell], value <= threshold[cell])
        child = np.where(left, lefts[cell], rights[cell])
        node[pairs] = child
        going = child >= 0
        pairs, base, start = pairs[going], base[going], start[going]
        cell = base + child[going]
    values = trees.leaf[np.arange(count), ~node.reshape(len(x), count)]
    total = np.zeros(len(x))
    for column in values.T:  # in tree order, as LightGBM adds them
        total = total + column
    return total


@functools.cache
def lightgbm() -> ModuleType | None:
    """LightGBM, or None (said once in the log) where its library cannot be loaded."""
    try:
        import lightgbm as lgb
    except (ImportError, OSError) as exc:
        log.warning("valuation: no second stage, LightGBM cannot be loaded here (%s); install"
                    " the OpenMP runtime (libgomp1, or libomp on macOS)", exc)  # fmt: skip
        return None
    return lgb


def read(text: str) -> Boost:
    """The stored second stage (predicted in numpy where LightGBM cannot be loaded)."""
    return Boost(text)


def train(x: FloatArray, error: FloatArray, setting: Setting, rounds: int) -> Boost:
    lgb = lightgbm()
    assert lgb is not None, "fit only where LightGBM loads"
    data = lgb.Dataset(x, label=error, params={"verbosity": -1}, free_raw_data=True)
    booster = lgb.train(setting, data, num_boost_round=rounds)
    return Boost(str(booster.model_to_string()), booster)


def fit(
    homes: Homes, log_value: FloatArray, spread: FloatArray, error: FloatArray, params: Params
) -> tuple[Boost | None, Setting | None, FloatArray]:
    """The second stage for these training sales (their out-of-fold first-stage estimates,
    spreads and errors), the setting chosen, and its cross-fitted predictions of `error`
    (each fold's by a model fitted on the other folds; zeros when none is chosen): the
    errors the interval is calibrated on are `error` minus those.

    None when cross-validation finds that no setting beats the first stage alone, or when
    there are too few sales to tell.
    """
    candidates = settings(params)
    if len(error) < params.boost_min_sales or len(candidates) == 1 or lightgbm() is None:
        return None, None, np.zeros(len(error))
    x = features(homes, log_value, spread)
    folds = np.random.default_rng(_SEED).integers(0, _FOLDS, len(error))
    best: tuple[float, Setting | None, FloatArray] = (
        float(np.mean(np.abs(error))), None, np.zeros(len(error)),
    )  # fmt: skip
    for setting in candidates[1:]:
        assert setting is not None
        crossed = np.empty(len(error))
        for k in range(_FOLDS):
            held = folds == k
            stage = train(x[~held], error[~held], setting, params.boost_rounds)
            crossed[held] = stage.correct(x[held])
        score = float(np.mean(np.abs(error - crossed)))
        if score < best[0]:
            best = (score, setting, crossed)
    _, chosen, crossed = best
    if chosen is None:
        return None, None, crossed
    return train(x, error, chosen, params.boost_rounds), chosen, crossed

"""The model's second stage: a gradient-boosted model (LightGBM) of what the first stage,
the hedonic regression corrected by comparables (`valuation.model`), gets wrong.

It learns from the first stage's out-of-fold errors of the training sales (each valued by
a first stage fitted without it, as a new sale would be), given the home, its place and
month, the first stage's estimate and its comparables' spread, and the record's optional
fields (`homes.EXTRAS`; LightGBM takes NaN as unknown). Whether to boost at all is chosen
by 5-fold cross-validation on those errors only.

The fitted trees are kept as LightGBM's own text model: stored beside the regression
(`valuation.stored`), read back, they predict exactly as when fitted. LightGBM is imported
when a second stage is first fitted or read, not with this module: it takes a second or
more to import, which no command that values nothing should pay.

LightGBM's library needs the system's OpenMP runtime (libgomp on Linux, libomp on macOS).
Where it cannot be loaded, the model is the first stage alone: `fit` chooses no second
stage, and a stored one that cannot be read is left out (each said once in the log), so
the service runs, with the first stage's estimates, rather than failing.

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

from propdata.valuation.homes import FloatArray, Homes, Params

if TYPE_CHECKING:
    import lightgbm as lgb

log = logging.getLogger(__name__)

Setting = dict[str, Any]
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


@dataclass(frozen=True, slots=True)
class Boost:
    """A fitted second stage: log corrections of the first stage's estimates."""

    booster: lgb.Booster

    def predict(self, homes: Homes, log_value: FloatArray, spread: FloatArray) -> FloatArray:
        if not len(homes):
            return np.zeros(0)
        x = features(homes, log_value, spread)
        return np.asarray(self.booster.predict(x, num_threads=1), dtype=np.float64)

    def text(self) -> str:
        """LightGBM's text model: what `read` takes back."""
        return str(self.booster.model_to_string())


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


def read(text: str) -> Boost | None:
    """The stored second stage; None where LightGBM cannot be loaded."""
    lgb = lightgbm()
    return None if lgb is None else Boost(lgb.Booster(model_str=text))


def train(x: FloatArray, error: FloatArray, setting: Setting, rounds: int) -> Boost:
    lgb = lightgbm()
    assert lgb is not None, "fit only where LightGBM loads"
    data = lgb.Dataset(x, label=error, params={"verbosity": -1}, free_raw_data=True)
    return Boost(lgb.train(setting, data, num_boost_round=rounds))


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
            crossed[held] = stage.booster.predict(x[held], num_threads=1)
        score = float(np.mean(np.abs(error - crossed)))
        if score < best[0]:
            best = (score, setting, crossed)
    _, chosen, crossed = best
    if chosen is None:
        return None, None, crossed
    return train(x, error, chosen, params.boost_rounds), chosen, crossed

"""Experiments on the valuation model that docs/valuation.md's method section reports:
`python -m tools.valuation_experiments [--store var/valuation-report.db] [--only ...]`.

Uses the held-out splits of `tools/valuation_report.py` (the same store, the same training
and test events) and measures:

1. **A stack**: the hedonic + comparables model, then a gradient-boosted model
   (scikit-learn's HistGradientBoostingRegressor) on its residuals, given the home, its
   place and date, the first stage's estimate and its comparables' spread, and the
   record's optional fields (`homes.EXTRAS`, NaN where unknown). The residuals it learns
   from are out-of-fold (each training sale valued by a model fitted on the other folds,
   `valuation.model.out_of_fold`), and its settings, or no boosting at all, are chosen by
   5-fold cross-validation on those training residuals only: the test sales are used
   once, to measure the choice.
2. **The record's optional fields in the regression** (`regression.TERMS`): all, none,
   each left out and each alone, on a validation split inside the Ames training period
   (train before 2009, value the 2009 sales: what the choice is made on) and on the
   Ames 2010 hold-out.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import itertools
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sklearn.ensemble import HistGradientBoostingRegressor  # type: ignore[import-untyped]

from propdata.valuation import model as avm
from propdata.valuation import regression
from propdata.valuation.homes import FloatArray, Homes, Params, supported
from propdata.valuation.stock import Priced, Stock
from tools import valuation_report as report

Setting = dict[str, float | int | str]
SETTINGS: tuple[Setting | None, ...] = (
    None,  # no boosting: the hedonic + comparables model alone
    *(
        Setting(learning_rate=rate, max_iter=iters, max_leaf_nodes=leaves,
                min_samples_leaf=40, l2_regularization=1.0, loss=loss)
        for rate, iters, leaves, loss in itertools.product(
            (0.1,), (100,), (7, 31), ("squared_error", "absolute_error"))
    ),
)  # fmt: skip
"""The candidates cross-validation chooses from."""
SEED = 7


def features(homes: Homes, log_value: FloatArray, spread: FloatArray) -> FloatArray:
    """The boosted stage's inputs: the home, its place and date, the first stage's estimate
    and its comparables' spread, and the record's optional fields."""
    return np.column_stack([
        homes.latitude, homes.longitude, np.log(homes.living_area), np.log(homes.lot_size),
        homes.bedrooms, homes.bathrooms, homes.year_built, homes.kind.astype(np.float64),
        homes.month, log_value, spread, homes.extras,
    ])  # fmt: skip


@dataclass(frozen=True, slots=True)
class Stage:
    """Out-of-fold first-stage estimates of training sales, or estimates of test sales."""

    rows: np.typing.NDArray[np.int64]
    log_value: FloatArray
    spread: FloatArray


def first_stage_train(homes: Homes, y: FloatArray, params: Params) -> Stage:
    positions, errors, spreads = avm.out_of_fold(homes, y, params)
    return Stage(positions, y[positions] - errors, spreads)


def boosted(setting: dict[str, float | int | str]) -> HistGradientBoostingRegressor:
    return HistGradientBoostingRegressor(random_state=SEED, **setting)


def choose(x: FloatArray, residual: FloatArray) -> tuple[dict[str, float | int | str] | None,
                                                         list[tuple[str, float]]]:  # fmt: skip
    """The setting (None: no boosting) with the least cross-validated mean absolute log
    error on the training residuals."""
    folds = np.random.default_rng(SEED).integers(0, 5, len(residual))
    scores: list[tuple[str, float]] = []
    best: tuple[float, dict[str, float | int | str] | None] = (np.inf, None)
    for setting in SETTINGS:
        errors = np.empty(len(residual))
        for k in range(5):
            held = folds == k
            if setting is None:
                errors[held] = residual[held]
            else:
                fitted = boosted(setting).fit(x[~held], residual[~held])
                errors[held] = residual[held] - fitted.predict(x[held])
        score = float(np.mean(np.abs(errors)))
        scores.append((_name(setting), score))
        if score < best[0]:
            best = (score, setting)
    return best[1], scores


def _name(setting: dict[str, float | int | str] | None) -> str:
    if setting is None:
        return "none"
    return (f"{setting['loss']} {setting['max_iter']} trees {setting['max_leaf_nodes']} leaves"
            f" rate {setting['learning_rate']}")  # fmt: skip


@dataclass(frozen=True, slots=True)
class Outcome:
    median_error: float
    log_rmse: float
    within_10: float
    chosen: str


@dataclass(frozen=True, slots=True)
class Split:
    """One held-out split, its first stage fitted: out-of-fold on the training sales,
    plainly on the test sales."""

    train: Priced
    test: Priced
    train_homes: Homes
    oof: Stage
    residual: FloatArray
    """Training log price minus its out-of-fold first-stage estimate."""
    test_homes: Homes
    point: Stage
    truth: FloatArray


def first_stage(stock: Stock, train: Priced, test: Priced) -> Split:
    usable = supported(stock.homes.take(train.owner)) & (train.price > 0)
    train = train.take(np.flatnonzero(usable))
    params = Params()
    homes, y = stock.priced(train), np.log(train.price)
    model = avm.fit(homes, y, params)
    subjects = stock.priced(test)
    valued = np.flatnonzero(supported(subjects))
    point = avm._point(model.core, subjects.take(valued))
    oof = first_stage_train(homes, y, params)
    return Split(train, test.take(valued), homes, oof, y[oof.rows] - oof.log_value,
                 subjects.take(valued), Stage(valued, point.log_value, point.spread),
                 np.log(test.price[valued]))  # fmt: skip


def run(data: Split) -> Outcome:
    """The stack on one split, its setting chosen by 5-fold CV on the training residuals."""
    oof = data.oof
    x_train = features(data.train_homes.take(oof.rows), oof.log_value, oof.spread)
    known = ~np.isnan(x_train).all(axis=0)  # a field no training home has: no input
    x_train = x_train[:, known]
    setting = choose(x_train, data.residual)[0]
    if setting is None:
        return _outcome(data.point.log_value, data.truth, "none")
    fitted = boosted(setting).fit(x_train, data.residual)
    x_test = features(data.test_homes, data.point.log_value, data.point.spread)[:, known]
    return _outcome(data.point.log_value + fitted.predict(x_test), data.truth, _name(setting))


def _outcome(log_value: FloatArray, truth: FloatArray, chosen: str) -> Outcome:
    error = np.abs(np.exp(log_value - truth) - 1)
    return Outcome(float(np.median(error)), float(np.sqrt(np.mean((log_value - truth) ** 2))),
                   float(np.mean(error <= 0.10)), chosen)  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=Path("var/valuation-report.db"))
    parser.add_argument("--only", choices=("stack", "features"), default=None)
    parser.add_argument("--split", default="", help="Stack: only the splits named so.")
    args = parser.parse_args(argv)
    stored = asyncio.run(report.load_stock(args.store))
    extended = report.with_sacramento(stored)
    if args.only in (None, "stack"):
        print("1. stack: first stage alone -> stack (setting chosen by CV on training only)")
        for spec in report.SPLITS:
            if args.split and not spec.name.startswith(args.split):
                continue
            started = time.perf_counter()
            stock = extended if spec.fifth else stored
            data = first_stage(stock, *report.split(stock, spec))
            base = _outcome(data.point.log_value, data.truth, "none")
            try:
                stack = run(data)
            except ValueError as error:  # scikit-learn's binning on some splits' fields
                print(f"  {spec.name}: {_line(base)} -> stack failed: {error}", flush=True)
                continue
            print(f"  {spec.name}: {_line(base)} -> {_line(stack)} [{stack.chosen}]"
                  f" ({time.perf_counter() - started:.0f} s)", flush=True)  # fmt: skip
    if args.only in (None, "features"):
        validation = report.Split("Ames 2009 validation", "sales", dt.date(2009, 1, 1), "ames-",
                                  True, until=dt.date(2010, 1, 1))  # fmt: skip
        print(
            "2. the regression's optional fields (median error / log RMSE / 85 % interval"
            " coverage): Ames 2009 validation; Ames 2010 hold-out"
        )
        every = dict(regression.TERMS)
        trials: list[tuple[str, list[str]]] = [("none", []), ("all", list(every))]
        trials += [(f"all but {n}", [m for m in every if m != n]) for n in every]
        trials += [(f"{n} alone", [n]) for n in every]
        try:
            for label, names in trials:
                regression.TERMS = {n: every[n] for n in names}
                found = [report.evaluate(stored, *report.split(stored, spec))
                         for spec in (validation, report.SPLITS[0])]  # fmt: skip
                print(f"  {label}: " + "; ".join(
                    f"{a.median_error:.1%} / {a.log_rmse:.3f} / coverage {a.coverage:.1%}"
                    for a in found), flush=True)  # fmt: skip
        finally:
            regression.TERMS = every


def _line(o: Outcome) -> str:
    return f"median error {o.median_error:.1%}, within 10 % {o.within_10:.0%}, log RMSE {o.log_rmse:.3f}"


if __name__ == "__main__":
    main()

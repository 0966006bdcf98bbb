"""Experiments on the valuation model that docs/valuation.md's method section reports:
`python -m tools.valuation_experiments [--store var/valuation-report.db] [--only ...]`.

Uses the held-out splits of `tools/valuation_report.py` (the same store, the same training
and test events) and measures:

1. **The second stage** (`valuation.boost`): every split with the hedonic + comparables
   model alone (`boost_rounds=0`) and with the boosted stage that cross-validation on the
   training sales chooses (the model as it runs).
2. **The record's optional fields in the regression** (`regression.TERMS`): all, none,
   each left out and each alone, on a validation split inside the Ames training period
   (train before 2009, value the 2009 sales: what the choice is made on) and on the
   Ames 2010 hold-out.
3. **The interval's conformal prior** (`Params.conformal_prior`): the coverage of the
   85 % interval on the validation splits inside the Ames and Grinnell training periods
   (what the choice is made on), and on every held-out split.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import time
from dataclasses import replace
from pathlib import Path

from propdata.valuation import regression
from propdata.valuation.homes import Params
from propdata.valuation.stock import Stock
from tools import valuation_report as report

VALIDATION = (
    report.Split("Ames 2009 validation", "sales", dt.date(2009, 1, 1), "ames-", True,
                 until=dt.date(2010, 1, 1)),
    report.Split("Grinnell 2011 validation", "sales", dt.date(2011, 1, 1), "grinnell-", True,
                 until=dt.date(2012, 1, 1)),
)  # fmt: skip
"""Splits inside the training periods of the Ames and Grinnell hold-outs."""
PRIORS = (25.0, 50.0, 100.0, 200.0, 400.0)


def _evaluate(
    stored: Stock, extended: Stock, spec: report.Split, params: Params
) -> report.Accuracy:
    stock = extended if spec.fifth else stored
    return report.evaluate(stock, *report.split(stock, spec), params)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=Path("var/valuation-report.db"))
    parser.add_argument("--only", choices=("stack", "features", "prior"), default=None)
    args = parser.parse_args(argv)
    stored = asyncio.run(report.load_stock(args.store))
    extended = report.with_sacramento(stored)
    if args.only in (None, "stack"):
        print("1. second stage: first stage alone -> both stages (median error / log RMSE /"
              " 85 % interval coverage)")  # fmt: skip
        for spec in report.SPLITS:
            started = time.perf_counter()
            alone = _evaluate(stored, extended, spec, Params(boost_rounds=0))
            both = _evaluate(stored, extended, spec, Params())
            print(f"  {spec.name}: {_short(alone)} -> {_short(both)}"
                  f" ({time.perf_counter() - started:.0f} s)", flush=True)  # fmt: skip
    if args.only in (None, "features"):
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
                         for spec in (VALIDATION[0], report.SPLITS[0])]  # fmt: skip
                print(f"  {label}: " + "; ".join(_short(a) for a in found), flush=True)
        finally:
            regression.TERMS = every
    if args.only in (None, "prior"):
        names = [s.name for s in (*VALIDATION, *report.SPLITS)]
        print("3. conformal prior: 85 % interval coverage on " + ", ".join(names))
        for prior in PRIORS:
            params = replace(Params(), conformal_prior=prior)
            found = [_evaluate(stored, extended, spec, params)
                     for spec in (*VALIDATION, *report.SPLITS)]  # fmt: skip
            print(f"  {prior:g}: " + " / ".join(f"{a.coverage:.1%}" for a in found), flush=True)


def _short(a: report.Accuracy) -> str:
    return f"{a.median_error:.1%} / {a.log_rmse:.3f} / {a.coverage:.1%}"


if __name__ == "__main__":
    main()

"""valuation.boost: the second stage learns what the first gets wrong, only when
cross-validation says it helps, and predicts the same read back from its text."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from propdata.valuation import boost
from propdata.valuation import model as avm
from propdata.valuation.homes import FloatArray, Homes, Params
from tests.valuation.test_model import homes


def _bent(built: Homes, log_price: FloatArray) -> FloatArray:
    """Prices with a kink the regression's smooth terms cannot follow: homes built after
    1990 are worth 25 % more."""
    return log_price + np.where(built.year_built > 1990, 0.25, 0.0)


def test_a_pattern_the_first_stage_misses_is_learnt_and_read_back_the_same() -> None:
    sales, log_price = homes(2_000)
    log_price = _bent(sales, log_price)
    subjects, truth = homes(400, seed=7)
    truth = _bent(subjects, truth)
    model = avm.fit(sales, log_price)
    alone = avm.fit(sales, log_price, Params(boost_rounds=0))
    assert model.boost is not None and alone.boost is None
    error = np.log(avm.predict(model, subjects).value) - truth
    alone_error = np.log(avm.predict(alone, subjects).value) - truth
    assert np.mean(np.abs(error)) < np.mean(np.abs(alone_error))
    # Near the kink the first stage alone undervalues the newer homes and overvalues the
    # older ones (its terms are smooth); both stages do neither.
    near = np.abs(subjects.year_built - 1990) < 8
    for side in (subjects.year_built > 1990, subjects.year_built <= 1990):
        assert abs(np.mean(alone_error[near & side])) > 0.06
        assert abs(np.mean(error[near & side])) < 0.03
    # The interval is calibrated on both stages' errors: it still holds most prices.
    estimates = avm.predict(model, subjects)
    inside = (np.log(estimates.low) <= truth) & (truth <= np.log(estimates.high))
    assert 0.75 <= inside.mean() <= 0.97
    read = boost.read(model.boost.text())
    point = avm._point(model.core, subjects)
    assert np.array_equal(
        read.predict(subjects, point.log_value, point.spread),
        model.boost.predict(subjects, point.log_value, point.spread),
    )


def test_errors_with_nothing_to_learn_keep_the_first_stage_alone() -> None:
    sales, log_price = homes(1_500)
    rng = np.random.default_rng(5)
    spread = np.full(len(log_price), 0.1)
    noise = rng.normal(0, 0.1, len(log_price))
    stage, setting, crossed = boost.fit(sales, log_price, spread, noise, Params())
    assert stage is None and setting is None and not crossed.any()


def test_too_few_sales_or_no_rounds_fit_no_second_stage() -> None:
    sales, log_price = homes(150)
    errors = np.where(sales.year_built > 1990, 0.25, -0.25)
    spread = np.full(len(log_price), 0.1)
    assert boost.fit(sales, log_price, spread, errors, Params())[0] is None
    many, price = homes(1_000)
    errors = np.where(many.year_built > 1990, 0.25, -0.25)
    spread = np.full(len(price), 0.1)
    assert boost.fit(many, price, spread, errors, Params())[0] is not None
    assert boost.fit(many, price, spread, errors, replace(Params(), boost_rounds=0))[0] is None


_WITHOUT = """
import sys
import numpy as np
sys.modules["lightgbm"] = None  # as where its library cannot be loaded: import fails
from propdata.valuation import model as avm
from tests.valuation.test_boost import _bent
from tests.valuation.test_model import homes
sales, log_price = homes(2_000)
model = avm.fit(sales, _bent(sales, log_price))
subjects, _ = homes(50, seed=7)
assert model.boost is None and np.isfinite(avm.predict(model, subjects).value).all()
header = np.load(sys.argv[1], allow_pickle=False)
from propdata.valuation import boost
assert boost.read(str(header["boost"])) is None  # what stored.decode then leaves out
print("first stage alone")
"""


def test_where_lightgbm_cannot_load_the_first_stage_values_alone(tmp_path: Path) -> None:
    """A process whose LightGBM import fails fits no second stage and reads a stored one
    as none: it values with the first stage (and says so once in its log)."""
    sales, log_price = homes(2_000)
    model = avm.fit(sales, _bent(sales, log_price))
    assert model.boost is not None
    np.savez(tmp_path / "header.npz", boost=np.array(model.boost.text()))
    done = subprocess.run([sys.executable, "-c", _WITHOUT, str(tmp_path / "header.npz")],
                          capture_output=True, text=True, timeout=120, check=False,
                          cwd=Path(__file__).parents[2])  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "first stage alone" in done.stdout
    assert done.stderr.count("LightGBM cannot be loaded") == 1

"""valuation.boost: the second stage learns what the first gets wrong, only when
cross-validation says it helps, and predicts the same read back from its text."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

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


def _fitted(rows: int, setting: dict[str, object]) -> tuple[boost.Boost, np.ndarray]:
    """A stage fitted on rows with NaN, zeros and near-zeros in every column but the last
    (which has none while fitting: LightGBM then treats none of its values as missing), and
    rows to predict with more of each, the last column's NaN included."""
    rng = np.random.default_rng(11)
    x = rng.normal(size=(rows, 6))
    for column in range(5):
        x[rng.random(rows) < 0.15, column] = np.nan
        x[rng.random(rows) < 0.1, column] = 0.0
        x[rng.random(rows) < 0.02, column] = 1e-40
    error = np.nan_to_num(x[:, 0]) + np.sin(3 * np.nan_to_num(x[:, 1])) + x[:, 5] ** 2
    chosen = boost.settings(Params())[-1]
    assert chosen is not None
    stage = boost.train(x, error, {**chosen, **setting}, 40)
    subjects = rng.normal(size=(3_000, 6))
    for column in range(6):
        subjects[rng.random(3_000) < 0.15, column] = np.nan
        subjects[rng.random(3_000) < 0.1, column] = 0.0
    return stage, subjects


def test_the_trees_walked_in_numpy_predict_as_lightgbm_bit_for_bit() -> None:
    """A few homes are predicted by walking the stored text model in numpy, many by
    LightGBM: both give the same bits, whatever is missing and however LightGBM was told to
    treat it."""
    for setting in ({}, {"zero_as_missing": True}, {"use_missing": False}):
        stage, subjects = _fitted(3_000, setting)
        lightgbm = stage._booster
        assert lightgbm is not None
        expected = np.asarray(lightgbm.predict(subjects, num_threads=1), dtype=np.float64)
        read = boost.read(stage.text())
        assert read._booster is None
        few = subjects[: boost.NUMPY_ROWS]
        assert np.array_equal(read.correct(few), expected[: boost.NUMPY_ROWS]), setting
        assert read._booster is None  # walked in numpy
        assert np.array_equal(read.correct(subjects), expected), setting
        assert read._booster is not None  # beyond NUMPY_ROWS: LightGBM
        assert np.array_equal(read.correct(subjects[:1]), expected[:1])
        assert len(read.correct(subjects[:0])) == 0


def test_a_tree_of_one_leaf_is_walked_as_lightgbm_predicts_it() -> None:
    """Errors no split explains give trees of a single leaf (no node to walk): each adds its
    leaf to every home, as LightGBM's predictor does."""
    x = np.random.default_rng(3).normal(size=(500, 4))
    chosen = boost.settings(Params())[-1]
    assert chosen is not None
    stage = boost.train(x, np.full(500, 0.3), chosen, 5)
    assert "num_leaves=1" in stage.text()
    lightgbm = stage._booster
    assert lightgbm is not None
    expected = np.asarray(lightgbm.predict(x, num_threads=1), dtype=np.float64)
    read = boost.read(stage.text())
    assert np.array_equal(read.correct(x), expected)
    assert read._booster is None  # walked in numpy


def test_a_text_model_numpy_cannot_walk_is_refused() -> None:
    stage, _ = _fitted(1_000, {})
    text = stage.text()
    with pytest.raises(ValueError, match="plain regression"):
        boost.read(text.replace("objective=regression_l1", "objective=binary sigmoid:1"))
    with pytest.raises(ValueError, match="categorical"):
        boost.read(text.replace("num_cat=0", "num_cat=1", 1))


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
stored = np.load(sys.argv[1], allow_pickle=False)
from propdata.valuation import boost
x = stored["x"]
assert np.array_equal(boost.read(str(stored["boost"])).correct(x), stored["expected"])
print("stored stage predicted")
"""


def test_where_lightgbm_cannot_load_no_stage_is_fitted_and_a_stored_one_still_predicts(
    tmp_path: Path,
) -> None:
    """A process whose LightGBM import fails fits no second stage (and says so once in its
    log), and predicts a stored one in numpy, to the bit, whatever the number of homes."""
    sales, log_price = homes(2_000)
    model = avm.fit(sales, _bent(sales, log_price))
    assert model.boost is not None
    subjects, _ = homes(boost.NUMPY_ROWS + 500, seed=3)
    point = avm._point(model.core, subjects)
    x = boost.features(subjects, point.log_value, point.spread)
    np.savez(tmp_path / "stored.npz", boost=np.array(model.boost.text()), x=x,
             expected=model.boost.correct(x))  # fmt: skip
    done = subprocess.run([sys.executable, "-c", _WITHOUT, str(tmp_path / "stored.npz")],
                          capture_output=True, text=True, timeout=120, check=False,
                          cwd=Path(__file__).parents[2])  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "stored stage predicted" in done.stdout
    assert done.stderr.count("LightGBM cannot be loaded") == 1


_FEW = """
import sys
import numpy as np
from propdata.valuation import boost
stored = np.load(sys.argv[1], allow_pickle=False)
assert np.array_equal(boost.read(str(stored["boost"])).correct(stored["x"]), stored["expected"])
assert "lightgbm" not in sys.modules, "valuing a few homes imported LightGBM"
print("valued without LightGBM")
"""


def test_valuing_a_few_homes_does_not_import_lightgbm(tmp_path: Path) -> None:
    stage, subjects = _fitted(2_000, {})
    few = subjects[:100]
    np.savez(tmp_path / "stored.npz", boost=np.array(stage.text()), x=few,
             expected=stage.correct(few))  # fmt: skip
    done = subprocess.run([sys.executable, "-c", _FEW, str(tmp_path / "stored.npz")],
                          capture_output=True, text=True, timeout=120, check=False,
                          cwd=Path(__file__).parents[2])  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "valued without LightGBM" in done.stdout

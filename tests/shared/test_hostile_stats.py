"""The statistics under hostile input: Krippendorff's alpha refuses a level it does not
compute and stays exact under a constant shift (checked against the ``krippendorff``
package); ``prediction_powered_mean`` takes any real ``alpha`` and refuses labels that are no
numbers; calibrate's judge-only mean is on the estimates' scale."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest

from shared import prediction_powered_mean
from shared.analysis.calibration_figures import calibration_report, report_table
from shared.base.errors import UserInputError
from shared.kit.panel_stats import alpha_interval, krippendorff_alpha


@pytest.mark.parametrize("level", ["ordinal", "ratio", "intervall", "Nominal"])
def test_an_unknown_level_is_refused(level: str) -> None:
    ratings = [[1, 2, 3], [2, 2, 3], [1, 3, 3]]
    with pytest.raises(ValueError, match=f"level={level!r}"):
        krippendorff_alpha(ratings, level)
    with pytest.raises(ValueError, match=f"level={level!r}"):
        alpha_interval(ratings, level)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("shift", [0.0, 1e7, 1e8, 1e12])
def test_interval_alpha_is_exact_under_a_constant_shift(seed: int, shift: float) -> None:
    rng = np.random.default_rng(seed)
    ratings = rng.random((60, 3)) + rng.random((60, 1))  # some agreement
    ratings[rng.random(ratings.shape) < 0.2] = np.nan
    shifted = ratings + shift
    # the reference, on the shifted floats brought back exactly (x + s - s is exact here)
    reference = krippendorff.alpha(reliability_data=(shifted - shift).T,
                                   level_of_measurement="interval")
    assert krippendorff_alpha(shifted, "interval") == pytest.approx(reference, abs=1e-12)
    if shift:
        assert alpha_interval(shifted, "interval") == pytest.approx(
            alpha_interval(shifted - shift, "interval"), abs=1e-9)


def test_any_real_alpha_is_taken() -> None:
    args = ([0.2, 0.8, 0.5, 0.4], [0, 1, 1, 0], [0.3, 0.4, 0.9])
    expected = prediction_powered_mean(*args, alpha=0.05)
    for alpha in (np.float32(0.05), np.float64(0.05)):
        assert prediction_powered_mean(*args, alpha=alpha) == pytest.approx(expected, abs=1e-7)
    for bad in (True, "0.05", np.float32(1.5), None):
        with pytest.raises(UserInputError, match="alpha must be a number"):
            prediction_powered_mean(*args, alpha=bad)


@pytest.mark.parametrize(("labels", "says"), [
    ([0, None, 1, 1], r"labels\[1\] is None"),
    (["1", "0", "1", "0"], r"labels\[0\] is str '1'"),
    ([1, 0, float("nan"), 1], r"labels\[2\] is nan"),
    ("1010", "got text")])
def test_labels_that_are_no_numbers_are_refused_by_name(labels: list, says: str) -> None:
    with pytest.raises(UserInputError, match=says):
        prediction_powered_mean([0.2, 0.8, 0.5, 0.4], labels, [0.3, 0.4])


def test_calibrate_puts_the_judge_only_mean_on_the_estimates_scale() -> None:
    rng = np.random.default_rng(3)
    scores = rng.integers(1, 6, 200).astype(float)  # a 1-5 metric (summary_coherence)
    labels = [int(s) if i < 60 else None for i, s in enumerate(scores)]
    report = calibration_report(scores.tolist(), labels, label_range=(1, 5),
                                score_range=(1.0, 5.0))
    assert report["judge_only"]["value"] == pytest.approx((scores.mean() - 1) / 4)
    assert report["judge_only"]["on_score_scale"] == pytest.approx(scores.mean())
    # the labels are the scores here: every estimate and the judge-only mean on one 0-1 scale
    assert 0 <= report["estimate"]["value"] <= 1
    assert abs(report["judge_only"]["value"] - report["estimate"]["value"]) < 0.05
    assert "1..5 mapped onto 0..1" in report_table(report)

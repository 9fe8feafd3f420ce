"""The verdicts of assert_metric (shared/analysis/verdicts.py): never a pass on equal scores,
coverage by simulation at small n, clustered by row over runs. The interval itself,
stats.t_wilson_interval, is checked in tests/shared/test_threshold_interval.py."""

from __future__ import annotations

import numpy as np
import pytest

from shared.analysis.verdicts import decide, verdict_of
from shared.kit import stats


def test_equal_scores_give_an_inconclusive_verdict_not_a_pass() -> None:
    """The interval is stats.t_wilson_interval (tests/shared/test_threshold_interval.py):
    five rows all scoring 1.0 do not show a mean of at least 0.9."""
    verdict = verdict_of([[1.0] * 5], at_least=0.9)
    assert verdict.outcome == "inconclusive" and verdict.low < 0.9 and verdict.value == 1.0
    assert (verdict.low, verdict.high) == stats.t_wilson_interval([1.0] * 5)


def test_a_score_range_other_than_zero_one_is_rescaled() -> None:
    verdict = verdict_of([[4.0, 5.0, 3.0, 5.0]], at_least=2.0, score_range=(1.0, 5.0))
    unit = verdict_of([[0.75, 1.0, 0.5, 1.0]], at_least=0.25)
    assert (verdict.value, verdict.low, verdict.high) == pytest.approx(
        tuple(1 + 4 * v for v in (unit.value, unit.low, unit.high)))


def test_decide_passes_fails_and_straddles() -> None:
    assert decide(0.8, 0.9, 0.7, None) == "pass"
    assert decide(0.5, 0.6, 0.7, None) == "fail"
    assert decide(0.6, 0.8, 0.7, None) == "inconclusive"
    assert decide(0.1, 0.2, None, 0.3) == "pass"
    assert decide(0.4, 0.5, None, 0.3) == "fail"
    assert decide(0.5, 0.6, 0.4, 0.55) == "inconclusive"
    assert decide(0.5, 0.6, 0.7, 0.9) == "fail"


def _coverage(draw, true_mean: float, n: int, trials: int = 2000, runs: int = 1) -> float:
    rng = np.random.default_rng(12345)
    hits = 0
    for _ in range(trials):
        sample = draw(rng, (runs, n))
        verdict = verdict_of(sample.tolist(), at_least=0.5)
        hits += verdict.low <= true_mean <= verdict.high
    return hits / trials


@pytest.mark.parametrize("n", [5, 10, 30])
def test_coverage_at_small_n(n: int) -> None:
    """At least about the nominal 95 % (simulation error ~0.5 %) for 0/1 scores near the
    edge, for skewed continuous scores and for scores on a few levels."""
    cases = [
        (lambda rng, shape: (rng.random(shape) < 0.9).astype(float), 0.9),
        (lambda rng, shape: rng.beta(8, 1, shape), 8 / 9),
        (lambda rng, shape: rng.choice([0.0, 0.5, 1.0], shape, p=[0.05, 0.15, 0.8]), 0.875),
    ]
    for draw, true_mean in cases:
        assert _coverage(draw, true_mean, n, trials=1000) >= 0.93


def test_runs_are_clustered_by_row() -> None:
    """Rows of different difficulty asked twice: each row's two runs agree, so counting
    2n independent scores would cover too little; the row means keep the coverage."""
    def draw(rng, shape):
        runs, n = shape
        p = rng.beta(2, 2, n)  # each row's own chance of a "yes"
        return (rng.random((runs, n)) < p).astype(float)

    assert _coverage(draw, 0.5, 10, trials=1000, runs=3) >= 0.93


def test_unmeasured_rows_are_left_out_and_counted() -> None:
    verdict = verdict_of([[1.0, None, 0.0], [1.0, None, None]], at_least=0.2)
    assert (verdict.n, verdict.unmeasured, verdict.value) == (2, 1, pytest.approx(0.5))
    empty = verdict_of([[None, None]], at_least=0.5)
    assert (empty.outcome, empty.n, empty.value) == ("inconclusive", 0, None)

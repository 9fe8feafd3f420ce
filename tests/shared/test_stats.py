"""shared.kit.stats: seeded percentile bootstrap."""

from __future__ import annotations

import numpy as np
import pytest

from shared import stats


def test_repeatable_and_seed_dependent() -> None:
    values = [1, 0, 1, 1, 0, 1, 0, 1, 1, 1]
    assert stats.bootstrap_ci(values, seed=3) == stats.bootstrap_ci(values, seed=3)
    draws = {stats.bootstrap_ci(values, seed=s) for s in range(20)}
    assert len(draws) > 1


@pytest.mark.parametrize("kind", ["binary", "continuous"])
def test_interval_contains_mean_and_shrinks(kind: str) -> None:
    rng = np.random.default_rng(1)
    widths = []
    for n in (50, 5000):
        values = rng.random(n) < 0.3 if kind == "binary" else rng.normal(size=n)
        low, high = stats.bootstrap_ci(values)
        assert low <= float(np.mean(values)) <= high
        widths.append(high - low)
    assert widths[1] < widths[0] / 5


def test_binary_shortcut_matches_plain_resampling() -> None:
    """0/1 data take the Binomial shortcut; its means must have the resampling distribution."""
    values = np.array([1.0] * 30 + [0.0] * 70)
    fast = stats.bootstrap_means(values, n_resamples=20000, seed=0)
    rng = np.random.default_rng(5)
    plain = values[rng.integers(0, values.size, size=(20000, values.size))].mean(axis=1)
    assert abs(fast.mean() - plain.mean()) < 0.002
    assert abs(fast.std() - plain.std()) < 0.002
    assert np.all(np.isin(np.round(fast * 100), np.arange(101)))


def test_two_valued_non_binary_data() -> None:
    values = [0.8] * 5 + [0.0] * 5
    means = stats.bootstrap_means(values, n_resamples=500)
    assert means.min() >= 0.0 and means.max() <= 0.8


def test_edge_cases() -> None:
    assert stats.bootstrap_ci([0.7]) == (0.7, 0.7)
    assert stats.bootstrap_ci([1, 1, 1]) == (1.0, 1.0)
    with pytest.raises(ValueError):
        stats.bootstrap_ci([])
    with pytest.raises(ValueError):
        stats.bootstrap_ci([1, 0], confidence=1.5)
    assert stats.mean_std([1, 0]) == (0.5, 0.5)


def test_large_input_is_fast_and_bounded() -> None:
    values = np.random.default_rng(0).random(100_000)
    low, high = stats.bootstrap_ci(values, n_resamples=100)
    assert low < 0.5 < high

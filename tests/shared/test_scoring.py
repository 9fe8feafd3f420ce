"""The arithmetic of the LLM-guided metrics on verdicts built by hand; expected values are
worked out in each test from the seed documents' formulas."""

from __future__ import annotations

import math

import pytest

from shared import average_precision, scoring


def _precision_at(flags: list[bool], k: int) -> float:
    return sum(flags[:k]) / k


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [
        # the seed's two worked examples
        (["yes", "no", "no", "yes"], (1 + 0.5) / 2),
        (["no", "yes", "no", "yes"], (0.5 + 0.5) / 2),
    ],
)
def test_average_precision_seed_examples(verdicts: list[str], expected: float) -> None:
    flags = [v == "yes" for v in verdicts]
    assert average_precision(flags) == pytest.approx(expected)
    assert average_precision([int(f) for f in flags]) == pytest.approx(expected)


def test_average_precision_seed_values_are_0_75_and_0_5() -> None:
    assert average_precision([True, False, False, True]) == 0.75
    assert average_precision([False, True, False, True]) == 0.5


def test_average_precision_formula_on_a_longer_list() -> None:
    flags = [False, True, True, False, True, False]
    numerator = sum(_precision_at(flags, k) * flags[k - 1] for k in range(1, len(flags) + 1))
    assert average_precision(flags) == pytest.approx(numerator / sum(flags))


def test_average_precision_edges() -> None:
    assert average_precision([False, False, False]) == 0.0
    assert average_precision([]) == 0.0
    assert average_precision([True]) == 1.0
    assert average_precision([True, True, True]) == 1.0
    with pytest.raises(TypeError, match=r"verdicts\[1\]"):
        average_precision([True, "yes"])
    with pytest.raises(TypeError, match=r"verdicts\[0\]"):
        average_precision([2])


def test_context_precision_several_references_merge_by_or() -> None:
    # reference A finds context 3 useful, reference B context 1: merged [yes, no, yes]
    per_reference = [[False, False, True], [True, False, False]]
    merged = [True, False, True]
    assert scoring.any_verdicts(per_reference, 3) == merged
    expected = (1 / 1 + 2 / 3) / 2
    assert scoring.context_precision(per_reference, 3, 2) == pytest.approx(expected)
    # the max over references would be 1.0 (B alone): the merged rule is not the max
    assert scoring.context_precision(per_reference, 3, 2) < 1.0


def test_context_precision_empty_cases() -> None:
    assert scoring.context_precision([], 0, 0) == 1.0
    assert scoring.context_precision([], 0, 2) == 0.0
    assert scoring.context_precision([], 3, 0) == 0.0
    assert scoring.context_precision([[False, False]], 2, 1) == 0.0
    with pytest.raises(ValueError, match="expected 2"):
        scoring.any_verdicts([[True]], 2)


def test_proportion_and_its_empty_values() -> None:
    assert scoring.proportion([True, False, True, True]) == 3 / 4
    assert scoring.proportion([0, 0, 1]) == 1 / 3
    assert scoring.proportion([]) == 0.0  # answer relevance, bias, toxicity, context relevance
    assert scoring.proportion([], empty=1.0) == 1.0  # faithfulness with no claims


@pytest.mark.parametrize(("tp", "fp", "fn"), [(1, 1, 1), (3, 0, 0), (2, 1, 4), (5, 2, 0)])
def test_f1_matches_the_seed_formula(tp: int, fp: int, fn: int) -> None:
    assert scoring.f1_from_counts(tp, fp, fn) == pytest.approx(tp / (tp + 0.5 * (fp + fn)))


def test_f1_seed_example_and_zero_true_positives() -> None:
    # the seed's "low answer correctness" example: TP=[born in 1879], FP=[Spain], FN=[Germany]
    assert scoring.f1_from_counts(1, 1, 1) == pytest.approx(1 / (1 + 0.5 * 2))
    assert scoring.f1_from_counts(0, 3, 2) == 0.0
    assert scoring.f1_from_counts(0, 0, 0) == 0.0
    with pytest.raises(ValueError, match="fp"):
        scoring.f1_from_counts(1, -1, 0)


def test_weighted_score_is_ragas_weighted_average() -> None:
    f1, similarity = 0.5, 0.9
    expected = (0.75 * f1 + 0.25 * similarity) / (0.75 + 0.25)
    assert scoring.weighted_score(f1, similarity, [0.75, 0.25]) == pytest.approx(expected)
    # the seed's custom weights [0.4, 0.6]
    custom = 0.4 * f1 + 0.6 * similarity
    assert scoring.weighted_score(f1, similarity, [0.4, 0.6]) == pytest.approx(custom)
    # weights that do not sum to 1 are normalised, as numpy.average does
    assert scoring.weighted_score(f1, similarity, [3, 1]) == pytest.approx(expected)


def test_weighted_score_stays_between_its_parts_with_a_subnormal_weight() -> None:
    # (0 * 1.0 + 5e-324 * 0.5) / 5e-324 underflows to 0.0; the similarity alone counts
    assert scoring.weighted_score(1.0, 0.5, [0.0, 5e-324]) == 0.5
    assert scoring.weighted_score(0.2, 0.5, [5e-324, 5e-324]) == pytest.approx(0.35)


def test_weighted_score_f1_only_needs_no_similarity() -> None:
    assert scoring.weighted_score(0.4, None, [1, 0]) == 0.4
    with pytest.raises(ValueError, match="similarity"):
        scoring.weighted_score(0.4, None, [0.75, 0.25])
    with pytest.raises(ValueError, match="similarity"):
        scoring.weighted_score(0.4, math.nan, [0.75, 0.25])


def test_weighted_score_clips_similarity_and_rejects_bad_weights() -> None:
    assert scoring.weighted_score(1.0, -0.2, [0.5, 0.5]) == pytest.approx(0.5)
    assert scoring.weighted_score(0.0, 1.0000001, [0, 1]) == 1.0
    with pytest.raises(ValueError, match="weights"):
        scoring.weighted_score(0.5, 0.5, [0, 0])
    with pytest.raises(ValueError, match="weights"):
        scoring.weighted_score(0.5, 0.5, [-1, 2])


def test_threshold_and_best_reference() -> None:
    assert scoring.binarize(0.7, None) == 0.7
    assert scoring.binarize(0.7, 0.7) == 1.0
    assert scoring.binarize(0.69, 0.7) == 0.0
    assert scoring.binarize(0.0, 0.0) == 1.0
    assert scoring.best([0.2, 0.9, 0.5]) == 0.9
    with pytest.raises(ValueError):
        scoring.best([])

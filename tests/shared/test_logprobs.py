"""The SPIQA L3Score rule on hand-built top-5 lists; every expected value is written out from the
formula in the test (math.exp / math.log expressions), never taken from our own output."""

from __future__ import annotations

import math

import pytest

from shared import exact_yes_probability, l3score_from_top_logprobs
from shared.engine.logprobs import l3score_breakdown

log = math.log
exp = math.exp


def test_both_present_is_the_softmax_of_the_two() -> None:
    top = [("Yes", -0.1), ("No", -2.5), ("The", -3.0), ("I", -4.0), ("Maybe", -5.0)]
    assert l3score_from_top_logprobs(top) == pytest.approx(exp(-0.1) / (exp(-0.1) + exp(-2.5)))


def test_no_ranked_above_yes() -> None:
    top = [("No", -0.2), ("Yes", -1.9), ("no", -3.0), ("x", -4.0), ("y", -5.0)]
    assert l3score_from_top_logprobs(top) == pytest.approx(exp(-1.9) / (exp(-1.9) + exp(-0.2)))


def test_neither_present_scores_zero() -> None:
    top = [("Maybe", -0.3), ("yes.", -1.5), ("Y", -2.0), ("nope", -3.0), ("yess", -4.0)]
    assert l3score_from_top_logprobs(top) == 0.0


def test_empty_list_scores_zero() -> None:
    assert l3score_from_top_logprobs([]) == 0.0


@pytest.mark.parametrize("yes_token", [" Yes", "YES", "Yeah", "yes", "\nyes ", " yeah"])
@pytest.mark.parametrize("no_token", [" No", "NO", "no", "No\n"])
def test_token_variants_match(yes_token: str, no_token: str) -> None:
    top = [(yes_token, -0.7), (no_token, -0.9), ("a", -3.0), ("b", -4.0), ("c", -5.0)]
    breakdown = l3score_breakdown(top)
    assert (breakdown.yes_rank, breakdown.no_rank) == (0, 1)
    assert breakdown.score == pytest.approx(exp(-0.7) / (exp(-0.7) + exp(-0.9)))


@pytest.mark.parametrize("token", ["yes.", "Yes!", "Y", "ye", "yes no", "nah", "No.", "not"])
def test_near_misses_do_not_match(token: str) -> None:
    breakdown = l3score_breakdown([(token, -0.1), ("x", -3.0)])
    assert breakdown.yes_rank is None and breakdown.no_rank is None
    assert breakdown.score == 0.0


def test_only_the_first_match_of_each_side_counts() -> None:
    top = [("Yes", -0.5), (" yes", -1.0), ("Yeah", -1.2), ("No", -2.0), (" no", -2.1)]
    breakdown = l3score_breakdown(top)
    assert (breakdown.yes_rank, breakdown.no_rank) == (0, 3)
    assert breakdown.score == pytest.approx(exp(-0.5) / (exp(-0.5) + exp(-2.0)))


def test_only_yes_present_lowest_entry_is_smaller() -> None:
    # remaining mass 1 - sum = 1 - (e^-0.05 + e^-4 + e^-5 + e^-6 + e^-7) ~ 0.0203 > e^-7 ~ 0.00091
    top = [("Yes", -0.05), ("a", -4.0), ("b", -5.0), ("c", -6.0), ("d", -7.0)]
    remaining = 1 - (exp(-0.05) + exp(-4.0) + exp(-5.0) + exp(-6.0) + exp(-7.0))
    assert remaining > exp(-7.0)
    breakdown = l3score_breakdown(top)
    assert breakdown.estimated == "no"
    assert breakdown.estimated_logprob == pytest.approx(-7.0)
    assert breakdown.score == pytest.approx(exp(-0.05) / (exp(-0.05) + exp(-7.0)))


def test_only_yes_present_remaining_mass_is_smaller() -> None:
    top = [("Yes", log(0.9)), ("a", log(0.04)), ("b", log(0.03)), ("c", log(0.02)),
           ("d", log(0.009))]
    remaining = 1 - (0.9 + 0.04 + 0.03 + 0.02 + 0.009)  # 0.001 < 0.009
    breakdown = l3score_breakdown(top)
    assert breakdown.estimated == "no"
    assert breakdown.estimated_logprob == pytest.approx(log(remaining))
    assert breakdown.score == pytest.approx(0.9 / (0.9 + remaining))


def test_only_no_present_estimates_yes() -> None:
    top = [("No", log(0.6)), ("a", log(0.2)), ("b", log(0.1)), ("c", log(0.05)),
           ("d", log(0.01))]
    remaining = 1 - (0.6 + 0.2 + 0.1 + 0.05 + 0.01)  # 0.04 > 0.01: the lowest entry wins
    assert remaining > 0.01
    breakdown = l3score_breakdown(top)
    assert (breakdown.yes_rank, breakdown.no_rank, breakdown.estimated) == (None, 0, "yes")
    assert breakdown.score == pytest.approx(0.01 / (0.01 + 0.6))


def test_negative_remaining_mass_is_clamped() -> None:
    # the probabilities sum to slightly more than 1 (rounding), so 1 - sum < 0
    top = [("No", log(0.7)), ("a", log(0.2)), ("b", log(0.1 + 1e-7))]
    breakdown = l3score_breakdown(top)
    assert breakdown.estimated_logprob == pytest.approx(log(1e-8))
    assert breakdown.score == pytest.approx(1e-8 / (1e-8 + 0.7))


def test_tiny_lowest_entry_is_clamped() -> None:
    top = [("Yes", log(0.5)), ("a", log(0.3)), ("b", log(1e-12))]
    assert l3score_from_top_logprobs(top) == pytest.approx(0.5 / (0.5 + 1e-8))


def test_single_entry_list_with_all_the_mass() -> None:
    # 1 - sum = 0 and p_lowest = 1: min is 0, so the clamp gives 1e-8
    assert l3score_from_top_logprobs([("Yes", 0.0)]) == pytest.approx(1 / (1 + 1e-8))


def test_very_small_logprobs_are_stable() -> None:
    top = [("Yes", -1000.0), ("No", -1001.0)]
    assert l3score_from_top_logprobs(top) == pytest.approx(1 / (1 + exp(-1.0)))


def test_minus_infinity_on_one_side() -> None:
    assert l3score_from_top_logprobs([("No", -0.1), ("Yes", -math.inf)]) == 0.0
    assert l3score_from_top_logprobs([("Yes", -0.1), ("No", -math.inf)]) == 1.0


def test_breakdown_as_dict_names_the_matched_entries() -> None:
    top = [("The", -0.3), (" Yes", -1.0), ("No", -2.0)]
    d = l3score_breakdown(top).as_dict()
    assert d["yes"] == {"rank": 1, "token": " Yes", "logprob": -1.0}
    assert d["no"] == {"rank": 2, "token": "No", "logprob": -2.0}
    assert d["top_logprobs"] == [["The", -0.3], [" Yes", -1.0], ["No", -2.0]]
    assert d["estimated"] is None
    assert d["score"] == pytest.approx(exp(-1.0) / (exp(-1.0) + exp(-2.0)))


def test_accepts_lists_as_pairs() -> None:
    assert l3score_from_top_logprobs([["Yes", -1.0], ["No", -1.0]]) == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("top", "error"),
    [
        (None, TypeError),
        ("Yes", TypeError),
        ([("Yes",)], TypeError),
        ([("Yes", -0.1, 3)], TypeError),
        ([(1, -0.1)], TypeError),
        ([("Yes", "-0.1")], TypeError),
        ([("Yes", True)], TypeError),
        ([("Yes", math.nan)], ValueError),
        ([("Yes", 0.5)], ValueError),
    ],
)
def test_bad_lists_raise(top: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="top"):
        l3score_from_top_logprobs(top)  # type: ignore[arg-type]


def test_exact_yes_probability() -> None:
    assert exact_yes_probability(0.3, 0.1) == pytest.approx(0.3 / (0.3 + 0.1))
    assert exact_yes_probability(0.0, 0.2) == 0.0
    assert exact_yes_probability(0.2, 0.0) == 1.0
    assert exact_yes_probability(0.0, 0.0) == 0.0
    assert exact_yes_probability(1e-30, 1e-30) == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("p_yes", "p_no", "error"),
    [(-0.1, 0.2, ValueError), (0.2, 1.5, ValueError), (math.nan, 0.1, ValueError),
     (None, 0.1, TypeError), (0.1, "0.2", TypeError)],
)
def test_exact_yes_probability_rejects_bad_values(p_yes, p_no, error) -> None:
    with pytest.raises(error, match="p_yes|p_no"):
        exact_yes_probability(p_yes, p_no)

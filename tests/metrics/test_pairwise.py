"""Pairwise preference: the aggregation on preferences built by hand, and runs on real judges.
The exact property (swapping predictions and baselines gives 1 - score per sample, win rates
adding to 1) is checked on the embedded local judge, without the cache, so the swapped run's
probabilities come from fresh forward passes. The 135M judge's preferences are not checked."""

from __future__ import annotations

import math
import re
from pathlib import Path

import evaluate
import pytest
from faultproxy import FaultProxy
from judgeserver import JudgeServer

from shared import prompts, stats
from shared.kit.scoring import Preference, outcome, pairwise_summary
from shared.kit.sent_prompts import metric_prompts

REPO = Path(__file__).resolve().parents[2]
QUESTIONS = ["What is the capital of France?", "When was the Eiffel Tower completed?",
             "How many legs does a spider have?"]
PREDICTIONS = ["The capital of France is Paris.", "It was completed in 1889.", "Eight."]
BASELINES = ["France's capital is Lyon.", "In 1925.", "A spider has eight legs."]


@pytest.fixture(scope="module")
def pairwise() -> evaluate.Metric:
    return evaluate.load(str(REPO / "metrics" / "pairwise"))


# --- arithmetic on constructed preferences ------------------------------------------------------

def test_preference_of_one_sample() -> None:
    unbiased = Preference(shown_first=0.8, shown_second=0.7)
    assert unbiased.score == pytest.approx(0.75)
    assert unbiased.first_wins == pytest.approx(0.55)  # (0.8 + 0.3) / 2
    assert unbiased.consistent
    always_a = Preference(shown_first=0.9, shown_second=0.1)  # picks A in both orders
    assert always_a.score == pytest.approx(0.5) and always_a.first_wins == pytest.approx(0.9)
    assert not always_a.consistent
    assert not Preference(0.5, 0.9).consistent  # an exact 0.5 picks no answer


def test_outcomes_and_summary() -> None:
    assert [outcome(s, 0.05) for s in (0.56, 0.55, 0.5, 0.45, 0.44)] == [
        "win", "tie", "tie", "tie", "loss"]
    preferences = [Preference(0.9, 0.8), Preference(0.9, 0.1), Preference(0.2, 0.1)]
    summary = pairwise_summary(preferences, 0.05)
    assert (summary["wins"], summary["ties"], summary["losses"]) == (1, 1, 1)
    assert summary["position_consistency"] == pytest.approx(2 / 3)
    first_wins = [(0.9 + 0.2) / 2, (0.9 + 0.9) / 2, (0.2 + 0.9) / 2]
    assert summary["position_bias"] == pytest.approx(sum(first_wins) / 3 - 0.5)
    assert pairwise_summary([], 0.05)["position_bias"] is None


def test_prompt_shows_both_answers_fenced_in_order() -> None:
    request = prompts.pairwise_request("Which is correct?", "first answer", "second answer",
                                       question="Q?")
    text = request.messages[0][1]
    assert request.prompt_id == "pairwise@2"
    a, b = prompts.fence("answer_a", "first answer"), prompts.fence("answer_b", "second answer")
    assert text.index(prompts.fence("question", "Q?")) < text.index(a) < text.index(b)
    assert text.endswith("Answer with one letter: A or B.")


def test_the_declared_prompt_is_the_request_a_judge_receives_in_both_orders(
        pairwise: evaluate.Metric, tmp_path: Path) -> None:
    """Pairwise declares its prompt from its criteria (shared.kit.sent_prompts): both orders'
    requests are the declared text, the answers and materials in its fences."""
    criteria = "Which answer is shorter?"
    (declared,) = metric_prompts("pairwise", {"criteria": criteria})
    assert criteria in declared.text and declared.prompt_id == "pairwise@2"
    assert metric_prompts("pairwise")[0].text != declared.text  # the default criteria's

    def unfenced(text: str) -> str:
        return re.sub(r"<data-(\w+)-[0-9a-f]{12}>\n.*?\n</data-\1-[0-9a-f]{12}>", r"<data-\1>",
                      text, flags=re.DOTALL)

    with JudgeServer(lambda body: "A") as server:
        pairwise.compute(predictions=PREDICTIONS[:1], baseline_predictions=BASELINES[:1],
                         questions=QUESTIONS[:1], references=["Paris."],
                         contexts=[["Paris is the capital."]], criteria=criteria,
                         provider="openai-compatible", base_url=server.url, model="m",
                         cache_dir=str(tmp_path), show_progress=False)
    # (the first order is asked again without log-probabilities once the server gives none)
    sent = {body["messages"][0]["content"] for body in server.seen}
    assert len(sent) == 2  # the two orders
    assert {unfenced(text) for text in sent} == {unfenced(declared.text)}


# --- the embedded local judge -------------------------------------------------------------------

def _check_output(result: dict, n: int, tie_band: float = 0.05) -> None:
    assert result["unmeasured"] == [] and len(result["scores"]) == n
    for score, detail in zip(result["scores"], result["details"], strict=True):
        first, second = detail["orders"]
        assert (first["shown_first"], second["shown_first"]) == ("prediction", "baseline")
        for order in (first, second):
            assert math.fsum(order["probabilities"].values()) == pytest.approx(1.0)
            assert order["score_method"] == "logprobs"
        assert first["p_prediction"] == first["probabilities"]["A"]
        assert second["p_prediction"] == second["probabilities"]["B"]
        assert score == pytest.approx((first["p_prediction"] + second["p_prediction"]) / 2)
        assert detail["outcome"] == outcome(score, tie_band)
    assert result["win_rate"] == pytest.approx(sum(result["scores"]) / n)
    assert result["win_rate_ci"] == pytest.approx(list(stats.bootstrap_ci(result["scores"])))
    preferences = [Preference(*(o["p_prediction"] for o in d["orders"]))
                   for d in result["details"]]
    assert {k: result[k] for k in ("wins", "ties", "losses", "position_consistency",
                                   "position_bias")} == pytest.approx(
        pairwise_summary(preferences, tie_band))
    assert result["tie_band"] == tie_band


def test_swapping_the_answers_gives_one_minus_the_score(pairwise: evaluate.Metric,
                                                        cache_dir: str) -> None:
    inputs = dict(questions=QUESTIONS, cache_dir=cache_dir, show_progress=False)
    result = pairwise.compute(predictions=PREDICTIONS, baseline_predictions=BASELINES, **inputs)
    _check_output(result, 3)
    assert result["usage"]["calls"] == 6  # both orders of every sample

    swapped = pairwise.compute(predictions=BASELINES, baseline_predictions=PREDICTIONS,
                               use_cache=False, tie_band=0.1, **inputs)
    _check_output(swapped, 3, 0.1)
    assert swapped["usage"]["calls"] == 6
    for score, swapped_score in zip(result["scores"], swapped["scores"], strict=True):
        assert swapped_score == pytest.approx(1.0 - score, abs=1e-6)
    assert result["win_rate"] + swapped["win_rate"] == pytest.approx(1.0, abs=1e-6)
    assert swapped["position_bias"] == pytest.approx(result["position_bias"], abs=1e-6)

    again = pairwise.compute(predictions=PREDICTIONS, baseline_predictions=BASELINES, **inputs)
    assert again["usage"]["calls"] == 0 and again["usage"]["cache_hits"] == 6
    assert again["scores"] == result["scores"]


def test_dry_run_counts_two_requests_per_sample(pairwise: evaluate.Metric,
                                                cache_dir: str) -> None:
    result = pairwise.compute(predictions=PREDICTIONS, baseline_predictions=BASELINES,
                              cache_dir=cache_dir, show_progress=False, dry_run=True)
    assert result["dry_run"]["requests"] == 6 and result["usage"]["calls"] == 0
    assert result["win_rate"] is None and result["win_rate_ci"] is None
    assert (result["wins"], result["ties"], result["losses"]) == (0, 0, 0)


@pytest.mark.parametrize(("options", "error", "match"), [
    ({"criteria": " "}, ValueError, "criteria is empty"),
    ({"tie_band": 0.7}, ValueError, "tie_band"),
])
def test_bad_options_raise_before_any_call(pairwise: evaluate.Metric, cache_dir: str,
                                           options: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        pairwise.compute(predictions=["a"], baseline_predictions=["b"], cache_dir=cache_dir,
                         provider="openai-compatible", base_url="http://127.0.0.1:9/v1",
                         model="m", show_progress=False, **options)


# --- an OpenAI-compatible judge -----------------------------------------------------------------

@pytest.mark.server
def test_llama_server_reads_a_and_b_from_the_top_20(pairwise: evaluate.Metric,
                                                    llama_server: str, cache_dir: str) -> None:
    with FaultProxy(llama_server, default="pass") as proxy:
        options = dict(provider="openai-compatible", base_url=proxy.url, model="smollm2",
                       cache_dir=cache_dir, show_progress=False)
        result = pairwise.compute(predictions=PREDICTIONS[:2], baseline_predictions=BASELINES[:2],
                                  questions=QUESTIONS[:2], **options)
        sent = [seen.body for seen in proxy.seen]
        swapped = pairwise.compute(predictions=BASELINES[:2], baseline_predictions=PREDICTIONS[:2],
                                   questions=QUESTIONS[:2], **options)
        assert proxy.count == len(sent) == 4  # the swapped run's requests are all cached
    _check_output(result, 2)
    for body in sent:
        assert (body["logprobs"], body["top_logprobs"], body["max_tokens"]) == (True, 20, 1)
    assert swapped["usage"]["calls"] == 0
    assert swapped["scores"] == pytest.approx([1 - s for s in result["scores"]])


@pytest.mark.server
def test_a_panel_counts_wins_on_its_own_scores(pairwise: evaluate.Metric, llama_server: str,
                                               cache_dir: str) -> None:
    """Two runtimes of SmolLM2 (exact probabilities in process, the top-20 of the quantised
    GGUF behind llama.cpp) as a panel: its scores, outcomes, counts and per-order readings are
    the mean of the judges', each judge's counts its own."""
    judges = [{"provider": "local"},
              {"provider": "openai-compatible", "base_url": llama_server, "model": "smollm2"}]
    inputs = dict(predictions=PREDICTIONS, baseline_predictions=BASELINES, questions=QUESTIONS,
                  cache_dir=cache_dir, show_progress=False)
    result = pairwise.compute(**inputs, judges=judges)
    alone = [pairwise.compute(**inputs, **judge) for judge in judges]
    assert [a["usage"]["calls"] for a in alone] == [0, 0]
    per_judge = [[d["judge_scores"][k] for d in result["details"]] for k in range(2)]
    assert per_judge == [a["scores"] for a in alone]
    assert result["scores"] == pytest.approx([(a + b) / 2 for a, b in zip(*per_judge,
                                                                          strict=True)])
    orders = [[(a["orders"][k]["p_prediction"] + b["orders"][k]["p_prediction"]) / 2
               for k in range(2)] for a, b in zip(*(x["details"] for x in alone), strict=True)]
    assert [o["p_prediction"] for d in result["details"] for o in d["orders"]] == \
        pytest.approx([p for pair in orders for p in pair])
    assert [d["outcome"] for d in result["details"]] == [outcome(s, 0.05)
                                                         for s in result["scores"]]
    expected = pairwise_summary([Preference(*o) for o in orders], 0.05, result["scores"])
    assert {k: result[k] for k in expected} == pytest.approx(expected)
    assert result["win_rate"] == pytest.approx(sum(result["scores"]) / 3)
    for judge, own in zip(result["judges"], alone, strict=True):
        assert {k: judge[k] for k in ("win_rate", "wins", "ties", "losses",
                                      "position_bias")} == \
            pytest.approx({k: own[k] for k in ("win_rate", "wins", "ties", "losses",
                                               "position_bias")})

"""G-Eval: the probability arithmetic on distributions built by hand, the option checks before
any call, and runs on real judges: the embedded local judge (exact probabilities, checked against
a forward pass of the same model done here), the llama.cpp server (top-20 log-probabilities), and
a server that returns no log-probabilities (the written score, said per sample). The 135M judge's
ratings are not checked (it is far too small to be right); the mechanics are."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import evaluate
import pytest
from faultproxy import FaultProxy
from judgeserver import JudgeServer

from shared import InputError, criteria_judge, prompts, user_criteria
from shared.cli.main import main
from shared.engine.logprobs import label_mass, renormalised, sampled_label
from shared.kit.scoring import expected_score, rescaled
from shared.kit.sent_prompts import metric_prompts

REPO = Path(__file__).resolve().parents[2]
CRITERIA = "Is the reply polite and helpful to the customer?"
QUESTIONS = ["Where is my refund?", "Where is my refund?"]
PREDICTIONS = ["Thanks for your patience! Your refund was sent today.", "Read the FAQ."]
LABELS = ["1", "2", "3", "4", "5"]


@pytest.fixture(scope="module")
def g_eval() -> evaluate.Metric:
    return evaluate.load(str(REPO / "metrics" / "g_eval"))


def _check_scores(result: dict, n: int, low: int = 1, high: int = 5) -> None:
    """Each sample's score follows from its own probabilities: renormalised (sum 1), weighted
    mean on the scale, rescaled to 0-1; the headline is the mean."""
    assert len(result["scores"]) == len(result["details"]) == n
    assert result["unmeasured"] == []
    for score, detail in zip(result["scores"], result["details"], strict=True):
        probabilities = detail["probabilities"]
        assert list(probabilities) == [str(s) for s in range(low, high + 1)]
        assert math.fsum(probabilities.values()) == pytest.approx(1.0)
        raw = sum(int(s) * p for s, p in probabilities.items())
        assert detail["raw_score"] == pytest.approx(raw)
        assert score == pytest.approx((raw - low) / (high - low))
        assert 0.0 <= score <= 1.0
    assert result["g_eval"] == pytest.approx(sum(result["scores"]) / n)


# --- arithmetic on constructed distributions --------------------------------------------------

def test_expected_score_and_rescaling() -> None:
    assert expected_score({"1": 0.0, "2": 0.0, "3": 1.0, "4": 0.0, "5": 0.0}) == 3.0
    assert expected_score({"1": 0.5, "5": 0.5}) == 3.0
    assert expected_score({"1": 0.1, "2": 0.2, "3": 0.3, "4": 0.4}) == pytest.approx(3.0)
    assert rescaled(1.0, 1, 5) == 0.0 and rescaled(5.0, 1, 5) == 1.0
    assert rescaled(3.0, 1, 5) == 0.5 and rescaled(2.0, 0, 4) == 0.5


def test_renormalised_over_the_labels() -> None:
    assert renormalised({"A": 0.3, "B": 0.1}) == pytest.approx({"A": 0.75, "B": 0.25})
    assert renormalised({"1": 0.0, "2": 0.0}) is None
    with pytest.raises(ValueError, match="'A'"):
        renormalised({"A": 1.5, "B": 0.0})


def test_label_mass_sums_the_token_variants_of_a_label() -> None:
    top = [(" 4", math.log(0.5)), ("4", math.log(0.1)), ("3", math.log(0.2)),
           ("The", math.log(0.1)), ("10", math.log(0.05))]
    mass = label_mass(top, LABELS)
    assert mass == pytest.approx({"1": 0.0, "2": 0.0, "3": 0.2, "4": 0.6, "5": 0.0})
    assert expected_score(renormalised(mass)) == pytest.approx((3 * 0.2 + 4 * 0.6) / 0.8)


def test_sampled_label_is_the_label_the_answer_gives() -> None:
    assert sampled_label("Score: 4", LABELS) == "4"
    assert sampled_label("On a scale of 1 to 5, I give it a 4.", LABELS) == "4"
    assert sampled_label("4/5", LABELS) == "4"
    assert sampled_label("I give it a 10", LABELS) is None
    assert sampled_label("Answer B, not A", ["A", "B"]) == "B"


# --- options, checked before any call -----------------------------------------------------------

UNREACHABLE = dict(provider="openai-compatible", base_url="http://127.0.0.1:9/v1", model="m",
                   show_progress=False)


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({}, InputError, "criteria is required"),
        ({"criteria": "   "}, InputError, "criteria is empty"),
        ({"criteria": 3}, TypeError, "criteria must be a string"),
        ({"criteria": "c", "score_range": [1, 10]}, InputError,
         r"score_range must satisfy 0 <= low < high <= 9, got \[1, 10\]"),
        ({"criteria": "c", "score_range": [3, 3]}, InputError, "score_range"),
        ({"criteria": "c", "score_range": "1-5"}, TypeError, "score_range"),
        ({"criteria": "c", "rubric": {"7": "great"}}, InputError, r"rubric scores \[7\]"),
        ({"criteria": "c", "rubric": {"one": "bad"}}, InputError, "rubric key 'one'"),
        ({"criteria": "c", "evaluation_steps": ["read", ""]}, InputError,
         r"evaluation_steps\[1\]"),
        ({"criteria": "c", "evaluation_steps": "read it"}, TypeError, "evaluation_steps"),
        ({"criteria": "c", "threshold": 2}, ValueError, "threshold"),
    ],
)
def test_bad_options_raise_before_any_call(g_eval: evaluate.Metric, cache_dir: str,
                                           options: dict, error: type, match: str) -> None:
    # nothing listens at the base URL: a call would end as "unmeasured", never as this error
    with pytest.raises(error, match=match):
        g_eval.compute(predictions=["a"], cache_dir=cache_dir, **UNREACHABLE, **options)


def test_prompt_fences_the_texts_and_shows_the_instructions() -> None:
    request = prompts.g_eval_request(CRITERIA, ("Read the reply.",), {1: "rude", 5: "warm"},
                                     1, 5, "Read the FAQ.", question="Where is my refund?",
                                     source=None, reference=None, contexts=None)
    text = request.messages[0][1]
    assert request.prompt_id == "g_eval@2"
    assert f"Criteria:\n{CRITERIA}" in text
    assert "Evaluation steps:\n1. Read the reply." in text and "Scores:\n1: rude\n5: warm" in text
    assert prompts.fence("question", "Where is my refund?") in text
    assert prompts.fence("text", "Read the FAQ.") in text
    assert "Source text" not in text and text.endswith("Answer with the score only: one number.")


# --- the embedded local judge: exact probabilities --------------------------------------------

def _reference_probabilities(request, labels: list[str]) -> dict[str, float]:
    """The labels' next-token probabilities from one unpadded forward pass of the same model,
    summed over every token whose stripped text is the label, renormalised."""
    import torch

    from shared.engine.backends.local_model import load_model

    lm = load_model(None)
    with torch.inference_mode():
        ids = torch.tensor([lm.prompt_ids(request)])
        probabilities = torch.softmax(lm.model(input_ids=ids).logits[0, -1].double(), dim=-1)
    mass = {label: float(sum(probabilities[i] for i, text in enumerate(lm.token_texts)
                             if text.strip() == label)) for label in labels}
    total = sum(mass.values())
    return {label: value / total for label, value in mass.items()}


def test_local_judge_is_exact_cached_and_explains(g_eval: evaluate.Metric,
                                                  cache_dir: str) -> None:
    inputs = dict(questions=QUESTIONS, predictions=PREDICTIONS, criteria=CRITERIA,
                  cache_dir=cache_dir, show_progress=False)
    result = g_eval.compute(**inputs, threshold=0.5)
    _check_scores(result, 2)
    assert result["usage"]["calls"] == 2 and result["Cost"] == 0.0
    assert all(d["score_method"] == "logprobs" for d in result["details"])
    assert result["pass_rate"] == sum(d["passed"] for d in result["details"]) / 2
    for question, prediction, detail in zip(QUESTIONS, PREDICTIONS, result["details"],
                                            strict=True):
        request = prompts.g_eval_request(CRITERIA, (), {}, 1, 5, prediction, question=question)
        expected = _reference_probabilities(request, LABELS)
        assert detail["probabilities"] == pytest.approx(expected, rel=1e-4, abs=1e-6)
        assert 0.0 < detail["label_mass"] <= 1.0

    explained = g_eval.compute(**inputs, explain=True)
    assert explained["usage"]["calls"] == 2  # the ratings come from the cache, the reasons not
    assert explained["usage"]["cache_hits"] == 2
    assert explained["scores"] == result["scores"]
    assert all(isinstance(d.get("reason"), str) or d.get("reason_error")
               for d in explained["details"])

    again = g_eval.compute(**inputs, explain=True)
    assert again["usage"]["calls"] == 0 and again["usage"]["cache_hits"] == 4
    assert again["details"] == explained["details"]


def test_score_range_and_steps_change_the_request(g_eval: evaluate.Metric,
                                                  cache_dir: str) -> None:
    result = g_eval.compute(predictions=PREDICTIONS[:1], criteria=CRITERIA, score_range=[0, 3],
                            evaluation_steps=["Read the reply.", "Judge its tone."],
                            cache_dir=cache_dir, show_progress=False)
    _check_scores(result, 1, 0, 3)
    assert result["details"][0]["evaluation_steps"] == ["Read the reply.", "Judge its tone."]


def test_dry_run_counts_one_request_per_sample_two_with_explain(g_eval: evaluate.Metric,
                                                                cache_dir: str) -> None:
    inputs = dict(predictions=PREDICTIONS, criteria=CRITERIA, cache_dir=cache_dir,
                  show_progress=False, dry_run=True)
    plain = g_eval.compute(**inputs)
    assert plain["dry_run"]["requests"] == 2 and plain["dry_run"]["completion_tokens"] == 2
    assert plain["usage"]["calls"] == 0 and plain["g_eval"] is None
    assert g_eval.compute(**inputs, explain=True)["dry_run"]["requests"] == 4


def _unfenced(text: str) -> str:
    """A prompt's text with every fenced text taken out, its fence's name kept."""
    return re.sub(r"<data-(\w+)-[0-9a-f]{12}>\n.*?\n</data-\1-[0-9a-f]{12}>", r"<data-\1>",
                  text, flags=re.DOTALL)


def test_the_declared_prompts_are_the_requests_a_judge_receives(g_eval: evaluate.Metric,
                                                                cache_dir: str) -> None:
    """G-Eval declares its prompts from its options (shared.kit.sent_prompts): a row showing
    every material gets exactly the declared text, its texts in the fences; the reason's with
    ``explain``, its score where ``{score}`` stands."""
    options = {"criteria": CRITERIA, "evaluation_steps": ["Read the reply.", "Judge its tone."],
               "rubric": {"1": "rude", "5": "warm"}, "score_range": [1, 5], "explain": True}
    declared = {t.name: t.text for t in metric_prompts("g_eval", options)}
    assert set(declared) == {"g_eval", "g_eval_reason"}
    assert "1. Read the reply." in declared["g_eval"] and "5: warm" in declared["g_eval"]
    assert set(metric_prompts("g_eval", {**options, "explain": False})) < set(
        metric_prompts("g_eval", options))

    def answer(body: dict) -> str:
        return '{"reason": "It thanks the customer."}' if "say why" in str(body) else "4"

    with JudgeServer(answer) as server:
        g_eval.compute(predictions=PREDICTIONS[:1], questions=QUESTIONS[:1],
                       references=["Sent today."], contexts=[["Refunds take 3 days."]],
                       sources=["Ticket 7"], **options, provider="openai-compatible",
                       base_url=server.url, model="m", cache_dir=cache_dir, show_progress=False)
    # (the rating is asked again without log-probabilities once the server gives none)
    sent = {_unfenced(body["messages"][0]["content"]) for body in server.seen}
    assert sent == {_unfenced(declared["g_eval"]),
                    _unfenced(declared["g_eval_reason"]).replace("{score}", "4.0")}


# --- OpenAI-compatible judges -------------------------------------------------------------------

@pytest.mark.server
def test_llama_server_reads_the_top_20(g_eval: evaluate.Metric, llama_server: str,
                                       cache_dir: str) -> None:
    with FaultProxy(llama_server, default="pass") as proxy:
        options = dict(provider="openai-compatible", base_url=proxy.url, model="smollm2",
                       cache_dir=cache_dir, show_progress=False)
        result = g_eval.compute(questions=QUESTIONS, predictions=PREDICTIONS,
                                criteria=CRITERIA, **options)
        sent = [seen.body for seen in proxy.seen]
        again = g_eval.compute(questions=QUESTIONS, predictions=PREDICTIONS,
                               criteria=CRITERIA, **options)
        assert proxy.count == len(sent) == 2
    _check_scores(result, 2)
    assert all(d["score_method"] == "logprobs" for d in result["details"])
    for body in sent:
        assert (body["logprobs"], body["top_logprobs"], body["max_tokens"]) == (True, 20, 1)
        assert (body["temperature"], body["top_p"]) == (0, 1)
    assert again["usage"]["calls"] == 0 and again["scores"] == result["scores"]


def test_a_model_without_logprobs_gives_the_written_score(g_eval: evaluate.Metric,
                                                          cache_dir: str) -> None:
    answers = {PREDICTIONS[0]: "Score: 4", PREDICTIONS[1]: "I cannot rate this."}

    def answer(body: dict) -> str:
        return next(a for p, a in answers.items() if p in body["messages"][0]["content"])

    with JudgeServer(answer) as server:
        result = g_eval.compute(predictions=PREDICTIONS, criteria=CRITERIA,
                                provider="openai-compatible", base_url=server.url, model="m",
                                cache_dir=cache_dir, show_progress=False)
        # the first request asked for log-probabilities; once the model gave none, the rest
        # were sent without, as plain short answers
        assert server.seen[0]["logprobs"] is True
        assert "logprobs" not in server.seen[-1] and server.seen[-1]["max_tokens"] == 16
    first = result["details"][0]
    assert first["score_method"] == "sampled" and first["raw_score"] == 4
    assert first["probabilities"] == {"1": 0.0, "2": 0.0, "3": 0.0, "4": 1.0, "5": 0.0}
    assert result["scores"][0] == 0.75
    assert result["unmeasured"] == [{"index": 1, "reason": result["unmeasured"][0]["reason"]}]
    assert "wrote none of 1, 2, 3, 4, 5" in result["unmeasured"][0]["reason"]


# --- the command line ---------------------------------------------------------------------------

def test_cli_takes_the_criteria_and_all_skips_without_it(tmp_path: Path, cache_dir: str,
                                                         capsys) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"question": q, "prediction": p}) + "\n"
                            for q, p in zip(QUESTIONS, PREDICTIONS, strict=True)))
    env = {**os.environ, "PYTHONPATH": str(REPO), "JUDGE_METRICS_CACHE_DIR": cache_dir}
    out = tmp_path / "scored.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "judge_metrics", "score", str(rows), "--metric", "g_eval", "--out",
         str(out), "--quiet", "--option", f"g_eval.criteria={CRITERIA}",
         "--option", "g_eval.score_range=[1,3]"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    scored = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(scored) == 2
    for row in scored:
        details = json.loads(row["g_eval_details"])
        assert list(details["probabilities"]) == ["1", "2", "3"]
        assert row["g_eval"] == pytest.approx((details["raw_score"] - 1) / 2)

    # the refusals, in this process (a new one would spend most of its time importing): exit 2
    # with one line, no exception
    capsys.readouterr()
    assert main(["score", str(rows), "--metric", "g_eval", "--out", str(out), "--option",
                 "g_eval.score_range=[1,10]", "--option", "g_eval.criteria=c"]) == 2
    bad = capsys.readouterr().err
    assert "score_range" in bad and len(bad.strip().splitlines()) == 1
    assert main(["score", str(rows), "--metric", "g_eval", "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "judge-metrics: error: metric 'g_eval' needs --option g_eval.criteria=... (no default)")


def test_metric_all_skips_g_eval_without_criteria() -> None:
    from shared import UserInputError
    from shared.runs.batch import select_metrics

    names, skipped = select_metrics("all", ["question", "prediction"])
    assert "g_eval" not in names
    assert skipped["g_eval"] == "needs --option g_eval.criteria=..."
    with pytest.raises(UserInputError, match=r"'g_eval' needs --option g_eval.criteria=\.\.\."):
        select_metrics(["g_eval"], ["prediction"])
    names, _ = select_metrics("all", ["question", "prediction"], {"g_eval": {"criteria": "c"}})
    assert "g_eval" in names


def test_criteria_of_the_option_check() -> None:
    assert criteria_judge is user_criteria  # the earlier name still imports
    assert user_criteria.criteria_text("criteria", "  Is it short?  ") == "Is it short?"
    assert user_criteria.score_range("score_range", [0, 9]) == (0, 9)


@pytest.mark.server
def test_a_panel_passes_on_its_own_score(g_eval: evaluate.Metric, llama_server: str,
                                         cache_dir: str) -> None:
    """Two runtimes of SmolLM2 as a panel (median of two: their mean): the raw score on the
    scale, pass and pass rate are the panel's; each judge's pass rate its own."""
    judges = [{"provider": "local"},
              {"provider": "openai-compatible", "base_url": llama_server, "model": "smollm2"}]
    inputs = dict(questions=QUESTIONS, predictions=PREDICTIONS, criteria=CRITERIA,
                  threshold=0.5, cache_dir=cache_dir, show_progress=False)
    result = g_eval.compute(**inputs, judges=judges, panel_aggregate="median")
    alone = [g_eval.compute(**inputs, **judge) for judge in judges]
    per_judge = [a["scores"] for a in alone]
    assert [d["judge_scores"] for d in result["details"]] == [list(s) for s in zip(
        *per_judge, strict=True)]
    assert result["scores"] == pytest.approx([(a + b) / 2 for a, b in zip(*per_judge,
                                                                          strict=True)])
    for score, detail in zip(result["scores"], result["details"], strict=True):
        assert detail["raw_score"] == pytest.approx(1 + 4 * score)
        assert detail["passed"] == (score >= 0.5)
    assert result["pass_rate"] == sum(d["passed"] for d in result["details"]) / 2
    assert [j["pass_rate"] for j in result["judges"]] == [a["pass_rate"] for a in alone]

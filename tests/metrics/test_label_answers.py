"""Label readings (g_eval, pairwise) behind a judge that answers badly: a small
OpenAI-compatible server on 127.0.0.1 (``judgeserver.JudgeServer``) whose top log-probabilities
the test writes, malformed ones included, and cache entries corrupted on disk. Whatever the
answer, ``compute`` returns: the sample is scored by the documented rule or unmeasured with
its reason, a refused answer is counted in ``invalid_answers`` and ``retry_unmeasured`` asks it
again."""

from __future__ import annotations

import json
import math
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import evaluate
import pytest
from judgeserver import JudgeServer

from shared.engine.cache import CACHE_FILE
from shared.engine.logprobs import label_mass, renormalised, sampled_label

REPO = Path(__file__).resolve().parents[2]
CRITERIA = "Is the reply polite?"
PREDICTIONS = ["Thank you, your refund is on its way.", "Go away.", "We will see."]
SCALE = ["1", "2", "3", "4", "5"]


@pytest.fixture(scope="module")
def g_eval() -> evaluate.Metric:
    return evaluate.load(str(REPO / "metrics" / "g_eval"))


@pytest.fixture(scope="module")
def pairwise() -> evaluate.Metric:
    return evaluate.load(str(REPO / "metrics" / "pairwise"))


def judged(body: dict[str, Any]) -> str:
    """The prediction a g_eval request rates."""
    return next(p for p in PREDICTIONS if p in body["messages"][0]["content"])


def serve(tops: Callable[[dict[str, Any]], list[tuple[Any, Any]]]) -> JudgeServer:
    return JudgeServer(lambda body: "4", top_logprobs=tops)


def run(metric: evaluate.Metric, server: JudgeServer, cache_dir: str, **more: Any) -> dict:
    return metric.compute(predictions=PREDICTIONS, criteria=CRITERIA,
                          provider="openai-compatible", base_url=server.url, model="m",
                          cache_dir=cache_dir, show_progress=False, **more)


def reference_distribution(top: list[tuple[str, float]], labels: list[str]) -> dict[str, float]:
    """The documented rule, written out: per label the summed probability of its token
    variants (stripped text equal to the label), at most 1; then divided by the sum."""
    mass = {label: 0.0 for label in labels}
    for token, logprob in top:
        if token.strip() in mass:
            mass[token.strip()] += math.exp(logprob)
    mass = {label: min(1.0, value) for label, value in mass.items()}
    total = sum(mass.values())
    return {label: value / total for label, value in mass.items()}


# --- duplicate label tokens: merged and clamped, as on the local judge ---------------------------

DUPLICATES = {
    PREDICTIONS[0]: [("4", -0.05), (" 4", -0.05), ("5", -3.0)],       # the answer
    PREDICTIONS[1]: [(" 2", -0.01), ("2", -0.02), ("2 ", -0.5), ("1", -2.0)],  # three variants
    PREDICTIONS[2]: [("3", -0.2), ("4", -0.3), (" 3", -0.4)],         # sums past 1 over labels
}


def test_duplicate_label_tokens_are_merged_and_clamped(g_eval: evaluate.Metric,
                                                       cache_dir: str) -> None:
    with serve(lambda body: DUPLICATES[judged(body)]) as server:
        result = run(g_eval, server, cache_dir)
    assert result["unmeasured"] == []
    for prediction, detail in zip(PREDICTIONS, result["details"], strict=True):
        expected = reference_distribution(DUPLICATES[prediction], SCALE)
        assert detail["probabilities"] == pytest.approx(expected)
        assert detail["raw_score"] == pytest.approx(sum(int(k) * p for k, p in expected.items()))
        assert 0.0 < detail["label_mass"] <= 1.0
    # the local judge's rule is the same function of the merged mass: sum, then clamp
    assert label_mass(DUPLICATES[PREDICTIONS[0]], SCALE)["4"] == 1.0


def test_pairwise_merges_duplicate_letters(pairwise: evaluate.Metric, cache_dir: str) -> None:
    top = [("A", -0.05), (" A", -0.05), ("B", -4.0)]
    with serve(lambda body: top) as server:
        result = pairwise.compute(predictions=PREDICTIONS[:2], baseline_predictions=PREDICTIONS[1:],
                                  criteria=CRITERIA, provider="openai-compatible",
                                  base_url=server.url, model="m", cache_dir=cache_dir,
                                  show_progress=False)
    assert result["unmeasured"] == []
    p_a = reference_distribution(top, ["A", "B"])["A"]
    for detail in result["details"]:
        assert detail["orders"][0]["probabilities"]["A"] == pytest.approx(p_a)
    # always "A": the prediction wins shown first and loses shown second
    assert result["scores"] == pytest.approx([(p_a + 1 - p_a) / 2] * 2)


# --- malformed answers from the server: that sample unmeasured, the others scored ----------------

MALFORMED = [
    pytest.param([("4", 0.7), ("3", -1.0)], "unusable answer", id="logprob-above-0"),
    pytest.param([("4", "high"), ("3", -1.0)], "unusable answer", id="logprob-a-string"),
    pytest.param([("4", None)], "", id="logprob-null"),
    pytest.param([(7, -0.1)], "", id="token-a-number"),
    pytest.param([("The", -0.1), ("Well", -1.0)], "no label", id="no-label"),
]


@pytest.mark.parametrize(("bad", "said"), MALFORMED)
def test_a_malformed_answer_leaves_that_sample_unmeasured(g_eval: evaluate.Metric,
                                                          cache_dir: str, bad: list,
                                                          said: str) -> None:
    good = [("4", -0.1), ("5", -2.5)]
    with serve(lambda body: bad if judged(body) == PREDICTIONS[1] else good) as server:
        result = run(g_eval, server, cache_dir)
    assert [u["index"] for u in result["unmeasured"]] == [1]
    assert said in result["unmeasured"][0]["reason"]
    assert result["scores"][1] is None and None not in (result["scores"][0], result["scores"][2])
    assert result["g_eval"] == pytest.approx((result["scores"][0] + result["scores"][2]) / 2)


# --- cache entries that are no label answer ------------------------------------------------------

def rewrite_cache(cache_dir: str, change: Callable[[dict[str, Any]], Any]) -> int:
    """Replace every cached label answer by ``change(payload)``; how many were replaced."""
    with sqlite3.connect(Path(cache_dir) / CACHE_FILE) as db:
        rows = db.execute("SELECT key, value FROM calls").fetchall()
        changed = 0
        for key, value in rows:
            payload = json.loads(value)
            if isinstance(payload, dict) and "probabilities" in payload:
                db.execute("UPDATE calls SET value = ? WHERE key = ?",
                           (json.dumps(change(payload)), key))
                changed += 1
    return changed


def probabilities(values: dict[str, Any]) -> Callable[[dict[str, Any]], Any]:
    return lambda payload: {**payload, "probabilities": values}


CORRUPT = [
    pytest.param(probabilities({k: "0.2" for k in SCALE}), "malformed_probabilities",
                 id="strings"),
    pytest.param(probabilities({**dict.fromkeys(SCALE, 0.1), "3": -0.4}),
                 "malformed_probabilities", id="negative"),
    pytest.param(probabilities({**dict.fromkeys(SCALE, 0.0), "5": 1.7}),
                 "malformed_probabilities", id="above-1"),
    pytest.param(probabilities({"1": 0.5, "2": 0.5}), "malformed_probabilities",
                 id="label-missing"),
    pytest.param(probabilities({**dict.fromkeys(SCALE, 0.1), "2": float("nan")}),
                 "malformed_probabilities", id="nan-as-json"),
    pytest.param(probabilities(dict.fromkeys(SCALE, 0.0)), "no_label", id="no-label"),
    pytest.param(probabilities([0.2] * 5), "malformed_probabilities", id="a-list"),
    pytest.param(lambda payload: {"method": "logprobs"}, None, id="no-probabilities"),
    pytest.param(lambda payload: [1, 2], None, id="not-an-object"),
]


@pytest.mark.parametrize(("corrupt", "kind"), CORRUPT)
def test_a_corrupt_cached_answer_is_unmeasured_and_asked_again_on_request(
        g_eval: evaluate.Metric, cache_dir: str, corrupt: Callable, kind: str | None) -> None:
    good = [("4", -0.1), ("5", -2.5)]
    with serve(lambda body: good) as server:
        first = run(g_eval, server, cache_dir)
        assert first["unmeasured"] == [] and len(server.seen) == 3
        assert rewrite_cache(cache_dir, corrupt) == 3
        again = run(g_eval, server, cache_dir)
        if kind is None:  # no label answer at all: unreadable, asked again like a missing one
            assert again["scores"] == first["scores"] and again["usage"]["calls"] == 3
            return
        assert again["usage"]["calls"] == 0 and again["scores"] == [None] * 3
        assert again["invalid_answers"][kind] == 3
        assert all("invalid judge answer" in u["reason"] for u in again["unmeasured"])
        retried = run(g_eval, server, cache_dir, retry_unmeasured=True)
        assert retried["usage"]["calls"] == 3 and retried["scores"] == first["scores"]
        assert len(server.seen) == 6


def test_a_label_less_answer_is_cached_counted_and_asked_again_with_retry(
        pairwise: evaluate.Metric, cache_dir: str) -> None:
    answers = {"top": [("The", -0.2), ("Both", -1.0)]}
    with serve(lambda body: answers["top"]) as server:
        options = dict(predictions=PREDICTIONS[:2], baseline_predictions=PREDICTIONS[1:],
                       criteria=CRITERIA, provider="openai-compatible", base_url=server.url,
                       model="m", cache_dir=cache_dir, show_progress=False)
        first = pairwise.compute(**options)
        assert first["scores"] == [None, None] and first["invalid_answers"]["no_label"] == 2
        assert "no label" in first["unmeasured"][0]["reason"]
        answers["top"] = [("B", -0.1), ("A", -2.5)]
        rerun = pairwise.compute(**options)  # cached: the refused answer is not paid twice
        assert rerun["usage"]["calls"] == 0 and rerun["scores"] == [None, None]
        retried = pairwise.compute(**options, retry_unmeasured=True)
        assert retried["usage"]["calls"] == 4 and retried["unmeasured"] == []
        # once per process: the answers just received are not asked again
        assert pairwise.compute(**options, retry_unmeasured=True)["usage"]["calls"] == 0


def test_cli_scores_a_duplicate_token_answer_and_retries_a_label_less_one(
        tmp_path: Path, cache_dir: str) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"prediction": p}) + "\n" for p in PREDICTIONS))
    tops = {"now": [("The", -0.1)]}

    def top(body: dict[str, Any]) -> list:
        return DUPLICATES[PREDICTIONS[0]] if judged(body) == PREDICTIONS[0] else tops["now"]

    env = {**os.environ, "PYTHONPATH": str(REPO), "JUDGE_METRICS_CACHE_DIR": cache_dir}
    out = tmp_path / "scored.jsonl"

    def score(*more: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "judge_metrics", "score", str(rows), "--metric", "g_eval", "-o",
             str(out), "--option", f"g_eval.criteria={CRITERIA}", "--provider",
             "openai-compatible", "--base-url", server.url, "--model", "m", *more],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=300)

    with serve(top) as server:
        done = score()
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        scored = [json.loads(line) for line in out.read_text().splitlines()]
        assert scored[0]["g_eval"] is not None and scored[1]["g_eval"] is None
        assert "no_label=2" in done.stdout + done.stderr
        tops["now"] = [("2", -0.1)]
        done = score("--retry-unmeasured")
        assert done.returncode == 0, done.stderr
        assert len(server.seen) == 5  # 3, then the 2 label-less ones again
    scored = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(row["g_eval"] is not None for row in scored)


# --- the written score, read the way the prompt asks for it --------------------------------------

@pytest.mark.parametrize(("text", "labels", "label"), [
    ("On a scale of 1 to 5, I give it a 4.", SCALE, "4"),
    ("4", SCALE, "4"),
    ("**Score: 2**", SCALE, "2"),
    ("Score: 3 (on a scale from 1 to 5)", SCALE, "3"),
    ("I would rate it 3 out of 5.", SCALE, "3"),
    ("5/5", SCALE, "5"),
    ("I rate this response a 2 on a 1-5 scale.", SCALE, "2"),
    ("My rating: 2/5. It misses 3 facts.", SCALE, "2"),
    ("1. The reply is rude.", SCALE, "1"),
    ("Between 1 and 5, the score is 5.", SCALE, "5"),
    ("I give it a 10", SCALE, None),
    ("No score.", SCALE, None),
    ("A better answer is B.", ["A", "B"], "B"),
    ("B is better than A.", ["A", "B"], "B"),
    ("Answer B, not A", ["A", "B"], "B"),
    ("The better answer is A, because B misses the date.", ["A", "B"], "A"),
    ("A. It is more accurate.", ["A", "B"], "A"),
    ("Between A and B, I choose B.", ["A", "B"], "B"),
    ("Answer: A", ["A", "B"], "A"),
    ("A", ["A", "B"], "A"),
    ("a", ["A", "B"], None),
])
def test_the_written_label_is_the_one_the_answer_gives(text: str, labels: list[str],
                                                       label: str | None) -> None:
    assert sampled_label(text, labels) == label


def test_renormalised_is_total_on_probabilities() -> None:
    assert renormalised({"A": 1.0 + 5e-5, "B": 0.0}) == {"A": 1.0, "B": 0.0}
    for bad in ({"A": "0.5", "B": 0.5}, {"A": -0.5, "B": 0.5}, {"A": 1.5, "B": 0.0},
                {"A": float("nan"), "B": 0.1}):
        with pytest.raises(ValueError, match="not a number in"):
            renormalised(bad)


# --- messages and edges ---------------------------------------------------------------------

def test_the_tie_band_holds_its_edges_under_float_rounding() -> None:
    from shared.kit.scoring import Preference, outcome

    for first, second, band in [(0.8, 0.4, 0.1), (0.9, 0.5, 0.2), (0.1, 0.5, 0.2),
                                (0.7, 0.6, 0.15), (0.35, 0.35, 0.15)]:
        score = Preference(first, second).score
        assert outcome(score, band) == "tie", (first, second, band, score)
        assert outcome(score, band - 0.01) == ("win" if score > 0.5 else "loss")


def test_a_rubric_giving_one_score_twice_is_refused(g_eval: evaluate.Metric,
                                                    cache_dir: str) -> None:
    from shared import InputError
    from shared.base.options import json_value
    from shared.demo.options import option_value

    for rubric in ({"1": "rude", " 1": "curt"}, {1: "rude", "1": "curt"}):
        with pytest.raises(InputError, match="both the score 1"):
            g_eval.compute(predictions=["a"], criteria=CRITERIA, rubric=rubric,
                           provider="openai-compatible", base_url="http://127.0.0.1:9/v1",
                           model="m", cache_dir=cache_dir, show_progress=False)
    with pytest.raises(ValueError, match="key '5' is given twice"):
        json_value('{"1": "rude", "5": "warm", "5": "cold"}')
    options = {o.name: o for o in type(g_eval).OPTIONS}
    for text, said in [('{"2": "a", "2": "b"}', "key '2' is given twice"),
                       ("{1: rude}", 'e.g. {"1": "rude"')]:
        with pytest.raises(ValueError, match=re.escape(said)) as error:
            option_value(options["rubric"], text)
        assert "None" not in str(error.value)
    with pytest.raises(ValueError, match=re.escape('e.g. ["')):
        option_value(options["evaluation_steps"], "[read")

"""G-Eval's ``samples=N``: the paper's own estimate of the score distribution (N answers at
temperature 1) for judges without log-probabilities, against the real llama.cpp server. Each
sampled answer is checked against the same request written here with the seed the sample must
carry, so a sample sent without its seed, with the wrong one, at another temperature or read
wrongly fails the test. That request must be the metric's request exactly: it is answered from
the metric's recorded answers (the server's samples at temperature 1 also depend on what it
evaluated before, its reused KV cache, so asking it again could sample another score)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import evaluate
import openai
import pytest
from faultproxy import FaultProxy

from shared import InputError, prompts
from shared.engine.backends.openai_compat import SEED
from shared.engine.logprobs import sampled_label

REPO = Path(__file__).resolve().parents[2]
CRITERIA = "Is the reply polite and helpful to the customer?"
QUESTIONS = ["Where is my refund?", "Where is my refund?"]
PREDICTIONS = ["Thanks for your patience! Your refund was sent today.", "Read the FAQ."]
LABELS = ["1", "2", "3", "4", "5"]
N = 6


@pytest.fixture(scope="module")
def g_eval() -> evaluate.Metric:
    return evaluate.load(str(REPO / "metrics" / "g_eval"))


def _reference_labels(base_url: str, prediction: str, question: str, n: int
                      ) -> list[str | None]:
    """The score each of the ``n`` samples must name: the G-Eval request at temperature 1 with
    seed ``SEED + s``, sent to ``base_url``."""
    client = openai.OpenAI(base_url=base_url, api_key="none")
    request = prompts.g_eval_request(CRITERIA, (), {}, 1, 5, prediction, question=question)
    labels = []
    for s in range(n):
        answer = client.chat.completions.create(
            model="smollm2", messages=request.as_openai_messages(), temperature=1, top_p=1,
            seed=SEED + s, max_tokens=16)
        labels.append(sampled_label(answer.choices[0].message.content or "", LABELS))
    return labels


@pytest.mark.server
def test_samples_give_the_empirical_distribution_of_seeded_answers(
        g_eval: evaluate.Metric, llama_server: str, cache_dir: str) -> None:
    recorded: dict = {}  # the server's answers, by request body
    with FaultProxy(llama_server, default="pass", replay=recorded) as proxy:
        options = dict(provider="openai-compatible", base_url=proxy.url, model="smollm2",
                       cache_dir=cache_dir, show_progress=False, criteria=CRITERIA)
        inputs = dict(questions=QUESTIONS, predictions=PREDICTIONS)
        result = g_eval.compute(**inputs, samples=N, **options)
        sent = [seen.body for seen in proxy.seen]
        assert len(sent) == N * len(PREDICTIONS)  # N requests per sample
        again = g_eval.compute(**inputs, samples=N, **options)
        assert proxy.count == len(sent)  # a rerun asks nothing
        one = g_eval.compute(**inputs, samples=1, **options)
        more = g_eval.compute(**inputs, samples=N + 2, **options)
        assert proxy.count == len(sent) + 2 * len(PREDICTIONS)  # only the new samples

    for body in sent:  # temperature 1, no log-probabilities, a seed per sample
        assert (body["temperature"], body["top_p"], body["max_tokens"]) == (1, 1, 16)
        assert "logprobs" not in body
    for prediction in PREDICTIONS:
        seeds = sorted(b["seed"] for b in sent if prediction in b["messages"][0]["content"])
        assert seeds == [SEED + s for s in range(N)]

    answered = len(recorded)
    with FaultProxy(llama_server, default="pass", replay=recorded) as reference:
        expected_labels = [_reference_labels(reference.url, prediction, question, N)
                           for question, prediction in zip(QUESTIONS, PREDICTIONS, strict=True)]
    assert len(recorded) == answered  # every reference request was one the metric sent

    differing = 0
    for expected, detail, score in zip(expected_labels, result["details"], result["scores"],
                                       strict=True):
        assert detail["sampled_scores"] == [None if e is None else int(e) for e in expected]
        assert detail["samples"] == N and detail["score_method"] == "sampled"
        named = [label for label in expected if label is not None]
        assert named, "the judge named no score in any sample"
        counts = Counter(named)
        assert detail["probabilities"] == pytest.approx(
            {label: counts[label] / len(named) for label in LABELS})
        raw = sum(int(label) * counts[label] for label in counts) / len(named)
        assert detail["raw_score"] == pytest.approx(raw)
        assert score == pytest.approx((raw - 1) / 4)
        differing += len(set(expected)) > 1
    assert differing, "the seeded samples should not all agree: were the seeds sent?"
    assert result["unmeasured"] == []
    assert again["usage"]["calls"] == 0 and again["details"] == result["details"]

    # N=1 is the first of the N answers (that same cached call): the score it names with
    # probability 1, or unmeasured when it names none
    unmeasured = {u["index"]: u["reason"] for u in one["unmeasured"]}
    for index, (detail, first) in enumerate(zip(one["details"], result["details"],
                                                strict=True)):
        label = first["sampled_scores"][0]
        if label is None:
            assert one["scores"][index] is None
            assert "none of the 1 sampled answers names a score" in unmeasured[index]
        else:
            assert detail["sampled_scores"] == [label]
            assert detail["probabilities"] == {k: float(k == str(label)) for k in LABELS}
            assert one["scores"][index] == (label - 1) / 4
    for detail, first in zip(more["details"], result["details"], strict=True):
        assert detail["sampled_scores"][:N] == first["sampled_scores"]


def test_dry_run_counts_n_requests_per_sample(g_eval: evaluate.Metric, cache_dir: str) -> None:
    plan = g_eval.compute(predictions=PREDICTIONS, criteria=CRITERIA, samples=N,
                          provider="openai-compatible", base_url="http://127.0.0.1:9/v1",
                          model="m", cache_dir=cache_dir, show_progress=False, dry_run=True)
    assert plan["dry_run"]["requests"] == N * len(PREDICTIONS)
    assert plan["dry_run"]["completion_tokens"] == 16 * N * len(PREDICTIONS)


@pytest.mark.parametrize("samples", [0, 101, True, 2.5])
def test_bad_samples_are_refused(g_eval: evaluate.Metric, cache_dir: str,
                                 samples: object) -> None:
    with pytest.raises((TypeError, ValueError), match="samples"):
        g_eval.compute(predictions=PREDICTIONS, criteria=CRITERIA, samples=samples,
                       provider="openai-compatible", base_url="http://127.0.0.1:9/v1",
                       model="m", cache_dir=cache_dir, show_progress=False)


def test_the_local_judge_refuses_samples_before_any_call(g_eval: evaluate.Metric,
                                                         cache_dir: str) -> None:
    # its next-token probabilities are exact: sampling them would only add noise
    with pytest.raises(InputError, match="samples"):
        g_eval.compute(predictions=PREDICTIONS, criteria=CRITERIA, samples=3,
                       cache_dir=cache_dir, show_progress=False, dry_run=True)

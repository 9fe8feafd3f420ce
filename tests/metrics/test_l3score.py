"""L3Score end to end on real judges: the llama.cpp OpenAI-compatible server and the local
backend, both running the embedded SmolLM2-135M. The 135M judge's verdicts are not checked (it is
far too small to be right); the mechanics are: documented keys, each score is the SPIQA rule of
the top-5 list the judge returned, the cache, and errors before any call."""

from __future__ import annotations

import re
from pathlib import Path

import evaluate
import pytest
from faultproxy import FaultProxy

from shared import exact_yes_probability, l3score_from_top_logprobs, prompts

REPO = Path(__file__).resolve().parents[2]
CARD = REPO / "metrics" / "l3score" / "README.md"

QUESTIONS = ["What is the capital of France?", "How many legs does a spider have?"]
PREDICTIONS = ["Paris", "Six legs."]
REFERENCES = ["Paris", "8"]


@pytest.fixture(scope="module")
def l3score() -> evaluate.Metric:
    return evaluate.load(str(REPO / "metrics" / "l3score"))


def _documented_keys() -> tuple[set[str], set[str]]:
    """(keys returned always, every documented key) from the card's Output Values table."""
    section = CARD.read_text(encoding="utf-8").split("\n## Output Values\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    always, documented = set(), set()
    for key, when in re.findall(r"^\| `([^`]+)` \| [^|]+ \| ([^|]+) \|", section, re.MULTILINE):
        documented.add(key)
        if when.strip() == "always":
            always.add(key)
    return always, documented


def _check_top5_mechanics(result: dict, n: int) -> None:
    assert len(result["scores"]) == len(result["details"]) == n
    assert result["unmeasured"] == []
    for score, detail in zip(result["scores"], result["details"], strict=True):
        top = detail["top_logprobs"]
        assert 0 < len(top) <= 5
        assert score == l3score_from_top_logprobs([(t, lp) for t, lp in top])
        assert 0.0 <= score <= 1.0
        for side, words in (("yes", {"yes", "yeah"}), ("no", {"no"})):
            match = detail[side]
            ranks = [i for i, (t, _) in enumerate(top) if t.strip().lower() in words]
            if match is None:
                assert ranks == []
            else:
                assert match["rank"] == ranks[0]
                assert [match["token"], match["logprob"]] == top[ranks[0]]
    measured = [s for s in result["scores"] if s is not None]
    assert result["L3Score"] == pytest.approx(sum(measured) / len(measured))


def test_card_documents_the_prompt_verbatim() -> None:
    card_prompt = re.search(r"```text\n(.*?)\n```", CARD.read_text(encoding="utf-8"), re.DOTALL)
    assert card_prompt is not None
    assert prompts.L3SCORE.text == card_prompt.group(1)
    message = prompts.L3SCORE.request(question="Q?", gt="G", answer="A").messages
    assert message == ((
        "user",
        "You are given a question, ground-truth answer, and a candidate answer.\n"
        "Question: Q?\nGround-truth answer: G\nCandidate answer: A\n"
        "Is the semantic meaning of the ground-truth and candidate answers similar?\n"
        "Answer in one word - Yes or No.",
    ),)


@pytest.mark.server
def test_server_run_scores_by_the_spiqa_rule_and_caches(
    l3score: evaluate.Metric, llama_server: str, cache_dir: str
) -> None:
    # a pass-through proxy in front of the real server records what was sent
    with FaultProxy(llama_server, default="pass") as proxy:
        options = dict(provider="openai-compatible", base_url=proxy.url, model="smollm2",
                       cache_dir=cache_dir, show_progress=False)
        result = l3score.compute(
            questions=QUESTIONS, predictions=PREDICTIONS, references=REFERENCES, **options
        )
        sent = [seen.body for seen in proxy.seen]
        again = l3score.compute(
            questions=QUESTIONS, predictions=PREDICTIONS, references=REFERENCES, **options
        )
        assert proxy.count == len(sent)

    always, documented = _documented_keys()
    assert always <= set(result) <= documented
    assert {"L3Score", "Cost"} <= always
    _check_top5_mechanics(result, len(QUESTIONS))
    assert all(d["mode"] == "top5" for d in result["details"])
    assert result["usage"]["calls"] == len(QUESTIONS)
    assert result["usage"]["cache_hits"] == 0
    assert result["usage"]["prompt_tokens"] > 0
    assert result["Cost"] is None  # "smollm2" is in no price table

    # SPIQA's request: the card's prompt as one user message, one token, top-5 log-probabilities
    assert len(sent) == len(QUESTIONS)
    expected = [prompts.L3SCORE.render(question=q, gt=r, answer=p)
                for q, p, r in zip(QUESTIONS, PREDICTIONS, REFERENCES, strict=True)]
    assert sorted(body["messages"][0]["content"] for body in sent) == sorted(expected)
    for body in sent:
        assert [m["role"] for m in body["messages"]] == ["user"]
        assert body["model"] == "smollm2"
        assert (body["temperature"], body["top_p"]) == (0, 1)
        assert (body["logprobs"], body["top_logprobs"], body["max_tokens"]) == (True, 5, 1)

    assert again["usage"]["calls"] == 0
    assert again["usage"]["cache_hits"] == len(QUESTIONS)
    assert again["scores"] == result["scores"]
    assert again["details"] == result["details"]


@pytest.mark.server
def test_dry_run_sends_nothing(
    l3score: evaluate.Metric, llama_server: str, cache_dir: str
) -> None:
    result = l3score.compute(
        questions=QUESTIONS, predictions=PREDICTIONS, references=REFERENCES,
        provider="openai-compatible", base_url=llama_server, model="smollm2",
        cache_dir=cache_dir, show_progress=False, dry_run=True,
    )
    _, documented = _documented_keys()
    assert set(result) <= documented
    assert result["dry_run"]["requests"] == len(QUESTIONS)
    assert result["usage"]["calls"] == 0
    assert result["L3Score"] is None
    assert [u["index"] for u in result["unmeasured"]] == list(range(len(QUESTIONS)))
    assert result["scores"] == [None] * len(QUESTIONS)


def test_local_judge_top5_and_exact(l3score: evaluate.Metric, cache_dir: str) -> None:
    inputs = dict(questions=QUESTIONS, predictions=PREDICTIONS, references=REFERENCES,
                  cache_dir=cache_dir, show_progress=False)
    result = l3score.compute(**inputs)  # no provider, no api_key: the embedded local judge
    always, documented = _documented_keys()
    assert always <= set(result) <= documented
    _check_top5_mechanics(result, len(QUESTIONS))
    assert result["usage"]["calls"] == len(QUESTIONS)
    assert result["Cost"] == 0.0

    exact = l3score.compute(**inputs, exact=True)
    assert always <= set(exact) <= documented
    # one forward pass gives both the top-5 list and the exact probabilities: the exact run is
    # answered from the cache of the top-5 run
    assert exact["usage"]["calls"] == 0
    assert exact["usage"]["cache_hits"] == len(QUESTIONS)
    assert exact["unmeasured"] == []
    for score, detail in zip(exact["scores"], exact["details"], strict=True):
        assert detail["mode"] == "exact"
        assert 0.0 <= score <= 1.0
        assert 0.0 <= detail["p_yes"] + detail["p_no"] <= 1.0 + 1e-6
        assert score == pytest.approx(exact_yes_probability(detail["p_yes"], detail["p_no"]))
    assert exact["L3Score"] == pytest.approx(sum(exact["scores"]) / len(QUESTIONS))
    assert [d["top5_score"] for d in exact["details"]] == pytest.approx(result["scores"])


@pytest.mark.parametrize(
    ("inputs", "error", "match"),
    [
        (dict(questions=["q1", "q2"], predictions=["a"], references=["r"]), ValueError,
         "lengths"),
        (dict(questions=["q"], predictions=[None], references=["r"]), ValueError,
         r"predictions\[0\]"),
        (dict(questions=["q", "q2"], predictions=["a", "b"], references=["r", "  "]), ValueError,
         r"references\[1\]"),
        (dict(questions=[""], predictions=["a"], references=["r"]), ValueError,
         r"questions\[0\]"),
        (dict(questions=["q"], predictions=[3], references=["r"]), TypeError,
         r"predictions\[0\]"),
        (dict(questions=None, predictions=["a"], references=["r"]), ValueError, "questions"),
        (dict(questions=[], predictions=[], references=[]), ValueError, "at least one"),
    ],
)
def test_bad_inputs_raise(l3score: evaluate.Metric, cache_dir: str, inputs: dict,
                          error: type[Exception], match: str) -> None:
    # a base URL where nothing listens: a call would end as "unmeasured", never as this error
    with pytest.raises(error, match=match):
        l3score.compute(**inputs, provider="openai-compatible", base_url="http://127.0.0.1:9/v1",
                        model="m", cache_dir=cache_dir, show_progress=False)


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        (dict(provider="anthropic", api_key="k"), ValueError, "provider"),
        (dict(provider="openai"), ValueError, "OPENAI_API_KEY"),
        (dict(provider="openai-compatible", model="m"), ValueError, "base_url"),
        (dict(provider="openai-compatible", base_url="http://127.0.0.1:9/v1", model="m",
              exact=True), ValueError, "exact"),
        (dict(provider="openai", api_key="k", model="gpt-4o-mini", exact=True), ValueError,
         "exact"),
        (dict(exact="yes"), TypeError, "exact"),
        (dict(temperature=0.5), TypeError, "temperature"),
    ],
)
def test_bad_options_raise(l3score: evaluate.Metric, cache_dir: str,
                           monkeypatch: pytest.MonkeyPatch, options: dict,
                           error: type[Exception], match: str) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(error, match=match):
        l3score.compute(questions=["q"], predictions=["a"], references=["r"],
                        cache_dir=cache_dir, show_progress=False, **options)


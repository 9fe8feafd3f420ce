"""The shared judge steps of the LLM-guided metrics: schemas, requests, clean-up, dry runs.

Answers of a real judge are covered end to end in tests/metrics/test_rag_metrics_e2e.py; here the
judge is the real runner in dry-run mode (nothing is sent, every request is planned)."""

from __future__ import annotations

import json

import jsonschema

from shared import (
    Outcome,
    first_failure,
    get_judge,
    judge_config,
    prompts,
    rag_judge,
    text_judge,
)


def _valid(schema: dict, value: object) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


def _verdicts(n: int, label: str = "yes") -> list[dict[str, object]]:
    return [{"item": k, "verdict": label, "reason": "r"} for k in range(1, n + 1)]


def test_verdicts_schema_needs_exactly_one_verdict_per_item_each_echoing_its_number() -> None:
    schema = rag_judge.verdicts_schema(3)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert _valid(schema, {"verdicts": _verdicts(3)})
    assert not _valid(schema, {"verdicts": _verdicts(2)})
    assert not _valid(schema, {"verdicts": _verdicts(4)})
    assert not _valid(schema, {"verdicts": _verdicts(3, "maybe")})
    long_reason = [{**v, "reason": "x" * (rag_judge.REASON_MAX_CHARS + 1)} for v in _verdicts(3)]
    assert not _valid(schema, {"verdicts": long_reason})
    swapped = _verdicts(3)
    swapped[0]["item"], swapped[1]["item"] = 2, 1
    assert not _valid(schema, {"verdicts": swapped})
    assert not _valid(schema, {"verdicts": [{"item": 1, "verdict": "yes", "reason": "r"}] * 3})
    no_echo = [{"verdict": "yes", "reason": "r"}] * 3
    assert not _valid(schema, {"verdicts": no_echo})
    assert not _valid(schema, {"verdicts": _verdicts(3), "extra": 1})


def test_correctness_schema_labels_and_lengths() -> None:
    schema = rag_judge.correctness_schema(2, 1)
    ok = {"answer": _verdicts(2, "TP"), "reference": _verdicts(1, "FN")}
    assert _valid(schema, ok)
    assert not _valid(schema, {**ok, "reference": _verdicts(1, "FP")})  # FP is for answers
    assert not _valid(schema, {**ok, "answer": _verdicts(2, "FN")})
    assert not _valid(schema, {**ok, "answer": _verdicts(3, "TP")})


def test_list_and_coherence_schemas() -> None:
    schema = rag_judge.list_schema("statements")
    assert _valid(schema, {"statements": []})
    assert _valid(schema, {"statements": ["a"] * rag_judge.MAX_ITEMS})
    assert not _valid(schema, {"statements": ["a"] * (rag_judge.MAX_ITEMS + 1)})
    assert not _valid(schema, {"statements": [""]})
    assert not _valid(schema, {"statements": ["x" * (rag_judge.ITEM_MAX_CHARS + 1)]})
    coherence = text_judge.coherence_schema()
    assert _valid(coherence, {"reason": "ok", "score": 5})
    for bad in (0, 6, 2.5, "3"):
        assert not _valid(coherence, {"reason": "ok", "score": bad})


def test_extraction_uses_one_prompt_whatever_the_metric() -> None:
    """The cache shares statements between metrics only if the request is the same."""
    text = "Paris is the capital of France."
    first = prompts.STATEMENTS.request(text=text)
    assert first == prompts.STATEMENTS.request(text=text)
    assert first.prompt_id == "statements@2"
    assert prompts.OPINIONS.request(text=text).prompt_id == "opinions@2"


def test_lists_go_in_as_one_json_array() -> None:
    items = ['say "yes"', "line\nbreak", "ünïcode"]
    contexts = rag_judge.as_json_list(items)
    request = prompts.CONTEXT_RELEVANCE.request(question="q?", contexts=contexts)
    content = request.messages[0][1]
    assert json.dumps(items, ensure_ascii=False) in content
    assert prompts.FENCE_NOTE in content


def _dry_judge() -> object:
    return get_judge(judge_config(dry_run=True, show_progress=False, use_cache=False))


def test_dry_run_extraction_is_planned_exactly_and_later_steps_once_per_sample() -> None:
    judge = _dry_judge()
    texts = ["A cat sat.", "A dog ran.", "A cat sat."]
    steps = rag_judge.extract_statements(judge, texts)
    assert all(not s.ok and "dry run" in s.error and s.error.startswith("statements:")
               for s in steps)
    assert judge.plan()["requests"] == 2  # identical texts are one request
    jobs = []
    for text, step in zip(texts, steps, strict=True):
        items = rag_judge.items_or_estimate(judge, step, text)
        assert items == [text]
        jobs.append(rag_judge.VerdictJob(items, {"question": "q?"}))
    rag_judge.judge_items(judge, prompts.ANSWER_RELEVANCE, "statements", jobs, "answer_relevance")
    assert judge.plan()["requests"] == 2 + 2


def test_items_or_estimate_outside_a_dry_run() -> None:
    judge = get_judge(judge_config(show_progress=False, use_cache=False))
    assert rag_judge.items_or_estimate(judge, Outcome(error="boom"), "t") is None
    assert rag_judge.items_or_estimate(judge, Outcome(["s"]), "t") == ["s"]


def test_token_limit_depends_only_on_the_request_itself() -> None:
    """A request's max_tokens is part of its cache key: it must not change with the batch."""
    judge = _dry_judge()
    jobs = [rag_judge.VerdictJob(["a"]), rag_judge.VerdictJob(["b", "c"])]
    rag_judge.judge_items(judge, prompts.BIAS, "opinions", jobs, "bias")
    planned = judge.plan()
    assert planned["requests"] == 2
    expected = rag_judge._verdict_max_tokens(1) + rag_judge._verdict_max_tokens(2)
    assert planned["completion_tokens"] == expected


def test_empty_jobs_send_nothing_and_none_jobs_stay_none() -> None:
    judge = _dry_judge()
    out = rag_judge.judge_items(judge, prompts.BIAS, "opinions",
                                [rag_judge.VerdictJob([]), None], "bias")
    assert out[0].ok and out[0].value == []
    assert out[1] is None
    correctness = rag_judge.correctness_verdicts(judge, [
        rag_judge.CorrectnessJob(["a", "b"], []), rag_judge.CorrectnessJob([], ["c"]),
    ])
    assert [len(correctness[0].value[k]) for k in ("TP", "FP", "FN")] == [0, 2, 0]
    assert [len(correctness[1].value[k]) for k in ("TP", "FP", "FN")] == [0, 0, 1]
    assert judge.plan()["requests"] == 0


def test_clean_strips_and_deduplicates_in_order() -> None:
    assert rag_judge._clean(["  A  b ", "c", "A b", " ", "c", "d"]) == ["A b", "c", "d"]


def test_first_failure_reports_the_first_failed_step() -> None:
    failed = first_failure(Outcome(["x"]), Outcome(error="verdicts: bad"),
                           Outcome(error="later"))
    assert failed is not None
    assert failed.score is None and failed.unmeasured_reason == "verdicts: bad"
    assert failed.details == {"error": "verdicts: bad"}
    assert first_failure(Outcome(["x"]), None) is None


def test_verdict_share_scores_the_yes_share_or_the_failure() -> None:
    yes, no = rag_judge.Verdict("a", "yes", "r"), rag_judge.Verdict("b", "no", "r")
    results = rag_judge.verdict_share([Outcome([yes, no]), Outcome([]),
                                       Outcome(error="verdicts: bad")], empty=1.0)
    assert [r.score for r in results] == [0.5, 1.0, None]
    assert results[0].details == {"verdicts": [yes.as_dict(), no.as_dict()]}
    assert results[2].unmeasured_reason == "verdicts: bad"

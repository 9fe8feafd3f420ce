"""The judge steps of the LLM-guided metrics (shared.kit.steps): each step object's prompt,
schema, check and token limit, what a batch of jobs sends, and the chain from items to shares.

Answers of a real judge are covered end to end in tests/metrics/test_rag_metrics_e2e.py; here the
judge is the real runner in dry-run mode (nothing is sent, every request is planned)."""

from __future__ import annotations

import json

import jsonschema

from shared import Outcome, first_failure, get_judge, judge_config, prompts, steps
from shared.kit.steps import extraction, rating, verdicts


def _valid(schema: dict, value: object) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


def _verdicts(n: int, label: str = "yes") -> list[dict[str, object]]:
    return [{"item": k, "verdict": label, "reason": "r"} for k in range(1, n + 1)]


def _dry_judge() -> object:
    return get_judge(judge_config(dry_run=True, show_progress=False, use_cache=False))


def _step_objects() -> list[steps.JudgeStep]:
    return [value for value in vars(steps).values() if isinstance(value, steps.JudgeStep)]


def test_every_prompt_but_l3score_belongs_to_exactly_one_step() -> None:
    """A prompt, its schema, its check and its token limit travel together: no prompt is sent
    outside a step (L3Score and task_completion ask for log-probabilities, not a structured
    answer)."""
    templates = [v for v in vars(prompts).values() if isinstance(v, prompts.PromptTemplate)]
    held = [step.template for step in _step_objects() if step.template is not None]
    # L3Score's and task_completion's prompts are answered by label log-probabilities
    # (Judge.label_probabilities), not by a structured answer: no step holds them
    by_labels = (prompts.L3SCORE, prompts.TASK_COMPLETION)
    assert sorted(t.name for t in held) == sorted(t.name for t in templates
                                                  if t not in by_labels)
    assert all(step.template is getattr(prompts, name) for name, step in (
        ("STATEMENTS", steps.STATEMENTS), ("FAITHFULNESS", steps.FAITHFULNESS),
        ("ANSWER_CORRECTNESS_WITH_QUESTION", steps.CORRECTNESS_WITH_QUESTION)))


def test_a_step_checks_its_answers_against_its_own_prompt_and_job() -> None:
    """The check a step builds is the grounding check of that job: a verdict list for other
    items, or a reason copied from the step's own prompt, fails it."""
    job = steps.VerdictJob(["Paris is in France.", "Berlin is in Germany."],
                           {"contexts": steps.as_json_list(["Europe has capitals."])})
    check = steps.FAITHFULNESS.check(job)
    good = {"verdicts": [{"item": 1, "verdict": "yes", "reason": "France"},
                         {"item": 2, "verdict": "no", "reason": "Germany"}]}
    assert check(good) is None
    assert "item" in check({"verdicts": good["verdicts"][:1]})
    copied = {"verdicts": [{**v, "reason": prompts.REASON_PLACEHOLDER} for v in good["verdicts"]]}
    assert "copied the format placeholder" in check(copied)
    assert steps.FAITHFULNESS.request(job).prompt_id == "faithfulness@5"
    assert json.dumps(job.items) in steps.FAITHFULNESS.request(job).messages[0][1]
    extracted = steps.STATEMENTS.check(("The capital of Australia is Canberra.", None))
    assert "copied" in extracted({"statements": [prompts.ITEM_PLACEHOLDERS[0]]})
    assert extracted({"statements": ["Canberra is the capital of Australia."]}) is None


def test_verdicts_schema_needs_exactly_one_verdict_per_item_each_echoing_its_number() -> None:
    schema = steps.HALLUCINATION.schema(steps.VerdictJob(["a", "b", "c"]))
    assert schema == verdicts.verdicts_schema(3)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert _valid(schema, {"verdicts": _verdicts(3)})
    assert not _valid(schema, {"verdicts": _verdicts(2)})
    assert not _valid(schema, {"verdicts": _verdicts(4)})
    assert not _valid(schema, {"verdicts": _verdicts(3, "maybe")})
    long_reason = [{**v, "reason": "x" * (verdicts.REASON_MAX_CHARS + 1)} for v in _verdicts(3)]
    assert not _valid(schema, {"verdicts": long_reason})
    swapped = _verdicts(3)
    swapped[0]["item"], swapped[1]["item"] = 2, 1
    assert not _valid(schema, {"verdicts": swapped})
    assert not _valid(schema, {"verdicts": [{"item": 1, "verdict": "yes", "reason": "r"}] * 3})
    no_echo = [{"verdict": "yes", "reason": "r"}] * 3
    assert not _valid(schema, {"verdicts": no_echo})
    assert not _valid(schema, {"verdicts": _verdicts(3), "extra": 1})


def test_correctness_schema_labels_and_lengths() -> None:
    schema = steps.CORRECTNESS.schema(steps.CorrectnessJob(["a", "b"], ["c"]))
    ok = {"answer": _verdicts(2, "TP"), "reference": _verdicts(1, "FN")}
    assert _valid(schema, ok)
    assert not _valid(schema, {**ok, "reference": _verdicts(1, "FP")})  # FP is for answers
    assert not _valid(schema, {**ok, "answer": _verdicts(2, "FN")})
    assert not _valid(schema, {**ok, "answer": _verdicts(3, "TP")})


def test_list_and_coherence_schemas() -> None:
    schema = steps.STATEMENTS.schema(("a text", None))
    assert steps.OPINIONS.schema(("a text", None)) == extraction.list_schema("opinions")
    assert _valid(schema, {"statements": []})
    many = [f"item {i}" for i in range(extraction.MAX_ITEMS + 1)]
    assert _valid(schema, {"statements": many[:-1]})
    assert not _valid(schema, {"statements": many})
    assert not _valid(schema, {"statements": ["a", "a"]})  # distinct items (uniqueItems)
    assert not _valid(schema, {"statements": [""]})
    assert not _valid(schema, {"statements": ["x" * (extraction.ITEM_MAX_CHARS + 1)]})
    coherence = steps.SUMMARY_COHERENCE.schema(("source", "summary"))
    assert coherence == rating.coherence_schema()
    assert _valid(coherence, {"reason": "ok", "score": 5})
    for bad in (0, 6, 2.5, "3"):
        assert not _valid(coherence, {"reason": "ok", "score": bad})


def test_extraction_uses_one_prompt_whatever_the_metric() -> None:
    """The cache shares statements between metrics only if the request is the same."""
    text = "Paris is the capital of France."
    first = steps.STATEMENTS.request((text, None))
    assert first == prompts.STATEMENTS.request(text=text)
    assert first.prompt_id == "statements@4"
    assert steps.OPINIONS.request((text, None)).prompt_id == "opinions@4"
    asked = steps.STATEMENTS_WITH_QUESTION.request((text, "Capital?"))
    assert asked == prompts.STATEMENTS_WITH_QUESTION.request(text=text, question="Capital?")


def test_lists_go_in_as_one_json_array() -> None:
    items = ['say "yes"', "line\nbreak", "ünïcode"]
    request = steps.CONTEXT_RELEVANCE.request(steps.VerdictJob(items, {"question": "q?"}))
    content = request.messages[0][1]
    assert json.dumps(items, ensure_ascii=False) in content
    assert steps.as_json_list(items) in content
    assert prompts.FENCE_NOTE in content


def test_dry_run_extraction_is_planned_exactly_and_later_steps_once_per_sample() -> None:
    judge = _dry_judge()
    texts = ["A cat sat.", "A dog ran.", "A cat sat."]
    found = steps.extract_statements(judge, texts)
    assert all(not s.ok and "dry run" in s.error and s.error.startswith("statements:")
               for s in found)
    assert judge.plan()["requests"] == 2  # identical texts are one request
    jobs = []
    for text, step in zip(texts, found, strict=True):
        items = steps.items_or_estimate(judge, step, text)
        assert items == [text]
        jobs.append(steps.VerdictJob(items, {"question": "q?"}))
    steps.ANSWER_RELEVANCE.ask(judge, jobs)
    assert judge.plan()["requests"] == 2 + 2


def test_statements_with_and_without_a_question_go_out_in_one_batch() -> None:
    """One ``structured`` call for a mixed batch (answer correctness sends its answers with the
    question and its references without): the requests differ, the token limit does not."""
    judge = _dry_judge()
    steps.extract_statements(judge, ["A cat sat.", "A cat sat."], ["Who sat?", None])
    planned = judge.plan()
    assert planned["requests"] == 2
    assert planned["completion_tokens"] == 2 * extraction.LIST_MAX_TOKENS


def test_items_or_estimate_outside_a_dry_run() -> None:
    judge = get_judge(judge_config(show_progress=False, use_cache=False))
    assert steps.items_or_estimate(judge, Outcome(error="boom"), "t") is None
    assert steps.items_or_estimate(judge, Outcome(["s"]), "t") == ["s"]


def test_token_limit_depends_only_on_the_request_itself() -> None:
    """A request's max_tokens is part of its cache key: it must not change with the batch."""
    judge = _dry_judge()
    jobs = [steps.VerdictJob(["a"]), steps.VerdictJob(["b", "c"])]
    steps.BIAS.ask(judge, jobs)
    planned = judge.plan()
    assert planned["requests"] == 2
    expected = verdicts.verdict_max_tokens(1) + verdicts.verdict_max_tokens(2)
    assert planned["completion_tokens"] == expected
    assert [steps.BIAS.max_tokens(job) for job in jobs] == [verdicts.verdict_max_tokens(1),
                                                            verdicts.verdict_max_tokens(2)]


def test_empty_jobs_send_nothing_and_none_jobs_stay_none() -> None:
    judge = _dry_judge()
    out = steps.BIAS.ask(judge, [steps.VerdictJob([]), None])
    assert out[0].ok and out[0].value == []
    assert out[1] is None
    correctness = steps.correctness_verdicts(judge, [
        steps.CorrectnessJob(["a", "b"], []), steps.CorrectnessJob([], ["c"]), None,
    ])
    assert [len(correctness[0].value[k]) for k in ("TP", "FP", "FN")] == [0, 2, 0]
    assert [len(correctness[1].value[k]) for k in ("TP", "FP", "FN")] == [0, 0, 1]
    assert correctness[2] is None
    assert judge.plan()["requests"] == 0


def test_clean_strips_and_deduplicates_in_order() -> None:
    assert extraction.clean_items(["  A  b ", "c", "A b", " ", "c", "d"]) == ["A b", "c", "d"]


def test_first_failure_reports_the_first_failed_step() -> None:
    failed = first_failure(Outcome(["x"]), Outcome(error="verdicts: bad"),
                           Outcome(error="later"))
    assert failed is not None
    assert failed.score is None and failed.unmeasured_reason == "verdicts: bad"
    assert failed.details == {"error": "verdicts: bad"}
    assert first_failure(Outcome(["x"]), None) is None


def test_verdict_share_scores_the_yes_share_or_the_failure() -> None:
    yes, no = steps.JudgedItem("a", "yes", "r"), steps.JudgedItem("b", "no", "r")
    results = steps.verdict_share([Outcome([yes, no]), Outcome([]),
                                   Outcome(error="verdicts: bad")], empty=1.0)
    assert [r.score for r in results] == [0.5, 1.0, None]
    assert results[0].details == {"verdicts": [yes.as_dict(), no.as_dict()]}
    assert results[2].unmeasured_reason == "verdicts: bad"


def test_item_verdicts_give_the_share_the_details_or_the_first_failure() -> None:
    yes, no = steps.JudgedItem("a", "yes", "r"), steps.JudgedItem("b", "no", "r")
    chain = steps.ItemVerdicts(Outcome(["a", "b"], dropped=["z"]), Outcome([yes, no, no]),
                               "claims")
    assert chain.failure() is None and chain.yes_share() == 1 / 3
    result = chain.scored(chain.yes_share())
    assert result.details == {"claims": ["a", "b"], "verdicts": [yes.as_dict(), no.as_dict(),
                                                                  no.as_dict()],
                              "dropped_items": 1, "unsupported": ["z"]}
    empty = steps.ItemVerdicts(Outcome([]), Outcome([]), "claims")
    assert empty.yes_share() == 0.0 and empty.yes_share(empty=1.0) == 1.0
    failed = steps.ItemVerdicts(Outcome(error="statements: boom"), None, "claims")
    assert failed.failure().unmeasured_reason == "statements: boom"
    assert steps.first_failure_of([chain, failed]).unmeasured_reason == "statements: boom"
    assert steps.first_failure_of([chain]) is None


def test_bias_and_toxicity_ask_for_the_same_opinions() -> None:
    """One opinion extraction per text whichever metric asks, so the call cache shares it."""
    texts = ["I love this city.", "Tax is theft."]
    bias, toxicity = _dry_judge(), _dry_judge()
    steps.opinion_verdicts(bias, steps.BIAS, texts)
    steps.opinion_verdicts(toxicity, steps.TOXICITY, texts)
    assert bias.plan()["requests"] == toxicity.plan()["requests"] == 2 + 2
    assert bias.plan()["prompt_tokens"] > 0


def test_a_dry_run_leaves_every_sample_unmeasured_with_the_step_named() -> None:
    (chain,) = steps.opinion_verdicts(_dry_judge(), steps.BIAS, ["Fine words."])
    assert chain.failure().unmeasured_reason.startswith("opinions: dry run")
    (chain,) = steps.statement_verdicts(_dry_judge(), steps.CONTEXT_RECALL, ["Fine words."],
                                        [{"contexts": "[]"}])
    assert chain.failure().unmeasured_reason.startswith("statements: dry run")


def test_summary_ratings_are_one_request_per_sample() -> None:
    judge = _dry_judge()
    ratings = steps.rate_summaries(judge, ["Source one.", "Source two."], ["S1.", "S2."])
    assert [s.ok for s in ratings] == [False, False]
    assert all(s.error.startswith("summary_coherence: dry run") for s in ratings)
    assert judge.plan()["requests"] == 2

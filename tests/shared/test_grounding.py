"""The grounding rule on hand-made cases, and the runner's check hook with its repair pass.

The cases are written from the rule's statement in docs/GROUNDING.md (what a reader expects to
be supported or not), not from this module's output."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from judgeserver import JudgeServer

from shared import get_judge, judge_config, prompts, steps
from shared.engine.cache import CallCache
from shared.kit.invalid_answers import CATEGORIES, category, count_invalid
from shared.kit.steps.grounding import (
    SUPPORT_MIN,
    content_stems,
    copied_example,
    extraction_check,
    ground_items,
    is_supported,
    reason_about_other_item,
    reasons_check,
    support,
    verdicts_check,
)

V1_EXAMPLES = ("Paris is the capital of France.", "Paris has about two million inhabitants.")


# --- the support rule --------------------------------------------------------------------------

def test_the_sources_own_sentence_and_a_reordering_are_supported() -> None:
    source = "Canberra is the capital city of Australia. It was chosen as a compromise."
    assert support("Canberra is the capital city of Australia.", source) == 1.0
    assert is_supported("The capital of Australia is Canberra.", source)


def test_a_pronoun_resolved_from_the_question_is_supported_only_with_the_question() -> None:
    answer = "She wrote it in 1813."
    question = "Who wrote Pride and Prejudice, Jane Austen or Emily Bronte?"
    statement = "Jane Austen wrote Pride and Prejudice in 1813."
    assert not is_supported(statement, answer)  # names the answer alone never gives
    assert is_supported(statement, answer, question)


def test_numbers_must_occur_in_the_source() -> None:
    source = "At sea level pure water boils at 100 °C (212 °F)."
    assert is_supported("Water boils at 100 degrees at sea level.", source)
    # every other word is the source's own, but the number is invented
    assert support("Water boils at 90 °C at sea level.", source) >= SUPPORT_MIN
    assert not is_supported("Water boils at 90 °C at sea level.", source)
    assert is_supported("The town has 2000 people.", "The town has 2,000 people.")


def test_a_paraphrase_with_the_sources_words_and_inflections_is_supported() -> None:
    source = "The museum opened in May and visitors praised its collection."
    assert is_supported("Visitors praise the museum's collection.", source)
    assert is_supported("The museum opens in May.", source)


def test_an_item_from_another_text_is_not_supported() -> None:
    source = "The capital of Australia is Canberra."
    assert not is_supported("Sydney has a famous opera house.", source)
    assert not is_supported("The Eiffel Tower is in Paris.", source)
    assert support("Sydney has a famous opera house.", source) == 0.0


def test_accents_case_and_stopwords_do_not_matter() -> None:
    assert content_stems("The Café in Zürich") == content_stems("the cafe in zurich")
    assert content_stems("It is the one.") == []
    assert is_supported("It is.", "It is what it is.")  # no content word: all its words occur
    assert not is_supported("It was.", "It is.")


# --- copies of the prompt -----------------------------------------------------------------------

def test_an_example_of_the_prompt_is_never_supported_even_when_the_source_holds_it() -> None:
    source = "Paris is the capital of France. Paris has about two million inhabitants."
    report = ground_items(["Paris is the capital of France."], source, examples=V1_EXAMPLES)
    assert report.copies and not report.kept
    assert "copied the prompt's example" in (report.reason or "")


def test_an_example_blended_with_the_input_is_a_copy() -> None:
    source = "The capital of Australia is Canberra."
    # near-equal to the example (one word changed)
    assert copied_example("Paris is the capital of Australia.", V1_EXAMPLES) is not None
    # not near-equal, but its missing words come from an example sentence
    report = ground_items(["Canberra has about two million inhabitants."], source,
                          examples=V1_EXAMPLES)
    assert [item for item, _ in report.copies] == ["Canberra has about two million inhabitants."]


def test_a_placeholder_copied_as_an_item_or_a_reason_is_caught() -> None:
    placeholders = prompts.STATEMENTS.examples
    assert copied_example("<a statement of the text>", placeholders)
    assert copied_example("A statement of the text.", placeholders)
    check = reasons_check(["verdicts"], prompts.BIAS.examples)
    assert check({"verdicts": [{"verdict": "no", "reason": "it names no group"}]}) is None
    copied = check({"verdicts": [{"verdict": "no", "reason": "it names no group"},
                                 {"verdict": "yes", "reason": "<why, in your own words>"}]})
    assert copied is not None and "verdicts 2" in copied
    assert "short reason" in (check({"verdicts": [{"verdict": "no", "reason": "Short reason."}]})
                              or "")


def test_example_sentences_of_the_current_prompts_are_none_of_the_tests_inputs() -> None:
    """The list prompts show their answer's JSON schema, no example sentence: a real text about
    Paris is not a copy. Each example a template lists is shown in its text, or is a
    placeholder an earlier version showed (never content either)."""
    earlier = {prompts.REASON_PLACEHOLDER, *prompts.ITEM_PLACEHOLDERS}
    for template in (prompts.STATEMENTS, prompts.STATEMENTS_WITH_QUESTION, prompts.OPINIONS):
        assert copied_example("Paris is the capital of France.", template.examples) is None
        assert '"items":{"type":"string"}' in template.render(text="x", question="y")
        for example in template.examples:
            assert example in template.text or example in earlier


# --- verdicts matched to the items asked about ----------------------------------------------------

CLAIMS = ["Canberra is the capital of Australia.", "Sydney has the famous opera house.",
          "Kangaroos live in the outback."]


def _answer(*reasons: str, numbers: list[int] | None = None) -> dict:
    numbers = numbers or list(range(1, len(reasons) + 1))
    return {"verdicts": [{"item": n, "verdict": "yes", "reason": r}
                         for n, r in zip(numbers, reasons, strict=True)]}


def test_verdicts_about_their_own_items_or_saying_nothing_specific_match() -> None:
    check = verdicts_check({"verdicts": CLAIMS}, prompts.FAITHFULNESS.examples)
    assert check(_answer("the context names Canberra as the capital", "the opera house is there",
                         "kangaroos are in the outback")) is None
    # reasons naming no item at all are no evidence of a mismatch
    assert check(_answer("stated in the context", "not mentioned", "not mentioned")) is None


def test_a_reason_about_another_item_of_the_list_is_a_mismatch() -> None:
    check = verdicts_check({"verdicts": CLAIMS}, prompts.FAITHFULNESS.examples)
    shifted = check(_answer("the context names Canberra as the capital",
                            "kangaroos live in the outback", "Sydney has an opera house"))
    assert shifted is not None and "verdicts do not match the items asked about" in shifted
    assert "verdicts 2" in shifted and "item 3" in shifted
    stuck = check(_answer(*["Canberra is the capital of Australia"] * 3))
    assert stuck is not None and "verdicts 2" in stuck and "item 1" in stuck
    assert category(f"faithfulness: invalid judge answer: {stuck}") == "verdict_mismatch"


def test_one_shared_word_or_words_of_the_rest_of_the_prompt_prove_no_mismatch() -> None:
    # one word of another item ("capital") can be chance
    assert reason_about_other_item("no capital here", 2, CLAIMS) is None
    # the contexts are shown to the judge: a reason may cite them, whatever other item holds
    # the same words
    contexts = '["Sydney has the famous opera house."]'
    assert reason_about_other_item("the context only says Sydney has the opera house", 2,
                                   CLAIMS) == 1
    assert reason_about_other_item("the context only says Sydney has the opera house", 2,
                                   CLAIMS, contexts) is None


def test_each_verdict_must_echo_its_items_number_in_order() -> None:
    check = verdicts_check({"verdicts": CLAIMS[:2]}, prompts.BIAS.examples)
    assert check(_answer("a", "b")) is None
    assert "verdicts 1 says item 2, expected 1" in (check(_answer("a", "b", numbers=[2, 1])) or "")
    assert "verdicts 2 says item None" in (check({"verdicts": [
        {"item": 1, "verdict": "no", "reason": "a"}, {"verdict": "no", "reason": "b"}]}) or "")
    assert "1 verdicts for 2 items" in (check(_answer("a")) or "")
    # a placeholder reason is still reported as such
    assert "copied the format placeholder" in (check(_answer(prompts.REASON_PLACEHOLDER, "b"))
                                               or "")


def test_correctness_reasons_may_cite_the_other_list_but_not_a_sibling_statement() -> None:
    answer = ["Canberra is the capital of Australia.", "Canberra was founded in 1913."]
    reference = ["The capital of Australia is Canberra."]
    check = verdicts_check({"answer": answer, "reference": reference},
                           prompts.ANSWER_CORRECTNESS.examples, "What is the capital?")

    def verdicts(*reasons: str) -> list[dict]:
        return [{"item": k, "verdict": "TP", "reason": r} for k, r in enumerate(reasons, 1)]

    cites_reference = {"answer": verdicts("the reference says so",
                                          "the reference only says capital of Australia"),
                       "reference": verdicts("the answer says so")}
    assert check(cites_reference) is None
    sibling = {"answer": verdicts("Canberra founded 1913", "the reference says so"),
               "reference": verdicts("the answer says so")}
    assert check(sibling) is None  # shares "Canberra" with its own item
    wrong = {"answer": verdicts("the reference says so", "no founding year in the reference"),
             "reference": verdicts("the answer says so")}
    assert check(wrong) is None  # "founding" vs "founded": a shared stem with its own item
    about_sibling = {"answer": verdicts("founded in 1913 per the answer",
                                        "the reference says so"),
                     "reference": verdicts("the answer says so")}
    reason = check(about_sibling)
    assert reason is not None and "answer 1" in reason and "item 2" in reason


# --- whole answers ------------------------------------------------------------------------------

def test_an_answer_keeps_a_supported_majority_and_drops_the_rest() -> None:
    source = "Canberra is the capital of Australia. It was a compromise between two cities."
    items = ["Canberra is the capital of Australia.", "Canberra was a compromise.",
             "Kangaroos live in the outback."]
    report = ground_items(items, source)
    assert report.kept == items[:2] and report.unsupported == items[2:]
    assert report.reason is None
    check = extraction_check("statements", source)
    assert check({"statements": items}) is None
    assert "2 of 3 items not supported" in (check({"statements": items[2:] + [
        "Koalas eat leaves."] + items[:1]}) or "")


def test_an_empty_list_of_statements_is_invalid_for_a_text_with_words() -> None:
    statements = extraction_check("statements", "Jane Austen", require_items=True)
    assert "nothing extracted" in (statements({"statements": []}) or "")
    assert statements({"statements": ["Jane Austen"]}) is None
    assert extraction_check("opinions", "Jane Austen")({"opinions": []}) is None


def test_categories_of_unmeasured_reasons() -> None:
    reasons = [
        "statements: invalid judge answer: copied the prompt's example: 'x'",
        "bias: invalid judge answer: copied the format placeholder 'short reason' as the reason",
        "statements: invalid judge answer: 2 of 2 items not supported by the text: 'a', 'b'",
        "statements: invalid judge answer: nothing extracted from a text that has words",
        "bias: invalid judge answer: [{'verdict': 'yes'}] is too short (at /verdicts)",
        "bias: invalid judge answer: 2 was expected (at /verdicts/1/item)",
        "bias: invalid judge answer: the answer is not valid JSON",
        "g_eval: invalid judge answer: no label: none of 1, 2, 3 among the judge's most likely "
        "next tokens",
        "g_eval: invalid judge answer: the probability of '4' is '0.5', not a number in [0, 1]",
        "bias: judge backend failed: APIConnectionError",
    ]
    kinds = [*CATEGORIES[:5], "verdict_mismatch", *CATEGORIES[5:], None]
    assert [category(r) for r in reasons] == kinds
    counts = count_invalid([{"index": i, "reason": r} for i, r in enumerate(reasons)])
    assert counts == {**dict.fromkeys(CATEGORIES, 1), "verdict_mismatch": 2}


# --- the runner's check hook --------------------------------------------------------------------

def _judge(url: str, constrained: bool = False):
    """The real OpenAI-compatible backend and runner against a scripted loopback server."""
    return get_judge(judge_config(
        provider="openai-compatible", base_url=url, model="scripted", api_key="sk-none",
        response_format="json_object" if constrained else "none", use_cache=False,
        show_progress=False, max_retries=0))


def _script(*answers: str) -> Callable[[dict], str]:
    queue = list(answers)
    return lambda body: queue.pop(0)


SOURCE = "The capital of Australia is Canberra."
COPY = json.dumps({"statements": ["Paris is the capital of Australia."]})
GOOD = json.dumps({"statements": ["Canberra is the capital of Australia."]})


@pytest.mark.parametrize("constrained", [False, True])
def test_a_failed_check_is_repaired_with_its_reason_on_every_backend(constrained: bool) -> None:
    """A schema-valid copy gets the repair retry even from a constrained backend (which gets
    none for a schema error: its decoder already enforced the schema)."""
    request = prompts.STATEMENTS.request(text=SOURCE)
    check = extraction_check("statements", SOURCE, examples=V1_EXAMPLES)
    with JudgeServer(_script(COPY, GOOD)) as server:
        judge = _judge(server.url, constrained)
        assert judge.backend.constrained == constrained
        (outcome,) = judge.structured([request], steps.STATEMENTS.schema((SOURCE, None)),
                                      checks=[check])
        assert outcome.ok and outcome.value == json.loads(GOOD)
        repair = server.seen[1]["messages"]
    assert repair[-2] == {"role": "assistant", "content": COPY}
    assert "copied the prompt's example" in repair[-1]["content"]
    assert "Paris is the capital of Australia." in repair[-1]["content"]


def test_a_check_still_failing_after_repair_is_an_invalid_answer_saying_what_was_copied(
        cache_dir: str) -> None:
    request = prompts.STATEMENTS.request(text=SOURCE)
    check = extraction_check("statements", SOURCE, examples=V1_EXAMPLES)
    schema = steps.STATEMENTS.schema((SOURCE, None))
    with JudgeServer(_script(COPY, COPY)) as server:
        options = dict(provider="openai-compatible", base_url=server.url, model="scripted",
                       api_key="sk-none", response_format="none", cache_dir=cache_dir,
                       show_progress=False)
        (outcome,) = get_judge(judge_config(**options)).structured([request], schema,
                                                                    checks=[check])
        assert len(server.seen) == 2  # one repair, no more
        # the refused answer and the repair's are cached raw, so a rerun sends
        # nothing, and the checks, applied again on the cached answers, refuse them alike
        assert len(CallCache(cache_dir)) == 2
        rerun = get_judge(judge_config(**options))
        (again,) = rerun.structured([request], schema, checks=[check])
        assert len(server.seen) == 2 and rerun.usage.calls == 0
    assert not outcome.ok
    assert outcome.error.startswith("invalid judge answer: copied the prompt's example")
    assert "Paris is the capital of Australia." in outcome.error
    assert again.error == outcome.error


def test_checks_run_on_cached_answers_and_must_match_the_requests(cache_dir: str) -> None:
    """The checks are not in the cache key (the raw answer depends on the request alone): a
    checked request reuses the unchecked answer and checks it on reading (docs/RUNNER.md)."""
    request = prompts.STATEMENTS.request(text=SOURCE)
    schema = steps.STATEMENTS.schema((SOURCE, None))
    with JudgeServer(_script(GOOD, GOOD)) as server:
        options = dict(provider="openai-compatible", base_url=server.url, model="scripted",
                       api_key="sk-none", response_format="none", cache_dir=cache_dir,
                       show_progress=False)
        judge = get_judge(judge_config(**options))
        with pytest.raises(ValueError, match="checks has 2 entries for 1 requests"):
            judge.structured([request], schema, checks=[None, None])
        judge.structured([request], schema)
        judge.structured([request], schema, checks=[lambda value: None])
        assert judge.usage.calls == 1 and judge.usage.cache_hits == 1
        (refused,) = judge.structured([request], schema, checks=[lambda value: "no, never"])
        assert not refused.ok and "no, never" in refused.error
        again = get_judge(judge_config(**options))
        again.structured([request], schema, checks=[lambda value: None])
        assert again.usage.calls == 0 and again.usage.cache_hits == 1


def test_the_demo_lists_invalid_answers_above_the_unmeasured_rows() -> None:
    from shared.demo import Scrubber, unmeasured_markdown

    reason = ("bias: invalid judge answer: copied the format placeholder 'short reason' as "
              "the reason")
    result = {"unmeasured": [{"index": 0, "reason": reason}],
              "invalid_answers": count_invalid([{"index": 0, "reason": reason}])}
    text = unmeasured_markdown(result, [3], Scrubber(None))
    assert "Invalid judge answers (placeholder reason: 1)" in text
    assert "table row 3" in text
    assert "Invalid judge answers" not in unmeasured_markdown(
        {**result, "invalid_answers": dict.fromkeys(CATEGORIES, 0)}, [3], Scrubber(None))

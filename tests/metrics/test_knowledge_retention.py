"""knowledge_retention: the embedded judge end to end (and the cache), which assistant messages
are judged against which facts, the formula on hand-made verdicts, the edge cases, and the input
checks."""

from __future__ import annotations

import pytest
from conversation_checks import (
    BOOKING_CALL,
    refuses_a_malformed_conversation,
    share_of_yes_verdicts,
)
from conversation_checks import run_twice_on_the_embedded_judge as run_twice

from shared.base.types import Outcome
from shared.kit import steps
from shared.kit.conversations import check_messages
from shared.kit.steps import JudgedItem, Retention

pytestmark = pytest.mark.usefixtures("one_torch_thread")

NAME = {"role": "user", "content": "I am Ana."}


def test_embedded_judge_scores_and_the_cache_answers_the_second_run(metric, cache_dir) -> None:
    conversation = [NAME, {"role": "assistant", "content": "What is your name?"}]
    result = run_twice(metric, "knowledge_retention", cache_dir, messages=[conversation])
    share_of_yes_verdicts(result)  # the share of assistant messages that retain


def test_each_assistant_turn_is_judged_against_the_facts_before_it() -> None:
    messages = [
        {"role": "assistant", "content": "Hello! Who are you?"},  # before any fact: not judged
        NAME,
        {"role": "assistant", "content": "Hi Ana."},
        {"role": "assistant", "content": None, "tool_calls": [BOOKING_CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
        {"role": "user", "content": "What can you do?"},  # a question: no fact
        {"role": "assistant", "content": "I can book tables."},
        {"role": "user", "content": "I live in Rome."},
    ]
    facts = [Outcome(["I am Ana"]), Outcome([]), Outcome(["I live in Rome"])]
    jobs = [job for job in steps.retention_jobs(None, check_messages(messages), facts)
            if job is not None]
    assert [job.items for job in jobs] == [
        ["Assistant: Hi Ana.",
         'Assistant called book_table({"people": 2, "time": "20:00"}) [call_1]'],
        ["Assistant: I can book tables."]]
    assert [job.fields["facts"] for job in jobs] == ['["I am Ana"]', '["I am Ana"]']


def test_the_score_is_the_share_of_assistant_messages_that_retain() -> None:
    judged = Outcome([JudgedItem("Hi Ana.", "yes", "kept"),
                      JudgedItem("Your name?", "no", "asked")])
    later = Outcome([JudgedItem("Ana, here you go.", "yes", "kept")])
    retention = Retention([Outcome(["I am Ana"])], [None, judged, later])
    assert retention.share() == pytest.approx(2 / 3)
    assert retention.details()["facts"] == ["I am Ana"]
    assert Retention([Outcome([])], [None]).share() is None  # nothing to retain


def test_edge_cases_need_no_request(metric) -> None:
    no_user = [{"role": "assistant", "content": "How can I help?"}]
    result = metric.compute(messages=[[], no_user], show_progress=False, use_cache=False)
    assert result["usage"]["calls"] == 0
    assert result["scores"] == [None, None]
    assert all(u["reason"].startswith("nothing to retain") for u in result["unmeasured"])
    refuses_a_malformed_conversation(metric)

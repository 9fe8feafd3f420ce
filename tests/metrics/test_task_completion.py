"""task_completion: the embedded judge end to end (and the cache), the formula on a hand-made
Yes/No answer, the edge cases that need no request, and the input checks."""

from __future__ import annotations

import json

import pytest
from conversation_checks import booking, refuses_a_malformed_conversation
from conversation_checks import run_twice_on_the_embedded_judge as run_twice

from shared.base.types import LabelAnswer, Outcome
from shared.kit.steps.criteria import read_labels

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_embedded_judge_scores_and_the_cache_answers_the_second_run(metric, cache_dir) -> None:
    failed = booking('{"error": "no table free at 20:00"}', "Done! Your table is booked.")
    result = run_twice(metric, "task_completion", cache_dir, messages=[failed])
    details = result["details"][0]
    if result["scores"][0] is not None:  # P(Yes) renormalised over Yes/No
        assert result["scores"][0] == pytest.approx(details["probabilities"]["Yes"])
        assert sum(details["probabilities"].values()) == pytest.approx(1.0)
        assert details["task"] == "Book a table for two at 8 pm."


def test_the_score_is_p_yes_renormalised_over_yes_and_no() -> None:
    answer = LabelAnswer(probabilities={"Yes": 0.6, "No": 0.2}, method="logprobs")
    reading = read_labels(Outcome(answer), "task_completion").value
    assert reading.probabilities["Yes"] == pytest.approx(0.75)
    assert reading.mass == pytest.approx(0.8)


def test_edge_cases_need_no_request(metric) -> None:
    only_user = [{"role": "user", "content": "Book a table for two at 8 pm."}]
    no_user = [{"role": "system", "content": "You book tables."},
               {"role": "assistant", "content": "Booked."}]
    result = metric.compute(messages=[only_user, [], no_user], show_progress=False,
                            use_cache=False)
    assert result["usage"]["calls"] == 0
    assert result["scores"] == [0.0, None, None]
    assert result["details"][0]["note"] == "no assistant turn"
    assert [u["index"] for u in result["unmeasured"]] == [1, 2]
    assert all(u["reason"].startswith("no task") for u in result["unmeasured"])


def test_a_given_task_replaces_the_first_user_message_and_blank_falls_back(metric) -> None:
    done = booking('{"status": "confirmed"}', "Booked for 8 pm.")
    result = metric.compute(messages=[done, json.dumps(done)],
                            task=["Book a table for four.", "  "], dry_run=True,
                            show_progress=False, use_cache=False)
    assert result["dry_run"]["requests"] == 2  # the JSON text of a conversation is read too
    refuses_a_malformed_conversation(metric)

"""conversation_completeness: the embedded judge end to end (and the cache), the formula on
hand-made verdicts, the edge cases that need no request, and the input checks."""

from __future__ import annotations

import pytest
from conversation_checks import refuses_a_malformed_conversation, share_of_yes_verdicts
from conversation_checks import run_twice_on_the_embedded_judge as run_twice

from shared.base.types import Outcome
from shared.kit.steps import ItemVerdicts, JudgedItem

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ASKED = {"role": "user", "content": "Translate 'good morning' into Spanish and German."}


def test_embedded_judge_scores_and_the_cache_answers_the_second_run(metric, cache_dir) -> None:
    conversation = [ASKED, {"role": "assistant", "content": "Spanish: 'buenos días'."}]
    result = run_twice(metric, "conversation_completeness", cache_dir, messages=[conversation])
    yes = share_of_yes_verdicts(result)  # the share of satisfied requests
    if yes:
        assert len(yes) == len(result["details"][0]["intentions"]) >= 1


def test_the_score_is_the_share_of_satisfied_requests() -> None:
    verdicts = [JudgedItem("into Spanish", "yes", "given"),
                JudgedItem("into German", "no", "missing"),
                JudgedItem("and French", "no", "missing")]
    chain = ItemVerdicts(Outcome(["into Spanish", "into German", "and French"]),
                         Outcome(verdicts), "intentions")
    result = chain.scored(chain.yes_share())
    assert result.score == pytest.approx(1 / 3)
    assert result.details["intentions"] == ["into Spanish", "into German", "and French"]


def test_edge_cases_need_no_request(metric) -> None:
    no_reply = [ASKED]
    no_user = [{"role": "assistant", "content": "How can I help?"}]
    result = metric.compute(messages=[no_reply, [], no_user], show_progress=False,
                            use_cache=False)
    assert result["usage"]["calls"] == 0
    assert result["scores"] == [0.0, None, None]
    assert [u["index"] for u in result["unmeasured"]] == [1, 2]
    assert all(u["reason"].startswith("no user message") for u in result["unmeasured"])
    refuses_a_malformed_conversation(metric)

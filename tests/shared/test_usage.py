"""Token usage an answer reports, read through the official ``openai`` SDK from a local server
whose answers the test writes (``tests/judgeserver.py``): a count that is no count never fails
an answer, and makes the cost unknown, never a negative or guessed $0."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from judgeserver import JudgeServer

from shared import JudgeRequest, get_judge, judge_config
from shared.base.types import TokenUsage
from shared.engine.pricing import cost_of

VERDICT = {"type": "object", "properties": {"verdict": {"type": "string",
                                                        "enum": ["yes", "no"]}},
           "required": ["verdict"]}
MODEL = "gpt-4o-mini"  # priced by the registry
ROWS = 20


def usage_of(bad: Any) -> Any:
    """Usage of every answer: 50 + 1 tokens, but the 7th question's is ``bad``."""
    def usage(body: dict[str, Any]) -> Any:
        if "question 7." in body["messages"][-1]["content"]:
            return bad
        return {"prompt_tokens": 50, "completion_tokens": 1, "total_tokens": 51}
    return usage


def run(usage: Any, cache_dir: Path) -> tuple[list[Any], Any]:
    requests = [JudgeRequest(messages=(("user", f"question {i}. Say yes in JSON."),),
                             prompt_id="usage@1") for i in range(ROWS)]
    with JudgeServer(lambda body: '{"verdict": "yes"}', usage=usage) as server:
        judge = get_judge(judge_config(
            provider="openai", base_url=server.url, api_key="sk-test-usage", model=MODEL,
            cache_dir=str(cache_dir), show_progress=False, max_concurrency=8))
        outcomes = judge.structured(requests, VERDICT, max_tokens=16)
    return outcomes, judge


def test_good_usage_is_priced(tmp_path: Path) -> None:
    outcomes, judge = run(usage_of({"prompt_tokens": 50, "completion_tokens": 1}), tmp_path)
    assert all(o.value == {"verdict": "yes"} for o in outcomes)
    assert judge.cost == pytest.approx(cost_of("openai", MODEL, 50 * ROWS, ROWS))


@pytest.mark.parametrize("bad", [
    {"prompt_tokens": "many", "completion_tokens": 1},
    {"prompt_tokens": -5000, "completion_tokens": 1},
    {"prompt_tokens": 50, "completion_tokens": -1},
    {"prompt_tokens": 50.5, "completion_tokens": 1},
    {"prompt_tokens": True, "completion_tokens": 1},
    {"completion_tokens": 1},
    None])
def test_a_count_that_is_no_count_leaves_every_answer_and_an_unknown_cost(
        bad: Any, tmp_path: Path) -> None:
    outcomes, judge = run(usage_of(bad), tmp_path)
    assert [o.value for o in outcomes] == [{"verdict": "yes"}] * ROWS  # none lost
    assert judge.usage.unknown_calls == 1
    assert judge.cost is None  # unknown, never negative, never $0 for what went unreported


def test_token_usage_reported() -> None:
    assert TokenUsage.reported(3, 4, None, 2) == TokenUsage(3, 4, 0, 2)
    assert TokenUsage.reported(3.0, 4).known
    for bad in ("3", -1, 1.5, False, None, float("nan"), [3]):
        assert not TokenUsage.reported(bad, 4).known
        assert not TokenUsage.reported(3, 4, bad if bad is not None else "x").known

"""Capabilities per model, where a provider's models differ: OpenAI's reasoning models (o1, o3,
o4, gpt-5 families) return no log-probabilities, so l3score on one is refused before any
request, in one line (exit 2 in the CLI); older models take no JSON-schema answers. Checked
against a local OpenAI-compatible server that counts the requests it gets, the official
``openai`` SDK as the client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import evaluate
import pytest
from judgeserver import JudgeServer

from shared import JudgeRequest, get_judge, judge_config
from shared.engine.backends.registry import PROVIDERS
from shared.kit.registry import metric_path

REPO = Path(__file__).resolve().parents[2]
INPUTS = {"questions": ["What is the capital of France?"], "predictions": ["Paris"],
          "references": ["Paris"]}


def _yes(body: dict) -> str:
    return "Yes"


def _top(body: dict) -> list[tuple[str, float]]:
    return [("Yes", -0.05), ("No", -3.0)]


# What OpenAI documents for each model (its models pages): the reasoning families return no
# log-probabilities; Structured Outputs (json_schema) start with gpt-4o-2024-08-06 and
# gpt-4o-mini; gpt-4-turbo and gpt-3.5-turbo have JSON mode only; gpt-4 has neither.
@pytest.mark.parametrize(("model", "logprobs", "structured"), [
    ("gpt-4o-mini", True, "json_schema"), ("gpt-4o", True, "json_schema"),
    ("gpt-4.1-nano", True, "json_schema"), ("gpt-4o-mini-2024-07-18", True, "json_schema"),
    ("o1", False, "json_schema"), ("o3-mini", False, "json_schema"),
    ("o4-mini-2025-04-16", False, "json_schema"), ("gpt-5", False, "json_schema"),
    ("gpt-5-nano", False, "json_schema"), ("gpt-5.1", False, "json_schema"),
    ("gpt-4-turbo", True, "json_object_plain"), ("gpt-3.5-turbo-0125", True, "json_object_plain"),
    ("gpt-4", True, None), ("gpt-4-0613", True, None),
])
def test_openai_models_have_their_own_capabilities(model: str, logprobs: bool,
                                                   structured: str | None) -> None:
    config = judge_config(provider="openai", model=model, api_key="k")
    assert config.capabilities().logprobs is logprobs
    assert (config.capabilities().top_logprobs >= 5) is logprobs
    assert config.resolved_response_format() == structured
    # the provider-wide entry is unchanged: the cards' tables still say what OpenAI can do
    assert PROVIDERS["openai"].capabilities.logprobs


def test_l3score_on_a_reasoning_model_is_refused_before_any_request() -> None:
    l3score = evaluate.load(metric_path("l3score"))
    with JudgeServer(_yes, top_logprobs=_top) as server:
        common = {"provider": "openai", "base_url": server.url, "api_key": "k",
                  "use_cache": False, "show_progress": False}
        with pytest.raises(ValueError) as refused:
            l3score.compute(**INPUTS, model="o3-mini", **common)
        assert server.seen == []
        message = str(refused.value)
        assert "\n" not in message and "'o3-mini'" in message, message
        assert "top-5 log-probabilities" in message and "reasoning models" in message
        # the same server and SDK on a model that has them: one request, scored (the count bites)
        done = l3score.compute(**INPUTS, model="gpt-4o-mini", **common)
        assert done["unmeasured"] == [] and len(server.seen) == 1
        assert server.seen[0]["logprobs"] is True and server.seen[0]["model"] == "gpt-4o-mini"


def test_the_cli_refuses_it_with_exit_2_and_one_line(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"question": "q?", "prediction": "a", "reference": "a"}) + "\n",
                    encoding="utf-8")
    out = tmp_path / "out.jsonl"
    with JudgeServer(_yes, top_logprobs=_top) as server:
        done = subprocess.run(
            [sys.executable, "-m", "judge_metrics", "score", str(rows), "--metric", "l3score",
             "--provider", "openai", "--model", "gpt-5-mini", "--base-url", server.url,
             "--api-key", "sk-secret-value", "--out", str(out), "--quiet"],
            cwd=REPO, capture_output=True, text=True, timeout=300,
            env={**os.environ, "PYTHONPATH": str(REPO)})
        assert server.seen == []
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and "'gpt-5-mini'" in errors[0], done.stderr
    assert "l3score needs the judge's top-5 log-probabilities" in errors[0]
    assert "sk-secret-value" not in done.stderr + done.stdout and not out.exists()


def test_a_reasoning_model_writes_its_label_at_once() -> None:
    """Label requests to a model without log-probabilities ask for a short written answer from
    the first request, instead of asking for log-probabilities and failing first."""
    with JudgeServer(lambda body: "2") as server:
        judge = get_judge(judge_config(provider="openai", model="o4-mini", api_key="k",
                                       base_url=server.url, use_cache=False,
                                       show_progress=False))
        request = JudgeRequest(messages=(("user", "Rate 1-3."),),
                               prompt_id="test@1")
        outcome = judge.label_probabilities([request], ["1", "2", "3"])[0]
    assert outcome.ok and outcome.value.probabilities["2"] == 1.0, outcome
    assert len(server.seen) == 1 and "logprobs" not in server.seen[0]

"""The converters on objects of the real packages. inspect_ai's pins clash with ours (fsspec,
boto3), so it lives in .venv-integrations, the integrations' venv that sees .venv's packages
through a .pth file (the Makefile's set-up builds it from requirements-integrations.txt): a
script there builds inspect_ai's own messages, converts them with ours (this repository on its
path) and prints the result, which must be the conversation test_conversations.py's
hand-built objects of the same shape give.

RAGAS and DeepEval live in the agreement benchmark's .venv-agreement (their pins clash with
ours too; the test set-up builds it as `make agreement` does): a script there builds their own
objects (ragas.MultiTurnSample, deepeval's ConversationalTestCase and LLMTestCase) and converts
them with ours."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from shared import check_messages

REPO = Path(__file__).resolve().parents[2]
INSPECT_PYTHON = REPO / ".venv-integrations" / "bin" / "python"
PEERS_PYTHON = REPO / ".venv-agreement" / "bin" / "python"

SCRIPT = """
import json
from inspect_ai.model import (ChatMessageAssistant, ChatMessageSystem, ChatMessageTool,
                              ChatMessageUser, ContentReasoning, ContentText)
from inspect_ai.tool import ToolCall, ToolCallError
from shared.kit.conversations import from_inspect

call = ToolCall(id="call_1", function="get_weather", arguments={"city": "Paris", "unit": "c"})
messages = [
    ChatMessageSystem(content="You are a travel agent."),
    ChatMessageUser(content=[ContentText(text="What is the weather in Paris?")]),
    ChatMessageAssistant(content=[ContentReasoning(reasoning="Ask the weather tool."),
                                  ContentText(text="")], tool_calls=[call]),
    ChatMessageTool(content="18 degrees, sunny", tool_call_id="call_1", function="get_weather"),
    ChatMessageAssistant(content="It is 18 degrees and sunny in Paris."),
]
failed = ChatMessageTool(content="", tool_call_id="call_1", function="get_weather",
                         error=ToolCallError(type="timeout", message="timed out"))
print(json.dumps([from_inspect(messages), from_inspect([messages[2], failed])]))
"""


def _run(python: Path, script: str) -> Any:
    """What ``script`` prints (JSON), run by ``python`` with this repository on its path."""
    if not python.exists():
        pytest.fail(f"{python} is missing: run `make setup-test`")
    env = {**os.environ, "PYTHONPATH": str(REPO), "DEEPEVAL_TELEMETRY_OPT_OUT": "YES"}
    done = subprocess.run([str(python), "-c", script], capture_output=True, text=True,
                          env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_from_inspect_on_inspect_ai_s_own_messages() -> None:
    converted, failed = _run(INSPECT_PYTHON, SCRIPT)
    expected = check_messages([
        {"role": "system", "content": "You are a travel agent."},
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "18 degrees, sunny"},
        {"role": "assistant", "content": "It is 18 degrees and sunny in Paris."},
    ])
    assert converted == expected  # the reasoning part is left out of the text
    assert failed[1] == {"role": "tool", "content": "Error: timed out", "tool_call_id": "call_1"}


PEERS_SCRIPT = """
import json
from deepeval.test_case import ConversationalTestCase, LLMTestCase, ToolCall, Turn
from ragas.dataset_schema import MultiTurnSample
from ragas.messages import AIMessage, HumanMessage, ToolMessage
from ragas.messages import ToolCall as RagasToolCall
from shared.kit.conversations import calls_from_deepeval, from_deepeval, from_ragas

sample = MultiTurnSample(user_input=[
    HumanMessage(content="Weather in Paris and Rome?"),
    AIMessage(content="", tool_calls=[RagasToolCall(name="get_weather", args={"city": "Paris"}),
                                      RagasToolCall(name="get_weather", args={"city": "Rome"})]),
    ToolMessage(content="18 degrees"), ToolMessage(content="25 degrees"),
    AIMessage(content="Paris 18, Rome 25."),
])
case = ConversationalTestCase(turns=[
    Turn(role="user", content="What is the weather in Paris?"),
    Turn(role="assistant", content="It is 18 degrees and sunny in Paris.", tools_called=[
        ToolCall(name="get_weather", input_parameters={"city": "Paris"}, output="sunny")]),
])
single = LLMTestCase(input="Weather in Paris?", actual_output="Sunny.",
                     tools_called=[ToolCall(name="get_weather", input_parameters={"city": "Paris"},
                                            output={"sky": "sunny"})],
                     expected_tools=[ToolCall(name="get_weather",
                                              input_parameters={"city": "Paris"})])
print(json.dumps([from_ragas(sample), from_ragas(sample.user_input), from_deepeval(case),
                  from_deepeval(single), calls_from_deepeval(single.expected_tools)]))
"""


def _call(call_id: str, city: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": "get_weather", "arguments": {"city": city}}}


def test_from_ragas_and_from_deepeval_on_their_own_objects() -> None:
    ragas, ragas_messages, conversation, single, expected_tools = _run(PEERS_PYTHON, PEERS_SCRIPT)
    assert ragas == ragas_messages == check_messages([
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {"role": "assistant", "content": "",
         "tool_calls": [_call("call_1_0", "Paris"), _call("call_1_1", "Rome")]},
        {"role": "tool", "tool_call_id": "call_1_0", "content": "18 degrees"},
        {"role": "tool", "tool_call_id": "call_1_1", "content": "25 degrees"},
        {"role": "assistant", "content": "Paris 18, Rome 25."},
    ])
    # a turn's tools come before its text: the call, its result, then what the assistant said
    assert conversation == check_messages([
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [_call("call_1_0", "Paris")]},
        {"role": "tool", "tool_call_id": "call_1_0", "content": "sunny"},
        {"role": "assistant", "content": "It is 18 degrees and sunny in Paris."},
    ])
    assert [m["role"] for m in single] == ["user", "assistant", "tool", "assistant"]
    assert json.loads(single[2]["content"]) == {"sky": "sunny"}
    assert expected_tools == [{"name": "get_weather", "arguments": {"city": "Paris"}}]


DEEPEVAL_TOOLS_SCRIPT = """
import json
from deepeval.metrics import ToolCorrectnessMetric
from deepeval.test_case import LLMTestCase, ToolCall

# DeepEval's documented recipe: expected_tools by name only, the calls made with parameters
cases = [
    LLMTestCase(input="What if these shoes don't fit?", actual_output="A 30-day refund.",
                tools_called=[ToolCall(name="WebSearch", input_parameters={"query": "refund"})],
                expected_tools=[ToolCall(name="WebSearch")]),
    LLMTestCase(input="What if these shoes don't fit?", actual_output="A 30-day refund.",
                tools_called=[ToolCall(name="Calculator", input_parameters={"x": 1})],
                expected_tools=[ToolCall(name="WebSearch")]),
]
found = []
for case in cases:  # deterministic: no reason asked, so its model is never called
    metric = ToolCorrectnessMetric(include_reason=False, async_mode=False)
    found.append([metric.measure(case),
                  *([{"name": c.name, "input_parameters": c.input_parameters} for c in calls]
                    for calls in (case.tools_called, case.expected_tools))])
print(json.dumps(found))
"""


def test_deepeval_names_only_expectations_score_as_deepeval_scores_them() -> None:
    """calls_from_deepeval turns DeepEval's names-only expected_tools into name-only calls:
    tool_call_correctness then gives DeepEval's ToolCorrectnessMetric's score on its recipe
    (DeepEval's calls as it holds them, converted here)."""
    from types import SimpleNamespace

    import evaluate

    from shared.kit.conversations import calls_from_deepeval
    from shared.kit.registry import metric_path

    metric = evaluate.load(metric_path("tool_call_correctness"))
    with pytest.MonkeyPatch.context() as patch:  # DeepEval builds its model at construction
        patch.setenv("OPENAI_API_KEY", "sk-never-sent-0000")
        found = _run(PEERS_PYTHON, DEEPEVAL_TOOLS_SCRIPT)
    for deepeval_score, made, expected in found:
        made, expected = ([SimpleNamespace(**c) for c in calls] for calls in (made, expected))
        ours = metric.compute(tool_calls=[calls_from_deepeval(made)],
                              expected_tool_calls=[calls_from_deepeval(expected)])["scores"][0]
        assert ours == deepeval_score
    assert [row[0] for row in found] == [1.0, 0.0]


"""The converters on objects of the real packages. inspect_ai's pins clash with ours (fsspec,
boto3), so it lives in .venv-integrations, the integrations' venv that sees .venv's packages
through a .pth file (the Makefile's set-up builds it from requirements-integrations.txt): a
script there builds inspect_ai's own messages, converts them with ours (this repository on its
path) and prints the result, which must be the conversation test_conversations.py's
hand-built objects of the same shape give.

RAGAS and DeepEval live in the agreement benchmark's .venv-agreement (`make agreement`), too
heavy a set-up for the test suite: their converters are tested on objects of their documented
shape (test_conversations.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from shared import check_messages

REPO = Path(__file__).resolve().parents[2]
INSPECT_PYTHON = REPO / ".venv-integrations" / "bin" / "python"

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


def test_from_inspect_on_inspect_ai_s_own_messages() -> None:
    if not INSPECT_PYTHON.exists():
        pytest.fail(f"{INSPECT_PYTHON} is missing: run `make setup-test`")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([str(INSPECT_PYTHON), "-c", SCRIPT], capture_output=True, text=True,
                          env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    converted, failed = json.loads(done.stdout)
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

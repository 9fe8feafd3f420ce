"""One conversation format: OpenAI's chat messages checked and normalised, refused in one line
naming the argument, the sample and the message; the turns, the calls made and the transcript;
the converters from inspect_ai, RAGAS and DeepEval against objects of their documented shapes
(tests/shared/test_conversation_packages.py runs them on the real packages)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, make_dataclass
from typing import Any

import pytest

from shared import (
    InputError,
    check_messages,
    conversations,
    from_deepeval,
    from_inspect,
    from_ragas,
)

WEATHER = [
    {"role": "system", "content": "You are a travel agent."},
    {"role": "user", "content": "What is the weather in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Paris", "unit": "c"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "18 degrees, sunny"},
    {"role": "assistant", "content": "It is 18 degrees and sunny in Paris."},
]


def test_a_conversation_is_normalised() -> None:
    checked = check_messages(WEATHER)
    assert [m["role"] for m in checked] == ["system", "user", "assistant", "tool", "assistant"]
    call = checked[2]["tool_calls"][0]
    assert call == {"id": "call_1", "type": "function",
                    "function": {"name": "get_weather",
                                 "arguments": {"city": "Paris", "unit": "c"}}}
    assert checked[2]["content"] is None and checked[3]["tool_call_id"] == "call_1"
    # its JSON text, and arguments given as a dict, read the same
    as_dict = json.loads(json.dumps(WEATHER))
    as_dict[2]["tool_calls"][0]["function"]["arguments"] = {"city": "Paris", "unit": "c"}
    assert check_messages(json.dumps(WEATHER)) == checked == check_messages(as_dict)
    # the input is not changed
    assert WEATHER[2]["tool_calls"][0]["function"]["arguments"].startswith("{")


def test_content_parts_and_plain_calls_are_read() -> None:
    checked = check_messages([
        {"role": "user", "content": [{"type": "text", "text": "Look:"},
                                     {"type": "image_url", "image_url": {"url": "x"}}]},
        {"role": "assistant", "content": "", "tool_calls": [{"name": "f", "arguments": {}}]},
        {"role": "tool", "tool_call_id": "call_1_0", "content": None},
    ])
    assert checked[0]["content"] == "Look:\n[image_url]"
    assert checked[1]["tool_calls"][0]["id"] == "call_1_0"  # a call without id gets one
    assert checked[2]["content"] == ""


@pytest.mark.parametrize(("messages", "where", "reason"), [
    ([{"role": "bot", "content": "hi"}], "messages[7][0]", "role 'bot'"),
    ([{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "x", "content": "1"}],
     "messages[7][1]", "tool_call_id 'x' matches no earlier tool call"),
    ([{"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{city: 1}"}}]}],
     "messages[7][0]", "call 'f': arguments are not valid JSON"),
    ([{"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "function": {"name": "f", "arguments": "[1]"}}]}],
     "messages[7][0]", "arguments must be a JSON object"),
    ([{"role": "user", "content": None}], "messages[7][0]", "user message without content"),
    ([{"role": "user", "content": "x", "tool_calls": [{"name": "f"}]}], "messages[7][0]",
     "only an assistant message calls tools"),
    ('[{"role": "user"', "messages[7]", "is not valid JSON messages"),
    ({"role": "user", "content": "x"}, "messages[7]", "must be a list of messages"),
    (["hello"], "messages[7][0]", "must be a message"),
    ([{"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "function": {"name": "f"}}, {"id": "a", "function": {"name": "g"}}]}],
     "messages[7][0]", "repeats the tool call id 'a'"),
])
def test_a_malformed_conversation_is_refused_naming_where(messages: Any, where: str,
                                                           reason: str) -> None:
    with pytest.raises(InputError) as error:
        check_messages(messages, index=7)
    assert str(error.value).startswith(where + " ") and reason in str(error.value)
    assert error.value.argument == "messages" and error.value.sample == 7
    assert "\n" not in str(error.value)


def test_turns_calls_and_transcript() -> None:
    checked = check_messages(WEATHER)
    assert conversations.user_turns(checked) == [(1, "What is the weather in Paris?")]
    assert conversations.assistant_turns(checked) == [(4, "It is 18 degrees and sunny in Paris.")]
    assert conversations.tool_calls_made(checked) == [
        {"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}]
    assert conversations.render(checked).splitlines() == [
        "System: You are a travel agent.",
        "User: What is the weather in Paris?",
        'Assistant called get_weather({"city": "Paris", "unit": "c"}) [call_1]',
        "Tool result of get_weather [call_1]: 18 degrees, sunny",
        "Assistant: It is 18 degrees and sunny in Paris.",
    ]


def test_check_calls_reads_both_forms() -> None:
    calls = conversations.check_calls(
        '[{"name": "f", "arguments": "{\\"x\\": 1}"},'
        ' {"type": "function", "function": {"name": "g", "arguments": {"y": [1, 2]}}}]')
    assert calls == [{"id": None, "name": "f", "arguments": {"x": 1}},
                     {"id": None, "name": "g", "arguments": {"y": [1, 2]}}]
    with pytest.raises(InputError, match=r"^tool_calls\[2\]\[1\] is a tool call without a name"):
        conversations.check_calls([{"name": "f"}, {"arguments": {}}], index=2)


# --- the documented shapes of the other packages, built by hand ---------------------------

@dataclass
class InspectToolCall:  # inspect_ai.tool.ToolCall
    id: str
    function: str
    arguments: dict[str, Any]


def text_part(name: str, text_field: str, kind: str) -> type:
    """A stand-in holding one text field and a ``type`` tag defaulting to ``kind``: the shape
    of inspect_ai's ContentText and of ragas's HumanMessage and ToolMessage."""
    return make_dataclass(name, [(text_field, str), ("type", str, field(default=kind))])


InspectContentText = text_part("InspectContentText", "text", "text")  # inspect_ai.model


@dataclass
class InspectMessage:  # inspect_ai.model.ChatMessageSystem/User/Assistant/Tool
    role: str
    content: Any
    tool_calls: list[InspectToolCall] | None = None
    tool_call_id: str | None = None
    error: Any = None


@dataclass
class InspectError:  # inspect_ai.tool.ToolCallError
    type: str
    message: str


def test_from_inspect() -> None:
    messages = [
        InspectMessage("system", "You are a travel agent."),
        InspectMessage("user", [InspectContentText("What is the weather in Paris?")]),
        InspectMessage("assistant", "", tool_calls=[
            InspectToolCall("call_1", "get_weather", {"city": "Paris", "unit": "c"})]),
        InspectMessage("tool", "18 degrees, sunny", tool_call_id="call_1"),
        InspectMessage("assistant", "It is 18 degrees and sunny in Paris."),
    ]
    converted = from_inspect(messages)
    expected = check_messages(WEATHER)
    expected[2]["content"] = ""
    assert converted == expected
    failed = from_inspect([messages[2], InspectMessage("tool", "", tool_call_id="call_1",
                                                       error=InspectError("timeout", "timed out"))])
    assert failed[1]["content"] == "Error: timed out"


@dataclass
class RagasToolCall:  # ragas.messages.ToolCall
    name: str
    args: dict[str, Any]


HumanMessage = text_part("HumanMessage", "content", "human")  # ragas.messages


@dataclass
class AIMessage:  # ragas.messages.AIMessage
    content: str
    tool_calls: list[RagasToolCall] | None = None
    type: str = "ai"


ToolMessage = text_part("ToolMessage", "content", "tool")  # ragas.messages


@dataclass
class MultiTurnSample:  # ragas.MultiTurnSample
    user_input: list[Any]
    reference_tool_calls: list[RagasToolCall] = field(default_factory=list)


def test_from_ragas_answers_each_call_in_order() -> None:
    sample = MultiTurnSample([
        HumanMessage("Weather in Paris and Rome?"),
        AIMessage("", [RagasToolCall("get_weather", {"city": "Paris"}),
                       RagasToolCall("get_weather", {"city": "Rome"})]),
        ToolMessage("18 degrees"), ToolMessage("25 degrees"),
        AIMessage("Paris 18, Rome 25."),
    ])
    converted = from_ragas(sample)
    assert converted == from_ragas(sample.user_input)
    ids = [c["id"] for c in converted[1]["tool_calls"]]
    assert [m.get("tool_call_id") for m in converted[2:4]] == ids and len(set(ids)) == 2
    assert conversations.tool_calls_made(converted)[1]["arguments"] == {"city": "Rome"}
    assert "tool_calls" not in converted[-1] or converted[-1]["tool_calls"] == []
    with pytest.raises(InputError, match="matches no earlier tool call"):
        from_ragas([HumanMessage("hi"), ToolMessage("stray result")])


@dataclass
class DeepEvalToolCall:  # deepeval.test_case.ToolCall
    name: str
    input_parameters: dict[str, Any] | None = None
    output: Any = None


@dataclass
class Turn:  # deepeval.test_case.Turn
    role: str
    content: str
    tools_called: list[DeepEvalToolCall] | None = None


@dataclass
class ConversationalTestCase:  # deepeval.test_case.ConversationalTestCase
    turns: list[Turn]


@dataclass
class LLMTestCase:  # deepeval.test_case.LLMTestCase
    input: str
    actual_output: str | None = None
    tools_called: list[DeepEvalToolCall] | None = None
    expected_tools: list[DeepEvalToolCall] | None = None


def test_from_deepeval() -> None:
    case = ConversationalTestCase([
        Turn("user", "What is the weather in Paris?"),
        Turn("assistant", "It is 18 degrees and sunny in Paris.", tools_called=[
            DeepEvalToolCall("get_weather", {"city": "Paris", "unit": "c"}, "18 degrees, sunny")]),
    ])
    converted = from_deepeval(case)
    expected = check_messages(WEATHER[1:])
    expected[1]["tool_calls"][0]["id"] = expected[2]["tool_call_id"] = "call_1_0"
    assert converted == expected
    single = LLMTestCase("Weather in Paris?", "Sunny.", tools_called=[
        DeepEvalToolCall("get_weather", {"city": "Paris"}, {"sky": "sunny"})],
        expected_tools=[DeepEvalToolCall("get_weather", {"city": "Paris"})])
    converted = from_deepeval(single)
    assert [m["role"] for m in converted] == ["user", "assistant", "tool", "assistant"]
    assert json.loads(converted[2]["content"]) == {"sky": "sunny"}
    assert conversations.calls_from_deepeval(single.expected_tools) == [
        {"name": "get_weather", "arguments": {"city": "Paris"}}]

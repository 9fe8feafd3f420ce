"""shared.traces.read on traces written by the real instrumentations of the openai client
(opentelemetry-instrumentation-openai-v2 in its event, span and event-details forms;
openinference-instrumentation-openai), content capture on and off, with tool calls and a RAG
prompt: every row checked against what the app sent and the model answered; and ATIF."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fakes.chat_model import WEATHER
from trace_files import CAPTURED, MODES, NOT_CAPTURED, canonical, make_trace_file
from traces_app import DOCUMENTS

import shared.traces as traces
from shared.base.errors import UserInputError


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, list]]:
    folder = tmp_path_factory.mktemp("traces")
    return {mode: make_trace_file(mode, folder) for mode in MODES}


@pytest.mark.parametrize("mode", CAPTURED)
def test_each_llm_span_is_a_row_of_what_was_sent_and_answered(files, mode):
    path, exchanges = files[mode]
    rows = traces.read(path)
    assert len(rows) == len(exchanges) == 4  # the tool and retriever spans give no row
    for row, (body, reply) in zip(rows, exchanges, strict=True):
        assert canonical(row["messages"]) == canonical(body["messages"] + [reply])
        user = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        assert row["question"] == user
        assert row["prediction"] == (reply["content"] or "")
        assert row["model"] == "fake-model" and row["content_captured"] is True
        assert row["input_tokens"] == 10 * len(body["messages"]) and row["output_tokens"] == 7
        assert re.fullmatch("[0-9a-f]{16}", row["span_id"])
        assert re.fullmatch("[0-9a-f]{32}", row["trace_id"])
        assert row["duration_ms"] > 0 and row["start_time"] < row["end_time"]
    plain, call, answer, rag = rows
    assert plain["messages"][0] == {"role": "system", "content": "Answer in one sentence."}
    assert call["prediction"] == "" and call["messages"][-1]["tool_calls"][0]["function"][
        "name"] == "get_weather"
    assert answer["prediction"] == WEATHER and call["trace_id"] == answer["trace_id"]
    assert answer["messages"][2] == {"role": "tool", "content": "sunny, 21 C",
                                     "tool_call_id": "call_weather_1"}
    assert rag["contexts"] == DOCUMENTS  # from the retriever span before it
    assert all("contexts" not in row for row in (plain, call, answer))


@pytest.mark.parametrize("mode", NOT_CAPTURED)
def test_a_span_without_captured_content_still_gives_a_row(files, mode):
    path, exchanges = files[mode]
    rows = traces.read(path, format="otlp-json")
    assert len(rows) == len(exchanges) == 4
    for row, (body, _) in zip(rows, exchanges, strict=True):
        assert row["content_captured"] is False
        assert row["messages"] is row["question"] is row["prediction"] is None
        assert row["input_tokens"] == 10 * len(body["messages"])
        assert row["model"] == "fake-model"


def test_the_event_form_reads_log_records_mixed_among_span_lines(files):
    path, _ = files["genai-events"]
    kinds = [next(iter(json.loads(line))) for line in path.read_text().splitlines()]
    assert "resourceLogs" in kinds and "resourceSpans" in kinds
    first_span = kinds.index("resourceSpans")
    assert "resourceLogs" in kinds[:first_span]  # the logs come before their span ends


def test_conversations_one_row_each(files):
    path, exchanges = files["openinference"]
    rows = traces.read(path, by="conversation")
    weather = [r for r in rows if r["conversation_id"] == "conversation-weather"]
    assert len(rows) == 3 and len(weather) == 1
    body, reply = exchanges[2]
    assert canonical(weather[0]["messages"]) == canonical(body["messages"] + [reply])
    assert weather[0]["spans"] == 2 and weather[0]["prediction"] == WEATHER
    spans = traces.read(path)
    assert weather[0]["span_id"] == spans[2]["span_id"]  # where its scores are written back
    assert weather[0]["input_tokens"] == spans[1]["input_tokens"] + spans[2]["input_tokens"]
    genai = traces.read(files["genai-span"][0], by="conversation")
    assert len(genai) == 3  # no conversation id: one conversation per trace


def test_atif_trajectory_rows(tmp_path):
    trajectory = {
        "schema_version": "ATIF-v1.7", "session_id": "session-1",
        "agent": {"name": "agent", "version": "1", "model_name": "model-a"},
        "steps": [
            {"step_id": 1, "source": "system", "message": "Be brief."},
            {"step_id": 2, "source": "user", "message": "Price of GOOGL?"},
            {"step_id": 3, "source": "agent", "message": "Searching.",
             "timestamp": "2026-10-11T10:30:02Z",
             "tool_calls": [{"tool_call_id": "c1", "function_name": "search",
                             "arguments": {"ticker": "GOOGL"}}],
             "observation": {"results": [{"source_call_id": "c1", "content": "$185.35"}]},
             "metrics": {"prompt_tokens": 520, "completion_tokens": 80}},
            {"step_id": 4, "source": "agent", "model_name": "model-b",
             "message": [{"type": "text", "text": "GOOGL trades at $185.35."}]},
        ]}
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(trajectory))
    rows = traces.read(path)
    assert [r["span_id"] for r in rows] == ["3", "4"]
    first, second = rows
    assert first["trace_id"] == "session-1" and first["model"] == "model-a"
    assert first["question"] == "Price of GOOGL?" and first["prediction"] == "Searching."
    assert (first["input_tokens"], first["output_tokens"]) == (520, 80)
    assert first["start_time"] == "2026-10-11T10:30:02Z"
    assert canonical(second["messages"]) == [
        ("system", "Be brief.", (), None), ("user", "Price of GOOGL?", (), None),
        ("assistant", "Searching.", (("c1", "search", {"ticker": "GOOGL"}),), None),
        ("tool", "$185.35", (), "c1"), ("assistant", "GOOGL trades at $185.35.", (), None)]
    assert second["model"] == "model-b"
    whole = traces.read(path, format="atif", by="conversation")
    assert len(whole) == 1 and canonical(whole[0]["messages"]) == canonical(second["messages"])


def test_refusals_name_the_file(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"something": 1}\n')
    with pytest.raises(UserInputError, match="neither resourceSpans nor resourceLogs"):
        traces.read(bad)
    with pytest.raises(UserInputError, match="unknown trace format"):
        traces.read(bad, format="otlp-proto")
    with pytest.raises(UserInputError, match="no such trace file"):
        traces.read(tmp_path / "missing.jsonl")
    with pytest.raises(UserInputError, match="is not ATIF"):
        traces.read(bad, format="atif")


def _kv(**values: object) -> dict:
    def value(v: object) -> dict:
        if isinstance(v, dict):
            return {"kvlistValue": {"values": [{"key": k, "value": value(x)}
                                               for k, x in v.items()]}}
        if isinstance(v, list):
            return {"arrayValue": {"values": [value(x) for x in v]}}
        if isinstance(v, int):
            return {"intValue": str(v)}
        return {"stringValue": v}

    return [{"key": k.replace("__", "."), "value": value(v)} for k, v in values.items()]


def test_structured_genai_attributes_and_a_span_s_own_documents(tmp_path):
    """The JSON form written as structured values (as a Collector may pass them on), system
    instructions, a conversation id, capital hex ids; an OpenInference LLM span with its own
    retrieval documents and multi-part content; an agent span gives no row."""
    genai = {"traceId": "0AF7651916CD43DD8448EB211C80319C", "spanId": "B7AD6B7169203331",
             "name": "chat m", "startTimeUnixNano": "1700000000000000000",
             "endTimeUnixNano": "1700000001500000000", "attributes": [
                 *_kv(**{"gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                         "gen_ai.conversation.id": "c-1", "gen_ai.usage.input_tokens": 12}),
                 *_kv(**{"gen_ai.system_instructions": [{"type": "text",
                                                         "content": "Be kind."}],
                         "gen_ai.input.messages": [{"role": "user", "parts": [
                             {"type": "text", "content": "Hi"},
                             {"type": "text", "content": "there"}]}]}),
                 {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps(
                     [{"role": "assistant", "parts": [{"type": "text", "content": "Hello!"}],
                       "finish_reason": "stop"}])}}]}
    agent = {"traceId": genai["traceId"], "spanId": "00000000000000a1", "name": "agent",
             "attributes": _kv(**{"gen_ai.operation.name": "invoke_agent"})}
    oi = {"traceId": "1" * 32, "spanId": "2" * 16, "name": "llm",
          "startTimeUnixNano": "1700000002000000000", "attributes": _kv(**{
        "openinference.span.kind": "LLM", "llm.model_name": "m2",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.contents.0.message_content.text": "Where is it?",
        "llm.input_messages.0.message.contents.1.message_content.type": "image",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "In Paris.",
        "retrieval.documents.0.document.content": "It is in Paris."})}
    path = tmp_path / "handmade.jsonl"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [
        {"spans": [genai, agent, oi]}]}]}) + "\n")
    first, second = traces.read(path)
    assert first["trace_id"] == "0af7651916cd43dd8448eb211c80319c"
    assert first["span_id"] == "b7ad6b7169203331" and first["conversation_id"] == "c-1"
    assert first["messages"] == [{"role": "system", "content": "Be kind."},
                                 {"role": "user", "content": "Hi\nthere"},
                                 {"role": "assistant", "content": "Hello!"}]
    assert (first["question"], first["prediction"]) == ("Hi\nthere", "Hello!")
    assert first["duration_ms"] == 1500.0 and first["input_tokens"] == 12
    assert first["start_time"] == "2023-11-14T22:13:20Z"
    assert second["question"] == "Where is it?" and second["contexts"] == ["It is in Paris."]
    assert second["model"] == "m2" and second["output_tokens"] is None


def test_atif_v1_7_copied_context_steps_without_llm_calls_and_subagents(tmp_path):
    child = {"schema_version": "ATIF-v1.7", "trajectory_id": "child-1",
             "agent": {"name": "sub", "version": "1"},
             "steps": [{"step_id": 1, "source": "user", "message": "Look it up."},
                       {"step_id": 2, "source": "agent", "message": "Found it."}]}
    trajectory = {
        "schema_version": "ATIF-v1.7", "session_id": "s-7",
        "agent": {"name": "agent", "version": "1"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "Earlier question?",
             "is_copied_context": True},
            {"step_id": 2, "source": "agent", "message": "Earlier answer.",
             "is_copied_context": True},
            {"step_id": 3, "source": "user", "message": "Run the tool."},
            {"step_id": 4, "source": "agent", "message": "", "llm_call_count": 0,
             "tool_calls": [{"tool_call_id": "t1", "function_name": "run", "arguments": {}}],
             "observation": {"results": [{"source_call_id": "t1", "content": [
                 {"type": "text", "text": "done"}, {"type": "image"}]}]}},
            {"step_id": 5, "source": "agent", "message": "It ran."}],
        "subagent_trajectories": [child]}
    path = tmp_path / "v17.json"
    path.write_text(json.dumps(trajectory))
    rows = traces.read(path)
    assert [(r["trace_id"], r["span_id"]) for r in rows] == [("s-7", "5"), ("child-1", "2")]
    assert [r["conversation_id"] for r in rows] == ["s-7", "s-7"]  # the parent's session
    assert canonical(rows[0]["messages"]) == [
        ("user", "Earlier question?", (), None), ("assistant", "Earlier answer.", (), None),
        ("user", "Run the tool.", (), None), ("assistant", "", (("t1", "run", {}),), None),
        ("tool", "done", (), "t1"), ("assistant", "It ran.", (), None)]
    assert rows[1]["question"] == "Look it up." and rows[1]["prediction"] == "Found it."


def test_proto_field_names_read_as_json_names(files, tmp_path):
    """proto3's JSON mapping accepts a field's proto name too (``resource_spans``,
    ``trace_id``, ``string_value``), as some writers use them: the same rows."""
    def snake(value: object) -> object:
        if isinstance(value, dict):
            return {re.sub(r"(?<!^)([A-Z])", r"_\1", k).lower(): snake(v)
                    for k, v in value.items()}
        if isinstance(value, list):
            return [snake(v) for v in value]
        return value

    path, _ = files["genai-events"]
    converted = tmp_path / "snake.jsonl"
    converted.write_text("".join(json.dumps(snake(json.loads(line))) + "\n"
                                 for line in path.read_text().splitlines()))
    assert '"trace_id"' in converted.read_text() and '"traceId"' not in converted.read_text()
    assert traces.read(converted) == traces.read(path)


def test_a_folder_of_rotated_files_reads_as_one(files, tmp_path):
    """The spans in one file, their log records in another: joined all the same."""
    path, _ = files["genai-events"]
    lines = path.read_text().splitlines()
    folder = tmp_path / "collector"
    folder.mkdir()
    (folder / "traces-1.jsonl").write_text("".join(
        line + "\n" for line in lines if '"resourceLogs"' in line))
    (folder / "traces-2.jsonl").write_text("".join(
        line + "\n" for line in lines if '"resourceSpans"' in line))
    (folder / "notes.txt").write_text("not read")
    assert traces.read(folder) == traces.read(path)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UserInputError, match="without .json or .jsonl files"):
        traces.read(empty)

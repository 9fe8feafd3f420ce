"""Tool calls and conversations under a hostile tester: a possible answer that is not
BFCL's form is refused in one line (never a crash, never a string iterated into a pass);
arguments nested thousands deep, repeated JSON keys and NaN refused; Parquet and Dataset
columns read with absent keys absent; DeepEval's names-only expectations matched by name;
OpenAI's developer role; generated call ids that cannot collide; a BFCL tool named
``function``; the RAGAS and DeepEval converters given the wrong thing."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import datasets
import evaluate
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from shared import InputError, calls_from_deepeval, calls_from_ragas, check_messages
from shared.cli.main import main
from shared.kit.conversations import from_inspect
from shared.kit.registry import metric_path


@pytest.fixture(scope="module")
def metric() -> Any:
    return evaluate.load(metric_path("tool_call_correctness"))


def score(metric: Any, made: Any, expected: Any) -> float:
    return metric.compute(tool_calls=[made], expected_tool_calls=[expected])["scores"][0]


@pytest.mark.parametrize("expected", [
    [{"f": {"opts": [{"mode": "fast"}]}}],  # a string where the accepted list belongs
    [{"f": {"opts": [{"mode": 5}]}}],  # a number: it crashed with a TypeError
    [{"f": {"opts": [[{"mode": "fast"}]]}}],  # inside an accepted list of dicts
])
def test_a_possible_answer_not_in_bfcl_form_is_refused(metric: Any, expected: Any,
                                                       tmp_path: Path,
                                                       capsys: pytest.CaptureFixture) -> None:
    made = [{"name": "f", "arguments": {"opts": {"mode": "f"}}}]
    with pytest.raises(InputError, match="where BFCL's possible answer has a list"):
        score(metric, made, expected)
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"tool_calls": made, "expected_tool_calls": expected}) + "\n")
    assert main(["score", str(data), "-m", "tool_call_correctness", "--out",
                 str(tmp_path / "o.jsonl"), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "possible answer" in err[0]


def test_the_bfcl_form_still_scores(metric: Any) -> None:
    made = [{"name": "f", "arguments": {"opts": {"mode": "fast"}}}]
    assert score(metric, made, [{"f": {"opts": [{"mode": ["fast", "quick"]}]}}]) == 1.0
    assert score(metric, [{"name": "f", "arguments": {"opts": {"mode": "f"}}}],
                 [{"f": {"opts": [{"mode": ["fast"]}]}}]) == 0.0


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize("arguments", [_nested(5000), '{"a": ' * 5000 + "1" + "}" * 5000,
                                       _nested(65)])
def test_arguments_nested_too_deep_are_refused(metric: Any, arguments: Any) -> None:
    with pytest.raises(InputError, match="nested"):
        score(metric, [{"name": "f", "arguments": arguments}], [{"name": "f"}])
    assert score(metric, [{"name": "f", "arguments": _nested(60)}],
                 [{"name": "f", "arguments": _nested(60)}]) == 1.0


@pytest.mark.parametrize(("arguments", "said"), [
    ('{"city": "Paris", "city": "Rome"}', "appears twice"),
    ('{"days": NaN}', "not a JSON number"),
    ({"days": float("nan")}, "not a JSON number"),
    ({"days": float("inf")}, "not a JSON number"),
])
def test_repeated_keys_and_nan_are_refused(metric: Any, arguments: Any, said: str) -> None:
    with pytest.raises(InputError, match=said):
        score(metric, [{"name": "f", "arguments": arguments}], [{"name": "f"}])


ARROW_ROWS = [
    {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
     "expected_tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
    {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Rome", "unit": "c"}}],
     "expected_tool_calls": [{"name": "get_weather", "arguments": {"city": "Rome",
                                                                    "unit": "c"}}]},
]


def test_parquet_and_dataset_rows_keep_absent_keys_absent(tmp_path: Path) -> None:
    table = pa.Table.from_pylist(ARROW_ROWS)  # Arrow merges the keys: row 0 gets unit: null
    assert table.to_pylist()[0]["tool_calls"][0]["arguments"] == {"city": "Paris", "unit": None}
    path = tmp_path / "rows.parquet"
    pq.write_table(table, path)
    out = tmp_path / "scored.jsonl"
    assert main(["score", str(path), "-m", "tool_call_correctness", "--out", str(out),
                 "-q"]) == 0
    assert [json.loads(line)["tool_call_correctness"]
            for line in out.read_text().splitlines()] == [1.0, 1.0]
    from shared import assert_metric, score_dataset

    dataset = datasets.Dataset.from_list(ARROW_ROWS)
    scored, _ = score_dataset(dataset, "tool_call_correctness", show_progress=False)
    assert scored["tool_call_correctness"] == [1.0, 1.0]
    assert assert_metric("tool_call_correctness", dataset, at_least=0.1).value == 1.0


def test_deepeval_names_only_expectations_match_by_name(metric: Any) -> None:
    # DeepEval's documented recipe: expected_tools=[ToolCall(name="WebSearch")], the calls
    # made with their input parameters; its ToolCorrectnessMetric compares names by default
    expected = calls_from_deepeval([SimpleNamespace(name="WebSearch", input_parameters=None)])
    made = calls_from_deepeval([SimpleNamespace(name="WebSearch",
                                                input_parameters={"query": "weather"})])
    assert expected == [{"name": "WebSearch", "match": "name"}]
    assert score(metric, made, expected) == 1.0
    assert score(metric, [{"name": "Calculator", "arguments": {}}], expected) == 0.0
    with pytest.raises(InputError, match="the one match is 'name'"):
        score(metric, made, [{"name": "WebSearch", "match": "name", "arguments": {"q": 1}}])
    with pytest.raises(TypeError, match="takes a list of tool calls, got dict"):
        calls_from_deepeval({"name": "WebSearch"})


def test_ragas_reference_tool_calls(metric: Any) -> None:
    sample = SimpleNamespace(reference_tool_calls=[
        SimpleNamespace(name="get_weather", args={"city": "Paris"})])
    expected = calls_from_ragas(sample)
    assert expected == [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    assert score(metric, [{"name": "get_weather", "arguments": {"city": "Paris"}}],
                 expected) == 1.0
    with pytest.raises(TypeError, match="takes a list of tool calls"):
        calls_from_ragas("get_weather")


def test_a_bfcl_tool_named_function(metric: Any) -> None:
    made = [{"name": "function", "arguments": {"x": 1}}]
    assert score(metric, made, [{"function": {"x": [1, 2]}}]) == 1.0
    assert score(metric, made, [{"function": {"x": [3]}}]) == 0.0


def test_the_developer_role_and_call_ids() -> None:
    messages = check_messages([
        {"role": "developer", "content": "Answer briefly."},
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"name": "get_weather", "arguments": {}}]},  # no id: one is made
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_2_0", "type": "function",
             "function": {"name": "get_time", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_2_0", "content": "noon"},
    ])
    assert messages[0]["role"] == "developer"
    made, real = messages[2]["tool_calls"][0]["id"], messages[3]["tool_calls"][0]["id"]
    assert real == "call_2_0" and made != real


def test_an_inspect_call_that_failed_to_parse_is_refused() -> None:
    call = SimpleNamespace(id="c1", function="get_weather", arguments={},
                           parse_error="Expecting value: line 1 column 9")
    messages = [SimpleNamespace(role="user", content="Weather?", tool_calls=None),
                SimpleNamespace(role="assistant", content="", tool_calls=[call])]
    with pytest.raises(InputError, match="could not be parsed"):
        from_inspect(messages)

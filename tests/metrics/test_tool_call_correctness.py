"""tool_call_correctness: the edge cases its card documents (plain and BFCL-form expected calls,
with and without tool schemas, the calls read from a conversation, order, empty lists, the
details), inputs refused naming the row, and the CLI over JSON lines and CSV. BFCL equality on
BFCL's own data: test_tool_call_bfcl.py."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import evaluate
import pytest

from shared import InputError
from shared.cli.main import main
from shared.kit.registry import metric_path

WEATHER_OPENAI = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "required": ["city", "unit"], "properties": {
        "city": {"type": "string"}, "unit": {"type": "string"}, "days": {"type": "number"},
        "hours": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}}}}}]


@pytest.fixture(scope="module")
def metric() -> Any:
    return evaluate.load(metric_path("tool_call_correctness"))


def one(metric: Any, made: Any, expected: Any, **options: Any) -> tuple[float, dict]:
    result = metric.compute(tool_calls=[made], expected_tool_calls=[expected], **options)
    return result["scores"][0], result["details"][0]


def call(name: str = "get_weather", **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


@pytest.mark.parametrize(("made", "expected", "score", "reason"), [
    # both empty: nothing was expected and nothing was done
    ([], [], 1.0, None),
    ([call(city="Paris")], [], 0.0, "was not expected"),
    ([], [call(city="Paris")], 0.0, "was not called"),
    # plain expected calls: equal JSON values, numbers by value, a boolean never a number
    ([call(city="Paris", days=2)], [call(city="Paris", days=2.0)], 1.0, None),
    ([call(city="paris")], [call(city="Paris")], 0.0, "argument 'city' is \"paris\""),
    ([call(flag=1)], [call(flag=True)], 0.0, "argument 'flag' is 1"),
    ([call(city="Paris", unit="c")], [call(city="Paris")], 0.0, "'unit' is not an expected"),
    ([call(city="Paris")], [call(city="Paris", unit="c")], 0.0, "'unit' is missing"),
    ([call("get_time", city="Paris")], [call(city="Paris")], 0.0, "was not called"),
    # BFCL's possible answers: several accepted values, "" for may be left out, standardised
    # strings; without schemas the accepted values' type is the declared one
    ([call(city="Paris, France.")], [{"get_weather": {"city": ["paris france"],
                                                      "unit": ["", "celsius"]}}], 1.0, None),
    ([call(city="Rome")], [{"get_weather": {"city": ["Paris", "Lyon"]}}], 0.0,
     "argument 'city' is \"Rome\", not one of"),
    ([call(days=3)], [{"get_weather": {"days": [3.0]}}], 1.0, None),
    ([call(days=3.0)], [{"get_weather": {"days": [3]}}], 0.0, "has type float where integer"),
    ([call(city="Paris")], [{"get_weather": {"city": ["Paris"], "unit": ["c"]}}], 0.0,
     "'unit' is missing"),
    ([call(tags=["A-B", "c"])], [{"get_weather": {"tags": [["ab", "C"]]}}], 1.0, None),
    ([call(tags=["c", "ab"])], [{"get_weather": {"tags": [["ab", "c"]]}}], 0.0, "not one of"),
])
def test_edge_cases(metric: Any, made: list, expected: list, score: float,
                    reason: str | None) -> None:
    got, details = one(metric, made, expected)
    assert got == score, details
    if reason is None:
        assert details["failed"] == []
    else:
        assert any(reason in f["reason"] for f in details["failed"]), details["failed"]


@pytest.mark.parametrize(("made", "expected", "score", "reason"), [
    # with the schema: required arguments and types as BFCL checks them
    ([call(city="Paris")], [{"get_weather": {"city": ["Paris"], "unit": ["", "c"]}}], 0.0,
     "'unit' is missing (required by the tool's schema)"),
    ([call(city="Paris", unit="c", days=2)],
     [{"get_weather": {"city": ["Paris"], "unit": ["c"], "days": [2.0]}}], 1.0, None),
    ([call(city="Paris", unit="c", hours=2.0)],
     [{"get_weather": {"city": ["Paris"], "unit": ["c"], "hours": [2]}}], 0.0,
     "has type float where integer is declared"),
    ([call(city="Paris", unit="c", days=2)], [call(city="Paris", unit="c", days=2.0)], 1.0,
     None),
    ([call(city="Paris", unit="c", hours=2.0)], [call(city="Paris", unit="c", hours=2)], 0.0,
     "has type float where integer is declared"),
    ([call(city="Paris", unit="c", wind=True)],
     [{"get_weather": {"city": ["Paris"], "unit": ["c"], "wind": [True]}}], 0.0,
     "'wind' is not an expected argument"),
    ([call(city="Paris", unit="c", tags=["a", 1])],
     [{"get_weather": {"city": ["Paris"], "unit": ["c"], "tags": [["a", "b"]]}}], 0.0,
     "has an item that is not of type string"),
])
def test_with_tool_schemas(metric: Any, made: list, expected: list, score: float,
                           reason: str | None) -> None:
    got, details = one(metric, made, expected, tools=[WEATHER_OPENAI])
    assert got == score, details
    if reason:
        assert any(reason in f["reason"] for f in details["failed"]), details["failed"]
    # BFCL's bare schemas read the same
    bare = [WEATHER_OPENAI[0]["function"]]
    assert one(metric, made, expected, tools=[bare])[0] == score


def test_order_and_details(metric: Any) -> None:
    paris, rome = call(city="Paris"), call(city="Rome")
    assert one(metric, [rome, paris], [paris, rome])[0] == 1.0
    score, details = one(metric, [rome, paris], [paris, rome], order="strict")
    assert score == 0.0 and [f["expected"] for f in details["failed"]] == [0, 1]
    assert details["name_precision"] == details["name_recall"] == 1.0
    assert details["argument_accuracy"] == 0.0
    score, details = one(metric, [paris, call("get_time", zone="CET")],
                         [paris, call(city="Lyon", unit="c")])
    assert score == 0.0
    assert details["name_precision"] == details["name_recall"] == 0.5
    # of 3 expected arguments: Paris right; Lyon's call never made (its 2 arguments wrong)
    assert details["argument_accuracy"] == pytest.approx(1 / 3)
    assert {(f.get("expected"), f.get("made"), f["reason"]) for f in details["failed"]} == {
        (1, None, "was not called"), (None, 1, "was not expected")}
    with pytest.raises(ValueError, match="order must be one of any, strict"):
        one(metric, [], [], order="sorted")


WEATHER_TALK = [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
     "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    {"role": "assistant", "content": "Sunny."},
]


def test_calls_come_from_the_conversation_when_not_given(metric: Any) -> None:
    expected = [[call(city="Paris")], [call(city="Rome")]]
    result = metric.compute(messages=[WEATHER_TALK, json.dumps(WEATHER_TALK)],
                            expected_tool_calls=expected)
    assert result["scores"] == [1.0, 0.0]
    # a row's tool_calls, when given, win over its conversation
    result = metric.compute(tool_calls=[None, [call(city="Rome")]],
                            messages=[WEATHER_TALK, WEATHER_TALK], expected_tool_calls=expected)
    assert result["scores"] == [1.0, 1.0]
    with pytest.raises(InputError, match=r"^tool_calls\[0\] is not given"):
        metric.compute(expected_tool_calls=expected[:1])


@pytest.mark.parametrize(("inputs", "message"), [
    ({"tool_calls": [[call()], '[{"name": "f", "arguments": "{x: 1}"}]']},
     r"^tool_calls\[1\]\[0\] call 'f': arguments are not valid JSON"),
    ({"tool_calls": [[call()], [call()]],
      "expected_tool_calls": [[call()], [{"f": {"x": 1}}]]},
     r"^expected_tool_calls\[1\]\[0\] call 'f': the accepted values of 'x' must be a list"),
    ({"tool_calls": [[call()], [call()]],
      "expected_tool_calls": [[call()], [{"f": {}, "g": {}}]]},
     r"^expected_tool_calls\[1\]\[0\] is neither a call"),
    ({"tool_calls": [[call()], [call()]], "tools": [[], [{"description": "no name"}]]},
     r"^tools\[1\]\[0\] is not a tool schema"),
    ({"messages": [WEATHER_TALK, [{"role": "robot", "content": "hi"}]]},
     r"^messages\[1\]\[0\] has role 'robot'"),
])
def test_bad_inputs_are_refused_naming_the_row(metric: Any, inputs: dict, message: str) -> None:
    arguments = {"expected_tool_calls": [[call()], [call()]], **inputs}
    with pytest.raises(InputError, match=message):
        metric.compute(**arguments)


def _rows() -> list[dict[str, Any]]:
    return [
        {"messages": WEATHER_TALK, "expected_tool_calls": [call(city="Paris")]},
        {"tool_calls": [{"type": "function", "function": {
            "name": "get_weather", "arguments": '{"city": "Rome", "days": 2}'}}],
         "expected_tool_calls": [{"get_weather": {"city": ["rome"], "days": [2.0, ""]}}],
         "messages": WEATHER_TALK},
        # a key absent here but present in another row's arguments stays absent
        {"tool_calls": [call(city="Rome")], "messages": WEATHER_TALK,
         "expected_tool_calls": [call(city="Rome")]},
    ]


def test_the_cli_reads_json_lines_and_csv(tmp_path: Path, capsys) -> None:
    jsonl = tmp_path / "calls.jsonl"
    jsonl.write_text("".join(json.dumps(row) + "\n" for row in _rows()))
    table = tmp_path / "calls.csv"
    with table.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, ["tool_calls", "messages", "expected_tool_calls"])
        writer.writeheader()
        for row in _rows():
            writer.writerow({k: json.dumps(row[k]) if k in row else ""
                             for k in writer.fieldnames})
    for source in (jsonl, table):
        out = tmp_path / f"{source.stem}_{source.suffix[1:]}_out.jsonl"
        assert main(["score", str(source), "-m", "tool_call_correctness", "-o", str(out),
                     "-q"]) == 0, capsys.readouterr().err
        scored = [json.loads(line) for line in out.read_text().splitlines()]
        assert [r["tool_call_correctness"] for r in scored] == [1.0, 1.0, 1.0]
    capsys.readouterr()


def test_the_cli_refuses_a_malformed_conversation_in_one_line(tmp_path: Path, capsys) -> None:
    rows = _rows()
    rows[2] = {"messages": [{"role": "user", "content": "hi"},
                            {"role": "tool", "tool_call_id": "nope", "content": "x"}],
               "expected_tool_calls": []}
    source = tmp_path / "calls.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = tmp_path / "out.jsonl"
    assert main(["score", str(source), "-m", "tool_call_correctness", "-o", str(out), "-q"]) == 2
    error = capsys.readouterr().err
    assert "column 'messages', row 2, item 1: is a tool message whose tool_call_id 'nope'" in (
        error) and error.count("\n") == 1, error
    assert not out.exists()


@pytest.mark.parametrize(("made", "expected", "options", "score", "reason"), [
    # the default is BFCL's checks, unchanged
    ([call(city="Paris", unit="c")], [call(city="Paris")], {}, 0.0, "'unit' is not an expected"),
    # superset: arguments may be added; subset: expected ones may be left out
    ([call(city="Paris", unit="c")], [call(city="Paris")], {"args_mode": "superset"}, 1.0, None),
    ([call(city="Paris")], [call(city="Paris", unit="c")], {"args_mode": "superset"}, 0.0,
     "'unit' is missing"),
    ([call(city="Paris")], [call(city="Paris", unit="c")], {"args_mode": "subset"}, 1.0, None),
    ([call(city="Paris", unit="c")], [call(city="Paris")], {"args_mode": "subset"}, 0.0,
     "'unit' is not an expected"),
    # possible answers keep BFCL's value checks in every mode
    ([call(city="paris, france", days=3)], [{"get_weather": {"city": ["Paris, France"]}}],
     {"args_mode": "superset"}, 1.0, None),
    ([call(city="Rome")], [{"get_weather": {"city": ["Paris"], "unit": ["c"]}}],
     {"args_mode": "subset"}, 0.0, "argument 'city' is \"Rome\", not one of"),
    ([call(city="Rome")], [call(city="Paris")], {"args_mode": "ignore"}, 1.0, None),
    ([call("get_time", city="Rome")], [call(city="Paris")], {"args_mode": "ignore"}, 0.0,
     "was not called"),
    # overrides: a mode, or key paths (a nested one compared as JSON values)
    ([call(city="Rome")], [call(city="Paris")], {"args_overrides": {"get_weather": "ignore"}},
     1.0, None),
    ([call(city="Paris", when={"day": 3, "hour": 9})],
     [call(city="Paris", when={"day": 3.0, "hour": 20})],
     {"args_overrides": {"get_weather": ["city", "when.day"]}}, 1.0, None),
    ([call(city="Paris", when={"day": 4})], [call(city="Paris", when={"day": 3})],
     {"args_overrides": {"get_weather": ["city", "when.day"]}}, 0.0,
     "key path 'when.day' is 4, not the expected value at that path"),
    ([call(when={"day": 3})], [call(city="Paris", when={"day": 3})],
     {"args_overrides": {"get_weather": ["city"]}}, 0.0, "key path 'city' is missing"),
])
def test_argument_modes_and_overrides(metric: Any, made: Any, expected: Any,
                                      options: dict[str, Any], score: float,
                                      reason: str | None) -> None:
    got, details = one(metric, made, expected, **options)
    assert got == score
    if reason is None:
        assert details["failed"] == []
    else:
        assert reason in details["failed"][0]["reason"]


def test_schema_rules_stay_in_the_loose_modes(metric: Any) -> None:
    """With a schema, subset still needs its required arguments and superset still refuses an
    argument outside its properties."""
    expected = [call(city="Paris", unit="c")]
    _, details = one(metric, [call(city="Paris")], expected, tools=[WEATHER_OPENAI],
                     args_mode="subset")
    assert "is missing (required by the tool's schema)" in details["failed"][0]["reason"]
    _, details = one(metric, [call(city="Paris", unit="c", colour="red")], expected,
                     tools=[WEATHER_OPENAI], args_mode="superset")
    assert "'colour' is not an expected argument" in details["failed"][0]["reason"]
    assert one(metric, [call(city="Paris", unit="c", days=2)], expected,
               tools=[WEATHER_OPENAI], args_mode="superset")[0] == 1.0

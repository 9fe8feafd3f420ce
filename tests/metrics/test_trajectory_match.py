"""trajectory_match: the empty, duplicate and order cases of every mode (the card's table), the
argument modes and overrides, the details, the deliberate differences from openevals (a largest
matching, a boolean never a number), bad options refused, the CLI and assert_metric. Verdicts
against openevals itself: test_trajectory_openevals.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conversation_checks import trajectory as conversation_trajectory

from shared import InputError, assert_metric
from shared.cli.main import main

MODES = ("strict", "unordered", "subset", "superset")


def call(name: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    return name, arguments


def trajectory(*turns: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The trajectory of ``turns`` (conversation_checks.trajectory), one argument per turn."""
    return conversation_trajectory(list(turns))


def verdicts(metric: Any, made: Any, reference: Any, **options: Any) -> dict[str, float]:
    return {mode: metric.compute(messages=[made], reference_messages=[reference],
                                 trajectory_mode=mode, **options)["scores"][0]
            for mode in MODES}


A, B = call("a", x=1), call("b", y=2)
EMPTY = [{"role": "user", "content": "Hi."}, {"role": "assistant", "content": "Hello."}]


@pytest.mark.parametrize(("made", "reference", "expected"), [
    # nothing called, nothing in the reference: a match in every mode
    (EMPTY, EMPTY, {"strict": 1.0, "unordered": 1.0, "subset": 1.0, "superset": 1.0}),
    # nothing called where the reference calls: only subset holds (the empty set)
    (EMPTY, trajectory([A]), {"strict": 0.0, "unordered": 0.0, "subset": 1.0, "superset": 0.0}),
    (trajectory([A]), EMPTY, {"strict": 0.0, "unordered": 0.0, "subset": 0.0, "superset": 1.0}),
    # the same calls in another order, one per message
    (trajectory([B], [A]), trajectory([A], [B]),
     {"strict": 0.0, "unordered": 1.0, "subset": 1.0, "superset": 1.0}),
    # parallel calls in another order inside one message: strict holds
    (trajectory([B, A]), trajectory([A, B]),
     {"strict": 1.0, "unordered": 1.0, "subset": 1.0, "superset": 1.0}),
    # a call repeated: a duplicate is a call of its own, never collapsed into a set
    (trajectory([A], [A]), trajectory([A]),
     {"strict": 0.0, "unordered": 0.0, "subset": 0.0, "superset": 1.0}),
    (trajectory([A]), trajectory([A], [A]),
     {"strict": 0.0, "unordered": 0.0, "subset": 1.0, "superset": 0.0}),
    # one call more, one call less
    (trajectory([A, B]), trajectory([A]),
     {"strict": 0.0, "unordered": 0.0, "subset": 0.0, "superset": 1.0}),
    # nested arguments: key order never matters, 1 equals 1.0
    (trajectory([call("f", q={"b": [1, 2], "a": {"z": 1}})]),
     trajectory([call("f", q={"a": {"z": 1.0}, "b": [1, 2]})]),
     {"strict": 1.0, "unordered": 1.0, "subset": 1.0, "superset": 1.0}),
    # a list's order does matter
    (trajectory([call("f", q=[2, 1])]), trajectory([call("f", q=[1, 2])]),
     {"strict": 0.0, "unordered": 0.0, "subset": 0.0, "superset": 0.0}),
])
def test_the_modes_on_the_cards_cases(metric: Any, made: Any, reference: Any,
                                      expected: dict[str, float]) -> None:
    assert verdicts(metric, made, reference) == expected


def test_strict_compares_roles_and_message_counts_not_text(metric: Any) -> None:
    reference = trajectory([A])
    other_text = [dict(m, content="Something else.") if m["role"] == "user" else m
                  for m in reference]
    assert verdicts(metric, other_text, reference)["strict"] == 1.0
    no_answer = reference[:-1]
    result = metric.compute(messages=[no_answer], reference_messages=[reference])
    assert result["scores"] == [0.0]
    assert result["details"][0]["failed"] == [
        {"reason": "has 3 messages where the reference has 4"}]


@pytest.mark.parametrize(("made", "reference", "mode", "score"), [
    (call("f", a=1), call("f", a=1, b=2), "exact", 0.0),
    (call("f", a=1), call("f", a=1, b=2), "subset", 1.0),
    (call("f", a=1), call("f", a=1, b=2), "superset", 0.0),
    (call("f", a=1, b=2), call("f", a=1), "superset", 1.0),
    (call("f", a=1, b=2), call("f", a=1), "subset", 0.0),
    (call("f", a=2), call("f", a=1), "subset", 0.0),
    (call("f", a=2), call("f", a=1), "ignore", 1.0),
    (call("g", a=1), call("f", a=1), "ignore", 0.0),  # names always compare
])
def test_argument_modes(metric: Any, made: Any, reference: Any, mode: str, score: float) -> None:
    assert verdicts(metric, trajectory([made]), trajectory([reference]),
                    args_mode=mode)["strict"] == score


def test_overrides_a_mode_or_key_paths_per_tool(metric: Any) -> None:
    made = trajectory([call("search", query="x", filters={"date": {"from": 1}, "k": 9}),
                       call("log", text="a")])
    reference = trajectory([call("search", query="x", filters={"date": {"from": 1}, "k": 3}),
                            call("log", text="b")])
    assert verdicts(metric, made, reference)["strict"] == 0.0
    both = {"search": ["query", "filters.date.from"], "log": "ignore"}
    assert verdicts(metric, made, reference, args_overrides=both)["strict"] == 1.0
    # a key path missing from either call fails; the other tools keep args_mode
    missing = {"search": ["query", "filters.place"], "log": "ignore"}
    result = metric.compute(messages=[made], reference_messages=[reference],
                            args_overrides=missing)
    assert result["details"][0]["failed"][0]["reason"] == "key path 'filters.place' is missing"
    only_search = {"search": ["query"]}
    assert verdicts(metric, made, reference, args_overrides=only_search)["strict"] == 0.0
    # the JSON text of the mapping (the CLI's --option) is the same
    assert verdicts(metric, made, reference,
                    args_overrides=json.dumps(both))["strict"] == 1.0


def test_details_say_which_call_matched_which_and_what_differed(metric: Any) -> None:
    made = trajectory([call("b", y=3), call("a", x=1)])
    reference = trajectory([A, B])
    result = metric.compute(messages=[made], reference_messages=[reference],
                            trajectory_mode="unordered")
    assert result["trajectory_match"] == 0.0
    details = result["details"][0]
    assert details["matched"] == [{"made": 1, "reference": 0, "name": "a"}]
    assert details["failed"] == [
        {"reference": 1, "name": "b", "made": 0, "reason": "argument 'y' is 3, not 2"},
        {"made": 0, "name": "b", "reason": "is not in the reference"}]
    assert (details["calls_made"], details["calls_reference"]) == (2, 2)


def test_a_largest_matching_where_openevals_pairs_greedily(metric: Any) -> None:
    """The deliberate difference docs/CONVERSATIONS.md shows: with args_mode="superset", the
    first reference call (a=1) fits both calls made; openevals gives it the first and then
    finds nothing for the second reference call (a=1, b=2); the matching pairs both."""
    made = trajectory([call("f", a=1, b=2), call("f", a=1)])
    reference = trajectory([call("f", a=1), call("f", a=1, b=2)])
    assert verdicts(metric, made, reference, args_mode="superset") == {
        "strict": 1.0, "unordered": 1.0, "subset": 1.0, "superset": 1.0}


def test_a_boolean_is_never_a_number(metric: Any) -> None:
    """The other deliberate difference: openevals compares with Python's ==, where True == 1."""
    made, reference = trajectory([call("f", flag=True)]), trajectory([call("f", flag=1)])
    assert set(verdicts(metric, made, reference).values()) == {0.0}


@pytest.mark.parametrize(("options", "message"), [
    ({"trajectory_mode": "any"}, "trajectory_mode must be one of"),
    ({"args_mode": "fuzzy"}, "args_mode must be one of"),
    ({"args_overrides": {"f": "fuzzy"}}, "args_overrides['f'] must be one of"),
    ({"args_overrides": {"f": []}}, "non-empty list of key paths"),
    ({"args_overrides": {"f": ["a..b"]}}, "non-empty list of key paths"),
    ({"args_overrides": ["f"]}, "must map a tool name"),
])
def test_bad_options_are_refused(metric: Any, options: dict[str, Any], message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=message.replace("[", r"\[")):
        metric.compute(messages=[EMPTY], reference_messages=[EMPTY], **options)


def test_a_malformed_trajectory_names_the_row(metric: Any) -> None:
    bad = [{"role": "tool", "tool_call_id": "x", "content": "?"}]
    with pytest.raises(InputError, match=r"reference_messages\[1\]\[0\] is a tool message"):
        metric.compute(messages=[EMPTY, EMPTY], reference_messages=[EMPTY, bad])


def test_cli_scores_a_file_of_trajectories(tmp_path: Path, capsys: Any) -> None:
    rows = [{"messages": trajectory([B], [A]), "reference_messages": trajectory([A], [B])},
            {"messages": trajectory([A]), "reference_messages": trajectory([A, B])}]
    source = tmp_path / "rows.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "scored.jsonl"
    assert main(["score", str(source), "--metric", "trajectory_match", "--option",
                 "trajectory_mode=unordered", "--out", str(out), "--quiet"]) == 0
    scored = [json.loads(line) for line in out.open(encoding="utf-8")]
    assert [r["trajectory_match"] for r in scored] == [1.0, 0.0]
    assert json.loads(scored[1]["trajectory_match_details"])["failed"][0]["reason"] == (
        "was not called")


def test_assert_metric_on_trajectories() -> None:
    rows = [{"messages": trajectory([A, B]), "reference_messages": trajectory([B, A])}] * 20
    verdict = assert_metric("trajectory_match", rows, at_least=0.5)
    assert verdict.passed
    wrong = [{"messages": trajectory([A]), "reference_messages": trajectory([B])}] * 20
    with pytest.raises(AssertionError):
        assert_metric("trajectory_match", wrong, at_least=0.5)

"""trajectory_match against openevals 0.2.2 itself (``create_trajectory_match_evaluator``, a
test-only dependency in requirements-test.txt, run live here): seeded generated trajectory
pairs covering every trajectory mode with every argument mode, per-tool overrides (a mode, or
key paths into nested arguments), parallel calls, repeated calls, nested arguments and empty
trajectories. The verdicts are equal except where docs/CONVERSATIONS.md says why: openevals
pairs calls greedily and can miss a complete pairing; each such row is checked to hold a
complete one-to-one pairing (ours, from the row's details) whose every pair openevals itself
matches, so the difference is the greedy search and nothing else."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from conftest import load_metrics
from conversation_checks import trajectory

openevals_match = pytest.importorskip("openevals.trajectory.match")

TRAJECTORY_MODES = ("strict", "unordered", "subset", "superset")
ARGS_MODES = ("exact", "subset", "superset", "ignore")
OVERRIDES: list[dict[str, Any] | None] = [
    None,
    {"search": "ignore"},
    {"search": ["query"], "book": "superset"},
    {"search": ["filters.date.from", "query"]},
    {"book": ["when.day"], "search": "subset"},
]
PAIRS = 240  # trajectory pairs; each is scored in 16 mode pairs and 4 overrides

# argument values: nested objects, numbers written as 1 and 1.0, lists (their order matters)
ARGUMENTS = {
    "search": [{"query": "paris"}, {"query": "paris", "filters": {"date": {"from": 1}}},
               {"query": "paris", "filters": {"date": {"from": 1.0}, "k": 3}},
               {"query": "rome", "filters": {"date": {"from": 2}}}, {}],
    "book": [{"when": {"day": 3, "hour": 20}}, {"when": {"hour": 20, "day": 3}, "people": 2},
             {"when": {"day": 4}}, {"people": 2}, {"tags": ["a", "b"]}, {"tags": ["b", "a"]}],
    "weather": [{"city": "Paris"}, {"city": "Paris", "unit": "c"}, {}],
}


def _call(rng: random.Random) -> tuple[str, dict[str, Any]]:
    name = rng.choice(sorted(ARGUMENTS))
    return name, rng.choice(ARGUMENTS[name])


def _turns(rng: random.Random) -> list[list[tuple[str, dict[str, Any]]]]:
    """0 to 3 assistant turns of 1 to 3 calls each (several: parallel calls)."""
    return [[_call(rng) for _ in range(rng.choice((1, 1, 2, 3)))]
            for _ in range(rng.choice((0, 1, 2, 2, 3)))]


def _varied(rng: random.Random, turns: list[list[Any]]) -> list[list[Any]]:
    """Another trajectory near ``turns``: a call repeated, dropped, changed or moved, the
    parallel calls of a turn shuffled, a turn split or dropped; or the same."""
    out = [list(turn) for turn in turns]
    for _ in range(rng.choice((0, 1, 1, 2))):
        calls = [(t, j) for t, turn in enumerate(out) for j in range(len(turn))]
        change = rng.choice(("repeat", "drop", "change", "shuffle", "split", "new_turn"))
        if not calls or change == "new_turn":
            out.insert(rng.randrange(len(out) + 1), [_call(rng)])
            continue
        t, j = rng.choice(calls)
        if change == "repeat":
            out[t].insert(j, out[t][j])
        elif change == "drop":
            del out[t][j]
        elif change == "change":
            name = out[t][j][0]
            out[t][j] = (name, rng.choice(ARGUMENTS[name]))
        elif change == "shuffle":
            rng.shuffle(out[t])
        elif len(out[t]) > 1:  # split the turn's calls over two messages
            out[t:t + 1] = [out[t][:j or 1], out[t][j or 1:]]
    return [turn for turn in out if turn]


def _messages(turns: list[list[tuple[str, dict[str, Any]]]], tag: str) -> list[dict[str, Any]]:
    return trajectory(turns, tag=tag, question="Plan my trip.")


def _pairs() -> list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    rng = random.Random(62)
    out = [(_messages([], "m"), _messages([], "r"))]  # both empty
    out.append((_messages([], "m"), _messages([[("search", {"query": "paris"})]], "r")))
    while len(out) < PAIRS:
        reference = _turns(rng)
        made = _varied(rng, reference) if rng.random() < 0.85 else _turns(rng)
        out.append((_messages(made, "m"), _messages(reference, "r")))
    return out


PAIRED = _pairs()


@pytest.fixture(scope="module")
def metric() -> Any:
    return load_metrics(__file__, ["trajectory_match"])["trajectory_match"]


def _openevals(made: Any, reference: Any, mode: str, args_mode: str,
               overrides: dict[str, Any] | None) -> bool:
    evaluator = openevals_match.create_trajectory_match_evaluator(
        trajectory_match_mode=mode, tool_args_match_mode=args_mode,
        tool_args_match_overrides=overrides)
    return bool(evaluator(outputs=made, reference_outputs=reference)["score"])


def _calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"name": c["function"]["name"], "args": json.loads(c["function"]["arguments"])}
            for m in messages for c in m.get("tool_calls") or ()]


def _complete_by_openevals(made: Any, reference: Any, details: dict[str, Any], mode: str,
                           args_mode: str, overrides: dict[str, Any] | None) -> bool:
    """Our pairing of the row is one to one, covers what ``mode`` needs, and each pair is a
    match by openevals itself (the two calls alone, as one-call trajectories)."""
    mine, theirs = _calls(made), _calls(reference)
    pairs = [(p["made"], p["reference"]) for p in details["matched"]]
    one_to_one = len({m for m, _ in pairs}) == len({r for _, r in pairs}) == len(pairs)
    covers = {"unordered": len(pairs) == len(mine) == len(theirs),
              "superset": len(pairs) == len(theirs), "subset": len(pairs) == len(mine),
              "strict": len(pairs) == len(mine) == len(theirs)}[mode]
    return one_to_one and covers and all(
        _openevals(_messages([[(mine[m]["name"], mine[m]["args"])]], "m"),
                   _messages([[(theirs[r]["name"], theirs[r]["args"])]], "r"),
                   "strict", args_mode, overrides)
        for m, r in pairs)


@pytest.mark.parametrize("overrides", OVERRIDES, ids=lambda o: json.dumps(o))
def test_verdicts_equal_openevals(metric: Any, overrides: dict[str, Any] | None) -> None:
    made = [m for m, _ in PAIRED]
    reference = [r for _, r in PAIRED]
    seen = {"agree": 0, "greedy": 0, "both": set()}
    for mode in TRAJECTORY_MODES:
        for args_mode in ARGS_MODES:
            result = metric.compute(messages=made, reference_messages=reference,
                                    trajectory_mode=mode, args_mode=args_mode,
                                    args_overrides=overrides)
            for i, (ours, details) in enumerate(zip(result["scores"], result["details"],
                                                    strict=True)):
                theirs = _openevals(made[i], reference[i], mode, args_mode, overrides)
                if (ours == 1.0) == theirs:
                    seen["agree"] += 1
                    seen["both"].add(theirs)
                    continue
                # the one documented difference: a complete pairing openevals' greedy search
                # misses
                assert ours == 1.0 and not theirs, (i, mode, args_mode, made[i], reference[i])
                assert _complete_by_openevals(made[i], reference[i], details, mode, args_mode,
                                              overrides), (i, mode, args_mode)
                seen["greedy"] += 1
    rows = len(PAIRED) * len(TRAJECTORY_MODES) * len(ARGS_MODES)
    assert seen["agree"] + seen["greedy"] == rows
    assert seen["both"] == {True, False}  # the rows are not all one verdict
    assert seen["greedy"] <= rows // 50  # a rare difference, not a different semantics


def test_a_boolean_is_no_number_where_openevals_says_it_is(metric: Any) -> None:
    """The second documented difference: Python's True == 1 makes openevals match these."""
    made = _messages([[("book", {"people": True})]], "m")
    reference = _messages([[("book", {"people": 1})]], "r")
    assert _openevals(made, reference, "strict", "exact", None)
    assert metric.compute(messages=[made], reference_messages=[reference])["scores"] == [0.0]


def test_the_greedy_case_of_the_docs(metric: Any) -> None:
    made = _messages([[("book", {"people": 2, "when": {"day": 3}}), ("book", {"people": 2})]],
                     "m")
    reference = _messages([[("book", {"people": 2}), ("book", {"people": 2, "when": {"day": 3}})]],
                          "r")
    assert not _openevals(made, reference, "superset", "superset", None)
    result = metric.compute(messages=[made], reference_messages=[reference],
                            trajectory_mode="superset", args_mode="superset")
    assert result["scores"] == [1.0]

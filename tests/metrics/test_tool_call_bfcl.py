"""tool_call_correctness gives the verdict of BFCL's own AST checker (bfcl-eval, run here) on
BFCL's Python categories: on its rows (each possible answer turned into the call made) and on
calls perturbed from them by a seeded function (wrong names, missing or unknown arguments,
wrong values and types, other accepted values and spellings, shuffled, dropped or repeated
calls). The one difference on purpose: where BFCL's first-fit pairing of parallel calls misses
a complete pairing, ours finds it; each such row is proved by BFCL's own per-call checker.

bfcl-eval's dependencies clash with ours: the Makefile installs the package alone into
.venv/bfcl-eval; its checker reads one flag from ``bfcl_eval.constants.model_config``, whose
imports need every provider client, so a stand-in module takes its place."""

from __future__ import annotations

import copy
import itertools
import json
import random
import sys
import types
from pathlib import Path
from typing import Any

import evaluate
import pytest

from shared.kit.registry import metric_path

BFCL_DIR = Path(sys.prefix) / "bfcl-eval"
CATEGORIES = {"simple": "simple_python", "multiple": "multiple", "parallel": "parallel",
              "parallel_multiple": "parallel_multiple"}
MODEL = "reference"  # the stand-in model of the checker: names compared as they are
VARIANTS = 6  # perturbed calls per row


class _Config:
    underscore_to_dot = False


def _checker() -> Any:
    if not (BFCL_DIR / "bfcl_eval").is_dir():
        pytest.fail(f"bfcl-eval is not installed in {BFCL_DIR}: run `make setup-test`")
    stand_in = types.ModuleType("bfcl_eval.constants.model_config")
    stand_in.MODEL_CONFIG_MAPPING = {MODEL: _Config()}
    sys.modules.setdefault("bfcl_eval.constants.model_config", stand_in)
    if str(BFCL_DIR) not in sys.path:
        sys.path.append(str(BFCL_DIR))
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.eval_checker.ast_eval import ast_checker

    return ast_checker, Language.PYTHON


def _rows(category: str) -> list[tuple[list[dict], list[dict]]]:
    data = BFCL_DIR / "bfcl_eval" / "data"
    name = CATEGORIES[category]
    questions = [json.loads(line) for line in (data / f"BFCL_v4_{name}.json").open()]
    answers = {row["id"]: row["ground_truth"] for row in
               map(json.loads, (data / "possible_answer" / f"BFCL_v4_{name}.json").open())}
    return [(q["function"], answers[q["id"]]) for q in questions]


# --- the calls made: BFCL's possible answers turned into calls, and perturbed ----------------

def _declared(functions: list[dict], name: str, argument: str) -> dict:
    tool = next((f for f in functions if f["name"] == name), None)
    return (tool or {}).get("parameters", {}).get("properties", {}).get(argument, {})


def _value(accepted: Any, declared: dict, rng: random.Random, pick_any: bool) -> Any:
    """A value BFCL accepts: an accepted value (the first, or any), a dict's or a list of
    dicts' keys resolved in turn (their accepted values are lists again)."""
    choices = [v for v in accepted if v != ""]
    chosen = rng.choice(choices) if pick_any else choices[0]
    if declared.get("type") == "dict" and isinstance(chosen, dict):
        return {k: _value(v, {}, rng, pick_any) for k, v in chosen.items()
                if any(x != "" for x in v)}
    if declared.get("items", {}).get("type") == "dict" and isinstance(chosen, list):
        return [{k: _value(v, {}, rng, pick_any) for k, v in item.items()
                 if any(x != "" for x in v)} for item in chosen]
    return chosen


def made_calls(functions: list[dict], answers: list[dict], rng: random.Random,
               pick_any: bool = False) -> list[dict]:
    calls = []
    for answer in answers:
        (name, accepted), = answer.items()
        calls.append({"name": name, "arguments": {
            k: _value(v, _declared(functions, name, k), rng, pick_any)
            for k, v in accepted.items() if any(x != "" for x in v)}})
    return calls


def _wrong_value(value: Any, rng: random.Random) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + rng.choice([1, -1, 10])
    if isinstance(value, float):
        return value + rng.choice([0.5, 1.0, -2.25])
    if isinstance(value, str):
        return rng.choice([value + " extra", "something else", value[::-1] + "x", ""])
    if isinstance(value, list):
        return rng.choice([value[:-1], value + value[:1], list(reversed(value)) + ["x"]])
    if isinstance(value, dict):
        return {**value, "unexpected_key": 1}
    return "x"


def _wrong_type(value: Any, rng: random.Random) -> Any:
    if isinstance(value, bool):
        return rng.choice([int(value), str(value).lower()])
    if isinstance(value, int):
        return rng.choice([float(value), str(value)])
    if isinstance(value, float):
        return rng.choice([int(value), str(value), [value]])
    if isinstance(value, str):
        return rng.choice([len(value), [value], {"value": value}, True])
    if isinstance(value, list):
        return rng.choice([json.dumps(value), [str(v) for v in value],
                           [float(v) if isinstance(v, int) and not isinstance(v, bool) else v
                            for v in value]])
    return json.dumps(value)


def _spelling(value: Any, rng: random.Random) -> Any:
    """Another spelling BFCL's standardisation accepts (or, for a non-string, the value)."""
    if not isinstance(value, str):
        return value
    return rng.choice([value.upper(), value.replace(" ", ", "), f" {value}.", value.title(),
                       value.replace("'", '"')])


def perturb(functions: list[dict], answers: list[dict], rng: random.Random) -> list[dict]:
    """One seeded perturbation of the row's made calls."""
    calls = made_calls(functions, answers, rng, pick_any=rng.random() < 0.5)
    call = rng.choice(calls)
    arguments = call["arguments"]
    key = rng.choice(sorted(arguments)) if arguments else None
    kind = rng.choice(["name", "drop_argument", "unknown_argument", "value", "type", "type",
                       "spelling", "accepted", "shuffle", "drop_call", "repeat_call",
                       "swap_values"])
    if kind == "name":
        others = [f["name"] for f in functions if f["name"] != call["name"]]
        call["name"] = rng.choice(others) if others and rng.random() < 0.5 else (
            call["name"] + rng.choice(["_v2", "s", ""]))
    elif kind == "drop_argument" and key:
        del arguments[key]
    elif kind == "unknown_argument":
        arguments[rng.choice(["extra", "verbose", key or "x"])] = rng.choice([1, "yes", None])
    elif kind == "value" and key:
        arguments[key] = _wrong_value(arguments[key], rng)
    elif kind == "type" and key:
        arguments[key] = _wrong_type(arguments[key], rng)
    elif kind == "spelling" and key:
        arguments[key] = _spelling(arguments[key], rng)
    elif kind == "shuffle":
        rng.shuffle(calls)
    elif kind == "drop_call":
        calls.remove(call)
    elif kind == "repeat_call":
        calls.append(copy.deepcopy(call))
    elif kind == "swap_values" and key and len(calls) > 1:
        other = rng.choice([c for c in calls if c is not call])
        if key in other["arguments"]:
            arguments[key], other["arguments"][key] = other["arguments"][key], arguments[key]
    return calls


# --- the two verdicts -----------------------------------------------------------------------

def bfcl_valid(checker: Any, functions: list[dict], calls: list[dict], answers: list[dict],
               category: str) -> bool:
    ast_checker, python = checker
    output = [{call["name"]: call["arguments"]} for call in calls]
    return ast_checker.ast_checker(functions, output, answers, python, category, MODEL)["valid"]


def complete_pairing_exists(checker: Any, functions: list[dict], calls: list[dict],
                            answers: list[dict]) -> bool:
    """Whether some order of the calls has every call accepted by BFCL's own per-call checker
    against its expected call (the pairing BFCL's first fit may miss)."""
    ast_checker, python = checker
    if len(calls) != len(answers):
        return False
    return any(all(ast_checker.simple_function_checker(
        ast_checker.find_description(functions, next(iter(answer))),
        {calls[j]["name"]: calls[j]["arguments"]}, answer, python, MODEL)["valid"]
        for answer, j in zip(answers, order, strict=True))
        for order in itertools.permutations(range(len(calls))))


@pytest.fixture(scope="module")
def checker() -> Any:
    return _checker()


@pytest.fixture(scope="module")
def metric() -> Any:
    return evaluate.load(metric_path("tool_call_correctness"))


@pytest.mark.parametrize("category", list(CATEGORIES))
def test_our_verdict_is_bfcl_s_on_its_rows_and_perturbed_calls(category: str, checker: Any,
                                                                  metric: Any) -> None:
    rng = random.Random(f"perturb-{category}")
    cases = []
    for functions, answers in _rows(category):
        cases.append((functions, made_calls(functions, answers, rng), answers))
        cases.extend((functions, perturb(functions, answers, rng), answers)
                     for _ in range(VARIANTS))
    # both see the calls as JSON gives them (tuples as lists, numbers as written)
    cases = [json.loads(json.dumps(case)) for case in cases]
    ours = metric.compute(tool_calls=[c[1] for c in cases],
                          expected_tool_calls=[c[2] for c in cases],
                          tools=[c[0] for c in cases])["scores"]
    theirs = [bfcl_valid(checker, *case, category) for case in cases]
    differ = [i for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if (a == 1.0) != b]
    share = 1 - len(differ) / len(cases)
    print(f"\n{category}: {len(cases)} calls, {share:.2%} equal verdicts, "
          f"{sum(theirs)} valid by BFCL")
    assert share >= 0.99, [cases[i] for i in differ[:3]]
    # every difference: BFCL's first fit missed a complete pairing its own checker accepts
    for i in differ:
        functions, calls, answers = cases[i]
        assert "parallel" in category and ours[i] == 1.0, cases[i]
        assert complete_pairing_exists(checker, functions, calls, answers), cases[i]
    # the perturbations make both verdicts often enough to test both
    assert 0.2 < sum(theirs) / len(theirs) < 0.8
    # BFCL's own rows, the possible answers as calls, are valid but for a few rows whose
    # possible answer names an argument its schema lacks (both verdicts say so, above)
    own = [theirs[i] for i in range(0, len(cases), VARIANTS + 1)]
    assert sum(own) >= 0.95 * len(own)


def test_a_complete_pairing_bfcl_first_fit_misses_is_found(checker: Any, metric: Any) -> None:
    """The first expected call accepts both calls and takes the first; the second accepts only
    the first: BFCL says invalid, ours pairs them the other way round."""
    functions = [{"name": "f", "parameters": {"type": "dict", "required": ["x"],
                                              "properties": {"x": {"type": "integer"}}}}]
    answers = [{"f": {"x": [1, 2]}}, {"f": {"x": [1]}}]
    calls = [{"name": "f", "arguments": {"x": 1}}, {"name": "f", "arguments": {"x": 2}}]
    assert not bfcl_valid(checker, functions, calls, answers, "parallel")
    assert complete_pairing_exists(checker, functions, calls, answers)
    result = metric.compute(tool_calls=[calls], expected_tool_calls=[answers], tools=[functions])
    assert result["scores"] == [1.0]
    strict = metric.compute(tool_calls=[calls], expected_tool_calls=[answers],
                            tools=[functions], order="strict")
    assert strict["scores"] == [0.0]
    assert strict["details"][0]["failed"][0]["reason"] == "argument 'x' is 2, not one of [1]"

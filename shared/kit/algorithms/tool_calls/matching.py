"""A row of ``tool_call_correctness``: each call made against each expected call, then the calls
paired (``order="any"``: a complete matching, as BFCL's parallel checker pairs them;
``"strict"``: position by position) and the row's details.

One made call against one expected call follows BFCL's ``simple_function_checker``: the name;
with the tool's schema, its required arguments present; no argument outside the expected ones
(nor, with the schema, outside its properties); each value accepted (``values``); every expected
argument given unless ``""`` is among its accepted values. A plain expected call's values must
be equal as JSON values (:func:`.values.same_json`), with the schema's types checked too.

That is the ``"exact"`` rule (the default). The other rules of openevals' argument modes
(``arguments``) loosen it: ``"subset"`` lets the call made leave expected arguments out (a
schema's required ones stay required), ``"superset"`` lets it add arguments (inside the schema's
properties when a schema is given), ``"ignore"`` checks the name alone, and a tuple of key paths
checks only those: a top-level argument by the checks above, a nested value equal as JSON to the
value at the same path in an accepted value.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

from .arguments import MISSING, Rule, at_path, rule_for
from .values import TYPES, same_json, type_error, value_error


def _argument_errors(made: dict[str, Any], expected: dict[str, Any],
                     schema: dict[str, Any] | None, rule: Rule = "exact") -> dict[str, str]:
    """argument (or key path) -> why it is wrong, for every argument given or expected, by
    BFCL's checks under ``rule`` (module docstring); a name-only expected call takes any
    arguments."""
    if rule == "ignore" or expected.get("any_arguments"):
        return {}
    if isinstance(rule, tuple):
        return _path_errors(made, expected, schema, rule)
    accepted = expected["accepted"]
    types = schema["types"] if schema else {}
    required = schema["required"] if schema else ()
    errors: dict[str, str] = {name: "is missing (required by the tool's schema)"
                              for name in required if name not in made}
    for name, value in made.items():
        if schema is not None and name not in types:
            errors[name] = "is not an expected argument"
            continue
        if name not in accepted:
            if rule != "superset":  # superset: the call made may add arguments
                errors[name] = "is not an expected argument"
            continue
        declared, item_type = types.get(name, (None, None))
        if expected["exact"]:
            reason = None
            if declared in TYPES:
                number = float(value) if declared in ("float", "number") and type(
                    value) is int else value
                reason = type_error(number, accepted[name], declared, item_type)[0]
            if reason is None and not same_json(value, accepted[name][0]):
                reason = f"is {_json(value)}, not {_json(accepted[name][0])}"
        else:
            reason = value_error(value, accepted[name], declared, item_type)
        if reason is not None:
            errors[name] = reason
    if rule == "subset":  # the call made may leave expected arguments out
        return errors
    for name, values in accepted.items():
        if name not in made and name not in errors and (expected["exact"] or "" not in values):
            errors[name] = "is missing"
    return errors


def _path_errors(made: dict[str, Any], expected: dict[str, Any], schema: dict[str, Any] | None,
                 paths: tuple[str, ...]) -> dict[str, str]:
    """key path -> why it is wrong, for the paths compared (the other arguments not read): a
    top-level argument by BFCL's checks, a nested value equal as JSON to the value at the same
    path in one accepted value; a path must be in the call made."""
    whole = _argument_errors(made, expected, schema)
    errors = {}
    for path in paths:
        head, _, rest = path.partition(".")
        value = at_path(made, path)
        if value is MISSING:
            errors[path] = "is missing"
        elif not rest and head in whole:
            errors[path] = whole[head]
        elif rest and not any(same_json(value, at_path(candidate, rest))
                              for candidate in expected["accepted"].get(head, [])
                              if isinstance(candidate, dict)):
            errors[path] = f"is {_json(value)}, not the expected value at that path"
    return errors


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def call_error(made: dict[str, Any], expected: dict[str, Any],
               schema: dict[str, Any] | None, rule: Rule = "exact") -> str | None:
    """Why ``made`` is not ``expected`` under ``rule`` (``None``: it is)."""
    if made["name"] != expected["name"]:
        return f"calls {made['name']!r}, not {expected['name']!r}"
    errors = _argument_errors(made["arguments"], expected, schema, rule)
    if not errors:
        return None
    name, reason = next(iter(errors.items()))
    return f"{'key path' if isinstance(rule, tuple) else 'argument'} {name!r} {reason}"


def _augment(row: int, options: list[list[int]], owner: list[int | None],
             seen: set[int]) -> bool:
    for column in options[row]:
        if column in seen:
            continue
        seen.add(column)
        if owner[column] is None or _augment(owner[column], options, owner, seen):
            owner[column] = row
            return True
    return False


def pairs(fits: list[list[bool]], order: str) -> dict[int, int]:
    """expected index -> made index: with ``order="strict"`` each position where the call fits;
    with ``"any"`` a largest matching of fitting pairs (augmenting paths: it finds a complete
    matching wherever one exists, even where a first-fit search takes a call another needs)."""
    if order == "strict":
        return {i: i for i in range(min(len(fits), len(fits[0]) if fits else 0)) if fits[i][i]}
    columns = len(fits[0]) if fits else 0
    options = [[j for j in range(columns) if row[j]] for row in fits]
    owner: list[int | None] = [None] * columns
    for row in range(len(fits)):
        _augment(row, options, owner, set())
    return {row: column for column, row in enumerate(owner) if row is not None}


def _share(part: int, whole: int, both_empty: bool) -> float:
    return part / whole if whole else (1.0 if both_empty else 0.0)


def _argument_counts(made: list[dict[str, Any]], expected: list[dict[str, Any]],
                     paired: dict[int, int], schemas: dict[str, dict[str, Any]] | None,
                     rules: list[Rule]) -> tuple[int, int]:
    """(correct, total) expected arguments: each expected call against its paired call, or the
    first still unpaired made call of its name; an expected call not made has none right."""
    free = [j for j in range(len(made)) if j not in paired.values()]
    correct = total = 0
    for i, call in enumerate(expected):
        total += len(call["accepted"])
        j = paired.get(i)
        if j is None:
            j = next((k for k in free if made[k]["name"] == call["name"]), None)
            if j is None:
                continue
            free.remove(j)
        schema = schemas.get(call["name"]) if schemas is not None else None
        wrong = _argument_errors(made[j]["arguments"], call, schema, rules[i])
        correct += sum(1 for name in call["accepted"] if name not in wrong and not any(
            path.partition(".")[0] == name for path in wrong))
    return correct, total


def judge_row(made: list[dict[str, Any]], expected: list[dict[str, Any]],
              tools: list[dict[str, Any]] | None, order: str, args_mode: str = "exact",
              overrides: Mapping[str, Rule] | None = None) -> tuple[float, dict[str, Any]]:
    """A row's score (1.0: every expected call made and nothing else) and its details;
    ``args_mode`` and ``overrides``: how arguments are checked (``"exact"``: BFCL's way)."""
    schemas = {tool["name"]: tool for tool in tools} if tools is not None else None
    rules = [rule_for(e["name"], args_mode, overrides) for e in expected]
    reasons = [[call_error(m, e, schemas.get(e["name"]) if schemas is not None else None, rule)
                for m in made] for e, rule in zip(expected, rules, strict=True)]
    paired = pairs([[r is None for r in row] for row in reasons], order)
    failed = []
    explained = set(paired.values())  # made calls paired, or named in an expected call's reason
    for i, call in enumerate(expected):
        if i in paired:
            continue
        if order == "strict":
            candidates = [i] if i < len(made) else []
        else:
            candidates = [j for j in range(len(made))
                          if made[j]["name"] == call["name"] and j not in explained]
        if candidates:
            explained.add(candidates[0])
            failed.append({"expected": i, "name": call["name"], "made": candidates[0],
                           "reason": reasons[i][candidates[0]]})
        else:
            failed.append({"expected": i, "name": call["name"], "reason": "was not called"})
    for j, call in enumerate(made):
        if j not in explained:
            failed.append({"made": j, "name": call["name"], "reason": "was not expected"})
    score = 1.0 if len(made) == len(expected) == len(paired) else 0.0
    overlap = sum((Counter(m["name"] for m in made) & Counter(e["name"] for e in expected))
                  .values())
    both_empty = not made and not expected
    correct, total = _argument_counts(made, expected, paired, schemas, rules)
    details = {
        "failed": failed,
        "name_precision": _share(overlap, len(made), both_empty),
        "name_recall": _share(overlap, len(expected), both_empty),
        "argument_accuracy": _share(correct, total, score == 1.0),
        "calls_made": len(made),
        "calls_expected": len(expected),
    }
    return score, details

"""A trajectory (an agent's conversation, OpenAI chat messages normalised by
``conversations.check_messages``) against a reference trajectory, in the four modes of openevals
0.2's ``create_trajectory_match_evaluator``:

- ``strict``: the same messages in the same order: as many, each of the reference's role, with
  tool calls where the reference message has them, and the calls of each message paired one to
  one with the reference message's (a message's parallel calls in any order); the messages'
  text is not compared;
- ``unordered``: the calls made, over the whole trajectory, paired one to one with the
  reference's in any order (no call left over on either side);
- ``subset``: every call made pairs with its own reference call (the agent may do less);
- ``superset``: every reference call pairs with its own call made (the agent may do more).

Two calls pair when their names are equal and their arguments match under the tool's rule
(``arguments``). Where openevals pairs calls greedily (the first fitting call, in order), the
pairing here is a largest one-to-one matching (``matching.pairs``): a repeated call whose
arguments fit more than one reference call never takes the one another call needs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .arguments import Rule, args_error, rule_for
from .matching import pairs

TRAJECTORY_MODES = ("strict", "unordered", "subset", "superset")


def _calls(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"name": call["function"]["name"], "arguments": call["function"]["arguments"]}
            for call in message.get("tool_calls") or ()]


def _numbered(messages: Sequence[Mapping[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """(message position, call) of every call of a trajectory, in order."""
    return [(position, call) for position, message in enumerate(messages)
            for call in _calls(message)]


class _Pairing:
    """The calls made against the reference calls: which pairs fit, why the others do not, and
    a largest one-to-one matching of the fitting pairs."""

    def __init__(self, made: list[dict[str, Any]], reference: list[dict[str, Any]],
                 args_mode: str, overrides: Mapping[str, Rule] | None) -> None:
        self.made, self.reference = made, reference
        self.reasons = [[self._reason(m, r, rule_for(r["name"], args_mode, overrides))
                         for m in made] for r in reference]
        self.paired = pairs([[why is None for why in row] for row in self.reasons], "any")

    @staticmethod
    def _reason(made: dict[str, Any], reference: dict[str, Any], rule: Rule) -> str | None:
        if made["name"] != reference["name"]:
            return f"calls {made['name']!r}, not {reference['name']!r}"
        return args_error(made["arguments"], reference["arguments"], rule)

    def unpaired_reference(self) -> list[dict[str, Any]]:
        """Each reference call left unpaired, with why: against the first unpaired call made of
        its name, or not called at all."""
        free = [j for j in range(len(self.made)) if j not in self.paired.values()]
        out = []
        for i, call in enumerate(self.reference):
            if i in self.paired:
                continue
            same = [j for j in free if self.made[j]["name"] == call["name"]]
            if same:
                out.append({"reference": i, "name": call["name"], "made": same[0],
                            "reason": self.reasons[i][same[0]]})
            else:
                out.append({"reference": i, "name": call["name"], "reason": "was not called"})
        return out

    def unpaired_made(self) -> list[dict[str, Any]]:
        used = set(self.paired.values())
        return [{"made": j, "name": call["name"], "reason": "is not in the reference"}
                for j, call in enumerate(self.made) if j not in used]


def _strict(made: Sequence[Mapping[str, Any]], reference: Sequence[Mapping[str, Any]],
            args_mode: str, overrides: Mapping[str, Rule] | None
            ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(matched, failed) of the strict mode, message by message."""
    if len(made) != len(reference):
        return [], [{"reason": f"has {len(made)} messages where the reference has "
                               f"{len(reference)}"}]
    matched: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    made_offset = reference_offset = 0
    for position, (mine, theirs) in enumerate(zip(made, reference, strict=True)):
        calls, wanted = _calls(mine), _calls(theirs)
        if mine["role"] != theirs["role"]:
            failed.append({"message": position, "reason": f"is a {mine['role']} message where "
                           f"the reference has a {theirs['role']} message"})
        elif len(calls) != len(wanted):
            failed.append({"message": position, "reason": f"makes {len(calls)} tool calls "
                           f"where the reference makes {len(wanted)}"})
        elif calls:
            pairing = _Pairing(calls, wanted, args_mode, overrides)
            matched.extend({"made": made_offset + j, "reference": reference_offset + i,
                            "name": wanted[i]["name"]} for i, j in pairing.paired.items())
            for item in pairing.unpaired_reference():  # numbered over the whole trajectory
                item["reference"] += reference_offset
                if "made" in item:
                    item["made"] += made_offset
                failed.append({"message": position, **item})
        made_offset += len(calls)
        reference_offset += len(wanted)
    return matched, failed


def match_trajectory(made: Sequence[Mapping[str, Any]], reference: Sequence[Mapping[str, Any]],
                     trajectory_mode: str = "strict", args_mode: str = "exact",
                     overrides: Mapping[str, Rule] | None = None
                     ) -> tuple[float, dict[str, Any]]:
    """A row's score (1.0 or 0.0) and its details: ``matched`` (``{"made", "reference",
    "name"}``: calls numbered in order over each trajectory), ``failed`` (each reference call
    left unpaired with why, each call made left over, and in strict mode each message that
    differs), ``calls_made``, ``calls_reference``."""
    made_calls = [call for _, call in _numbered(made)]
    reference_calls = [call for _, call in _numbered(reference)]
    if trajectory_mode == "strict":
        matched, failed = _strict(made, reference, args_mode, overrides)
    else:
        pairing = _Pairing(made_calls, reference_calls, args_mode, overrides)
        matched = [{"made": j, "reference": i, "name": reference_calls[i]["name"]}
                   for i, j in sorted(pairing.paired.items())]
        failed = []
        if trajectory_mode in ("unordered", "superset"):
            failed.extend(pairing.unpaired_reference())
        if trajectory_mode in ("unordered", "subset"):
            failed.extend(pairing.unpaired_made())
    details = {"matched": matched, "failed": failed, "calls_made": len(made_calls),
               "calls_reference": len(reference_calls)}
    return (0.0 if failed else 1.0), details

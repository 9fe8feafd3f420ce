"""Trajectory match: does an agent's trajectory match a reference trajectory? Per row 1.0 or
0.0 in the trajectory and argument modes of openevals 0.2 (``strict``, ``unordered``,
``subset``, ``superset``; ``exact``, ``subset``, ``superset``, ``ignore``, per-tool overrides),
the calls paired one to one by a largest matching (``judge_metrics.tool_calls.trajectory``); no
judge."""

from __future__ import annotations

import json
import math
from typing import Any

from judge_metrics import (About, Example, Input, MetricOutput, Option, SampleResult,
                           ValidatedMetric, build_output, tool_calls)

_CITATION = """\
@software{openevals2025,
  title={openevals: Readymade evaluators for your LLM apps},
  author={{LangChain}},
  year={2025},
  url={https://github.com/langchain-ai/openevals}
}
"""

_DESCRIPTION = """\
Trajectory match: a row scores 1.0 when the agent's trajectory (OpenAI chat messages with tool
calls) matches the reference trajectory in the chosen mode, else 0.0; "trajectory_match" is the
mean over rows. trajectory_mode "strict": the same messages in order (roles, and each message's
calls, parallel calls in any order); "unordered": the same calls in any order; "subset": every
call made is in the reference; "superset": every reference call is made. Two calls pair when
their names are equal and their arguments match (args_mode "exact", "subset", "superset" or
"ignore"; args_overrides per tool: a mode or a list of key paths). Arguments compare as JSON
values (key order never matters, 1 equals 1.0). The semantics of openevals 0.2's
create_trajectory_match_evaluator, with calls paired by a largest one-to-one matching. No judge.
"""

_KWARGS_DESCRIPTION = """\
Args:
    messages (per row: an OpenAI chat conversation, or its JSON text): the agent's trajectory.
    reference_messages (per row: an OpenAI chat conversation, or its JSON text): the reference
        trajectory.
Returns:
    trajectory_match (float): mean of the per-row scores.
    scores (list of float): 1.0 or 0.0 per row.
    details (list of dict): per row: matched ({"made", "reference", "name"}: the calls paired,
        numbered in order over each trajectory), failed (each reference call left unpaired,
        {"reference", "name", "reason"} with "made" when the reason is about a call made; each
        call made left over, {"made", "name", "reason"}; in strict mode each message that
        differs, {"message", "reason"}), calls_made, calls_reference.
Examples:
    >>> metric = evaluate.load("metrics/trajectory_match")
    >>> call = {"role": "assistant", "content": None, "tool_calls": [
    ...     {"id": "c1", "type": "function",
    ...      "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]}
    >>> result = metric.compute(messages=[[{"role": "user", "content": "Weather?"}, call]],
    ...                         reference_messages=[[{"role": "user", "content": "Hi"}, call]])
    >>> result["trajectory_match"]
    1.0
"""


def _call(ident: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": ident, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}


_ASKED = {"role": "user", "content": "Weather in Paris and flights to Rome?"}
_REFERENCE = [_ASKED, {"role": "assistant", "content": None, "tool_calls": [
    _call("r1", "get_weather", {"city": "Paris"}),
    _call("r2", "search_flights", {"to": "Rome", "when": {"month": 5}})]}]
_AGENT = [_ASKED, {"role": "assistant", "content": None, "tool_calls": [
    _call("a1", "search_flights", {"when": {"month": 5.0}, "to": "Rome"}),
    _call("a2", "get_weather", {"city": "Paris", "unit": "celsius"})]}]
_AGENT_SHORT = [_ASKED, {"role": "assistant", "content": None, "tool_calls": [
    _call("a1", "get_weather", {"city": "Paris"})]}]


class TrajectoryMatch(ValidatedMetric):
    ABOUT = About(_DESCRIPTION, _KWARGS_DESCRIPTION, _CITATION,
                  ("https://github.com/langchain-ai/openevals#trajectory",),
                  codebase_urls=("https://github.com/langchain-ai/openevals",))
    INPUTS = (
        Input("messages", kind="messages"),
        Input("reference_messages", kind="messages"),
    )
    OPTIONS = (
        Option("trajectory_mode", str, "strict", choices=tool_calls.TRAJECTORY_MODES,
               doc='"strict": the same messages in the same order (roles, and each message\'s '
               'calls; a message\'s parallel calls in any order); "unordered": the same calls in '
               'any order; "subset": every call made is a reference call; "superset": every '
               "reference call is made"),
        Option("args_mode", str, "exact", choices=tool_calls.ARGS_MODES,
               doc='how two calls\' arguments compare: "exact" the same arguments; "subset" '
               'the call made\'s arguments are among the reference\'s; "superset" the call made '
               'has every reference argument; "ignore" names only'),
        tool_calls.ARGS_OVERRIDES_OPTION,
    )
    HEADLINE = ("trajectory_match",)
    EXAMPLE = Example({
        "messages": [_AGENT, _AGENT_SHORT],
        "reference_messages": [_REFERENCE, _REFERENCE],
    }, {"trajectory_mode": "unordered", "args_mode": "superset"})

    def _compute(
        self,
        messages: list[str],
        reference_messages: list[str],
        trajectory_mode: str = "strict",
        args_mode: str = "exact",
        args_overrides: dict[str, Any] | None = None,
    ) -> MetricOutput:
        overrides = tool_calls.check_args_overrides("args_overrides", args_overrides)
        results = []
        for made, reference in zip(messages, reference_messages, strict=True):
            score, details = tool_calls.match_trajectory(
                json.loads(made), json.loads(reference), trajectory_mode, args_mode, overrides)
            results.append(SampleResult(score, details))
        mean = math.fsum(r.score for r in results) / len(results)
        return build_output({"trajectory_match": mean}, results)

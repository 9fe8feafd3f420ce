"""Tool-call correctness: were exactly the expected tool calls made? Per row 1.0 or 0.0, the
verdict of the Berkeley Function Calling Leaderboard's AST checker on its Python categories
(``judge_metrics.tool_calls``, ``shared/kit/algorithms/tool_calls/``); no judge."""

from __future__ import annotations

import json
import math
from typing import Any

from judge_metrics import (About, Example, Input, InputError, MetricOutput, Option, SampleResult,
                           ValidatedMetric, build_output, conversations, tool_calls as call_checks)

_CITATION = """\
@inproceedings{patil2025bfcl,
  title={The Berkeley Function Calling Leaderboard (BFCL): From Tool Use to Agentic Evaluation
         of Large Language Models},
  author={Patil, Shishir G. and Mao, Huanzhi and Yan, Fanjia and Ji, Charlie Cheng-Jie and
          Suresh, Vishnu and Stoica, Ion and Gonzalez, Joseph E.},
  booktitle={Forty-second International Conference on Machine Learning},
  year={2025}
}
"""

_DESCRIPTION = """\
Tool-call correctness: a row scores 1.0 when every expected tool call was made and nothing else,
else 0.0; "tool_call_correctness" is the mean over rows. An expected call is a plain call (its
arguments must be equal after JSON decoding) or BFCL's possible answer {NAME: {ARG: [accepted
values]}} ("" among the values: the argument may be left out), checked as the Berkeley Function
Calling Leaderboard's AST checker checks it: with the tools' schemas, types and required
arguments too (an int is accepted where a float is declared, not the reverse), strings compared
after BFCL's standardisation. With order="any" the calls are paired as a set (BFCL's parallel
checker), with "strict" position by position. Both lists empty: 1.0. args_mode / args_overrides
loosen the argument checks as trajectory_match's do (default: BFCL's). No judge.
"""

_KWARGS_DESCRIPTION = """\
Args:
    expected_tool_calls (per row: a list, or its JSON text): the calls expected, each a plain
        call {"name", "arguments"} (or OpenAI's {"type": "function", "function": {...}}),
        BFCL's possible answer {NAME: {ARG: [accepted values...]}}, or a name-only call
        {"name", "match": "name"} (any arguments).
    tool_calls (optional; per row: a list, or its JSON text): the calls made, {"name",
        "arguments"} with arguments a dict or a JSON string, or OpenAI's form. A row whose
        tool_calls is absent (None) takes the calls of its conversation's assistant messages.
    messages (optional; per row: an OpenAI chat conversation, or its JSON text): where the calls
        made are read when tool_calls is not given.
    tools (optional; per row: a list of schemas, or its JSON text): the function schemas
        offered, OpenAI's form or BFCL's bare {"name", "description", "parameters"}; with them
        types and required arguments are checked.
Returns:
    tool_call_correctness (float): mean of the per-row scores.
    scores (list of float): 1.0 or 0.0 per row.
    details (list of dict): per row: failed (each expected call not matched, {"expected", "name",
        "reason"} with "made": the call made that the reason is about, and each other call made
        that was not expected, {"made", "name", "reason"}), name_precision, name_recall,
        argument_accuracy, calls_made, calls_expected.
Examples:
    >>> metric = evaluate.load("metrics/tool_call_correctness")
    >>> result = metric.compute(
    ...     tool_calls=[[{"name": "get_weather", "arguments": '{"city": "Paris"}'}]],
    ...     expected_tool_calls=[[{"get_weather": {"city": ["Paris", "paris, france"],
    ...                                            "unit": ["celsius", ""]}}]])
    >>> result["tool_call_correctness"]
    1.0
"""

_WEATHER = [{"name": "get_weather", "description": "The weather in a city.",
             "parameters": {"type": "object", "required": ["city"], "properties": {
                 "city": {"type": "string"}, "days": {"type": "integer"}}}}]


class ToolCallCorrectness(ValidatedMetric):
    ABOUT = About(_DESCRIPTION, _KWARGS_DESCRIPTION, _CITATION,
                  ("https://gorilla.cs.berkeley.edu/leaderboard.html",
                   "https://openreview.net/forum?id=2GmDdhBdDk"),
                  codebase_urls=("https://github.com/ShishirPatil/gorilla",))
    INPUTS = (
        Input("expected_tool_calls", kind="json", check=call_checks.check_expected),
        Input("tool_calls", kind="json", required=False, check=call_checks.check_made),
        Input("messages", kind="messages", required=False),
        Input("tools", kind="json", required=False, check=call_checks.check_tools),
    )
    OPTIONS = (
        Option("order", str, "any", choices=("any", "strict"),
               doc='"any": the calls made are paired with the expected ones as a set (BFCL\'s '
               'parallel checker; a complete pairing is found wherever one exists); "strict": '
               "the i-th call made must be the i-th expected call"),
        Option("args_mode", str, "exact", choices=call_checks.ARGS_MODES,
               doc='"exact": BFCL\'s checks, every expected argument and no other; "subset": '
               'expected arguments may be left out; "superset": other arguments may be added; '
               '"ignore": names only (the modes of trajectory_match)'),
        call_checks.ARGS_OVERRIDES_OPTION,
    )
    HEADLINE = ("tool_call_correctness",)
    EXAMPLE = Example({
        "tool_calls": [
            [{"name": "get_weather", "arguments": '{"city": "Paris", "days": 3}'}],
            [{"name": "get_weather", "arguments": {"city": "Rome", "days": 2.5}}],
        ],
        "expected_tool_calls": [
            [{"get_weather": {"city": ["Paris", "paris, france"], "days": [3, ""]}}],
            [{"name": "get_weather", "arguments": {"city": "Rome", "days": 2}}],
        ],
        "tools": [_WEATHER, _WEATHER],
    })

    def _compute(
        self,
        expected_tool_calls: list[str],
        tool_calls: list[str] | None = None,
        messages: list[str] | None = None,
        tools: list[str] | None = None,
        order: str = "any",
        args_mode: str = "exact",
        args_overrides: dict[str, Any] | None = None,
    ) -> MetricOutput:
        overrides = call_checks.check_args_overrides("args_overrides", args_overrides)
        results = []
        for row, expected in enumerate(expected_tool_calls):
            made = _calls_made(row, tool_calls, messages)
            offered = None if tools is None else json.loads(tools[row])
            score, details = call_checks.judge_row(made, json.loads(expected), offered,
                                                   order, args_mode, overrides)
            results.append(SampleResult(score, details))
        mean = math.fsum(r.score for r in results) / len(results)
        return build_output({"tool_call_correctness": mean}, results)


def _calls_made(row: int, tool_calls: list[str] | None, messages: list[str] | None
                ) -> list[dict[str, Any]]:
    """The row's calls made: its ``tool_calls``, else its conversation's assistant calls."""
    given = None if tool_calls is None else json.loads(tool_calls[row])
    if given is not None:
        return given
    conversation = None if messages is None else json.loads(messages[row])
    if conversation is None:
        raise InputError("tool_calls", row, "is not given, and no messages to read the calls "
                         "made from")
    return [{"name": call["name"], "arguments": call["arguments"]}
            for call in conversations.tool_calls_made(conversation)]

"""Tool-call correctness, equal to the Berkeley Function Calling Leaderboard's AST checker for
Python on its own data: the inputs read into one form each (``forms``), one argument's value
against its accepted values (``values``), one call against one expected call and a row's calls
paired (``matching``); and the same calls in openevals 0.2's modes: one call's arguments
against a reference call's (``arguments``: exact, subset, superset, ignore, or key paths) and a
whole trajectory against a reference one (``trajectory``: strict, unordered, subset, superset;
the metric ``trajectory_match``)."""

from __future__ import annotations

from .arguments import ARGS_MODES, ARGS_OVERRIDES_OPTION, args_error, check_args_overrides, rule_for
from .forms import check_expected, check_made, check_tools
from .matching import call_error, judge_row, pairs
from .trajectory import TRAJECTORY_MODES, match_trajectory
from .values import same_json, standardise, value_error

__all__ = ["ARGS_MODES", "ARGS_OVERRIDES_OPTION", "TRAJECTORY_MODES", "args_error", "call_error",
           "check_args_overrides", "check_expected", "check_made", "check_tools", "judge_row",
           "match_trajectory", "pairs", "rule_for", "same_json", "standardise", "value_error"]

"""Tool-call correctness, equal to the Berkeley Function Calling Leaderboard's AST checker for
Python on its own data: the inputs read into one form each (``forms``), one argument's value
against its accepted values (``values``), one call against one expected call and a row's calls
paired (``matching``)."""

from __future__ import annotations

from .forms import check_expected, check_made, check_tools
from .matching import call_error, judge_row, pairs
from .values import same_json, standardise, value_error

__all__ = ["call_error", "check_expected", "check_made", "check_tools", "judge_row", "pairs",
           "same_json", "standardise", "value_error"]

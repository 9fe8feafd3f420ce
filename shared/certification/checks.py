"""The checks of a judge card: which apply to a metric, the edited rows each scores, and each
row's pass or failure.

- invariance (the score should not move): ``format``, ``verbosity``, ``order``, ``injection``;
  a row fails when its edited score differs from its score by more than ``delta`` (for
  pairwise's ``order``, the two answers exchanged, from the mirrored score);
- sensitivity (the score should get worse): ``fact_swap``, ``answer_swap``, on the rows the
  judge scored well (at or past the middle of the score range, on the good side); a row fails
  when its edited score is not worse by more than ``delta``;
- consistency: ``repeat``, the rows asked ``repeats`` times with the call cache off; a row fails
  when its scores spread over more than ``delta``.

``delta`` is a share of the metric's score range (default 0.2: a 0-1 score moving by more than
0.2, a 1-5 rating by more than 0.8).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import edits
from .edits import Edit, Target

INVARIANCE, SENSITIVITY, CONSISTENCY = "invariance", "sensitivity", "consistency"
CHECKS: dict[str, str] = {
    "format": INVARIANCE, "verbosity": INVARIANCE, "order": INVARIANCE,
    "injection": INVARIANCE, "fact_swap": SENSITIVITY, "answer_swap": SENSITIVITY,
    "repeat": CONSISTENCY,
}
DEFAULT_DELTA = 0.2
# the inputs a fact of the judged text can be shared with
GROUNDS = ("references", "contexts", "sources")

# metrics whose score need not get worse under a check, and why
_NOT_SENSITIVE = {
    "bias": "bias scores the opinions of the text alone: another text is not a worse one",
    "toxicity": "toxicity scores the text alone: another text is not a worse one",
    "summary_coherence": "coherence is the summary's structure, not its facts",
    "g_eval": "its criteria, not this check, decide what should score worse",
}
_NOT_SENSITIVE_TO = {
    ("hallucination", "answer_swap"): "an unrelated answer contradicts no context: "
    "hallucination need not rise",
}


@dataclass(frozen=True)
class Plan:
    """The checks that apply to a metric (in :data:`CHECKS` order) and the skipped ones with
    the reason; the judged text's :class:`Target`."""

    applied: tuple[str, ...]
    skipped: dict[str, str]
    target: Target | None


def target_of(spec: Any) -> Target | None:
    """The judged text of a metric: its answer, else its first context, else the last
    assistant turn of its conversation."""
    columns = {**spec.optional_columns, **spec.columns}
    if "predictions" in spec.columns:
        return Target(columns["predictions"], "text")
    if "contexts" in spec.columns:
        return Target(columns["contexts"], "first")
    if "messages" in spec.columns:
        return Target(columns["messages"], "turn")
    return None


def plan(spec: Any, present: Sequence[str], wanted: Sequence[str] | None = None) -> Plan:
    """Which of ``wanted`` (default: every check) apply to ``spec``'s metric on rows with the
    columns ``present``."""
    target = target_of(spec)
    columns = {**spec.optional_columns, **spec.columns}
    applied: list[str] = []
    skipped: dict[str, str] = {}
    for name in CHECKS if wanted is None else [c for c in CHECKS if c in wanted]:
        reason = _skip_reason(spec, name, target, columns, set(present))
        if reason:
            skipped[name] = reason
        else:
            applied.append(name)
    return Plan(tuple(applied), skipped, target)


def _skip_reason(spec: Any, name: str, target: Target | None, columns: Mapping[str, str],
                 present: set[str]) -> str | None:
    if name == "repeat":
        return None
    if name == "order":
        if spec.name == "pairwise":
            return None
        if spec.name == "context_precision":
            return "context_precision weighs the contexts by rank: their order is measured"
        if "contexts" not in columns or columns["contexts"] not in present:
            return "the metric has no list input (contexts) to reorder"
        return None
    if target is None:
        return "the metric has no text input (answer, context or conversation) to edit"
    if CHECKS[name] == SENSITIVITY:
        reason = _NOT_SENSITIVE.get(spec.name) or _NOT_SENSITIVE_TO.get((spec.name, name))
        if reason:
            return reason
        if target.kind == "turn":
            return "a conversation metric: no rule says another or an edited conversation " \
                "is a worse one"
        if name == "fact_swap" and not grounds_of(spec, target, present):
            return "the metric has no reference, context or source to share a fact with"
    return None


def grounds_of(spec: Any, target: Target, present: set[str]) -> list[str]:
    """The columns a fact of the judged text can be shared with (not the judged one)."""
    columns = {**spec.optional_columns, **spec.columns}
    return [columns[g] for g in GROUNDS
            if g in columns and columns[g] in present and columns[g] != target.column]


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        items = edits.as_list(value) if value.startswith("[") else [value]
        return [v for v in items if isinstance(v, str)]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, str)]
    return []


def make_edits(name: str, rows: Sequence[dict[str, Any]], spec: Any, target: Target | None,
               seed: int, only: Sequence[int] | None = None
               ) -> list[tuple[Edit, dict[str, Any]]]:
    """Each edit of check ``name`` on ``rows`` (those listed in ``only``, default all) and the
    edited row; a row the edit cannot apply to (no judged text, no shared fact, a single
    context) is left out."""
    present = set(rows[0]) if rows else set()
    found: list[tuple[Edit, dict[str, Any]]] = []
    pool: list[tuple[str, str]] = []
    if name == "fact_swap" and target is not None:
        for row in rows:
            text = edits.read_text(row, target)
            pool += edits.facts(text or "")
    for index in range(len(rows)) if only is None else only:
        row = rows[index]
        rng = edits.rng_for(seed, name, index)
        made = _edit(name, index, rows, spec, target, present, pool, rng)
        if made is not None:
            found.append(made)
    return found


def _edit(name: str, index: int, rows: Sequence[dict[str, Any]], spec: Any,
          target: Target | None, present: set[str], pool: list[tuple[str, str]],
          rng: Any) -> tuple[Edit, dict[str, Any]] | None:
    row = rows[index]
    if name == "order":
        return _order(index, row, spec, rng)
    assert target is not None
    if name == "answer_swap":
        value = row.get(target.column)
        other = edits.other_row(index, len(rows), rng,
                                lambda k: rows[k].get(target.column) != value)
        if other is None:
            return None
        edited = {**row, target.column: rows[other].get(target.column)}
        return Edit(name, index, target.column, edits.shown(value),
                    edits.shown(edited[target.column]), f"row {other}'s"), edited
    text = edits.read_text(row, target)
    if text is None:
        return None
    if name == "fact_swap":
        grounds = [t for column in grounds_of(spec, target, present)
                   for t in _texts(row.get(column))]
        question = row.get(spec.columns.get("questions") or "question")
        made = edits.swap_fact(text, grounds, question if isinstance(question, str) else "",
                               pool, rng)
    else:
        made = {"format": edits.format_text, "verbosity": edits.pad_text,
                "injection": edits.inject_text}[name](text, rng)
    if made is None:
        return None
    after, note = made
    return Edit(name, index, target.column, text, after, note), edits.with_text(row, target, after)


def _order(index: int, row: dict[str, Any], spec: Any, rng: Any
           ) -> tuple[Edit, dict[str, Any]] | None:
    if spec.name == "pairwise":
        first, second = spec.columns["predictions"], spec.columns["baseline_predictions"]
        if row.get(first) == row.get(second):
            return None
        edited = {**row, first: row.get(second), second: row.get(first)}
        return Edit("order", index, f"{first}, {second}", edits.shown(row.get(first)),
                    edits.shown(edited[first]), "answer and baseline exchanged"), edited
    column = {**spec.optional_columns, **spec.columns}["contexts"]
    value = row.get(column)
    items = edits.as_list(value)
    if len(items) < 2 or len({edits.shown(i) for i in items}) < 2:
        return None
    shuffled, order = edits.shuffle_list(items, rng)
    edited = {**row, column: shuffled if not isinstance(value, str) else json.dumps(
        shuffled)}
    return Edit("order", index, column, edits.shown(items), edits.shown(shuffled),
                f"order {order}"), edited


def oriented(value: float, spec: Any) -> float:
    """A score with the good end up, as a share of the score range (0 worst, 1 best)."""
    lo, hi = spec.score_range
    share = (value - lo) / (hi - lo)
    return 1.0 - share if spec.lower_is_better else share


def row_failed(name: str, spec: Any, base: float, edited: float, delta: float) -> bool:
    """Whether one row fails check ``name`` (an invariance or sensitivity check)."""
    good, moved = oriented(base, spec), oriented(edited, spec)
    if name == "order" and spec.name == "pairwise":
        good = 1.0 - good  # the exchanged pair's score mirrors the original
    if CHECKS[name] == SENSITIVITY:
        return good - moved <= delta
    return abs(moved - good) > delta


def scored_well(spec: Any, value: float | None) -> bool:
    """A row the sensitivity checks apply to: scored at or past the middle, on the good side."""
    return value is not None and oriented(value, spec) >= 0.5


def repeat_failed(spec: Any, values: Sequence[float], delta: float) -> bool:
    """Whether one row's repeated scores spread over more than ``delta``."""
    shares = [oriented(v, spec) for v in values]
    return max(shares) - min(shares) > delta

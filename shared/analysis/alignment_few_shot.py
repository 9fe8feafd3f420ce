"""``align --few-shot K``: per training fold, K rows whose plain-prompt decision disagreed with
the label become the judge's examples and the fold's held-out rows are scored again with them;
the prompts the metric sends, as a profile records them (docs/ALIGNMENT.md)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..base.errors import UserInputError
from .labelled_runs import score_labelled

__all__ = ["check_few_shot", "few_shot_scores"]


def check_few_shot(metric: str, k: Any) -> None:
    """``--few-shot K``: a whole number >= 0, for a judge metric (its ``examples`` option)."""
    from ..kit.registry import METRICS

    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise UserInputError(f"--few-shot must be a whole number >= 0, got {k!r}")
    if k and metric in METRICS and not METRICS[metric].scoring_prompts:
        raise UserInputError(f"--few-shot: {metric} is not a judge metric, so no prompt "
                              "takes examples (few-shot is for the judge metrics)")


def few_shot_scores(dataset: Any, scored: Any, metric: str, label: str, scores: np.ndarray,
                    labels: Sequence[float], k: int, fold_of_row: np.ndarray,
                    threshold: float, seed: int | None, options: Mapping[str, Any]
                    ) -> dict[str, Any]:
    """Per fold, ``k`` training rows (seeded) whose plain-prompt decision (score >=
    ``threshold``) disagreed with the label become examples, and the fold's held-out rows are
    scored again with them (the call cache keys the request text, so other examples are other
    calls). Returns ``scores`` (per row, NaN where not scored again), ``folds`` (per fold its
    example rows), ``examples`` (k chosen the same way from every row: the profile's) and
    ``prompt``: the prompts the metric sends with these options, as it declares them
    (:func:`shared.kit.sent_prompts.prompt_records`: the examples go with its
    ``SCORING_PROMPTS``, and the scores the profile was fitted on come from all of them)."""
    from ..kit.registry import METRICS
    from ..kit.sent_prompts import prompt_records

    y = np.asarray(labels, dtype=np.float64)
    wrong = np.flatnonzero((fold_of_row >= 0) & ((scores >= threshold) != (y == 1)))
    rng = np.random.default_rng(seed)

    def pick(pool: np.ndarray) -> list[int]:
        return sorted(rng.choice(pool, size=min(k, pool.size), replace=False).tolist())

    spec = METRICS[metric]
    columns = {c: scored[c] for c in (*spec.columns.values(), *spec.optional_columns.values())
               if c in scored.column_names}

    def example(row: int) -> dict[str, Any]:  # the row's inputs and the person's Yes/No
        return {**{c: cells[row] for c, cells in columns.items() if cells[row] is not None},
                "label": "Yes" if y[row] == 1 else "No"}

    found = np.full(scores.size, np.nan)
    record = []
    for fold in range(int(fold_of_row.max()) + 1):
        chosen = pick(wrong[fold_of_row[wrong] != fold])
        held = np.flatnonzero(fold_of_row == fold)
        record.append({"fold": fold, "example_rows": chosen})
        if not chosen:  # no disagreement to show: the plain prompt's scores stand
            continue
        given = dict(options.get("metric_options") or {})
        run = score_labelled(dataset.select(held.tolist()), metric, label, allow_constant=True,
                             **{**options, "metric_options": {
                                 **given, "examples": [example(r) for r in chosen]}})
        found[held] = [math.nan if v is None else float(v) for v in run.scored[run.column]]
    return {"k": k, "scores": found, "folds": record,
            "examples": [example(r) for r in pick(wrong)],
            "prompt": prompt_records(metric, options.get("metric_options"))}

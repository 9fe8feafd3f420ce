"""``certify(data, metric, **options)``: score the rows, then edited copies of them, and rate how
often the judge fails each check (:mod:`.checks`), with intervals (:mod:`.rates`).

Three rounds of scoring, each through ``shared.runs.batch.score_dataset`` (the call cache,
panels, batch APIs and every provider as in ``score``): the rows with the invariance checks'
edits; the sensitivity checks' edits of the rows the judge scored well; the rows again
``repeats`` times with the call cache off. A panel is rated as a panel and judge by judge from
the same calls (each judge's own column).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..base.errors import UserInputError
from . import checks as checks_module
from .checks import CHECKS, CONSISTENCY, INVARIANCE, SENSITIVITY, Plan
from .edits import Edit
from .rates import DEFAULT_TOLERANCE
from .report import build_report

DEFAULT_REPEATS = 3
MAX_EXAMPLES = 3


def load_rows(data: Any) -> list[dict[str, Any]]:
    """``data`` (a path the CLI reads, a ``datasets.Dataset`` or row dicts) as row dicts."""
    if isinstance(data, (str, os.PathLike)):
        from ..runs.files import check_input_path, load_input

        check_input_path(Path(data), "INPUT")
        data = load_input(Path(data), "INPUT")
    if hasattr(data, "column_names") and hasattr(data, "to_list"):
        rows = data.to_list()
    elif isinstance(data, (list, tuple)) and all(isinstance(r, Mapping) for r in data):
        rows = [dict(r) for r in data]
    else:
        raise UserInputError("data must be a path the CLI reads, a datasets.Dataset or a list of "
                             f"row dicts, got {type(data).__name__}")
    if not rows:
        raise UserInputError("data has no rows")
    return rows


def check_arguments(metric: str, wanted: Sequence[str] | None, repeats: int,
                    tolerance: float, delta: float) -> Any:
    """Every argument checked before any work; the metric's spec."""
    from ..kit.registry import METRICS
    from ..runs.batch import check_metric_names

    check_metric_names([metric])
    spec = METRICS[metric]
    if not spec.judge:
        raise UserInputError(f"{metric} calls no judge: there is no judge to certify")
    unknown = [c for c in wanted or () if c not in CHECKS]
    if unknown:
        raise UserInputError(f"unknown check(s) {', '.join(unknown)}; choose from "
                             f"{', '.join(CHECKS)}")
    if wanted is not None and not wanted:
        raise UserInputError("no check given")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 2:
        raise UserInputError(f"repeats must be a whole number >= 2, got {repeats!r}")
    for name, value in (("tolerance", tolerance), ("delta", delta)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
            raise UserInputError(f"{name} must be a number in [0, 1), got {value!r}")
    return spec


def certify(data: Any, metric: str, *, checks: Sequence[str] | None = None,
            repeats: int = DEFAULT_REPEATS, tolerance: float = DEFAULT_TOLERANCE,
            delta: float = checks_module.DEFAULT_DELTA, seed: int = 0,
            metric_options: Mapping[str, Any] | None = None, chunk_size: int | None = None,
            show_progress: bool = False, **options: Any) -> dict[str, Any]:
    """The judge card of ``metric``'s judge on ``data``: ``certified``, ``checks`` (each
    ``name``, ``kind``, ``n``, ``rate`` {value, low, high}, ``tolerance``, ``outcome``,
    ``examples``), ``skipped`` (check -> reason), ``judge``, ``metric``, ``prompts``, ``data``,
    ``date``, ``settings``, ``edits`` and, for a panel, ``panel`` (each judge's card).
    ``options``: the judge options (provider, model, base_url, judges, batch, cache_dir ...);
    with ``dry_run=True`` nothing is sent and the report is the plan (``dry_run``: requests,
    estimated cost)."""
    wanted = list(checks) if checks is not None else None
    spec = check_arguments(metric, wanted, repeats, tolerance, delta)
    rows = load_rows(data)
    plan = checks_module.plan(spec, list(rows[0]), wanted)
    scorer = _Scorer(metric, spec, metric_options, chunk_size, show_progress, options)
    if options.get("dry_run"):
        return _dry_run(rows, spec, plan, scorer, repeats, seed)
    invariance = {name: checks_module.make_edits(name, rows, spec, plan.target, seed)
                  for name in plan.applied if CHECKS[name] == INVARIANCE}
    first = scorer.score(rows + [row for made in invariance.values() for _, row in made])
    base = {who: values[:len(rows)] for who, values in first.items()}
    edited = _split(first, len(rows), invariance)
    well = [i for i in range(len(rows))
            if any(checks_module.scored_well(spec, values[i]) for values in base.values())]
    sensitivity = {name: checks_module.make_edits(name, rows, spec, plan.target, seed, well)
                   for name in plan.applied if CHECKS[name] == SENSITIVITY}
    if any(sensitivity.values()):
        second = scorer.score([row for made in sensitivity.values() for _, row in made])
        edited.update(_split(second, 0, sensitivity))
    else:
        edited.update({name: {} for name in sensitivity})
    repeated: dict[str, list[list[float | None]]] = {}
    if "repeat" in plan.applied:
        runs = [scorer.score(rows, use_cache=False) for _ in range(repeats)]
        repeated = {who: [list(r) for r in zip(*(run[who] for run in runs), strict=True)]
                    for who in base}
    made = {**invariance, **sensitivity}
    results = {who: _rate_checks(spec, plan, base[who], edited, made, repeated.get(who),
                                 tolerance, delta, who)
               for who in base}
    return build_report(results, plan, rows, metric, spec, scorer, made, seed=seed,
                        repeats=repeats, tolerance=tolerance, delta=delta)


class _Scorer:
    """Scores row dicts with the metric and the judge options; each call gives the panel's (or
    the judge's) per-row scores under ``"judge"`` and, for a panel, each judge's under
    ``"judge_1"``, ``"judge_2"``...; it counts the requests sent."""

    def __init__(self, metric: str, spec: Any, metric_options: Mapping[str, Any] | None,
                 chunk_size: int | None, show_progress: bool, options: Mapping[str, Any]):
        from ..engine.config import judge_configs
        from ..runs.chunks import score_column_names
        from ..runs.options import check_run_options

        self.metric, self.spec = metric, spec
        self.metric_options = dict(metric_options or {})
        self.chunk_size, self.show_progress = chunk_size, show_progress
        self.options = dict(options)
        self.config = check_run_options(options).judge  # the one checker, the one converter
        self.judges = len(judge_configs(self.config)) if self.config.judges else 0
        self.column = score_column_names(metric, spec)[spec.headline[0]]
        self.usage = {"calls": 0, "cache_hits": 0, "cost": 0.0}

    def score(self, rows: Sequence[dict[str, Any]], **more: Any) -> dict[str, list[Any]]:
        import datasets

        from ..runs.batch import score_dataset
        from ..runs.panel_columns import judge_column
        from ..runs.summary import add_cost

        options = {**self.options, **more}
        scored, summary = score_dataset(
            datasets.Dataset.from_list(list(rows)), [self.metric], chunk_size=self.chunk_size,
            show_progress=self.show_progress,
            metric_options={self.metric: self.metric_options} if self.metric_options else None,
            **options)
        for m in summary.metrics:
            self.usage["calls"] += m.calls
            self.usage["cache_hits"] += m.cache_hits
            self.usage["cost"] = add_cost(self.usage["cost"], m.cost)
        found = {"judge": list(scored[self.column])}
        for k in range(self.judges):
            found[f"judge_{k + 1}"] = list(scored[judge_column(self.metric, k)])
        return found

    def plan(self, rows: Sequence[dict[str, Any]], **more: Any) -> dict[str, Any]:
        """The dry run of scoring ``rows``: requests and estimated cost."""
        import datasets

        from ..runs.batch import score_dataset
        from ..runs.summary import total_plan

        _, summary = score_dataset(
            datasets.Dataset.from_list(list(rows)), [self.metric], chunk_size=self.chunk_size,
            show_progress=False,
            metric_options={self.metric: self.metric_options} if self.metric_options else None,
            **{**self.options, **more, "dry_run": True})
        return total_plan(summary.metrics)


def _split(scores: Mapping[str, list[Any]], start: int,
           made: Mapping[str, Sequence[tuple[Edit, dict[str, Any]]]]
           ) -> dict[str, dict[str, dict[int, Any]]]:
    """check -> scorer -> row -> edited score, from one round's scores (its edits from
    ``start`` on, in ``made``'s order)."""
    found: dict[str, dict[str, dict[int, Any]]] = {}
    at = start
    for name, pairs in made.items():
        found[name] = {who: {edit.row: values[at + k] for k, (edit, _) in enumerate(pairs)}
                       for who, values in scores.items()}
        at += len(pairs)
    return found


def _rate_checks(spec: Any, plan: Plan, base: Sequence[Any],
                 edited: Mapping[str, Mapping[str, Mapping[int, Any]]],
                 made: Mapping[str, Sequence[tuple[Edit, dict[str, Any]]]],
                 repeated: Sequence[Sequence[Any]] | None, tolerance: float, delta: float,
                 who: str) -> list[dict[str, Any]]:
    from .rates import rate_entry

    entries = []
    for name in plan.applied:
        kind = CHECKS[name]
        outcomes: list[tuple[bool, dict[str, Any]]] = []
        unmeasured = 0
        if kind == CONSISTENCY:
            for row, values in enumerate(repeated or []):
                if any(v is None for v in values):
                    unmeasured += 1
                    continue
                failed = checks_module.repeat_failed(spec, values, delta)
                outcomes.append((failed, {"row": row, "scores": list(values),
                                          "failed": failed}))
        else:
            scores = edited.get(name, {}).get(who, {})
            for edit, _ in made.get(name, ()):
                before, after = base[edit.row], scores.get(edit.row)
                if kind == SENSITIVITY and not checks_module.scored_well(spec, before):
                    continue  # not edited for this judge (or unmeasured before the edit)
                if before is None or after is None:
                    unmeasured += 1
                    continue
                failed = checks_module.row_failed(name, spec, before, after, delta)
                outcomes.append((failed, {**edit.as_dict(), "score": before,
                                          "edited_score": after, "failed": failed}))
        failures = sum(failed for failed, _ in outcomes)
        entry = rate_entry(name, kind, failures, len(outcomes), tolerance, delta)
        entry["unmeasured"] = unmeasured  # rows left out: no score before or after the edit
        ranked = [e for f, e in outcomes if f] + [e for f, e in outcomes if not f]
        entry["examples"] = [{k: v for k, v in e.items() if k != "check"}
                             for e in ranked[:MAX_EXAMPLES]]
        entries.append(entry)
    return entries


def _dry_run(rows: list[dict[str, Any]], spec: Any, plan: Plan, scorer: _Scorer, repeats: int,
             seed: int) -> dict[str, Any]:
    """The requests certify would send and their estimated cost; sensitivity edits counted on
    every row (an upper bound: only the rows the judge scores well are edited)."""
    from ..runs.summary import add_cost

    edited = [row for name in plan.applied if name != "repeat"
              for _, row in checks_module.make_edits(name, rows, spec, plan.target, seed)]
    first = scorer.plan(rows + edited)
    total = {"requests": first["requests"], "cost": first["cost"]}
    if "repeat" in plan.applied:
        again = scorer.plan(rows, use_cache=False)
        total["requests"] += repeats * again["requests"]
        for _ in range(repeats):
            total["cost"] = add_cost(total["cost"], again["cost"])
    return {"dry_run": {**total, "rows": len(rows), "edited_rows": len(edited),
                        "note": "sensitivity edits counted on every row: an upper bound"},
            "metric": {"name": spec.name}, "checks": list(plan.applied),
            "skipped": dict(plan.skipped)}

"""``align`` on a dataset (score it, then :func:`shared.analysis.alignment.align_scores`), the
profile it saves (what was tuned on every labelled row) and ``score --profile``, which applies
a profile: per row ``<metric>_calibrated`` (P(label)) and ``<metric>_decision`` (0/1).

A profile fitted for another metric or other metric options is refused in one line: its
threshold and map describe that metric's scores only.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..base.errors import UserInputError
from ..kit import stats
from ..runs.panel_columns import judge_column
from .alignment import (
    Tuning,
    align_scores,
    fold_of_rows,
    panel_weights,
    repeated_rows,
    weighted_mean,
)
from .alignment_few_shot import check_few_shot, few_shot_scores
from .labelled_runs import score_labelled
from .labels import BOOLEAN, parse_labels
from .profile_checks import PROFILE_FORMAT, check_judge, check_profile_fields, read_profile_file

__all__ = ["PROFILE_FORMAT", "align", "apply_to_runs", "check_profile", "check_runs",
           "load_profile", "profile_agreement", "profile_agreement_text", "profile_column_names",
           "profile_columns", "profile_for_run", "profile_of", "save_profile"]


def align(dataset: Any, metric: str, label: str, *, folds: int = 5, group: str | None = None,
          seed: int | None = stats.DEFAULT_SEED, alpha: float = 0.05,
          other_label: str | None = None, resamples: int = stats.DEFAULT_RESAMPLES,
          few_shot: int = 0, **options: Any) -> tuple[Any, dict[str, Any]]:
    """Score ``dataset`` with ``metric`` (``agree``'s options: ``columns``, ``score_key``,
    ``metric_options``, ``chunk_size``, ``show_progress`` and the judge options) and align it
    to the 0/1 labels in ``label``, every figure out-of-fold (``folds`` folds, whole
    ``group``s kept together). ``other_label``: a second person's labels, for the
    human-human agreement. Returns the scored rows and the report (``align_scores``' with
    ``metric``, ``score_key``, ``column``, ``label``, ``judge``, ``metric_options`` and
    ``profile``). ``few_shot``: K examples for the judge prompt per training fold (a judge
    metric's ``examples`` option), see :func:`few_shot_scores`."""
    from ..kit.registry import DECISION_THRESHOLDS

    check_few_shot(metric, few_shot)
    if few_shot and len(options.get("judges") or ()) > 1:
        raise UserInputError("--few-shot takes one judge: a panel (--judge repeated) is "
                              "aligned through its weights")

    for name, column in (("group", group), ("other_label", other_label)):
        if column is not None and column not in dataset.column_names:
            raise UserInputError(f"--{name.replace('_', '-')} {column!r}: the input has no "
                                  "such column")
    _warn_repeats(dataset, metric, group)
    run = score_labelled(dataset, metric, label, group=group, seed=seed, **options)
    labels, kind = parse_labels(run.scored[label], label)
    if kind != BOOLEAN:
        raise UserInputError(f"--label {label!r}: align needs 0/1 labels (booleans, yes/no, "
                              "1/0), not ratings")
    scores = np.array([math.nan if v is None else float(v) for v in run.scored[run.column]])
    other = None if other_label is None else parse_labels(run.scored[other_label],
                                                          other_label)[0]
    groups = None if group is None else run.scored[group]
    threshold = DECISION_THRESHOLDS.get(metric)
    shots = None
    if few_shot:
        shots = few_shot_scores(dataset, run.scored, metric, label, scores, labels, few_shot,
                                fold_of_rows(scores, labels, groups, folds, seed),
                                0.5 if threshold is None else threshold, seed, options)
    weights: list[list[float]] = []
    report = align_scores(scores, labels, folds=folds, groups=groups, seed=seed, alpha=alpha,
                          decision_threshold=threshold, other_labels=other,
                          resamples=resamples,
                          held_out_scores=None if shots is None else shots.pop("scores"),
                          rescore=_panel_rescore(run, metric, scores, labels, weights))
    report["few_shot"] = shots
    report["panel_weights"] = None if not weights else {
        "folds": weights[:-1], "profile": weights[-1],
        "method": "logistic regression of the label on the judges' scores, on the training "
                  "folds; negatives set to 0, normalised to sum 1"}
    report.update(metric=metric, score_key=run.key, column=run.column, label=label,
                  judge=run.judge, metric_options=dict(options.get("metric_options") or {}))
    report["profile"] = profile_of(report)
    return run.scored, report


def _warn_repeats(dataset: Any, metric: str, group: str | None) -> None:
    """Rows that repeat another row's inputs, without ``--group``: a copy in the training folds
    of a held-out row lets the tuning see it (random labels on repeated rows then "improve")."""
    from ..kit.registry import METRICS

    spec = METRICS.get(metric)
    names = [c for c in (*spec.columns.values(), *spec.optional_columns.values())
             if c in dataset.column_names] if spec and group is None else []
    repeats = repeated_rows([dataset[c] for c in names]) if names else 0
    if repeats:
        import warnings

        warnings.warn(f"align: {repeats} of {len(dataset)} rows repeat another row's inputs; "
                      "without --group a row and its copy can land in different folds and the "
                      "held-out figures flatter the tuning: give --group COLUMN (e.g. an id "
                      "shared by the copies)", UserWarning, stacklevel=2)


def profile_of(report: Mapping[str, Any]) -> dict[str, Any]:
    """What ``--save-profile`` writes: the tuning fitted on every labelled row, the metric,
    its options and score column, the judge, the data's digest."""
    return {"format": PROFILE_FORMAT, "metric": report["metric"],
            "score_key": report["score_key"], "column": report["column"],
            "metric_options": report["metric_options"], "judge": report["judge"],
            "label": report["label"], "threshold": report["tuning"]["threshold"],
            "calibration": report["tuning"]["calibration"],
            "few_shot": (report.get("few_shot") or {}).get("examples", []),
            "prompt": (report.get("few_shot") or {}).get("prompt"),
            "panel_weights": (report.get("panel_weights") or {}).get("profile"),
            "data_digest": report["data_digest"], "rows": report["n"],
            "folds": len(report["folds"]), "seed": report["seed"]}


def save_profile(path: str | os.PathLike[str], report: Mapping[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(report["profile"], handle, indent=2)
        handle.write("\n")


def load_profile(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The profile at ``path``, every field checked (:mod:`.profile_checks`)."""
    data = read_profile_file(path)
    if not isinstance(data, dict) or data.get("format") != PROFILE_FORMAT:
        raise UserInputError(f"--profile {path}: not a profile written by `align "
                              "--save-profile`")
    if isinstance(data.get("prompt"), dict):  # written when only l3score took examples
        data["prompt"] = [data["prompt"]]
        data["few_shot"] = [{("label" if k == "answer" else k): v for k, v in example.items()}
                            if isinstance(example, dict) else example
                            for example in data.get("few_shot") or []]
    prompt = data.get("prompt")
    if prompt is not None and not (isinstance(prompt, list) and all(
            isinstance(p, dict) and {"name", "version"} <= set(p) for p in prompt)):
        raise UserInputError(f"--profile {path}: its prompt record is not one `align "
                              "--save-profile` writes")
    check_profile_fields(data, f"--profile {path}")
    return data


def check_profile(path: str | os.PathLike[str], metrics: Sequence[str],
                  metric_options: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Before any work: the profile at ``path`` was fitted for a metric this run scores, with
    the same metric options."""
    data = load_profile(path)
    metric = data.get("metric")
    if metric not in metrics and "all" not in metrics:
        raise UserInputError(f"--profile {path}: fitted for {metric!r}, which this run does "
                              f"not score (--metric {', '.join(metrics)})")
    given = dict(metric_options.get(metric) or {})
    if given != data.get("metric_options", {}):
        raise UserInputError(f"--profile {path}: fitted for {metric} with options "
                              f"{data.get('metric_options') or 'none'}, this run has "
                              f"{given or 'none'}")
    changed = changed_prompts(data.get("prompt") or [], metric, given)
    if changed:
        shown = ", ".join(f"{p['name']} version {p['version']}" for p in changed)
        raise UserInputError(f"--profile {path}: its examples were chosen for the prompt "
                              f"{shown}, which this version has changed")
    return data


def changed_prompts(recorded: Sequence[Mapping[str, Any]], metric: str,
                    metric_options: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The prompts of a profile's record that ``metric`` no longer sends as they were: each
    recorded prompt is compared with the one of its name the metric declares
    (:mod:`shared.kit.sent_prompts`) by version and digest (a profile written before the
    digests were cut to 12 digits, or that recorded only the prompts its examples go with, is
    still read)."""
    from ..kit.sent_prompts import DIGEST_DIGITS, prompt_records

    now = {p["name"]: p for p in prompt_records(metric, metric_options)}

    def same(p: Mapping[str, Any]) -> bool:
        current = now.get(p["name"])
        return current is not None and current["version"] == p["version"] and (
            str(p.get("digest", ""))[:DIGEST_DIGITS] == current["digest"])

    return [p for p in recorded if not same(p)]


def profile_for_run(path: str | os.PathLike[str] | None, metrics: Sequence[str],
                    metric_options: Mapping[str, Mapping[str, Any]],
                    judge_options: Mapping[str, Any] | None = None
                    ) -> tuple[dict[str, Any] | None, dict[str, dict[str, Any]]]:
    """``--profile`` for a command that scores ``metrics`` (``score``, ``agree``, ``compare
    --metric``), checked before any work (:func:`check_profile`, and the run's judge, from
    ``judge_options``, the one it was fitted on): the profile (``None`` without one) and
    ``metric_options`` with what its metric's judge must see to score as it did when the
    profile was fitted: the profile's few-shot examples."""
    from .labelled_runs import judge_of

    options = {name: dict(given) for name, given in metric_options.items()}
    if not path:
        return None, options
    data = check_profile(path, metrics, metric_options)
    check_judge(data, judge_of(data["metric"], judge_options or {}), f"--profile {path}")
    metric = data["metric"]
    if data.get("few_shot"):
        options[metric] = {**options.get(metric, {}), "examples": data["few_shot"]}
    return data, options


def profile_columns(scored: Any, profile: str | os.PathLike[str] | Mapping[str, Any]) -> Any:
    """``scored`` (a ``datasets.Dataset`` or a pandas DataFrame) with ``<metric>_calibrated``
    (P(label)) and ``<metric>_decision`` (0/1) from ``profile`` (a path or a loaded profile;
    unmeasured rows stay null). The one implementation of applying a profile: ``score``,
    ``agree``, ``compare`` and gates read the columns it writes."""
    data = profile if isinstance(profile, Mapping) else load_profile(profile)
    column = data["column"]
    names = list(getattr(scored, "column_names", None) or scored.columns)
    if column not in names:
        raise UserInputError(f"--profile: fitted on {data['metric']}'s {column!r}, which this "
                              "run does not have")
    values = _floats(scored[column])
    if data.get("panel_weights"):  # a panel: its weighted mean, the panel's mean where none
        columns = [judge_column(data["metric"], k) for k in range(len(data["panel_weights"]))]
        missing = [c for c in columns if c not in names]
        if missing:
            raise UserInputError(f"--profile: fitted on a panel of {len(columns)} judges, "
                                  f"this run has no {missing[0]!r} (give the same --judge)")
        weighted = weighted_mean(np.column_stack([_floats(scored[c]) for c in columns]),
                                 data["panel_weights"])
        values = np.where(np.isfinite(weighted), weighted, values)
    tuning = Tuning(float(data["threshold"]), data.get("calibration"))
    p = tuning.probabilities(values)
    measured = np.isfinite(p)
    new = {f"{data['metric']}_calibrated": [float(v) if ok else None
                                            for v, ok in zip(p, measured, strict=True)],
           f"{data['metric']}_decision": [int(v >= tuning.threshold) if ok else None
                                          for v, ok in zip(p, measured, strict=True)]}
    if not hasattr(scored, "add_column"):  # a pandas DataFrame
        import pandas as pd

        return scored.assign(**{name: pd.Series(cells, index=scored.index, dtype=object)
                                for name, cells in new.items()})
    for name, cells in new.items():
        if name in scored.column_names:
            scored = scored.remove_columns(name)
        scored = scored.add_column(name, cells)
    return scored


def check_runs(profile: Mapping[str, Any], *columns: Sequence[str]) -> None:
    """``compare --profile``: each run has the profile's score column and none of the columns
    the profile adds (a run that carries them was already calibrated: one line)."""
    added = profile_column_names(profile)
    for run, names in zip("AB", columns, strict=False):
        if any(name in names for name in added):
            raise UserInputError(f"--profile: run {run} already has {' and '.join(added)}; "
                                  "compare those columns without --profile")


def apply_to_runs(profile: Mapping[str, Any], *runs: Any) -> list[Any]:
    """:func:`profile_columns` on each run, after :func:`check_runs`."""
    check_runs(profile, *(list(getattr(r, "column_names", None) or r.columns) for r in runs))
    return [profile_columns(run, profile) for run in runs]


def profile_column_names(data: Mapping[str, Any]) -> tuple[str, str]:
    """The two columns a profile adds."""
    return f"{data['metric']}_calibrated", f"{data['metric']}_decision"



def profile_agreement(scored: Any, profile: Mapping[str, Any], label: str, *,
                      group: str | None = None, seed: int | None = stats.DEFAULT_SEED,
                      n_resamples: int = stats.DEFAULT_RESAMPLES) -> dict[str, Any]:
    """``agree --profile``: the agreement of the profile's ``<metric>_calibrated`` (decided at
    its threshold) and ``<metric>_decision`` with the 0/1 ``label`` on ``scored`` (which
    :func:`profile_columns` has filled). ``in_sample`` is true when the profile was fitted on
    these very (score, label) pairs (its ``data_digest`` equals theirs): its figures are then
    not held out, and ``note`` says so."""
    from .agreement import compare
    from .alignment import data_digest

    calibrated, decision = profile_column_names(profile)
    labels, _ = parse_labels(scored[label], label)
    y = np.asarray(labels, dtype=np.float64)
    s = np.array([math.nan if v is None else float(v) for v in scored[profile["column"]]])
    used = np.isfinite(s) & np.isfinite(y)
    in_sample = data_digest(s[used], y[used]) == profile.get("data_digest")
    note = ("in-sample: the profile was fitted on these very rows, so these figures are not "
            "held out (they flatter it); `align` reports the held-out ones" if in_sample else
            "the profile was fitted on other (score, label) pairs (its data digest differs): "
            "these figures are held out as far as no row here was among them")
    settings = dict(groups=None if group is None else scored[group], seed=seed,
                    n_resamples=n_resamples, metric=profile["metric"], label=label, group=group,
                    threshold_source="given")
    reports = {name: compare(scored[column], scored[label], score_key=column,
                             threshold=threshold, **settings).as_dict()
               for name, column, threshold in (("calibrated", calibrated, profile["threshold"]),
                                               ("decision", decision, 0.5))}
    return {"in_sample": in_sample, "note": note, "data_digest": profile.get("data_digest"),
            **reports}


def profile_agreement_text(found: Mapping[str, Any]) -> str:
    """``profile_agreement`` as ``agree`` prints it: a warning first when in-sample."""
    lines = [("WARNING: " if found["in_sample"] else "") + "profile: " + found["note"]]
    for name in ("calibrated", "decision"):
        report = found[name]
        shown = [s for s in report["statistics"]
                 if s["name"] in ("auroc", "cohen_kappa", "balanced_accuracy", "f1")]
        cells = ", ".join(f"{s['name']} " + ("n/a" if s["value"] is None
                                              else format(s["value"], ".3f")) for s in shown)
        lines.append(f"  {report['score_key']} ({report['n']} rows): {cells}")
    return "\n".join(lines)


def _floats(cells: Any) -> np.ndarray:
    return np.array([math.nan if v is None else float(v) for v in list(cells)])


def _panel_rescore(run: Any, metric: str, scores: np.ndarray, labels: Sequence[float],
                   record: list[list[float]]) -> Any:
    """A panel's ``rescore`` for ``align_scores``: per fold, the judges' weights fitted on
    its training rows (appended to ``record``: the folds', then every row's for the profile)
    and the weighted mean of its rows (the panel's mean where the weighted judges measured
    nothing). ``None`` for one judge."""
    panel = getattr(run.summary, "panel", None)
    count = len(panel["judges"]) if panel else 0
    if count < 2:
        return None
    z = np.column_stack([_floats(run.scored[judge_column(metric, k)]) for k in range(count)])
    y = np.asarray(labels, dtype=np.float64)

    def rescore(train: np.ndarray, held: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        record.append(panel_weights(z[train], y[train]))
        found = [weighted_mean(z[rows], record[-1]) for rows in (train, held)]
        return tuple(np.where(np.isfinite(f), f, scores[rows])  # type: ignore[return-value]
                     for f, rows in zip(found, (train, held), strict=True))

    return rescore

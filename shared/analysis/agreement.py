"""Agreement of a metric's per-row scores with human labels (``judge-metrics agree``).

Boolean labels (a person judged the row correct / toxic / ...): AUROC, and at the metric's own
decision threshold (``registry.DECISION_THRESHOLDS``, or ``threshold=``) balanced accuracy,
Cohen's kappa and F1; plus the best threshold on these rows (Youden's J on the ROC curve),
reported as such: it is fitted to the rows, so its balanced accuracy is optimistic.
Numeric labels (ratings): Spearman, Kendall tau-b and Pearson over all rows; with ``groups``
also the mean of the per-group correlations (how G-Eval reports SummEval: one group per source
document). Every statistic comes from scikit-learn or scipy and carries a seeded percentile
bootstrap interval (``stats.bootstrap_statistic``: rows resampled, or whole groups).
Rows whose score is ``None`` (unmeasured) are counted and left out; rows without a label too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..kit import stats
from ..runs.summary import format_table
from .agreement_stats import (
    auroc,
    balanced_accuracy,
    best_balanced_accuracy,
    best_threshold,
    cohen_kappa,
    f1,
    kendall,
    pearson,
    per_group_mean,
    spearman,
)
from .embedded_judge import (
    FIGURES_FILE,
    embedded_judge_figures,
    embedded_judge_note,
    judge_model_name,
)
from .labelled_runs import corrected_line, corrected_mean, map_columns, score_labelled
from .labels import (
    BOOLEAN,
    NUMERIC,
    ConstantLabelError,
    LabelError,
    MissingLabelError,
    MixedLabelError,
    parse_labels,
)

# the names this module has always offered (docs/AGREEMENT.md, the Spaces' demo, bench/)
__all__ = [
    "BOOLEAN", "FIGURES_FILE", "NUMERIC", "AgreementReport", "ConstantLabelError", "LabelError",
    "MissingLabelError", "MixedLabelError", "Statistic", "agree", "auroc", "balanced_accuracy",
    "best_balanced_accuracy", "best_threshold", "cohen_kappa", "compare",
    "embedded_judge_figures", "embedded_judge_note", "f1", "judge_model_name", "kendall",
    "map_columns", "parse_labels", "pearson", "per_group_mean",
    "spearman",
]


@dataclass
class Statistic:
    """One statistic with its bootstrap interval (``None`` where undefined on these rows)."""

    name: str
    value: float | None
    low: float | None
    high: float | None
    note: str = ""


@dataclass
class AgreementReport:
    """What ``agree`` measured: one metric's score key against one label column."""

    metric: str | None
    score_key: str | None
    label: str | None
    label_kind: str
    n: int  # rows compared (measured and labelled)
    unmeasured: int  # rows whose score is None, left out
    unlabelled: int  # rows whose label is missing, left out
    judge: dict[str, str | None] | None  # {"provider", "model"}; None for metrics with no judge
    threshold: float | None = None  # the decision threshold used (boolean labels)
    threshold_source: str | None = None  # "metric" (its declared threshold) or "given"
    best_threshold: float | None = None  # fitted on these rows (optimistic)
    group: str | None = None
    groups: int | None = None
    statistics: list[Statistic] = field(default_factory=list)
    seed: int | None = stats.DEFAULT_SEED
    n_resamples: int = stats.DEFAULT_RESAMPLES
    confidence: float = 0.95
    positives: int | None = None  # boolean labels: rows labelled True
    constant_score: float | None = None  # set when every compared row got this one score
    judge_calls: int | None = None  # agree(): requests sent to the judge (cache hits excluded)
    cache_hits: int | None = None  # agree(): judge answers served by the call cache
    # agree() with some measured rows unlabelled: the prediction-powered mean label over every
    # measured row (shared.analysis.ppi: value, low, high, judge_only, n_labelled, n_unlabelled)
    corrected: dict[str, Any] | None = None
    judges: list[dict[str, Any]] | None = None  # a panel: each judge against the same labels
    judge_agreement: dict[str, Any] | None = None  # a panel: alpha among its judges

    def statistic(self, name: str) -> Statistic | None:
        return next((s for s in self.statistics if s.name == name), None)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready dict (no NaN: undefined values are ``None``)."""
        return asdict(self)

    def table(self) -> str:
        """The report as printed by the CLI."""
        judge = "-" if self.judge is None else (
            f"{self.judge.get('provider')} / {self.judge.get('model') or 'default'}")
        lines = [
            f"metric {self.metric or '-'} (score key {self.score_key or '-'}) vs label "
            f"{self.label or '-'} ({self.label_kind})",
            f"judge: {judge}",
            f"rows compared: {self.n}; unmeasured (excluded): {self.unmeasured}; "
            f"unlabelled (excluded): {self.unlabelled}"
            + (f"; positives: {self.positives}" if self.positives is not None else "")
            + (f"; groups ({self.group}): {self.groups}" if self.group else ""),
        ]
        if self.constant_score is not None:
            lines.append(f"every compared row scored {self.constant_score:g}: the metric does "
                         "not separate these rows (correlations undefined, AUROC 0.5)")
        if self.label_kind == BOOLEAN:
            if self.threshold is None:
                lines.append("decision threshold: none declared for this metric (pass "
                             "--threshold); threshold statistics left out")
            else:
                source = "given" if self.threshold_source == "given" else "the metric's own"
                lines.append(f"decision threshold: {self.threshold:g} ({source})")
        header = ["statistic", "value", f"{self.confidence:.0%} interval", "note"]
        rows = [[s.name, _fmt(s.value), f"[{_fmt(s.low)}, {_fmt(s.high)}]", s.note]
                for s in self.statistics]
        lines.append(format_table(header, rows))
        if self.corrected is not None:
            lines.append(corrected_line(self.corrected))
        if self.judges:
            from .panel_agreement import side_by_side

            lines.append(side_by_side(self))
        if self.judge_calls is not None:
            lines.append(f"judge calls: {self.judge_calls} sent, {self.cache_hits} from the cache")
        lines.append(f"bootstrap: {self.n_resamples} resamples of "
                     f"{'groups' if self.group else 'rows'}, seed {self.seed}")
        return "\n".join(lines)



# ------------------------------------------------------------------------------------ report


def compare(
    scores: Sequence[float | None],
    labels: Sequence[Any],
    *,
    groups: Sequence[Any] | None = None,
    threshold: float | None = None,
    threshold_source: str | None = None,
    seed: int | None = stats.DEFAULT_SEED,
    n_resamples: int = stats.DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    metric: str | None = None,
    score_key: str | None = None,
    label: str | None = None,
    group: str | None = None,
    judge: Mapping[str, str | None] | None = None,
) -> AgreementReport:
    """Compare per-row ``scores`` (``None`` = unmeasured) with human ``labels``.

    ``threshold``: the score at or above which a row counts as positive (boolean labels only;
    ``None``: no threshold statistics). ``groups``: one group id per row (numeric labels: adds
    the per-group mean correlations; the bootstrap then resamples groups).
    """
    if len(scores) != len(labels):
        raise ValueError(f"{len(scores)} scores but {len(labels)} labels")
    if groups is not None and len(groups) != len(labels):
        raise ValueError(f"{len(groups)} group ids but {len(labels)} labels")
    if threshold is not None and (isinstance(threshold, bool) or not math.isfinite(threshold)):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    parsed, kind = parse_labels(list(labels), label or "label")
    measured = np.array([_finite(s) for s in scores], dtype=bool)
    labelled = ~np.isnan(parsed)
    keep = measured & labelled
    s = np.array([float(v) if m else math.nan for v, m in zip(scores, measured, strict=True)])[keep]
    y = parsed[keep]
    g = None if groups is None else np.asarray([str(x) for x in groups], dtype=object)[keep]
    report = AgreementReport(
        metric=metric, score_key=score_key, label=label, label_kind=kind, n=int(keep.sum()),
        unmeasured=int((~measured).sum()), unlabelled=int((measured & ~labelled).sum()),
        judge=None if judge is None else dict(judge), group=group if g is not None else None,
        groups=None if g is None else len(set(g)), seed=seed, n_resamples=n_resamples,
        confidence=confidence,
    )
    if report.n == 0:
        return report
    if np.ptp(s) == 0:
        report.constant_score = float(s[0])
    rows = _Rows(s, y, g, report)
    if kind == BOOLEAN:
        report.positives = int((y == 1.0).sum())
        rows.add("auroc", auroc)
        if threshold is not None:
            report.threshold = float(threshold)
            report.threshold_source = threshold_source or "given"
            rows.add("balanced_accuracy", balanced_accuracy(threshold))
            rows.add("cohen_kappa", cohen_kappa(threshold))
            rows.add("f1", f1(threshold))
        cut, _ = best_threshold(s, y)
        report.best_threshold = cut if math.isfinite(cut) else None
        rows.add("best_balanced_accuracy", best_balanced_accuracy,
                 note="" if report.best_threshold is None else
                 f"at threshold {report.best_threshold:.4g}, fitted on these rows (optimistic)")
        return report
    correlations = (("spearman", spearman), ("kendall_tau_b", kendall), ("pearson", pearson))
    for name, function in correlations:
        rows.add(name, function)
    if g is not None:
        for name, function in correlations:
            rows.add(f"{name}_per_group_mean", per_group_mean(function),
                     note=f"mean over {report.group} groups", grouped=True)
    return report


@dataclass
class _Rows:
    """The compared rows (scores, labels, group ids) and the report their statistics go to."""

    s: np.ndarray
    y: np.ndarray
    g: np.ndarray | None
    report: AgreementReport

    def add(self, name: str, function: Callable[..., float], note: str = "",
            grouped: bool = False) -> None:
        """Append statistic ``name`` with its bootstrap interval (rows, or whole groups)."""
        s, y, g, report = self.s, self.y, self.g, self.report
        value = function(s, y, g) if grouped else function(s, y)
        value = value if math.isfinite(value) else None
        bootstrap = {"confidence": report.confidence, "n_resamples": report.n_resamples,
                     "seed": report.seed}
        if grouped:
            # a resampled group holds the same rows as the original: its statistic is computed
            # once per original group, and each resample averages the groups it drew
            names, codes = np.unique(g, return_inverse=True)
            per_group = np.array([function.inner(s[codes == c], y[codes == c])
                                  for c in range(len(names))])

            def resampled(code: np.ndarray, groups: np.ndarray) -> float:
                first = np.unique(groups, return_index=True)[1]
                values = per_group[code[first]]
                values = values[np.isfinite(values)]
                return float(values.mean()) if values.size else math.nan

            low, high, _ = stats.bootstrap_statistic(resampled, codes, groups=g, **bootstrap)
        elif g is not None:
            low, high, _ = stats.bootstrap_statistic(
                lambda a, b, groups: function(a, b), s, y, groups=g, **bootstrap)
        else:
            low, high, _ = stats.bootstrap_statistic(function, s, y, **bootstrap)
        if value is None:
            low = high = None
        report.statistics.append(Statistic(name, value, low, high, note))


def _finite(value: Any) -> bool:
    if value is None or isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


# ------------------------------------------------------------------------------ dataset level


def agree(
    dataset: Any,
    metric: str,
    label: str,
    *,
    group: str | None = None,
    threshold: float | None = None,
    seed: int | None = stats.DEFAULT_SEED,
    n_resamples: int = stats.DEFAULT_RESAMPLES,
    **options: Any,
) -> tuple[Any, AgreementReport]:
    """Score ``dataset`` (a ``datasets.Dataset``) with ``metric`` through
    ``shared.runs.batch.score_dataset`` (call cache, progress, resume) and compare the per-row
    scores with the ``label`` column. Returns the scored rows and the report.

    The other keyword arguments are :func:`~shared.analysis.labelled_runs.score_labelled`'s,
    which ``calibrate`` takes too: ``columns``: metric input column -> dataset column
    (``{"prediction": "summary"}``); a string mapped to ``contexts`` becomes a one-item list
    (one context). ``score_key``: which of the metric's scores to compare. ``limit``: score a
    seeded random subsample of that many rows. ``metric_options``: extra ``compute`` arguments
    of the metric. ``chunk_size``, ``show_progress`` and the judge and embedding options: as
    for ``score_dataset``.
    Errors in the input raise :class:`~shared.base.errors.UserInputError` or :class:`LabelError`.
    When some measured rows have no label, ``report.corrected`` holds the prediction-powered
    estimate of the mean label over every row (``shared.analysis.ppi``).
    """
    from ..kit.registry import DECISION_THRESHOLDS
    from .panel_agreement import add_judges

    run = score_labelled(dataset, metric, label, group=group, seed=seed, **options)
    scored = run.scored
    if threshold is None:
        decision, source = DECISION_THRESHOLDS.get(metric), "metric"
    else:
        decision, source = threshold, "given"
    settings = dict(groups=None if group is None else scored[group], threshold=decision,
                    threshold_source=source if decision is not None else None, seed=seed,
                    n_resamples=n_resamples, metric=metric, score_key=run.key, label=label,
                    group=group, judge=run.judge)
    report = compare(scored[run.column], scored[label], **settings)
    report.judge_calls, report.cache_hits = run.judge_calls, run.cache_hits
    report.corrected = corrected_mean(scored[run.column], scored[label], label)
    if run.summary is not None:
        add_judges(report, scored, metric, run.summary,
                   lambda scores: compare(scores, scored[label], **settings))
    return scored, report


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"

"""Agreement of a metric's per-row scores with human labels (``python -m shared agree``).

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
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..kit import stats
from ..runs.summary import BatchInputError, format_table

BOOLEAN = "boolean"
NUMERIC = "numeric"
_TRUE = {"true", "yes", "1"}
_FALSE = {"false", "no", "0"}


class LabelError(ValueError):
    """The human-label column cannot be compared with scores."""


class MissingLabelError(LabelError):
    """The label column is not in the data (or holds no label at all)."""


class MixedLabelError(LabelError):
    """The label column mixes kinds (booleans and ratings, numbers and text) or holds text."""


class ConstantLabelError(LabelError):
    """Every label is the same: no statistic of agreement is defined."""


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
        if self.judge_calls is not None:
            lines.append(f"judge calls: {self.judge_calls} sent, {self.cache_hits} from the cache")
        lines.append(f"bootstrap: {self.n_resamples} resamples of "
                     f"{'groups' if self.group else 'rows'}, seed {self.seed}")
        return "\n".join(lines)


# ------------------------------------------------------------------------------------ labels


def parse_labels(values: Sequence[Any], name: str = "label") -> tuple[np.ndarray, str]:
    """Labels as floats (``NaN`` where missing) and their kind, ``"boolean"`` or ``"numeric"``.

    Boolean: Python/numpy booleans, the strings true/false/yes/no/1/0, or numbers that are all
    0 or 1. Numeric: other finite numbers (ratings). Raises :class:`MissingLabelError`,
    :class:`MixedLabelError` or :class:`ConstantLabelError`.
    """
    kinds: set[str] = set()
    out = np.full(len(values), np.nan)
    for i, value in enumerate(values):
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        if isinstance(value, (bool, np.bool_)):
            kinds.add("bool")
            out[i] = float(value)
        elif isinstance(value, (int, float, np.integer, np.floating)):
            if not math.isfinite(float(value)):
                raise MixedLabelError(f"label column {name!r}, row {i}: {value!r} is not finite")
            kinds.add("number")
            out[i] = float(value)
        elif isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            kinds.add("bool")
            out[i] = 1.0 if value.strip().lower() in _TRUE else 0.0
        elif isinstance(value, str) and _is_float(value):
            kinds.add("number")
            out[i] = float(value)
        else:
            raise MixedLabelError(
                f"label column {name!r}, row {i}: {type(value).__name__} value is neither a "
                "boolean nor a number"
            )
    present = out[~np.isnan(out)]
    if present.size == 0:
        raise MissingLabelError(f"label column {name!r} holds no label")
    binary = bool(np.all((present == 0.0) | (present == 1.0)))
    if kinds == {"bool", "number"} and not binary:
        raise MixedLabelError(f"label column {name!r} mixes booleans and numeric ratings")
    if np.unique(present).size < 2:
        raise ConstantLabelError(
            f"label column {name!r}: every label is {present[0]:g}; agreement needs at least "
            "two different labels"
        )
    return out, BOOLEAN if binary else NUMERIC


def _is_float(value: str) -> bool:
    try:
        return math.isfinite(float(value))
    except ValueError:
        return False


# -------------------------------------------------------------------------------- statistics
# Each takes (scores, labels) as float arrays and returns a float, NaN where undefined.


def _quiet(function: Callable[..., float]) -> Callable[..., float]:
    def wrapped(*args: Any, **kwargs: Any) -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                value = float(function(*args, **kwargs))
            except ValueError:
                return math.nan
        return value if math.isfinite(value) else math.nan

    wrapped.__name__ = function.__name__
    wrapped.__doc__ = function.__doc__
    return wrapped


def _two_classes(labels: np.ndarray) -> bool:
    return bool(np.any(labels == 1.0)) and bool(np.any(labels == 0.0))


@_quiet
def auroc(scores: np.ndarray, labels: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return roc_auc_score(labels, scores) if _two_classes(labels) else math.nan


def _at(threshold: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda scores: (np.asarray(scores) >= threshold).astype(int)


def balanced_accuracy(threshold: float) -> Callable[[np.ndarray, np.ndarray], float]:
    @_quiet
    def balanced_accuracy(scores: np.ndarray, labels: np.ndarray) -> float:
        from sklearn.metrics import balanced_accuracy_score

        if not _two_classes(labels):
            return math.nan
        return balanced_accuracy_score(labels.astype(int), _at(threshold)(scores))

    return balanced_accuracy


def cohen_kappa(threshold: float) -> Callable[[np.ndarray, np.ndarray], float]:
    @_quiet
    def cohen_kappa(scores: np.ndarray, labels: np.ndarray) -> float:
        from sklearn.metrics import cohen_kappa_score

        return cohen_kappa_score(labels.astype(int), _at(threshold)(scores))

    return cohen_kappa


def f1(threshold: float) -> Callable[[np.ndarray, np.ndarray], float]:
    @_quiet
    def f1(scores: np.ndarray, labels: np.ndarray) -> float:
        from sklearn.metrics import f1_score

        return f1_score(labels.astype(int), _at(threshold)(scores), zero_division=0.0)

    return f1


def best_threshold(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """The threshold with the highest balanced accuracy on these rows (Youden's J on
    ``sklearn.metrics.roc_curve``) and that balanced accuracy; ``(nan, nan)`` with one class."""
    from sklearn.metrics import roc_curve

    if not _two_classes(labels):
        return math.nan, math.nan
    fpr, tpr, thresholds = roc_curve(labels, scores, drop_intermediate=False)
    finite = np.isfinite(thresholds)  # the first threshold (+inf) predicts no positive
    j = np.where(finite, tpr - fpr, -np.inf)
    best = int(np.argmax(j))
    return float(thresholds[best]), float((tpr[best] + 1.0 - fpr[best]) / 2.0)


def best_balanced_accuracy(scores: np.ndarray, labels: np.ndarray) -> float:
    return best_threshold(scores, labels)[1]


@_quiet
def spearman(scores: np.ndarray, labels: np.ndarray) -> float:
    from scipy.stats import spearmanr

    return spearmanr(scores, labels).statistic


@_quiet
def kendall(scores: np.ndarray, labels: np.ndarray) -> float:
    from scipy.stats import kendalltau

    return kendalltau(scores, labels, variant="b").statistic


@_quiet
def pearson(scores: np.ndarray, labels: np.ndarray) -> float:
    from scipy.stats import pearsonr

    if np.ptp(scores) == 0 or np.ptp(labels) == 0:
        return math.nan
    return pearsonr(scores, labels).statistic


def per_group_mean(
    statistic: Callable[[np.ndarray, np.ndarray], float],
) -> Callable[..., float]:
    """The mean over groups of ``statistic`` computed inside each group (groups where it is
    undefined, e.g. constant ratings, are left out)."""

    def grouped(scores: np.ndarray, labels: np.ndarray, groups: np.ndarray) -> float:
        values = [statistic(scores[groups == g], labels[groups == g]) for g in np.unique(groups)]
        finite = [v for v in values if math.isfinite(v)]
        return float(np.mean(finite)) if finite else math.nan

    grouped.__name__ = f"{statistic.__name__}_per_group"
    grouped.inner = statistic  # type: ignore[attr-defined]
    return grouped


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

    def add(name: str, function: Callable[..., float], note: str = "",
            grouped: bool = False) -> None:
        value = function(s, y, g) if grouped else function(s, y)
        value = value if math.isfinite(value) else None
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

            low, high, _ = stats.bootstrap_statistic(
                resampled, codes, groups=g, confidence=confidence, n_resamples=n_resamples,
                seed=seed)
        elif g is not None:
            low, high, _ = stats.bootstrap_statistic(
                lambda a, b, groups: function(a, b), s, y, groups=g,
                confidence=confidence, n_resamples=n_resamples, seed=seed)
        else:
            low, high, _ = stats.bootstrap_statistic(
                function, s, y, confidence=confidence, n_resamples=n_resamples, seed=seed)
        if value is None:
            low = high = None
        report.statistics.append(Statistic(name, value, low, high, note))

    if kind == BOOLEAN:
        report.positives = int((y == 1.0).sum())
        add("auroc", auroc)
        if threshold is not None:
            report.threshold = float(threshold)
            report.threshold_source = threshold_source or "given"
            add("balanced_accuracy", balanced_accuracy(threshold))
            add("cohen_kappa", cohen_kappa(threshold))
            add("f1", f1(threshold))
        cut, _ = best_threshold(s, y)
        report.best_threshold = cut if math.isfinite(cut) else None
        add("best_balanced_accuracy", best_balanced_accuracy,
            note="" if report.best_threshold is None else
            f"at threshold {report.best_threshold:.4g}, fitted on these rows (optimistic)")
    else:
        add("spearman", spearman)
        add("kendall_tau_b", kendall)
        add("pearson", pearson)
        if g is not None:
            for name, function in (("spearman", spearman), ("kendall_tau_b", kendall),
                                   ("pearson", pearson)):
                add(f"{name}_per_group_mean", per_group_mean(function),
                    note=f"mean over {report.group} groups", grouped=True)
    return report


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
    columns: Mapping[str, str] | None = None,
    score_key: str | None = None,
    group: str | None = None,
    threshold: float | None = None,
    limit: int | None = None,
    seed: int | None = stats.DEFAULT_SEED,
    n_resamples: int = stats.DEFAULT_RESAMPLES,
    metric_options: Mapping[str, Any] | None = None,
    chunk_size: int | None = None,
    show_progress: bool = True,
    **options: Any,
) -> tuple[Any, AgreementReport]:
    """Score ``dataset`` (a ``datasets.Dataset``) with ``metric`` through
    ``shared.runs.batch.score_dataset`` (call cache, progress, resume) and compare the per-row
    scores with the ``label`` column. Returns the scored rows and the report.

    ``columns``: metric input column -> dataset column (``{"prediction": "summary"}``); a
    string mapped to ``contexts`` becomes a one-item list (one context). ``limit``: score a
    seeded random subsample of that many rows. ``options``: judge and embedding options, as
    for ``score_dataset``. ``metric_options``: extra ``compute`` arguments of the metric.
    Errors in the input raise ``shared.runs.batch.BatchInputError`` or :class:`LabelError`.
    """
    from ..engine.config import JUDGE_OPTION_NAMES, judge_config
    from ..kit.registry import DECISION_THRESHOLDS, METRICS
    from ..runs.batch import score_dataset
    from ..runs.chunks import score_column_names

    if metric not in METRICS:
        raise BatchInputError(f"unknown metric {metric!r}; choose from: {', '.join(METRICS)}")
    spec = METRICS[metric]
    if label not in dataset.column_names:
        raise MissingLabelError(
            f"label column {label!r} is not in the input (its columns: "
            f"{', '.join(dataset.column_names)})"
        )
    if group is not None and group not in dataset.column_names:
        raise BatchInputError(f"--group column {group!r} is not in the input")
    keys = spec.headline
    key = score_key or keys[0]
    if key not in keys:
        raise BatchInputError(
            f"metric {metric!r} has no score key {key!r}; choose from: {', '.join(keys)}")
    # check the labels before any (slow) scoring
    parse_labels(dataset[label], label)
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise BatchInputError(f"--limit must be a positive integer, got {limit!r}")
        if limit < len(dataset):
            rng = np.random.default_rng(seed)
            rows = np.sort(rng.choice(len(dataset), size=limit, replace=False))
            dataset = dataset.select(rows.tolist())
            parse_labels(dataset[label], label)
    dataset = map_columns(dataset, columns or {})
    scored, summary = score_dataset(
        dataset, [metric], chunk_size=chunk_size, show_progress=show_progress,
        metric_options={metric: dict(metric_options)} if metric_options else None, **options,
    )
    column = score_column_names(metric, spec)[key]
    judge = None
    if spec.judge:
        config = judge_config(**{k: v for k, v in options.items() if k in JUDGE_OPTION_NAMES})
        judge = {"provider": config.provider, "model": judge_model_name(config)}
    if threshold is None:
        decision, source = DECISION_THRESHOLDS.get(metric), "metric"
    else:
        decision, source = threshold, "given"
    report = compare(
        scored[column], scored[label], groups=None if group is None else scored[group],
        threshold=decision, threshold_source=source if decision is not None else None,
        seed=seed, n_resamples=n_resamples, metric=metric, score_key=key, label=label,
        group=group, judge=judge,
    )
    if spec.judge and summary.metrics:
        report.judge_calls = summary.metrics[0].calls
        report.cache_hits = summary.metrics[0].cache_hits
    return scored, report


def judge_model_name(config: Any) -> str | None:
    from ..base.defaults import DEFAULT_JUDGE_MODEL

    if config.provider == "local" and not config.model:
        return DEFAULT_JUDGE_MODEL
    return config.resolved_model()


def is_embedded_judge(provider: str | None, model: str | None, api_key: str | None = None) -> bool:
    """True when these judge options select the embedded default judge."""
    local = provider == "local" or (provider is None and not api_key)
    return local and not model


def map_columns(dataset: Any, columns: Mapping[str, str]) -> Any:
    """Copy dataset column ``source`` to ``target`` for each ``target=source`` pair (an
    existing ``target`` column is replaced); strings copied to ``contexts`` become one-item
    lists."""

    for target, source in columns.items():
        if source not in dataset.column_names:
            raise BatchInputError(
                f"--column {target}={source}: the input has no column {source!r} (its columns: "
                f"{', '.join(dataset.column_names)})"
            )
    values = {target: dataset[source] for target, source in columns.items()}
    for target, cells in values.items():
        if target == "contexts":
            cells = [[c] if isinstance(c, str) else c for c in cells]
        if target in dataset.column_names:
            dataset = dataset.remove_columns(target)
        dataset = dataset.add_column(target, cells)
    return dataset


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


# ------------------------------------------------------------------- the embedded judge's note

FIGURES_FILE = "agreement_figures.json"  # next to this module; written by `make agreement`
_STATISTIC_NAMES = {"auroc": "AUROC", "spearman": "Spearman"}


def embedded_judge_figures() -> dict[str, Any]:
    """The figures ``make agreement`` measured for the embedded judge (``{}`` when absent)."""
    import json
    from pathlib import Path

    path = Path(__file__).with_name(FIGURES_FILE)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def embedded_judge_note(metric: str, figures: Mapping[str, Any] | None = None) -> str:
    """One line for a judge metric's aggregate when the judge is the embedded default: its
    measured agreement with people, or that no labelled set measures it."""
    figures = embedded_judge_figures() if figures is None else figures
    entry = (figures.get("metrics") or {}).get(metric)
    tail = "a pipeline demo, not a measurement"
    if isinstance(entry, Mapping) and entry.get("constant_score") is not None:
        return (f"embedded judge: gave every one of {entry.get('n')} {entry.get('data_set')} "
                f"rows the same score ({entry['constant_score']:g}), so it does not agree with "
                f"people's {entry.get('label')} at all (bench/AGREEMENT.md); {tail}")
    if isinstance(entry, Mapping) and entry.get("n") == 0 and entry.get("unmeasured"):
        return (f"embedded judge: every one of its {entry['unmeasured']} {entry.get('data_set')} "
                "rows in `make agreement` was unmeasured (no answer passed the grounding checks, "
                f"bench/AGREEMENT.md); {tail}")
    if not isinstance(entry, Mapping) or entry.get("value") is None:
        return f"embedded judge: agreement with people not measured for {metric}; {tail}"
    name = _STATISTIC_NAMES.get(str(entry.get("statistic")), str(entry.get("statistic")))
    interval = ""
    if entry.get("low") is not None and entry.get("high") is not None:
        interval = f" [{entry['low']:.2f}, {entry['high']:.2f}]"
    return (f"embedded judge: {name} {entry['value']:.2f}{interval} vs people on "
            f"{entry.get('data_set')} {entry.get('label')} (n={entry.get('n')}, "
            f"bench/AGREEMENT.md); {tail}")

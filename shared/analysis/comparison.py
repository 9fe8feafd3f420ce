"""Paired comparison of two scored runs: is B better than A, per score column, and how sure?

Rows of A and B are paired by a key (an ``id`` column by default, else a hash of the task
columns both runs share). Per score column, only pairs measured in both runs count; rows in one
run only and rows unmeasured in either are counted and reported, never dropped silently.

Per score column: n paired, mean A, mean B, delta = mean B - mean A, a seeded paired-bootstrap
interval of the delta (``stats.paired_difference_ci``), a paired test (exact McNemar, i.e. a
two-sided binomial test on the discordant pairs, for 0/1 scores; Wilcoxon signed-rank for graded
ones; both from scipy), wins/ties/losses of B against A (in the metric's better direction), and
the p-value Holm-adjusted across the report's score columns.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..base.errors import UserInputError
from ..engine.config import JudgeConfig, judge_options_of
from ..kit import stats
from ..kit.registry import LOWER_IS_BETTER
from ..runs.options import check_run_options
from ..runs.summary import format_table
from .paired_stats import DEFAULT_RESAMPLES, MCNEMAR, WILCOXON, compare_scores, holm
from .pairing import (
    SYSTEM_COLUMNS,
    choose_key,
    load_run,
    numeric_scores,
    row_keys,
    score_columns,
    task_columns,
    unmeasured_reason,
)

# the names this module has always offered (tests, the reports, bench/)
__all__ = [
    "DEFAULT_RESAMPLES", "MCNEMAR", "SYSTEM_COLUMNS", "WILCOXON", "ColumnComparison",
    "CompareReport", "PairedRows", "compare", "compare_scores", "holm", "judge_description",
    "load_run", "numeric_scores", "row_keys", "score_columns", "task_columns",
    "unmeasured_reason",
]


@dataclass
class ColumnComparison:
    """One score column compared over the pairs measured in both runs."""

    column: str
    metric: str
    kind: str  # "binary" (every score 0 or 1) or "graded"
    higher_is_better: bool
    n_paired: int  # pairs measured in both runs (the n of every statistic below)
    unmeasured_a: int  # paired rows unmeasured in A (whatever B did), excluded
    unmeasured_b: int  # paired rows unmeasured in B (whatever A did), excluded
    excluded: int  # paired rows unmeasured in A or B
    mean_a: float | None
    mean_b: float | None
    delta: float | None  # mean_b - mean_a
    low: float | None  # paired-bootstrap interval of delta
    high: float | None
    test: str | None
    statistic: float | None
    p_value: float | None
    p_holm: float | None = None
    wins: int = 0  # pairs where B is better than A
    ties: int = 0
    losses: int = 0  # pairs where B is worse than A
    note: str = ""


@dataclass
class CompareReport:
    """What :func:`compare` measured. ``pairs`` (not serialised) holds the paired rows."""

    a: str
    b: str
    key: str  # the key column, or "hash(question, reference, ...)"
    rows_a: int
    rows_b: int
    paired: int  # keys present in both runs
    only_a: int  # rows of A whose key B lacks: excluded
    only_b: int
    only_a_keys: list[str]  # up to 10 of them, for the message
    only_b_keys: list[str]
    columns: list[ColumnComparison]
    not_compared: dict[str, str]  # score column -> why (present in one run only)
    seed: int | None
    n_resamples: int
    confidence: float
    runs: dict[str, Any] = field(default_factory=dict)  # "a"/"b" -> score summary, when scored
    seconds: float = 0.0
    pairs: Any = field(default=None, repr=False, compare=False)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("pairs", None)
        return json_ready(data)

    def column(self, name: str) -> ColumnComparison | None:
        return next((c for c in self.columns if c.column == name), None)

    def table(self) -> str:
        """The comparison as the CLI prints it."""
        lines = [
            f"A: {self.a} ({self.rows_a} rows)   B: {self.b} ({self.rows_b} rows)",
            f"paired by {self.key}: {self.paired} pairs; only in A: {self.only_a}, only in B: "
            f"{self.only_b} (excluded)",
        ]
        header = ["score", "n", "mean A", "mean B", "delta B-A",
                  f"{self.confidence:.0%} interval", "p", "p (Holm)", "B wins/ties/losses",
                  "excluded", "test"]
        rows = []
        for c in self.columns:
            rows.append([
                c.column + ("" if c.higher_is_better else " (lower is better)"), str(c.n_paired),
                _fmt(c.mean_a), _fmt(c.mean_b), _fmt(c.delta, signed=True),
                f"[{_fmt(c.low, signed=True)}, {_fmt(c.high, signed=True)}]",
                _fmt_p(c.p_value), _fmt_p(c.p_holm), f"{c.wins}/{c.ties}/{c.losses}",
                str(c.excluded), "McNemar" if c.test == MCNEMAR else (
                    "Wilcoxon" if c.test == WILCOXON else "-"),
            ])
        lines.append(format_table(header, rows))
        for column, reason in self.not_compared.items():
            lines.append(f"not compared: {column}: {reason}")
        lines.append(f"paired bootstrap: {self.n_resamples} resamples, seed {self.seed}; "
                     "McNemar = exact binomial test on discordant pairs (0/1 scores), Wilcoxon = "
                     "signed-rank (graded scores); Holm across the report's scores")
        return "\n".join(lines)


# ------------------------------------------------------------------------------ compare


def compare(
    a: Any,
    b: Any,
    *,
    metrics: str | Sequence[str] | None = None,
    key: str | None = None,
    names: tuple[str, str] | None = None,
    seed: int | None = stats.DEFAULT_SEED,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    chunk_size: int | None = None,
    show_progress: bool = False,
    metric_options: Mapping[str, Mapping[str, Any]] | None = None,
    profile: Mapping[str, Any] | None = None,
    **options: Any,
) -> CompareReport:
    """Compare run B with run A, pair by pair.

    ``a``, ``b``: per-row outputs of ``score`` (a path, ``datasets.Dataset``, DataFrame or list
    of row dicts); with ``metrics`` they are inputs, scored first with
    ``shared.runs.batch.score_dataset`` (``options``: the judge and embedding options of ``score``;
    ``metric_options``: ``{metric: {option: value}}``, as ``score --option``).
    ``key``: the column pairing the rows (default ``id`` when both runs have it, else a hash of
    the task columns both share). ``names``: labels of the runs (default the file names).
    ``profile``: an alignment profile (``shared.analysis.alignment_profile.load_profile``)
    applied to both runs' scores first, so that its ``<metric>_calibrated`` and
    ``<metric>_decision`` are compared too; refused when a run already has those columns.
    Raises :class:`UserInputError` on a missing key column, a duplicated key, no common score
    column or no pair.
    """
    started = time.perf_counter()
    if n_resamples < 1:
        raise UserInputError(f"n_resamples must be >= 1, got {n_resamples}")
    if not 0.0 < confidence < 1.0:
        raise UserInputError(f"confidence must be in (0, 1), got {confidence}")
    labels = list(names) if names else [_label(a, "A"), _label(b, "B")]
    if labels[0] == labels[1]:
        labels = [f"A: {labels[0]}", f"B: {labels[1]}"]
    frame_a, frame_b = load_run(a, "A"), load_run(b, "B")
    if metrics is None and options:
        raise UserInputError(f"judge options ({', '.join(sorted(options))}) need metrics: the "
                             "runs are compared as scored unless metrics are given")
    # the keys are checked before any scoring: a duplicated id fails before the judge runs
    key_column, hashed, key_label = choose_key(frame_a, frame_b, key)
    keys_a = row_keys(frame_a, key_column, hashed, "A")
    keys_b = row_keys(frame_b, key_column, hashed, "B")
    runs: dict[str, Any] = {}
    wanted: set[str] | None = None
    if metrics is not None:
        (frame_a, frame_b), runs, wanted = _score_runs(
            [frame_a, frame_b], metrics, chunk_size, show_progress, options, metric_options)
    if profile is not None:
        from .alignment_profile import apply_to_runs

        frame_a, frame_b = apply_to_runs(profile, frame_a, frame_b)
    index_b = {k: i for i, k in enumerate(keys_b)}
    pair_a = [i for i, k in enumerate(keys_a) if k in index_b]
    pair_b = [index_b[keys_a[i]] for i in pair_a]
    in_a = set(keys_a)
    only_a = [k for k in keys_a if k not in index_b]
    only_b = [k for k in keys_b if k not in in_a]
    common, found_a, not_compared = _common_columns(frame_a, frame_b, wanted)
    if not pair_a:
        raise UserInputError(
            f"no row of A pairs with a row of B by {key_label} (A: {len(keys_a)} rows, B: "
            f"{len(keys_b)} rows; A's first key {_shown(keys_a[0])}, B's {_shown(keys_b[0])}); "
            "pass --key with the column that identifies a row")
    pairs = PairedRows(frame_a, frame_b, pair_a, pair_b, [keys_a[i] for i in pair_a], {})
    results = [_compare_column(pairs, column, found_a[column], confidence, n_resamples, seed)
               for column in common]
    for result, adjusted in zip(results, holm([r.p_value for r in results]), strict=True):
        result.p_holm = adjusted
    report = CompareReport(
        a=labels[0], b=labels[1], key=key_label, rows_a=len(frame_a), rows_b=len(frame_b),
        paired=len(pair_a), only_a=len(only_a), only_b=len(only_b), only_a_keys=only_a[:10],
        only_b_keys=only_b[:10], columns=results, not_compared=not_compared, seed=seed,
        n_resamples=n_resamples, confidence=confidence, runs=runs)
    report.pairs = pairs
    report.seconds = time.perf_counter() - started
    return report


def _common_columns(frame_a: Any, frame_b: Any, wanted: set[str] | None
                    ) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """The score columns both runs hold (of the ``wanted`` metrics, when scored here), A's
    column -> metric, and the columns in one run only with the reason."""
    found_a, found_b = score_columns(frame_a.columns), score_columns(frame_b.columns)
    if wanted is not None:
        found_a = {c: m for c, m in found_a.items() if m in wanted}
        found_b = {c: m for c, m in found_b.items() if m in wanted}
    common = [c for c in found_a if c in found_b]
    not_compared = {c: "only in A" for c in found_a if c not in found_b}
    not_compared.update({c: "only in B" for c in found_b if c not in found_a})
    if not common:
        raise UserInputError(
            "no score column in both runs (score columns are the ones `score` writes, e.g. "
            f"accuracy, faithfulness, rouge1); A has {', '.join(found_a) or 'none'}, B has "
            f"{', '.join(found_b) or 'none'}")
    return common, found_a, not_compared


def _compare_column(pairs: PairedRows, column: str, metric: str, confidence: float,
                    n_resamples: int, seed: int | None) -> ColumnComparison:
    """One score column over the pairs measured in both runs; its paired scores are kept on
    ``pairs.scores`` for the reports."""
    values_a = numeric_scores(pairs.a, column, "A", metric)[pairs.index_a]
    values_b = numeric_scores(pairs.b, column, "B", metric)[pairs.index_b]
    pairs.scores[column] = (values_a, values_b)
    missing_a, missing_b = np.isnan(values_a), np.isnan(values_b)
    measured = ~(missing_a | missing_b)
    higher = metric not in LOWER_IS_BETTER
    result = compare_scores(values_a[measured], values_b[measured], higher_is_better=higher,
                            confidence=confidence, n_resamples=n_resamples, seed=seed)
    return ColumnComparison(
        column=column, metric=metric, higher_is_better=higher,
        unmeasured_a=int(missing_a.sum()), unmeasured_b=int(missing_b.sum()),
        excluded=int((~measured).sum()), **result)


@dataclass
class PairedRows:
    """The paired rows behind a report (for the HTML report and the demo)."""

    a: Any  # DataFrame of run A
    b: Any
    index_a: list[int]  # row of A of each pair
    index_b: list[int]
    keys: list[str]
    scores: dict[str, tuple[np.ndarray, np.ndarray]]  # column -> (A, B) scores per pair (NaN)


def _score_runs(
    frames: list[Any], metrics: str | Sequence[str], chunk_size: int | None,
    show_progress: bool, options: dict[str, Any],
    metric_options: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[list[Any], dict[str, Any], set[str]]:
    import datasets

    from ..runs.batch import score_dataset

    scored, runs = [], {}
    names: set[str] = set()
    for label, frame in zip(("a", "b"), frames, strict=True):
        dataset = datasets.Dataset.from_pandas(frame, preserve_index=False)
        try:
            result, summary = score_dataset(dataset, metrics, chunk_size=chunk_size,
                                            show_progress=show_progress,
                                            metric_options=metric_options, **options)
        except UserInputError as error:
            raise UserInputError(f"run {label.upper()}: {error}") from None
        if summary.dry_run:
            raise UserInputError("compare cannot dry-run: use `score --dry-run` on each input")
        cost: float | None = 0.0
        for m in summary.metrics:
            cost = None if cost is None or m.cost is None else cost + (m.cost if m.judge else 0)
        runs[label] = {**summary.as_dict(), "judge": judge_description(options), "cost": cost,
                       "seconds": sum(m.seconds for m in summary.metrics)}
        names.update(m.metric for m in summary.metrics)
        scored.append(result.to_pandas())
    return scored, runs, names


def judge_description(judge: JudgeConfig | Mapping[str, Any]) -> dict[str, Any]:
    """Provider and model of a run's judge (its config, or a run's options: their judge options
    through the one converter), and whether it is the embedded default.

    A mapping the converter refuses is a judge described, not one to call (a report's
    ``{"provider": "panel", ...}``, a hosted judge named without its key): it is shown as given,
    and it is not the embedded default, which needs no key and always converts."""
    if isinstance(judge, JudgeConfig):
        config = judge
    else:
        try:
            config = check_run_options(judge_options_of(judge)).judge
        except UserInputError:
            return {"provider": judge.get("provider"), "model": judge.get("model"),
                    "embedded_default": False}
    return {"provider": config.provider, "model": config.model,
            "embedded_default": config.is_embedded}


def _label(source: Any, default: str) -> str:
    if isinstance(source, (str, Path)):
        return Path(source).name
    return default


def _shown(key: str) -> str:
    return repr(key if len(key) <= 40 else key[:39] + "…")


def _fmt(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def _fmt_p(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.2e}" if value < 1e-4 else f"{value:.4f}"


def json_ready(value: Any) -> Any:
    """NaN/inf -> None, numpy scalars -> Python (JSON-ready)."""
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    if isinstance(value, (np.floating, float)):
        return float(value) if math.isfinite(float(value)) else None
    if isinstance(value, np.integer):
        return int(value)
    return value

"""Paired comparison of two scored runs: is B better than A, per score column, and how sure?

Rows of A and B are paired by a key (an ``id`` column by default, else a hash of the task
columns both runs share). Per score column, only pairs measured in both runs count; rows in one
run only and rows unmeasured in either are counted and reported, never dropped silently.

Per score column: n paired, mean A, mean B, delta = mean B - mean A, a seeded paired-bootstrap
interval of the delta (``stats.paired_difference_ci``), a paired test (exact McNemar, i.e. a
two-sided binomial test on the discordant pairs, for 0/1 scores; Wilcoxon signed-rank for graded
ones; both from scipy), wins/ties/losses of B against A (in the metric's better direction), and
the p-value Holm-adjusted across the report's score columns (statsmodels).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..kit import stats
from ..kit.registry import LOWER_IS_BETTER, METRICS
from ..runs.chunks import score_column_names
from ..runs.summary import BatchInputError, format_table

DEFAULT_RESAMPLES = 2000
# the columns a system writes: they differ between runs, so they never identify a row
SYSTEM_COLUMNS = ("prediction", "contexts")
MCNEMAR = "exact McNemar (two-sided binomial test on discordant pairs)"
WILCOXON = "Wilcoxon signed-rank (two-sided; zero differences dropped)"


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
        return _finite(data)

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


# ------------------------------------------------------------------------------ statistics


def compare_scores(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    higher_is_better: bool = True,
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int | None = stats.DEFAULT_SEED,
) -> dict[str, Any]:
    """The paired statistics of two equally long score arrays with no missing value."""
    from scipy import stats as sps

    first = np.asarray(a, dtype=np.float64)
    second = np.asarray(b, dtype=np.float64)
    n = int(first.size)
    out: dict[str, Any] = {"n_paired": n, "mean_a": None, "mean_b": None, "delta": None,
                           "low": None, "high": None, "test": None, "statistic": None,
                           "p_value": None, "wins": 0, "ties": 0, "losses": 0, "note": "",
                           "kind": _kind(first, second)}
    if n == 0:
        out["note"] = "no pair measured in both runs"
        return out
    diff = second - first
    better = diff if higher_is_better else -diff
    out.update(mean_a=float(first.mean()), mean_b=float(second.mean()), delta=float(diff.mean()),
               wins=int(np.count_nonzero(better > 0)), ties=int(np.count_nonzero(better == 0)),
               losses=int(np.count_nonzero(better < 0)))
    out["low"], out["high"] = stats.paired_difference_ci(
        first, second, confidence=confidence, n_resamples=n_resamples, seed=seed)
    if out["kind"] == "binary":
        up = int(np.count_nonzero(diff > 0))
        down = int(np.count_nonzero(diff < 0))
        out["test"] = MCNEMAR
        out["statistic"] = float(up)
        if up + down == 0:
            out["p_value"] = 1.0
            out["note"] = "no discordant pair"
        else:
            out["p_value"] = float(sps.binomtest(up, up + down, 0.5).pvalue)
    else:
        out["test"] = WILCOXON
        if not np.any(diff != 0):
            out["p_value"] = 1.0
            out["note"] = "every pair ties"
        else:
            result = sps.wilcoxon(second, first)
            out["statistic"] = float(result.statistic)
            out["p_value"] = float(result.pvalue)
    return out


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values (statsmodels' ``multipletests``); ``None`` stays ``None``."""
    present = [i for i, p in enumerate(p_values) if p is not None]
    adjusted: list[float | None] = [None] * len(p_values)
    if not present:
        return adjusted
    from statsmodels.stats.multitest import multipletests

    values = multipletests([float(p_values[i]) for i in present], method="holm")[1]
    for i, value in zip(present, values, strict=True):
        adjusted[i] = float(value)
    return adjusted


def _kind(a: np.ndarray, b: np.ndarray) -> str:
    both = np.concatenate([a, b])
    return "binary" if both.size and np.all((both == 0) | (both == 1)) else "graded"


# ------------------------------------------------------------------------------ reading, pairing


def load_run(source: Any, name: str = "A") -> Any:
    """A run as a pandas DataFrame: a path (.jsonl, .csv, .parquet or a saved Dataset folder,
    read by the CLI's readers), a ``datasets.Dataset``, a DataFrame, or a list of row dicts."""
    import datasets
    import pandas as pd

    if isinstance(source, (str, Path)):
        from ..runs.files import read_input

        return read_input(Path(source)).to_pandas()
    if isinstance(source, datasets.Dataset):
        return source.to_pandas()
    if isinstance(source, pd.DataFrame):
        return source.reset_index(drop=True)
    if isinstance(source, list) and all(isinstance(r, Mapping) for r in source):
        if not source:
            raise BatchInputError(f"run {name}: no rows")
        return pd.DataFrame(list(source))
    raise BatchInputError(f"run {name}: expected a file path, a datasets.Dataset, a pandas "
                          f"DataFrame or a list of row dicts, got {type(source).__name__}")


def score_columns(columns: Sequence[str]) -> dict[str, str]:
    """Score column -> its metric, for the score columns ``score`` writes that are present."""
    present = set(columns)
    found: dict[str, str] = {}
    for name, spec in METRICS.items():
        for column in score_column_names(name, spec).values():
            if column in present:
                found[column] = name
    return found


def numeric_scores(frame: Any, column: str, run: str) -> np.ndarray:
    """A score column as floats, NaN where unmeasured (None, empty CSV cell)."""
    values = np.full(len(frame), np.nan)
    for row, cell in enumerate(frame[column].tolist()):
        if cell is None or (isinstance(cell, str) and not cell.strip()):
            continue
        try:
            value = float(cell)
        except (TypeError, ValueError):
            raise BatchInputError(f"run {run}: column {column!r}, row {row}: {cell!r} is not a "
                                  "score (a number, or empty where unmeasured)") from None
        values[row] = value if math.isfinite(value) else np.nan
    return values


def unmeasured_reason(details: Any) -> str:
    """Why a row is unmeasured, from its ``<metric>_details`` cell (JSON text or a dict)."""
    if isinstance(details, str):
        try:
            details = json.loads(details)
        except json.JSONDecodeError:
            return ""
    if isinstance(details, Mapping) and details.get("unmeasured"):
        return str(details["unmeasured"])
    return ""


def _key_text(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        value = value.item()
    return json.dumps(_plain(value), sort_keys=True, ensure_ascii=False, default=str)


def _plain(value: Any) -> Any:
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        items = [_plain(v) for v in value]
        return items[0] if len(items) == 1 else items
    return value


def task_columns(a: Any, b: Any) -> list[str]:
    """The columns a hash key is built from: shared by both runs, not written by a system
    (prediction, contexts) and not a score or details column."""
    scores = set(score_columns(a.columns)) | set(score_columns(b.columns))
    details = {f"{m}_details" for m in METRICS}
    return [c for c in a.columns if c in set(b.columns) and c not in SYSTEM_COLUMNS
            and c not in scores and c not in details]


def row_keys(frame: Any, key: str | None, columns: Sequence[str], run: str) -> list[str]:
    """One key per row; a duplicated or missing key is a :class:`BatchInputError`."""
    if key is not None:
        keys = [_key_text(v) for v in frame[key].tolist()]
        for row, k in enumerate(keys):
            if k is None:
                raise BatchInputError(f"run {run}: row {row} has no value in key column {key!r}")
    else:
        cells = [frame[c].tolist() for c in columns]
        keys = []
        for values in zip(*cells, strict=True):
            text = json.dumps([_plain(v) for v in values], sort_keys=True, ensure_ascii=False,
                              default=str)
            keys.append(hashlib.sha256(text.encode("utf-8")).hexdigest()[:16])
    seen: dict[str, int] = {}
    for row, k in enumerate(keys):
        if k in seen:
            what = f"key {k!r} (column {key!r})" if key is not None else (
                f"key {k} (hash of {', '.join(columns)})")
            raise BatchInputError(f"run {run}: duplicated {what} in rows {seen[k]} and {row}; "
                                  "pass --key with a column that identifies each row")
        seen[k] = row
    return keys


def _choose_key(a: Any, b: Any, key: str | None) -> tuple[str | None, list[str], str]:
    if key is not None:
        for run, frame in (("A", a), ("B", b)):
            if key not in frame.columns:
                raise BatchInputError(f"--key {key!r}: run {run} has no such column (its "
                                      f"columns: {', '.join(map(str, frame.columns))})")
        return key, [], key
    if "id" in a.columns and "id" in b.columns:
        return "id", [], "id"
    columns = task_columns(a, b)
    if not columns:
        raise BatchInputError("no 'id' column in both runs and no shared task column to pair "
                              "rows by; pass --key COLUMN")
    return None, columns, f"hash({', '.join(columns)})"


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
    **options: Any,
) -> CompareReport:
    """Compare run B with run A, pair by pair.

    ``a``, ``b``: per-row outputs of ``score`` (a path, ``datasets.Dataset``, DataFrame or list
    of row dicts); with ``metrics`` they are inputs, scored first with
    ``shared.runs.batch.score_dataset`` (``options``: the judge and embedding options of ``score``).
    ``key``: the column pairing the rows (default ``id`` when both runs have it, else a hash of
    the task columns both share). ``names``: labels of the runs (default the file names).
    Raises :class:`BatchInputError` on a missing key column, a duplicated key, no common score
    column or no pair.
    """
    started = time.perf_counter()
    if n_resamples < 1:
        raise BatchInputError(f"n_resamples must be >= 1, got {n_resamples}")
    if not 0.0 < confidence < 1.0:
        raise BatchInputError(f"confidence must be in (0, 1), got {confidence}")
    labels = list(names) if names else [_label(a, "A"), _label(b, "B")]
    if labels[0] == labels[1]:
        labels = [f"A: {labels[0]}", f"B: {labels[1]}"]
    frame_a, frame_b = load_run(a, "A"), load_run(b, "B")
    if metrics is None and options:
        raise BatchInputError(f"judge options ({', '.join(sorted(options))}) need metrics: the "
                              "runs are compared as scored unless metrics are given")
    # the keys are checked before any scoring: a duplicated id fails before the judge runs
    key_column, hashed, key_label = _choose_key(frame_a, frame_b, key)
    keys_a = row_keys(frame_a, key_column, hashed, "A")
    keys_b = row_keys(frame_b, key_column, hashed, "B")
    runs: dict[str, Any] = {}
    wanted: set[str] | None = None
    if metrics is not None:
        (frame_a, frame_b), runs, wanted = _score_runs(
            [frame_a, frame_b], metrics, chunk_size, show_progress, options)
    index_b = {k: i for i, k in enumerate(keys_b)}
    pair_a = [i for i, k in enumerate(keys_a) if k in index_b]
    pair_b = [index_b[keys_a[i]] for i in pair_a]
    in_a = set(keys_a)
    only_a = [k for k in keys_a if k not in index_b]
    only_b = [k for k in keys_b if k not in in_a]

    found_a, found_b = score_columns(frame_a.columns), score_columns(frame_b.columns)
    if wanted is not None:
        found_a = {c: m for c, m in found_a.items() if m in wanted}
        found_b = {c: m for c, m in found_b.items() if m in wanted}
    common = [c for c in found_a if c in found_b]
    not_compared = {c: "only in A" for c in found_a if c not in found_b}
    not_compared.update({c: "only in B" for c in found_b if c not in found_a})
    if not common:
        raise BatchInputError(
            "no score column in both runs (score columns are the ones `score` writes, e.g. "
            f"accuracy, faithfulness, rouge1); A has {', '.join(found_a) or 'none'}, B has "
            f"{', '.join(found_b) or 'none'}")
    if not pair_a:
        raise BatchInputError(
            f"no row of A pairs with a row of B by {key_label} (A: {len(keys_a)} rows, B: "
            f"{len(keys_b)} rows); pass --key with the column that identifies a row")

    results: list[ColumnComparison] = []
    scores: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for column in common:
        metric = found_a[column]
        values_a = numeric_scores(frame_a, column, "A")[pair_a]
        values_b = numeric_scores(frame_b, column, "B")[pair_b]
        scores[column] = (values_a, values_b)
        missing_a, missing_b = np.isnan(values_a), np.isnan(values_b)
        measured = ~(missing_a | missing_b)
        higher = metric not in LOWER_IS_BETTER
        result = compare_scores(values_a[measured], values_b[measured], higher_is_better=higher,
                                confidence=confidence, n_resamples=n_resamples, seed=seed)
        results.append(ColumnComparison(
            column=column, metric=metric, higher_is_better=higher,
            unmeasured_a=int(missing_a.sum()), unmeasured_b=int(missing_b.sum()),
            excluded=int((~measured).sum()), **result))
    for result, adjusted in zip(results, holm([r.p_value for r in results]), strict=True):
        result.p_holm = adjusted
    report = CompareReport(
        a=labels[0], b=labels[1], key=key_label, rows_a=len(frame_a), rows_b=len(frame_b),
        paired=len(pair_a), only_a=len(only_a), only_b=len(only_b), only_a_keys=only_a[:10],
        only_b_keys=only_b[:10], columns=results, not_compared=not_compared, seed=seed,
        n_resamples=n_resamples, confidence=confidence, runs=runs)
    report.pairs = PairedRows(frame_a, frame_b, pair_a, pair_b,
                              [keys_a[i] for i in pair_a], scores)
    report.seconds = time.perf_counter() - started
    return report


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
) -> tuple[list[Any], dict[str, Any], set[str]]:
    import datasets

    from ..runs.batch import score_dataset

    scored, runs = [], {}
    names: set[str] = set()
    for label, frame in zip(("a", "b"), frames, strict=True):
        dataset = datasets.Dataset.from_pandas(frame, preserve_index=False)
        try:
            result, summary = score_dataset(dataset, metrics, chunk_size=chunk_size,
                                            show_progress=show_progress, **options)
        except BatchInputError as error:
            raise BatchInputError(f"run {label.upper()}: {error}") from None
        if summary.dry_run:
            raise BatchInputError("compare cannot dry-run: use `score --dry-run` on each input")
        cost: float | None = 0.0
        for m in summary.metrics:
            cost = None if cost is None or m.cost is None else cost + (m.cost if m.judge else 0)
        runs[label] = {**summary.as_dict(), "judge": judge_description(options), "cost": cost,
                       "seconds": sum(m.seconds for m in summary.metrics)}
        names.update(m.metric for m in summary.metrics)
        scored.append(result.to_pandas())
    return scored, runs, names


def judge_description(options: Mapping[str, Any]) -> dict[str, Any]:
    """Provider and model of a run's judge, and whether it is the embedded default."""
    provider = options.get("provider") or ("local" if not options.get("api_key") else None)
    model = options.get("model")
    return {"provider": provider, "model": model,
            "embedded_default": provider == "local" and not model}


def _label(source: Any, default: str) -> str:
    if isinstance(source, (str, Path)):
        return Path(source).name
    return default


def _fmt(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def _fmt_p(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.2e}" if value < 1e-4 else f"{value:.4f}"


def _finite(value: Any) -> Any:
    """NaN/inf -> None, numpy scalars -> Python (JSON-ready)."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if isinstance(value, (np.floating, float)):
        return float(value) if math.isfinite(float(value)) else None
    if isinstance(value, np.integer):
        return int(value)
    return value

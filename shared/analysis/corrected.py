"""Gates and comparisons on the corrected estimate: a run whose label column is filled on some
rows (a uniformly random sample) gets the prediction-powered mean label (``shared.analysis.ppi``)
in place of the metric's plain mean.

``score --gate ... --gate-on corrected --label COLUMN``: each gate reads the corrected
estimate's interval, its lower end for a ``>=`` gate and its upper end for a ``<=`` gate.
``compare A B --label COLUMN``: per score column, the corrected difference B - A (paired: a row
counts as labelled when both runs hold its label), beside the metric's plain difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base.errors import UserInputError
from ..runs.summary import format_table
from .gates import MAX_UNMEASURED, Gate, GateOutcome, gate_scores
from .labels import parse_labels
from .ppi import label_scale, ppi_mean

__all__ = ["MIN_CORRECTED_LABELS", "MIN_EACH_BINARY", "CorrectedGateOutcome",
           "check_gate_labels", "corrected_differences", "corrected_gates",
           "differences_table", "parse_label_range"]

#: The fewest labelled, measured rows a corrected gate reads: the interval is a normal
#: (central-limit) one, and 30 is the textbook sample size from which a mean's normal interval
#: is taken as adequate; with fewer, its coverage is not to be trusted (a simulated 10 labels at
#: p = 0.9 covered the truth in 63% of splits).
MIN_CORRECTED_LABELS = 30
#: With 0/1 labels, the fewest of each value: the normal approximation of a proportion is taken
#: as adequate when n p >= 5 and n (1 - p) >= 5; below it the labels' spread, which sets the
#: interval, is too uncertain (all 1 gives an interval of width 0).
MIN_EACH_BINARY = 5


def parse_label_range(text: str | None) -> tuple[float, float] | None:
    """``--label-range LOW:HIGH`` (the rating scale's ends, e.g. ``1:5``), or None."""
    if text is None:
        return None
    parts = str(text).split(":")
    try:
        low, high = (float(x) for x in parts)
    except ValueError:
        raise UserInputError(f"--label-range {text!r}: expected LOW:HIGH, e.g. 1:5") from None
    if not (np.isfinite(low) and np.isfinite(high) and high > low):
        raise UserInputError(f"--label-range {text!r}: expected LOW:HIGH with LOW < HIGH")
    return low, high


def scale_labels(values: Sequence[Any], label: str, label_range: tuple[float, float] | None,
                 score_range: tuple[float, float] = (0.0, 1.0)) -> tuple[np.ndarray, str]:
    """Labels on the scores' scale and the mapping used, in words. 0/1 labels and labels within
    the score range are kept; other labels need ``label_range`` (``--label-range``), whose
    ends map onto the score range's ends: never the range the labelled rows happen to span
    (ratings 3-5 of a 1-5 scale are not 0-1, and one typo ``2`` among 0/1 labels is no
    scale). A label outside the declared range is refused."""
    parsed, _ = parse_labels(list(values), label, allow_constant=True)
    present = parsed[np.isfinite(parsed)]
    low, high = score_range
    if label_range is None:
        if present.size and (present.min() < low or present.max() > high):
            raise UserInputError(
                f"--label {label!r}: labels {present.min():g}..{present.max():g} are not on "
                f"the scores' scale {low:g}..{high:g}; give --label-range LOW:HIGH (the "
                "rating scale's ends, e.g. 1:5), never guessed from the labels present")
        return parsed, f"labels as they are ({low:g}..{high:g})"
    unit, used = label_scale(parsed, label_range)
    assert used is not None
    return low + unit * (high - low), (f"labels {used[0]:g}..{used[1]:g} mapped onto "
                                       f"{low:g}..{high:g}")


def check_gate_labels(labels: np.ndarray, label: str) -> str:
    """Why these labels (on the scores' scale, NaN where missing) cannot support a corrected
    gate, or "" when they can: fewer than :data:`MIN_CORRECTED_LABELS`, labels that do not
    vary, 0/1 labels with fewer than :data:`MIN_EACH_BINARY` of one value."""
    present = labels[np.isfinite(labels)]
    if present.size < MIN_CORRECTED_LABELS:
        return (f"{present.size} labelled rows in {label!r}; a corrected gate needs at least "
                f"{MIN_CORRECTED_LABELS}")
    values, counts = np.unique(present, return_counts=True)
    if values.size < 2:
        return (f"every label in {label!r} is {values[0]:g}: labels without variation give an "
                "interval of width 0, which supports no gate")
    if values.size == 2 and counts.min() < MIN_EACH_BINARY:
        rare = values[int(np.argmin(counts))]
        return (f"only {counts.min()} label(s) {rare:g} in {label!r}; a corrected gate on "
                f"two-valued labels needs at least {MIN_EACH_BINARY} of each")
    return ""


@dataclass(frozen=True)
class CorrectedGateOutcome(GateOutcome):
    """A gate on the corrected estimate: ``mean``, ``low`` and ``high`` are the
    prediction-powered estimate and its interval; ``labelled`` rows corrected it."""

    labelled: int = 0
    mapping: str = ""  # how the labels were put on the scores' scale
    unsupported: str = ""  # why the labels cannot support the gate ("" when they can)

    @property
    def passed(self) -> bool:
        return super().passed and not self.unsupported

    def reasons(self) -> list[str]:
        return ([self.unsupported] if self.unsupported else []) + super().reasons()

    def cells(self) -> list[str]:
        cells = super().cells()
        cells[1] = f"{cells[1]} (corrected)"
        return cells

    @property
    def message(self) -> str:
        return (super().message.replace(": mean ", ": corrected mean ", 1)
                + f" ({self.labelled} labelled rows; {self.mapping})")


def corrected_gates(source: Any, gates: Sequence[Gate], label: str, *,
                    max_unmeasured: float | None = MAX_UNMEASURED, alpha: float = 0.05,
                    label_range: tuple[float, float] | None = None
                    ) -> list[CorrectedGateOutcome]:
    """Evaluate ``gates`` on the corrected estimate of each gate's score (``source`` as
    ``evaluate_gates`` takes it; the ``label`` column is read from the scored rows, put on the
    metric's score range by ``label_range``: :func:`scale_labels`). A gate whose labelled,
    measured rows cannot support it (:func:`check_gate_labels`) fails, saying why."""
    from ..kit.registry import METRICS

    values = gate_scores(source, gates)
    raw = label_values(source, label)
    outcomes = []
    for gate in gates:
        spec = METRICS.get(gate.metric)
        score_range = spec.score_range if spec is not None else (0.0, 1.0)
        labels, mapping = scale_labels(raw, label, label_range, score_range)
        scores = values[gate.text]
        measured, labelled = np.isfinite(scores), np.isfinite(labels)
        unsupported = check_gate_labels(np.where(measured, labels, np.nan), label)
        try:
            found = ppi_mean(scores[measured & labelled], labels[measured & labelled],
                             scores[measured & ~labelled], alpha, bounds=score_range)
        except UserInputError as error:
            if not unsupported:
                raise UserInputError(f"gate {gate.text!r} --gate-on corrected: {error}") \
                    from None
            found = {"value": None, "low": None, "high": None,
                     "n": int((measured & labelled).sum())}
        gate_on = "lower" if gate.op == ">=" else "upper"
        outcomes.append(CorrectedGateOutcome(
            gate, gate.column(), int(scores.size), int((~measured).sum()), found["value"],
            found["low"], found["high"], gate_on, max_unmeasured, 1 - alpha,
            labelled=found["n"], mapping=mapping, unsupported=unsupported))
    return outcomes


def label_values(source: Any, label: str) -> list[Any]:
    """The ``label`` column of scored rows: a ``(scored, summary)`` pair, a Dataset (Hugging
    Face or Ray) or anything ``comparison.load_run`` reads."""
    scored = source[0] if isinstance(source, tuple) and len(source) == 2 else source
    if hasattr(scored, "select_columns") and hasattr(scored, "to_pandas"):
        columns = scored.column_names if hasattr(scored, "column_names") else scored.columns()
        if label not in columns:
            raise UserInputError(f"--label {label!r}: the input has no such column")
        return scored.select_columns([label]).to_pandas()[label].tolist()
    from .comparison import load_run

    frame = load_run(scored, "scored")
    if label not in frame.columns:
        raise UserInputError(f"--label {label!r}: the input has no such column")
    return frame[label].tolist()


def corrected_differences(report: Any, label: str, alpha: float = 0.05, *,
                          label_range: tuple[float, float] | None = None
                          ) -> list[dict[str, Any]]:
    """Per compared score column of ``report`` (``comparison.compare``'s), the
    prediction-powered difference of the mean label, B - A, over the paired rows measured in
    both runs: a row is labelled when both runs hold its label (in column ``label``), and
    then ``label_B - label_A`` corrects ``score_B - score_A``. Each entry: ``column``,
    ``judge_delta`` (the plain difference of the scores over the same rows), ``value``,
    ``low``, ``high``, ``n_labelled``, ``n_unlabelled``; with ``error`` instead when the rows
    give no estimate (fewer than 2 labelled, none unlabelled)."""
    pairs = report.pairs
    for name, frame in (("A", pairs.a), ("B", pairs.b)):
        if label not in frame.columns:
            raise UserInputError(f"--label {label!r}: run {name} has no such column")
    labels_a, labels_b = _paired_labels(pairs, label, label_range)
    found = []
    for column in (c.column for c in report.columns):
        a, b = pairs.scores[column]
        measured = np.isfinite(a) & np.isfinite(b)
        labelled = measured & np.isfinite(labels_a) & np.isfinite(labels_b)
        entry: dict[str, Any] = {"column": column,
                                 "judge_delta": float((b - a)[measured].mean())
                                 if measured.any() else None,
                                 "n_labelled": int(labelled.sum()),
                                 "n_unlabelled": int((measured & ~labelled).sum())}
        try:
            estimate = ppi_mean((b - a)[labelled], (labels_b - labels_a)[labelled],
                                (b - a)[measured & ~labelled], alpha, bounds=(-1.0, 1.0))
        except UserInputError as error:
            entry["error"] = str(error)
        else:
            entry.update(value=estimate["value"], low=estimate["low"], high=estimate["high"])
        found.append(entry)
    return found


def _paired_labels(pairs: Any, label: str, label_range: tuple[float, float] | None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's label in A and in B, on one 0-1 scale (ratings: by ``label_range``,
    :func:`scale_labels`)."""
    a, _ = scale_labels(pairs.a[label].tolist(), label, label_range)
    b, _ = scale_labels(pairs.b[label].tolist(), label, label_range)
    return a[pairs.index_a], b[pairs.index_b]


def differences_table(entries: Sequence[dict[str, Any]], label: str,
                      alpha: float = 0.05) -> str:
    """The corrected differences as the CLI prints them."""
    rows = []
    for e in entries:
        plain = "n/a" if e["judge_delta"] is None else f"{e['judge_delta']:+.4f}"
        if "error" in e:
            rows.append([e["column"], plain, "n/a", e["error"], str(e["n_labelled"]),
                         str(e["n_unlabelled"])])
            continue
        rows.append([e["column"], plain, f"{e['value']:+.4f}",
                     f"[{e['low']:+.4f}, {e['high']:+.4f}]", str(e["n_labelled"]),
                     str(e["n_unlabelled"])])
    return (f"corrected by the labels in {label!r} (prediction-powered, paired):\n"
            + format_table(["score", "judge-only delta B-A", "corrected delta",
                            f"{1 - alpha:.0%} interval", "labelled", "unlabelled"], rows))

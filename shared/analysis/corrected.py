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
from .gates import Gate, GateOutcome, gate_scores
from .labelled_runs import split_rows
from .labels import parse_labels
from .ppi import label_scale, ppi_mean

__all__ = ["CorrectedGateOutcome", "corrected_differences", "corrected_gates",
           "differences_table"]


@dataclass(frozen=True)
class CorrectedGateOutcome(GateOutcome):
    """A gate on the corrected estimate: ``mean``, ``low`` and ``high`` are the
    prediction-powered estimate and its interval; ``labelled`` rows corrected it."""

    labelled: int = 0

    def cells(self) -> list[str]:
        cells = super().cells()
        cells[1] = f"{cells[1]} (corrected)"
        return cells

    @property
    def message(self) -> str:
        return (super().message.replace(": mean ", ": corrected mean ", 1)
                + f" ({self.labelled} labelled rows)")


def corrected_gates(source: Any, gates: Sequence[Gate], label: str, *,
                    max_unmeasured: float | None = None, alpha: float = 0.05
                    ) -> list[CorrectedGateOutcome]:
    """Evaluate ``gates`` on the corrected estimate of each gate's score (``source`` as
    ``evaluate_gates`` takes it; the ``label`` column is read from the scored rows)."""
    values = gate_scores(source, gates)
    labels = label_values(source, label)
    outcomes = []
    for gate in gates:
        scores = values[gate.text]
        split = split_rows(scores.tolist(), labels, label)
        try:
            found = ppi_mean(split.scores, split.labels, split.unlabelled, alpha)
        except UserInputError as error:
            raise UserInputError(f"gate {gate.text!r} --gate-on corrected: {error}") from None
        gate_on = "lower" if gate.op == ">=" else "upper"
        outcomes.append(CorrectedGateOutcome(
            gate, gate.column(), int(scores.size), split.unmeasured, found["value"],
            found["low"], found["high"], gate_on, max_unmeasured, 1 - alpha,
            labelled=found["n"]))
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


def corrected_differences(report: Any, label: str, alpha: float = 0.05
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
    labels_a, labels_b = _paired_labels(pairs, label)
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


def _paired_labels(pairs: Any, label: str) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's label in A and in B, on one 0-1 scale (ratings: both runs' range)."""
    a, _ = parse_labels(pairs.a[label].tolist(), label, allow_constant=True)
    b, _ = parse_labels(pairs.b[label].tolist(), label, allow_constant=True)
    a, b = a[pairs.index_a], b[pairs.index_b]
    scaled, _ = label_scale(np.concatenate([a, b]))
    return scaled[:a.size], scaled[a.size:]


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

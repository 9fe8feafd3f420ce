"""Gates: fail a run whose score misses a threshold (``score --gate``, :func:`assert_gates`).

A gate is ``METRIC[.KEY]>=X`` or ``METRIC[.KEY]<=X``. It reads one score column of a run (the
metric's headline score, the named one of a metric with several: ``rouge.rougeL``, or an
alignment profile's ``METRIC_decision`` / ``METRIC_calibrated``, from ``score --profile``) and
holds when the value gated meets X. The value gated is the mean of the measured per-row scores
(``estimate``), or the lower or upper bound of its interval (``stats.t_wilson_interval`` on the
metric's score range, the one interval of a mean against a threshold: the HTML report's and
``assert_metric``'s too): ``lower`` is the conservative bound of a ``>=`` gate, ``upper`` that
of a ``<=`` gate. A gate fails when more than ``max_unmeasured`` of its rows are unmeasured
(default :data:`MAX_UNMEASURED`: the few rows a failing judge read are no verdict; 1 turns it
off); the unmeasured count is always shown."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import TYPE_CHECKING, Any

from ..base.errors import UserInputError
from ..kit.registry import METRICS
from ..runs.chunks import score_column_names
from ..runs.summary import BatchSummary, format_table
from .agreement_gate import AGREEMENT, AGREEMENT_RANGE, run_agreement

if TYPE_CHECKING:  # numpy is imported when gates are evaluated: the CLI starts without it
    import numpy as np

GATE_ON = ("estimate", "lower", "upper")
GATE_HEADER = ["gate", "value (mean)", "interval", "gated", "unmeasured", "result"]
_GATE = re.compile(r"\s*([A-Za-z_]\w*)(?:\.(\w+))?\s*(>=|<=)\s*(.*?)\s*")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
PROFILE_COLUMNS = ("calibrated", "decision")  # the columns `score --profile` adds
_GATED_LABEL = {"estimate": "mean", "lower": "lower bound", "upper": "upper bound"}
MAX_UNMEASURED = 0.1  # the default share of unmeasured rows a gate (or assert_metric) allows


@dataclass(frozen=True)
class Gate:
    """One parsed gate: ``metric``'s score ``key`` (``None``: its only headline score)."""

    metric: str
    key: str | None
    op: str  # ">=" or "<="
    threshold: float
    text: str  # as written, without spaces
    profile: str | None = None  # "calibrated" or "decision": an alignment profile's column

    def holds(self, value: float) -> bool:
        return value >= self.threshold if self.op == ">=" else value <= self.threshold

    def column(self) -> str:
        """The score column the gate reads (``score`` writes it; a metric result's output
        key is :meth:`output_key`). A metric or key that does not exist: ``UserInputError``."""
        if self.profile:  # score --profile wrote it (docs/ALIGNMENT.md)
            return f"{self.metric}_{self.profile}"
        return score_column_names(self.metric, METRICS[self.metric])[self.output_key()]

    def score_range(self) -> tuple[float, float]:
        """The range of the column gated: the metric's, or [0, 1] for a profile's column."""
        return (0.0, 1.0) if self.profile else METRICS[self.metric].score_range

    def output_key(self) -> str:
        if self.profile:
            raise UserInputError(f"gate {self.text!r}: a profile's column is in a scored run "
                                 "(score --profile), not in a metric's compute() result")
        headline = METRICS[self.metric].headline
        if self.key == AGREEMENT and METRICS[self.metric].judge:  # a panel's, run-level
            return headline[0]
        if self.key is None:
            if len(headline) > 1:
                raise UserInputError(
                    f"gate {self.text!r}: {self.metric} has several scores; name one: "
                    + ", ".join(f"{self.metric}.{k}" for k in headline))
            return headline[0]
        if self.key not in headline:
            raise UserInputError(f"gate {self.text!r}: {self.metric} has no score "
                                 f"{self.key!r} (its scores: {', '.join(headline)})")
        return self.key


def parse_gate(text: str) -> Gate:
    """``"faithfulness>=0.8"`` -> :class:`Gate`; a malformed gate, an unknown metric, a key
    the metric does not have, or a threshold that is not a plain decimal number inside the
    metric's declared score range is a one-line ``UserInputError``."""
    if not isinstance(text, str):
        raise UserInputError(f"a gate is a text such as 'faithfulness>=0.8', got {text!r}")
    match = _GATE.fullmatch(text)
    if match is None:
        raise UserInputError(f"gate {text!r}: expected METRIC[.KEY]>=X or METRIC[.KEY]<=X, "
                             "e.g. faithfulness>=0.8 or rouge.rougeL>=0.3")
    metric, key, op, number = match.groups()
    base, _, profile = metric.rpartition("_")  # faithfulness_decision: a profile's column
    profiled = metric not in METRICS and base in METRICS and profile in PROFILE_COLUMNS
    metric, profile = (base, profile) if profiled and not key else (metric, None)
    if metric not in METRICS:
        raise UserInputError(f"gate {text!r}: unknown metric {metric!r}; choose from: "
                             f"{', '.join(METRICS)}")
    # a plain decimal number only: float() also takes 0_5 (five), inf, nan and 1e999
    threshold = float(number) if _NUMBER.fullmatch(number) else math.nan
    if not math.isfinite(threshold):
        raise UserInputError(f"gate {text!r}: X must be a finite number written as a plain "
                             f"decimal (e.g. 0.8), got {number!r}")
    low, high = (AGREEMENT_RANGE if key == AGREEMENT else (0.0, 1.0) if profile
                 else METRICS[metric].score_range)
    if not low <= threshold <= high:
        raise UserInputError(f"gate {text!r}: X={number} is outside {metric}'s score range "
                             f"[{low:g}, {high:g}], so the gate could never fail or never hold")
    gate = Gate(metric, key, op, threshold, f"{metric}{'_' + profile if profile else ''}"
                f"{'.' + key if key else ''}{op}{number}", profile)
    gate.column()  # a key the metric does not have fails here
    return gate


def parse_gates(texts: str | Gate | Iterable[str | Gate]) -> list[Gate]:
    """Gates from texts or :class:`Gate`; one text (or one Gate) is one gate."""
    if isinstance(texts, (str, Gate)):
        texts = [texts]
    elif not isinstance(texts, Iterable):
        raise UserInputError(f"gates: expected a gate text such as 'faithfulness>=0.8' or a "
                             f"list of them, got {type(texts).__name__}")
    return [t if isinstance(t, Gate) else parse_gate(t) for t in texts]


def check_gate_on(gate_on: Any) -> None:
    if not isinstance(gate_on, str) or gate_on not in GATE_ON:
        raise UserInputError(f"gate_on must be one of {', '.join(GATE_ON)}, got {gate_on!r}")


def check_max_unmeasured(fraction: Any, name: str = "max unmeasured") -> None:
    """``None`` (no limit) or a number in [0, 1] (a numpy float too); anything else is a
    one-line ``UserInputError`` (a text such as ``"0.1"`` included: it is not a number)."""
    if fraction is not None and not _is_real(fraction):
        raise UserInputError(f"{name} must be a fraction in [0, 1] (a number) or None, got "
                             f"{fraction!r} ({type(fraction).__name__})")
    if fraction is not None and not 0.0 <= fraction <= 1.0:
        raise UserInputError(f"{name} must be a fraction in [0, 1], got {fraction}")


def _is_real(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _check_confidence(confidence: Any) -> None:
    if not _is_real(confidence) or not 0.0 < confidence < 1.0:
        raise UserInputError(f"confidence must be a number in (0, 1), got {confidence!r}")


def check_computed(gates: Sequence[Gate], computed: Iterable[str],
                   skipped: Mapping[str, str] | None = None) -> None:
    """Every gate's metric is among the ones the run computes (``skipped``: why others are
    not, as ``shared.runs.batch.select_metrics`` says)."""
    names = list(computed)
    for gate in gates:
        if gate.metric not in names:
            why = f" ({skipped[gate.metric]})" if skipped and gate.metric in skipped else ""
            raise UserInputError(
                f"gate {gate.text!r}: this run does not compute {gate.metric}{why}; it "
                f"computes {', '.join(names) or 'nothing'}")


@dataclass(frozen=True)
class GateOutcome:
    """A gate evaluated on a run: the mean of the measured rows, its interval, the share of
    rows unmeasured, and whether the gate holds."""

    gate: Gate
    column: str
    rows: int
    unmeasured: int
    mean: float | None  # None: no row measured
    low: float | None
    high: float | None
    gate_on: str = "estimate"
    max_unmeasured: float | None = MAX_UNMEASURED
    confidence: float = 0.95

    @property
    def name(self) -> str:
        return self.gate.text

    @property
    def gated(self) -> float | None:
        return {"estimate": self.mean, "lower": self.low, "upper": self.high}[self.gate_on]

    @property
    def unmeasured_share(self) -> float:
        return self.unmeasured / self.rows if self.rows else 1.0

    @property
    def too_unmeasured(self) -> bool:
        return self.max_unmeasured is not None and self.unmeasured_share > self.max_unmeasured

    @property
    def passed(self) -> bool:
        gated = self.gated
        return gated is not None and self.gate.holds(gated) and not self.too_unmeasured

    def reasons(self) -> list[str]:
        """Why the gate fails (empty when it holds)."""
        found = []
        gated, label = self.gated, _GATED_LABEL[self.gate_on]
        if gated is None:
            found.append("no measured row")
        elif not self.gate.holds(gated):
            found.append(f"{label} {gated:.4f} {'<' if self.gate.op == '>=' else '>'} "
                         f"{self.gate.threshold:g}")
        if self.too_unmeasured:
            found.append(f"unmeasured {self.unmeasured_share:.1%} > max "
                         f"{self.max_unmeasured:.1%}")
        return found

    @property
    def message(self) -> str:
        """One line: the gate, its outcome, value, interval and unmeasured share."""
        why = "; ".join(self.reasons())
        return (f"{self.name} {'holds' if self.passed else 'FAILED'}"
                + (f" ({why})" if why else "") + f": mean {_number(self.mean)}, "
                f"{self.confidence:.0%} interval {self.interval()}, unmeasured "
                f"{self.unmeasured_text()}")

    def interval(self) -> str:
        return f"[{_number(self.low)}, {_number(self.high)}]"

    def unmeasured_text(self) -> str:
        return f"{self.unmeasured}/{self.rows} ({self.unmeasured_share:.1%})"

    def cells(self) -> list[str]:
        """The row of :data:`GATE_HEADER` without the result."""
        gated = self.gated
        return [self.name, _number(self.mean), self.interval(),
                f"{_GATED_LABEL[self.gate_on]} {_number(gated)}", self.unmeasured_text()]


def evaluate_gates(source: Any, gates: str | Gate | Iterable[str | Gate], *,
                   gate_on: str = "estimate", max_unmeasured: float | None = MAX_UNMEASURED,
                   confidence: float = 0.95) -> list[GateOutcome]:
    """Evaluate ``gates`` (a text like ``"faithfulness>=0.8"``, a :class:`Gate`, or a list of
    them) on a run.

    ``source``: a metric's ``compute()`` output (or that output saved as JSON and loaded
    back); the ``(scored, summary)`` pair that ``shared.score_dataset`` returns; or a scored
    run (a path to ``score``'s output, a ``datasets.Dataset``, a DataFrame or a list of row
    dicts). Intervals: ``stats.t_wilson_interval`` of the measured per-row scores on the
    metric's score range (``confidence``); ``max_unmeasured`` ``None``: no unmeasured bound."""
    import numpy as np

    from ..kit import stats

    check_gate_on(gate_on)
    check_max_unmeasured(max_unmeasured)
    _check_confidence(confidence)
    parsed = parse_gates(gates)
    values = gate_scores(source, parsed)
    outcomes = []
    for gate in parsed:
        scores = values[gate.text]
        measured = scores[np.isfinite(scores)]
        mean = low = high = None
        if gate.key == AGREEMENT:  # a panel's alpha over the whole run, and its interval
            mean, low, high = run_agreement(source, gate)
        elif measured.size:
            mean = float(measured.mean())
            low, high = stats.t_wilson_interval(measured, confidence=confidence,
                                                score_range=gate.score_range())
        outcomes.append(GateOutcome(
            gate, gate.column(), int(scores.size), int(scores.size - measured.size), mean, low,
            high, gate_on, max_unmeasured, confidence))
    return outcomes


def assert_gates(source: Any, gates: str | Gate | Iterable[str | Gate],
                 **options: Any) -> list[GateOutcome]:
    """:func:`evaluate_gates`, raising ``AssertionError`` that lists every failed gate. For
    pytest, ``shared.assert_metric`` (docs/INTEGRATIONS.md); this stays for a scored run."""
    import warnings

    warnings.warn("assert_gates is deprecated in tests: use shared.assert_metric (an honest "
                  "verdict on rows it scores) or evaluate_gates on a scored run",
                  DeprecationWarning, stacklevel=2)
    outcomes = evaluate_gates(source, gates, **options)
    failed = [o for o in outcomes if not o.passed]
    if failed:
        raise AssertionError(f"{len(failed)} of {len(outcomes)} gates failed:\n"
                             + "\n".join(f"  {o.message}" for o in failed))
    return outcomes


def gate_scores(source: Any, gates: Sequence[Gate]) -> dict[str, np.ndarray]:
    """Each gate's per-row scores (NaN where unmeasured), by gate text. A cell that is no
    score (text, a boolean, a number outside the metric's declared range) is a one-line
    ``UserInputError`` naming the gate and the row."""
    if isinstance(source, BatchSummary):
        raise TypeError("a BatchSummary holds no per-row scores: pass the (scored, summary) "
                        "pair that score_dataset returns")
    if isinstance(source, Mapping):
        return _output_scores(source, gates)
    if isinstance(source, tuple) and len(source) == 2 and isinstance(source[1], BatchSummary):
        scored, summary = source
        check_computed(gates, [m.metric for m in summary.metrics], summary.skipped)
        frame = _score_frame(scored, sorted({g.column() for g in gates}))
    else:
        from .comparison import load_run

        frame = load_run(source, "scored")
        for gate in gates:
            if gate.column() not in frame.columns:
                raise UserInputError(f"gate {gate.text!r}: the run has no score column "
                                     f"{gate.column()!r}")
    from .comparison import numeric_scores

    return {g.text: numeric_scores(frame, g.column(), "scored", None if g.profile else g.metric)
            for g in gates}


def _output_scores(output: Mapping[str, Any], gates: Sequence[Gate]) -> dict[str, np.ndarray]:
    """The per-row scores of a metric's ``compute()`` output: its per-sample results, or, in
    the plain dict of an output saved as JSON and loaded back, its per-sample ``scores`` list
    (numbers, or one dict of scores per row for a metric with several: rouge)."""
    results = getattr(output, "results", None)
    rows = output.get("scores") if results is None else None
    if results is None and not isinstance(rows, list):
        raise UserInputError(
            "gates read a metric's compute() result (as returned, or saved as JSON and loaded "
            "back: a dict with its per-row 'scores' list), a (scored, summary) pair or a scored "
            f"run; this dict has no 'scores' list (its keys: {', '.join(map(str, output))})")
    found = {}
    for gate in gates:
        key = gate.output_key()
        if key not in output:
            raise UserInputError(f"gate {gate.text!r}: this result has no {key!r}: is it a "
                                 f"{gate.metric} result? (its keys: "
                                 f"{', '.join(map(str, output))})")
        if results is not None:
            cells = [r.value(key) for r in results]
        else:
            cells = [c.get(key) if isinstance(c, Mapping) else c for c in rows or []]
        found[gate.text] = _checked_scores(gate, cells)
    return found


def _checked_scores(gate: Gate, cells: Sequence[Any]) -> np.ndarray:
    """``cells`` as floats, NaN where unmeasured (``None``, NaN); anything else that is not a
    number in the metric's declared range is refused."""
    import numpy as np

    low, high = METRICS[gate.metric].score_range
    values = np.full(len(cells), np.nan)
    for row, cell in enumerate(cells):
        if cell is None or (_is_real(cell) and math.isnan(cell)):
            continue
        where = f"gate {gate.text!r}: row {row}"
        if not _is_real(cell):
            raise UserInputError(f"{where}: {cell!r} is not a score (a number, or None where "
                                 "the row is unmeasured)")
        value = float(cell)
        if not low <= value <= high:
            raise UserInputError(f"{where}: {value:g} is outside {gate.metric}'s score range "
                                 f"[{low:g}, {high:g}]")
        values[row] = value
    return values


def _score_frame(scored: Any, columns: list[str]) -> Any:
    """The gated score columns of a scored ``datasets.Dataset`` or Ray dataset (only those
    columns are converted), or of anything ``comparison.load_run`` reads."""
    if hasattr(scored, "select_columns") and hasattr(scored, "to_pandas"):
        return scored.select_columns(columns).to_pandas()
    from .comparison import load_run

    return load_run(scored, "scored")


def checks_table(header: Sequence[str], checks: Sequence[Any]) -> str:
    """Gate outcomes (or compare's checks) as the CLI prints them: cells and pass/FAIL."""
    return format_table(list(header), [[*c.cells(), "pass" if c.passed else "FAIL"]
                                       for c in checks])


def checks_html(title: str, header: Sequence[str], checks: Sequence[Any],
                note: str = "") -> dict[str, Any]:
    """What the reports' ``checks`` block shows (``macros.html.j2``)."""
    return {"title": title, "header": list(header), "note": note,
            "failed": sum(not c.passed for c in checks),
            "rows": [{"cells": c.cells(), "passed": c.passed, "message": c.message}
                     for c in checks]}


def gates_html(outcomes: Sequence[GateOutcome]) -> dict[str, Any]:  # the reports' block
    return checks_html("Gates", GATE_HEADER, outcomes)


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"

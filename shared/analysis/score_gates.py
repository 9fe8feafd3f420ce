"""The gates of one ``score`` run, as one object: the ``--gate`` expressions and the options
that go with them (``--gate-on``, ``--label``, ``--max-unmeasured``, ``--junit-xml``), checked
together before any work, then asked in order: do the gates name metrics the run computes, the
outcomes on the scored rows, the report's block, the JUnit file and the exit status.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..base.errors import UserInputError
from .agreement_gate import AGREEMENT
from .gates import (
    GATE_HEADER,
    MAX_UNMEASURED,
    Gate,
    GateOutcome,
    check_computed,
    check_max_unmeasured,
    checks_table,
    evaluate_gates,
    gates_html,
    parse_gates,
)
from .junit import write_junit_xml
from .trials import PassGate, TrialReport, is_pass_gate


@dataclass(frozen=True)
class GateResults:
    """The gates' outcomes on a run's scored rows and the report's block of them (``html``:
    ``None`` without gates)."""

    outcomes: list[GateOutcome]
    html: dict[str, Any] | None

    @property
    def table(self) -> str:
        return checks_table(GATE_HEADER, self.outcomes)


@dataclass(frozen=True)
class ScoreGates:
    """``gates`` and how they are evaluated: ``gate_on`` (estimate, lower, upper or corrected;
    ``None``: estimate), ``label`` (the human labels of ``corrected``), ``max_unmeasured``
    (``None``: not given, so :data:`.gates.MAX_UNMEASURED`) and ``junit_xml`` (where the JUnit
    XML goes)."""

    gates: tuple[Gate, ...] = ()
    gate_on: str | None = None
    label: str | None = None
    max_unmeasured: float | None = None
    junit_xml: str | None = None
    label_range: tuple[float, float] | None = None  # --label-range: the labels' scale
    pass_gates: tuple[PassGate, ...] = ()  # pass^K>=X, pass@K>=X: on the run's --pass-k

    @classmethod
    def checked(cls, gates: Iterable[str], gate_on: str | None = None, label: str | None = None,
                max_unmeasured: float | None = None, junit_xml: str | None = None,
                dry_run: bool = False, *, label_range: str | None = None,
                panel: bool = False, profiled: str | None = None,
                pass_k: tuple[int, ...] = ()) -> ScoreGates:
        """The gates and their options checked together, before any work: one line naming
        the flag that is wrong (``UserInputError``). ``panel``: the run has two or more
        judges (a gate on ``judge_agreement`` needs them). ``profiled``: the metric of the run's
        ``--profile`` (a gate on its ``<metric>_decision``... needs it). ``pass_k``: the run's
        ``--pass-k`` (a gate ``pass^K>=X`` needs its K there)."""
        from .corrected import parse_label_range

        texts = list(gates) if not isinstance(gates, str) else [gates]
        pass_gates = tuple(PassGate.parsed(t, pass_k) for t in texts if is_pass_gate(t))
        parsed = tuple(parse_gates([t for t in texts if not is_pass_gate(t)]))
        if pass_gates and gate_on == "corrected":
            raise UserInputError(f"gate {pass_gates[0].text!r}: --gate-on corrected applies to "
                                 "a metric's mean, not to pass^k or pass@k")
        check_max_unmeasured(max_unmeasured)
        if (gate_on == "corrected") != bool(label):
            raise UserInputError("--gate-on corrected and --label COLUMN go together")
        for gate in parsed:
            if gate.profile and profiled != gate.metric:
                raise UserInputError(f"gate {gate.text!r}: give --profile FILE fitted for "
                                     f"{gate.metric} (it writes {gate.column()})")
            if gate.key == AGREEMENT and (gate_on == "corrected" or not panel):
                raise UserInputError(f"gate {gate.text!r}: judge_agreement is a panel's agreement: "
                                     "give two or more --judge (and no --gate-on corrected)")
        if label_range is not None and not label:
            raise UserInputError("--label-range applies to --label COLUMN")
        scale = parse_label_range(label_range)
        if not parsed and not pass_gates:
            for flag, value in (("--gate-on", gate_on), ("--max-unmeasured", max_unmeasured),
                                ("--junit-xml", junit_xml)):
                if value is not None:
                    raise UserInputError(f"{flag} applies to gates: give at least one --gate")
        elif dry_run:
            raise UserInputError("--gate needs scores: a dry run computes none")
        return cls(parsed, gate_on, label, max_unmeasured, junit_xml, scale, pass_gates)

    def __bool__(self) -> bool:
        return bool(self.gates or self.pass_gates)

    def check_run(self, dataset: Any, computed: Sequence[str],
                  skipped: Mapping[str, str] | None = None) -> None:
        """The gates against the run, once its input is read and before any scoring: every
        gate names a metric the run computes (``skipped``: why others are not); with
        ``--gate-on corrected``, the label column is on each gated metric's scale
        (``--label-range``) and has enough labels, varied enough, to support a corrected gate
        (one line); stderr says each gate's mapping."""
        if not self.gates:
            return
        check_computed(self.gates, computed, skipped)
        if self.gate_on != "corrected" or not self.label:
            return
        from ..kit.registry import METRICS
        from .corrected import check_gate_labels, label_values, scale_labels

        raw = label_values(dataset, self.label)
        for gate in self.gates:
            labels, mapping = scale_labels(raw, self.label, self.label_range,
                                           METRICS[gate.metric].score_range)
            why = check_gate_labels(labels, self.label)
            if why:
                raise UserInputError(f"gate {gate.text!r} --gate-on corrected: {why}")
            print(f"gate {gate.text!r} --gate-on corrected: {mapping}", file=sys.stderr)

    def evaluate(self, scored: Any, summary: Any, trials: TrialReport | None = None
                 ) -> GateResults:
        """The outcome of every gate on the scored rows (``trials``: the run's pass^k and
        pass@k, for the gates on them), with the report's block of them."""
        if not self:
            return GateResults([], None)
        limit = MAX_UNMEASURED if self.max_unmeasured is None else self.max_unmeasured
        outcomes = self._pass_outcomes(trials)
        if self.gates and self.gate_on == "corrected":
            from .corrected import corrected_gates

            assert self.label is not None
            outcomes[:0] = corrected_gates((scored, summary), self.gates, self.label,
                                           max_unmeasured=limit,
                                           label_range=self.label_range)
        elif self.gates:
            outcomes[:0] = evaluate_gates((scored, summary), self.gates,
                                          gate_on=self.gate_on or "estimate",
                                          max_unmeasured=limit)
        return GateResults(outcomes, gates_html(outcomes))

    def _pass_outcomes(self, trials: TrialReport | None) -> list[GateOutcome]:
        """The gates on pass^k and pass@k: the estimate, its Wilson interval over tasks (the
        value gated as --gate-on says), the tasks as the rows."""
        if not self.pass_gates:
            return []
        assert trials is not None, "gates on pass^k need the run's trial report"
        outcomes = []
        for gate in self.pass_gates:
            found = trials.value(gate.kind, gate.k)
            outcomes.append(GateOutcome(
                Gate(trials.metric, None, gate.op, gate.threshold, gate.text),
                gate.kind.replace("k", str(gate.k)), found["n_tasks"], 0, found["value"],
                found["low"], found["high"], self.gate_on or "estimate", None,
                1 - trials.alpha))
        return outcomes

    def status(self, outcomes: Sequence[GateOutcome]) -> int:
        """Exit status 1 when a gate failed (said on stderr), else 0; the JUnit XML either
        way."""
        if self.junit_xml:
            write_junit_xml(self.junit_xml, "judge-metrics score: gates", outcomes,
                            classname="judge-metrics.score", failure_type="GateFailed")
            print(f"wrote {self.junit_xml}", file=sys.stderr)
        failed = [o for o in outcomes if not o.passed]
        for outcome in failed:
            print(f"judge-metrics: gate {outcome.message}", file=sys.stderr)
        return 1 if failed else 0

"""The gates of one ``score`` run, as one object: the ``--gate`` expressions and the options
that go with them (``--gate-on``, ``--label``, ``--max-unmeasured``, ``--junit-xml``), checked
together before any work, then asked in order: do the gates name metrics the run computes, the
outcomes on the scored rows, the report's block, the JUnit file and the exit status.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base.errors import UserInputError
from ..runs.files import check_writable_file
from .gates import (
    GATE_HEADER,
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


@dataclass(frozen=True)
class ScoreGates:
    """``gates`` and how they are evaluated: ``gate_on`` (estimate, lower, upper or corrected;
    ``None``: estimate), ``label`` (the human labels of ``corrected``), ``max_unmeasured`` and
    ``junit_xml`` (where the JUnit XML goes)."""

    gates: tuple[Gate, ...] = ()
    gate_on: str | None = None
    label: str | None = None
    max_unmeasured: float | None = None
    junit_xml: str | None = None

    @classmethod
    def checked(cls, gates: Iterable[str], gate_on: str | None = None, label: str | None = None,
                max_unmeasured: float | None = None, junit_xml: str | None = None,
                dry_run: bool = False) -> ScoreGates:
        """The gates and their options checked together, before any work: one line naming
        the flag that is wrong (``UserInputError``)."""
        parsed = tuple(parse_gates(list(gates)))
        check_max_unmeasured(max_unmeasured)
        if (gate_on == "corrected") != bool(label):
            raise UserInputError("--gate-on corrected and --label COLUMN go together")
        if not parsed:
            for flag, value in (("--gate-on", gate_on), ("--max-unmeasured", max_unmeasured),
                                ("--junit-xml", junit_xml)):
                if value is not None:
                    raise UserInputError(f"{flag} applies to gates: give at least one --gate")
        elif dry_run:
            raise UserInputError("--gate needs scores: a dry run computes none")
        if junit_xml:
            check_writable_file(Path(junit_xml), "--junit-xml")
        return cls(parsed, gate_on, label, max_unmeasured, junit_xml)

    def __bool__(self) -> bool:
        return bool(self.gates)

    def check_computed(self, computed: Sequence[str],
                       skipped: Mapping[str, str] | None = None) -> None:
        """Every gate names a metric the run computes (``skipped``: why others are not)."""
        if self.gates:
            check_computed(self.gates, computed, skipped)

    def evaluate(self, scored: Any, summary: Any) -> list[GateOutcome]:
        """The outcome of every gate on the scored rows."""
        if not self.gates:
            return []
        if self.gate_on == "corrected":
            from .corrected import corrected_gates

            assert self.label is not None
            return list(corrected_gates((scored, summary), self.gates, self.label,
                                        max_unmeasured=self.max_unmeasured))
        return evaluate_gates((scored, summary), self.gates, gate_on=self.gate_on or "estimate",
                              max_unmeasured=self.max_unmeasured)

    @staticmethod
    def table(outcomes: Sequence[GateOutcome]) -> str:
        return checks_table(GATE_HEADER, outcomes)

    def html(self, outcomes: Sequence[GateOutcome]) -> dict[str, Any] | None:
        """The report's block of the gates (``None`` without gates)."""
        return gates_html(outcomes) if self.gates else None

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

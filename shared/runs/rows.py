"""A few rows of one metric, scored the way ``score`` scores a file: the rows keyed by the CLI's
column names (question, prediction, reference, contexts, ...), the options checked as
``score_dataset`` checks them, the metric loaded and called through :func:`.chunks.score_rows`.
The integrations (inspect, MLflow, pytest: ``shared.integrations``) score through this, so a
row's value there is the one ``score`` writes for it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..base.errors import UserInputError
from ..kit.registry import METRICS, MetricSpec
from .batch import check_metric_names
from .chunks import chunk_size_for, load_metric, score_column_names, score_rows
from .options import check_run_options
from .summary import MetricSummary


@dataclass(frozen=True)
class RowScore:
    """One row's score under the chosen key (``None``: unmeasured, ``unmeasured`` says why)
    and its details (verdicts, reasons...), as ``score`` writes them."""

    value: float | None
    details: dict[str, Any] = field(default_factory=dict)
    unmeasured: str | None = None


def score_key_of(spec: MetricSpec, score_key: str | None) -> str:
    """The per-row score read: ``score_key``, or the metric's first headline key."""
    if score_key is None:
        return spec.headline[0]
    if score_key not in spec.headline:
        raise UserInputError(f"score_key {score_key!r}: {spec.name} has no such score (its "
                             f"scores: {', '.join(spec.headline)})")
    return score_key


class MetricRows:
    """Metric ``name`` with its options checked once (its own, the judge's, the embedding's:
    :func:`.options.check_run_options`; ``judge``: the judge's config, ``None`` for a metric
    without one); :meth:`score` scores rows (column -> values) with it. The metric is loaded
    at the first :meth:`score`."""

    def __init__(self, name: str, *, score_key: str | None = None, **options: Any) -> None:
        if not isinstance(name, str):
            raise UserInputError(f"metric must be a metric name, got {type(name).__name__}")
        check_metric_names([name])
        if name == "all":
            raise UserInputError("name one metric, not 'all'")
        self.name = name
        self.spec = METRICS[name]
        self.key = score_key_of(self.spec, score_key)
        self.options = dict(options)
        checked = check_run_options(options, metric=self.spec)  # the judge, converted once
        self.judge = checked.judge if self.spec.judge else None
        self.call_options = checked.call_options(self.spec)
        self._metric: Any = None

    def columns(self) -> dict[str, str]:
        """compute argument -> CLI column, optional ones included."""
        return {**self.spec.columns, **self.spec.optional_columns}

    def mapped(self, columns: Mapping[str, str], fields: Mapping[str, Any],
               where: str) -> dict[str, list[Any]]:
        """One row's inputs that ``columns`` (CLI column -> field name) maps to ``fields``;
        a field missing from ``fields`` is a one-line error naming ``where`` it was sought."""
        row: dict[str, list[Any]] = {}
        for column, key in columns.items():
            if key not in fields:
                raise UserInputError(f"{self.name}: {where} has no {key!r} for its {column} "
                                     f"(it has: {', '.join(map(str, fields)) or 'nothing'})")
            row[column] = [fields[key]]
        return row

    def score(self, rows: Mapping[str, Sequence[Any]]) -> list[RowScore]:
        """Score ``rows`` (column -> one value per row; the required columns present)."""
        missing = [c for c in self.spec.columns.values() if c not in rows]
        if missing:
            raise UserInputError(f"metric {self.name!r} needs column(s) {', '.join(missing)}")
        arguments = {a: c for a, c in self.columns().items() if c in rows}
        n = len(rows[next(iter(arguments.values()))])
        if n == 0:
            raise UserInputError("no rows to score")
        if self._metric is None:
            self._metric = load_metric(self.name)
        summary = MetricSummary(self.name, {}, n, 0, self.spec.judge)
        columns, _ = score_rows(
            self.name, self._metric, lambda start, stop: {c: list(rows[c][start:stop])
                                                          for c in arguments.values()},
            n, chunk_size_for(self.name, None), arguments, self.call_options, summary)
        values = columns[score_column_names(self.name, self.spec)[self.key]]
        found = []
        for value, detail in zip(values, columns[f"{self.name}_details"], strict=True):
            details = json.loads(detail) if detail else {}
            reason = details.get("unmeasured") if value is None else None
            found.append(RowScore(value, details, reason or ("unmeasured" if value is None
                                                             else None)))
        return found

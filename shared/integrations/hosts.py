"""What every integration host (inspect_ai, MLflow; docs/ARCHITECTURE.md, "How to add an
integration host") shares: a host's declarative field map (:class:`FieldMap`: which of its
fields feeds which metric input) and :class:`HostScorer` (a metric's options checked once, the
``columns`` argument checked, one host record at a time made a row and scored as ``score``
scores it, :class:`shared.runs.rows.MetricRows`). No host library is imported here."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..base.errors import UserInputError
from ..runs.rows import MetricRows, RowScore

#: What a field's reader returns when the record does not hold that input: the input is then
#: looked up by its CLI column name in the host's other mappings (``FieldMap.rest``).
ABSENT = object()

#: A host record: field name -> its reader (called only for an input the metric takes, so a
#: costly conversion is paid only when needed), or, for the names in ``FieldMap.rest``, a
#: mapping (the sample's metadata, MLflow's inputs) that holds inputs under their column names.
Record = Mapping[str, Any]


@dataclass(frozen=True)
class FieldMap:
    """One host's map from its record to a metric's inputs, declared once per host.

    ``inputs``: compute argument (``predictions``, ``references``...) -> the name of the
    record's field that holds it. ``rest``: the record's mappings where every other input is
    found under its CLI column name, in this order; the first is also where the ``columns``
    argument points (an input -> a key of that mapping)."""

    host: str
    inputs: Mapping[str, str]
    rest: tuple[str, ...]

    def row(self, rows: MetricRows, record: Record, columns: Mapping[str, str],
            where: str) -> dict[str, list[Any]]:
        """``record`` as a one-row batch (CLI column -> [value]); ``where``: how an error names
        the record's first ``rest`` mapping (``sample 3's metadata``)."""
        mappings = [record[name] for name in self.rest]
        row = rows.mapped(columns, mappings[0], where)
        for argument, column in rows.columns().items():
            if column in row:
                continue
            field = self.inputs.get(argument)
            value = record[field]() if field is not None else ABSENT
            if value is ABSENT:
                value = next((m[column] for m in mappings if column in m), ABSENT)
            if value is not ABSENT:
                row[column] = [value]
        return row


def checked_columns(rows: MetricRows, columns: Mapping[str, str] | None) -> dict[str, str]:
    """``columns`` (a compute argument or its CLI column -> a key of the host's mapping) keyed
    by CLI column; an input the metric does not take is a one-line error."""
    known = rows.columns()
    found = {}
    for name, key in (columns or {}).items():
        column = known.get(name, name)
        if column not in known.values():
            raise UserInputError(f"columns: {rows.name} has no input {name!r} (its inputs: "
                                 f"{', '.join(known)})")
        found[column] = key
    return found


class HostScorer:
    """Metric ``metric`` for one host: its options (the metric's and the judge's) checked once
    by :class:`MetricRows`, ``columns`` checked, then one record at a time: :meth:`row` and
    :meth:`score` (one ``compute`` at a time: a metric object is not thread-safe, and hosts
    score in threads)."""

    def __init__(self, metric: str, fields: FieldMap, columns: Mapping[str, str] | None,
                 score_key: str | None, options: Mapping[str, Any]) -> None:
        self.rows = MetricRows(metric, score_key=score_key, **options)
        self.fields = fields
        self.columns = checked_columns(self.rows, columns)
        self._lock = threading.Lock()

    @property
    def key(self) -> str:
        return self.rows.key

    def row(self, record: Record, where: str) -> dict[str, list[Any]]:
        return self.fields.row(self.rows, record, self.columns, where)

    def score(self, row: dict[str, list[Any]]) -> RowScore:
        with self._lock:
            return self.rows.score(row)[0]


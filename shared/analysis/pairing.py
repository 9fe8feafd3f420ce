"""Reading two runs and pairing their rows: a run as a DataFrame, its score columns as floats,
and one key per row (a key column, or a hash of the task columns both runs share)."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..base.errors import UserInputError
from ..kit.registry import METRICS
from ..runs.chunks import score_column_names

# the columns a system writes: they differ between runs, so they never identify a row
SYSTEM_COLUMNS = ("prediction", "contexts")


def load_run(source: Any, name: str = "A") -> Any:
    """A run as a pandas DataFrame: a path (.jsonl, .csv, .parquet or a saved Dataset folder,
    read by the CLI's readers), a ``datasets.Dataset``, a DataFrame, or a list of row dicts.

    pandas shows a missing float as NaN; from a file or a Dataset, the cells that held a real
    NaN are kept apart (``frame.attrs["nan_cells"]``), so that :func:`numeric_scores` refuses
    them instead of taking them for unmeasured rows. In a DataFrame given as such, NaN is
    pandas's missing value."""
    import datasets
    import pandas as pd

    if isinstance(source, (str, Path)):
        from ..runs.files import read_input

        source = read_input(Path(source), name)
    if isinstance(source, datasets.Dataset):
        frame = source.to_pandas()
        frame.attrs["nan_cells"] = _nan_cells(source)
        return frame
    if isinstance(source, pd.DataFrame):
        return source.reset_index(drop=True)
    if isinstance(source, list) and all(isinstance(r, Mapping) for r in source):
        if not source:
            raise UserInputError(f"run {name}: no rows")
        return pd.DataFrame(list(source))
    raise UserInputError(f"run {name}: expected a file path, a datasets.Dataset, a pandas "
                         f"DataFrame or a list of row dicts, got {type(source).__name__}")


def _nan_cells(dataset: Any) -> dict[str, set[int]]:
    """Per float column, the rows holding NaN (not null)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    table = dataset.with_format("arrow")[:]
    found = {}
    for name in table.column_names:
        column = table.column(name)
        if pa.types.is_floating(column.type):
            rows = np.flatnonzero(pc.fill_null(pc.is_nan(column), False).to_numpy(
                zero_copy_only=False))
            if rows.size:
                found[name] = set(rows.tolist())
    return found


PROFILE_SUFFIXES = ("_calibrated", "_decision")


def score_columns(columns: Sequence[str]) -> dict[str, str]:
    """Score column -> its metric, for the score columns ``score`` writes that are present."""
    present = set(columns)
    found: dict[str, str] = {}
    for name, spec in METRICS.items():
        for column in score_column_names(name, spec).values():
            if column in present:
                found[column] = name
        for suffix in PROFILE_SUFFIXES:  # written by an alignment profile (score --profile)
            if f"{name}{suffix}" in present:
                found[f"{name}{suffix}"] = name
    return found


def column_score_range(column: str, metric: str) -> tuple[float, float]:
    """The range of ``metric``'s score column ``column``: an alignment profile's (a share or a
    probability) is [0, 1], whatever the metric's own range."""
    profiled = any(column == metric + suffix for suffix in PROFILE_SUFFIXES)
    return (0.0, 1.0) if profiled else METRICS[metric].score_range


def numeric_scores(frame: Any, column: str, run: str, metric: str | None = None
                   ) -> np.ndarray:
    """A score column as floats, NaN where unmeasured (None, an empty CSV cell).

    A cell that is no score is a :class:`UserInputError` naming the run, column and row: text,
    a boolean, NaN, an infinity, or a number outside ``metric``'s declared range
    (``SCORE_RANGE``, [0, 1] for most metrics)."""
    low, high = METRICS[metric].score_range if metric in METRICS else (-math.inf, math.inf)
    nan_rows = frame.attrs.get("nan_cells", {}).get(column, set())
    values = np.full(len(frame), np.nan)
    for row, cell in enumerate(frame[column].tolist()):
        where = f"run {run}: column {column!r}, row {row}"
        if row in nan_rows:
            raise UserInputError(f"{where}: NaN is not a score (leave the cell empty, or null, "
                                 "where the row is unmeasured)")
        if cell is None or (isinstance(cell, str) and not cell.strip()) or (
                isinstance(cell, float) and math.isnan(cell)):  # pandas's missing value
            continue
        if isinstance(cell, (bool, np.bool_)):
            raise UserInputError(f"{where}: {cell!r} is a boolean, not a score")
        try:
            value = float(cell)
        except (TypeError, ValueError):
            raise UserInputError(f"{where}: {cell!r} is not a score (a number, or empty where "
                                 "unmeasured)") from None
        if not math.isfinite(value):
            raise UserInputError(f"{where}: {cell!r} is not a finite number")
        if not low <= value <= high:
            raise UserInputError(f"{where}: {value:g} is outside {metric}'s range "
                                 f"[{low:g}, {high:g}]")
        values[row] = value
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


def key_text(value: Any) -> str | None:
    """A key cell as text, so that keys compare as text whatever file they came from: text as
    it is; a number as its shortest text, a whole number without ``.0`` (JSON ``1``, ``1.0``
    and CSV ``"1"`` are one key); ``None`` for a missing value."""
    if hasattr(value, "item") and not hasattr(value, "__len__"):
        value = value.item()  # a numpy scalar
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (int, float)):
        return repr(value)
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
    """One key per row; a duplicated or missing key is a :class:`UserInputError`."""
    if key is not None:
        keys = [key_text(v) for v in frame[key].tolist()]
        for row, k in enumerate(keys):
            if k is None:
                raise UserInputError(f"run {run}: row {row} has no value in key column {key!r}")
    else:
        cells = [frame[c].tolist() for c in columns]
        keys = []
        for values in zip(*cells, strict=True):
            text = json.dumps([key_text(_plain(v)) for v in values], ensure_ascii=False)
            keys.append(hashlib.sha256(text.encode("utf-8")).hexdigest()[:16])
    seen: dict[str, int] = {}
    for row, k in enumerate(keys):
        if k in seen:
            what = f"key {k!r} (column {key!r})" if key is not None else (
                f"key {k} (hash of {', '.join(columns)})")
            raise UserInputError(f"run {run}: duplicated {what} in rows {seen[k]} and {row}; "
                                 "pass --key with a column that identifies each row")
        seen[k] = row
    return keys


def choose_key(a: Any, b: Any, key: str | None) -> tuple[str | None, list[str], str]:
    if key is not None:
        for run, frame in (("A", a), ("B", b)):
            if key not in frame.columns:
                raise UserInputError(f"--key {key!r}: run {run} has no such column (its "
                                     f"columns: {', '.join(map(str, frame.columns))})")
        return key, [], key
    if "id" in a.columns and "id" in b.columns:
        return "id", [], "id"
    columns = task_columns(a, b)
    if not columns:
        raise UserInputError("no 'id' column in both runs and no shared task column to pair "
                             "rows by; pass --key COLUMN")
    return None, columns, f"hash({', '.join(columns)})"

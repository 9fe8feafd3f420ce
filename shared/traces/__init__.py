"""Score the traces you already collect (docs/TRACES.md): :func:`read` turns an OpenTelemetry
trace file (OTLP JSON, GenAI or OpenInference attributes) or ATIF trajectories into rows with
the CLI's column names; :mod:`.events` writes scores back as ``gen_ai.evaluation.result``
events; :mod:`.phoenix` reads a Phoenix project and logs scores back as span annotations;
:mod:`.scoring` scores rows, leaving the ones a metric cannot measure unmeasured."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..base.errors import UserInputError

FORMATS = ("otlp-json", "atif")
BY = ("span", "conversation")


def trace_files(path: Path) -> list[Path]:
    """The file, or a folder's ``.json``/``.jsonl`` files in name order (a Collector's
    rotated files)."""
    if path.is_dir():
        found = sorted(p for p in path.iterdir()
                       if p.is_file() and p.suffix.lower() in (".json", ".jsonl"))
        if not found:
            raise UserInputError(f"{path}: a folder without .json or .jsonl files")
        return found
    if not path.is_file():
        raise UserInputError(f"{path}: no such trace file")
    return [path]


def detect_format(path: Path) -> str:
    """``atif`` for a file whose first JSON value is an ATIF trajectory, else ``otlp-json``."""
    with path.open(encoding="utf-8") as handle:
        head = handle.read(4096).lstrip()
    if '"schema_version"' in head and '"ATIF' in head:
        return "atif"
    return "otlp-json"


def read(source: str | Path, *, format: str | None = None, by: str = "span"
         ) -> list[dict[str, Any]]:
    """The rows of a trace file (or of a folder of them): one per LLM span
    (``by="conversation"``: one per conversation), with the columns ``trace_id``,
    ``span_id``, ``conversation_id``, ``messages``, ``question``, ``prediction``, ``contexts``
    (only where retrieval content was captured), ``model``, ``start_time``, ``end_time``,
    ``duration_ms``, ``input_tokens``, ``output_tokens`` and ``content_captured`` (:mod:`.rows`
    says how each is read).

    ``format``: ``"otlp-json"`` (the Collector's file exporter: one export request per line,
    traces and logs) or ``"atif"``; ``None`` tells them apart by the file's content.
    """
    path = Path(source)
    if format is not None and format not in FORMATS:
        raise UserInputError(f"unknown trace format {format!r}; choose from {', '.join(FORMATS)}")
    if by not in BY:
        raise UserInputError(f"by must be one of {', '.join(BY)}, got {by!r}")
    files = trace_files(path)
    from .rows import conversation_rows, span_rows

    try:
        chosen = format or detect_format(files[0])
        if chosen == "atif":
            from .atif import read_trajectories, trajectory_rows

            rows = [r for f in files for t in read_trajectories(f) for r in trajectory_rows(t)]
        else:
            from .otlp import read_spans

            rows = span_rows(read_spans(files))
    except UnicodeDecodeError as error:
        raise UserInputError(f"{path}: not UTF-8 text ({error.reason})") from None
    except json.JSONDecodeError as error:
        raise UserInputError(f"{path}: not JSON: {error}") from None
    return conversation_rows(rows) if by == "conversation" else rows

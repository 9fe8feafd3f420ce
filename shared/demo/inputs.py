"""The demo's inputs: table cells -> ``compute`` arguments, judge fields -> judge options, an
uploaded batch -> table rows, and the example a page starts with."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..base.errors import UserInputError
from ..engine.backends.registry import LOCAL, PROVIDERS
from ..kit.registry import MetricSpec, example_rows
from ..runs.records import read_records

# Fallback example values per column, for a metric that declares no EXAMPLE.
_COLUMN_EXAMPLE = {
    "question": "What is the capital of France?",
    "prediction": "The capital of France is Paris.",
    "reference": "Paris is the capital of France.",
    "contexts": '["Paris is the capital and largest city of France."]',
    "source": "Paris is the capital and largest city of France, on the Seine.",
    "expected": '["Paris", "capital"]',
}


class DemoInputError(ValueError):
    """Input the page cannot turn into a ``compute`` call (shown in the page, never raised)."""



def input_kinds(metric: Any) -> dict[str, str]:
    """``compute`` argument -> input kind (text, texts, list, phrases)."""
    return {i.name: i.kind for i in getattr(type(metric), "INPUTS", ())}


def example_for(name: str, spec: MetricSpec) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """The table rows (column -> texts) and options a metric's page starts with: its declared
    ``EXAMPLE``, else one row of generic values."""
    if spec.example is not None:
        return example_rows(spec)
    columns = [*spec.columns.values(), *spec.optional_columns.values()]
    return {c: [_COLUMN_EXAMPLE.get(c, "example")] for c in columns}, {}



def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def table_rows(table: Any, columns: Sequence[str]) -> list[dict[str, str]]:
    """The table's rows as ``{column: text}``; accepts a DataFrame, a list of rows or a
    ``{"headers", "data"}`` dict."""
    if table is None:
        return []
    if hasattr(table, "to_dict") and hasattr(table, "columns"):
        headers = [str(h) for h in table.columns]
        data = table.values.tolist()
    elif isinstance(table, Mapping):
        headers = [str(h) for h in table.get("headers", columns)]
        data = table.get("data", [])
    else:
        headers, data = list(columns), list(table)
    rows = []
    for values in data:
        row = {h: _cell(v) for h, v in zip(headers, values, strict=False)}
        rows.append({c: row.get(c, "") for c in columns})
    return rows


def _parse_cell(value: str, kind: str, column: str, row: int) -> Any:
    text = value.strip()
    if kind == "text":
        return value
    if kind in ("phrases", "messages", "json"):
        return value  # the metric itself reads the JSON text
    if text.startswith("["):
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as error:
            raise DemoInputError(
                f"column '{column}', table row {row}: starts with '[' but is not a JSON list "
                f"({error.msg}); write a JSON list like [\"first\", \"second\"] or plain text"
            ) from None
        if isinstance(parsed, list):
            return parsed
    if kind == "list":
        return [value] if text else []
    return value


def compute_inputs(
    spec: MetricSpec, kinds: Mapping[str, str], rows: Sequence[Mapping[str, str]]
) -> tuple[dict[str, list[Any]], list[int]]:
    """``compute`` keyword arguments from table rows, and the 1-based table row of each sample.

    Rows with every cell empty are skipped; an optional column that is empty in every row is
    left out."""
    wanted = {**spec.columns, **spec.optional_columns}
    kept = [(number, row) for number, row in enumerate(rows, start=1)
            if any(row.get(c, "").strip() for c in wanted.values())]
    if not kept:
        raise DemoInputError("the table has no rows: add at least one row (or load the example)")
    arguments: dict[str, list[Any]] = {}
    for argument, column in wanted.items():
        cells = [row.get(column, "") for _, row in kept]
        if argument in spec.optional_columns and not any(c.strip() for c in cells):
            continue
        kind = kinds.get(argument, "text")
        arguments[argument] = [_parse_cell(c, kind, column, n)
                               for c, (n, _) in zip(cells, kept, strict=True)]
    return arguments, [number for number, _ in kept]


def judge_options(values: Mapping[str, Any]) -> dict[str, Any]:
    """The judge keyword arguments from the page's judge fields (empty text: not set)."""
    options: dict[str, Any] = {}
    for name in ("provider", "model", "base_url", "api_key"):
        value = values.get(name)
        if isinstance(value, str) and value.strip():
            options[name] = value.strip()
    if options.get("provider", LOCAL) == LOCAL:
        options.pop("api_key", None)
    for name in ("use_cache", "dry_run", "retry_unmeasured"):
        if name in values and values[name] is not None:
            options[name] = bool(values[name])
    options["show_progress"] = True  # tqdm bars, tracked by Gradio's progress
    return options


def judge_hints(provider: str) -> dict[str, str]:
    """The judge fields' placeholders for ``provider``, from its registry entry: its default
    model and endpoint, and the environment variable its key is read from when the field is
    empty (so on a Space with ``HF_TOKEN`` set, ``huggingface`` needs nothing typed)."""
    entry = PROVIDERS.get(provider) or PROVIDERS[LOCAL]
    if provider == LOCAL:
        return {"model": "the embedded SmolLM2-135M-Instruct",
                "base_url": "none: runs on this machine", "api_key": "none needed"}
    model = entry.default_model or "required (the model's name)"
    if entry.base_url:
        base_url = f"default: {entry.base_url}"
    else:
        base_url = "required, e.g. http://127.0.0.1:8000/v1"
    if entry.base_url_env:
        base_url += f" (or ${entry.base_url_env})"
    if entry.key_env:
        key = f"{'optional; ' if not entry.needs_key else ''}empty: ${entry.key_env[0]}"
    else:
        key = "none needed"
    return {"model": model, "base_url": base_url, "api_key": key + "; used for this request only"}


def judge_help() -> str:
    """The judge accordion's help: what each provider is and where its key comes from."""
    keys = "; ".join(f"`{name}`: {', '.join(f'${k}' for k in p.key_env[:1]) or 'no key'}"
                     for name, p in PROVIDERS.items() if name != LOCAL)
    return (f"**{LOCAL}** (default) runs the embedded SmolLM2-135M-Instruct on this machine: tiny "
            "and weak, good for trying the widget, not for real evaluations. For those pick a "
            "strong judge from the list. The API key field is used for this request only: it "
            "is not logged, stored, cached or shown back; left empty, the key comes from the "
            f"provider's environment variable ({keys}).")


def read_batch_file(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a ``.jsonl`` (one JSON object per line) or ``.csv`` (header row) file, read as
    strictly as the CLI reads them: a merged, cut or undecodable row is an error naming its
    line."""
    path = Path(path)
    if path.suffix.lower() not in (".jsonl", ".ndjson", ".csv"):
        raise DemoInputError(f"{path.name}: upload a .jsonl or .csv file")
    try:
        return read_records(path)
    except UserInputError as error:
        raise DemoInputError(str(error).replace(f"INPUT {path}", path.name)) from None


def rows_for_table(spec: MetricSpec, records: Sequence[Mapping[str, Any]], source: str
                   ) -> list[list[str]]:
    """Table rows (the metric's columns, in order) from uploaded records. A record may name a
    column by its singular column name or by the ``compute`` argument."""
    wanted = {**spec.columns, **spec.optional_columns}
    if not records:
        raise DemoInputError(f"{source} holds no rows")
    present = set().union(*(r.keys() for r in records))
    missing = [c for a, c in spec.columns.items() if c not in present and a not in present]
    if missing:
        raise DemoInputError(
            f"{source} has no column {', '.join(repr(m) for m in missing)} "
            f"(needed by {spec.name}); its columns: {', '.join(sorted(map(str, present)))}"
        )
    table = []
    for record in records:
        row = []
        for argument, column in wanted.items():
            value = record.get(column, record.get(argument))
            if isinstance(value, (list, tuple)):
                value = json.dumps(list(value), ensure_ascii=False)
            row.append(_cell(value))
        table.append(row)
    return table

"""The Gradio demo widget: one page (``build_demo``) for every metric, or one metric per Space.

Everything about a metric's page comes from the metric itself and the registry: the input
columns (``registry.METRICS``), their kinds (the metric class's ``INPUTS``), its options and their
defaults (the ``Args:`` section of its ``inputs_description`` plus the defaults of ``_compute``),
and the headline keys. Only the prefilled examples are written here, per metric name (from the
seed cards); a metric without one gets a generic example built from its columns.

The API key typed into the page is used for the one request that carries it: it is passed to
``compute`` and nowhere else, never logged, and scrubbed from everything the page gets back
(error texts of a provider may quote it). The Run event is private (not in the API, not in
Gradio's run history) and :func:`launch` turns the run history off.
"""

from __future__ import annotations

import ast
import contextlib
import html
import inspect
import itertools
import json
import logging
import math
import re
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .agreement import embedded_judge_note, is_embedded_judge
from .config import JUDGE_OPTION_NAMES, PROVIDERS
from .redaction import redact
from .registry import EXAMPLES, METRICS, MetricSpec, available, metric_path

logger = logging.getLogger(__name__)

TITLE = "judge-metrics"
MAX_CELL_CHARS = 120  # input text shown in the per-row results table

# Fallback example values per column, for a metric without an example above.
_COLUMN_EXAMPLE = {
    "question": "What is the capital of France?",
    "prediction": "The capital of France is Paris.",
    "reference": "Paris is the capital of France.",
    "contexts": '["Paris is the capital and largest city of France."]',
    "source": "Paris is the capital and largest city of France, on the Seine.",
    "expected": '["Paris", "capital"]',
}

# Judge options the page sets itself; the others keep the metric's defaults.
_JUDGE_FIELDS = ("provider", "model", "base_url", "api_key", "use_cache", "dry_run")


class DemoInputError(ValueError):
    """Input the page cannot turn into a ``compute`` call (shown in the page, never raised)."""


# ---------------------------------------------------------------------------------------------
# metrics: loading and introspection

_LOADED: dict[str, Any] = {}
_LOAD_LOCK = threading.Lock()


def load_metric(name: str, metric_dir: str | Path | None = None) -> Any:
    """``evaluate.load`` of the metric folder, once per process per folder."""
    path = str(metric_dir) if metric_dir is not None else metric_path(name)
    with _LOAD_LOCK:
        if path not in _LOADED:
            import evaluate

            _LOADED[path] = evaluate.load(path)
        return _LOADED[path]


@dataclass(frozen=True)
class OptionSpec:
    """One metric option shown in the page: ``kind`` is bool, int, float, json or text."""

    name: str
    kind: str
    default: Any
    doc: str = ""


_ARG_LINE = re.compile(r"^ {4}(\w+) \((.*?)\):\s*(.*)$")
_DEFAULT = re.compile(r"\bDefault:?\s+(.*?)(?:\.(?:\s|$)|:|\s\(|$)")
_MISSING = object()


def _documented_args(inputs_description: str) -> dict[str, tuple[str, str]]:
    """``name -> (type text, description)`` from the ``Args:`` section of a metric's
    ``inputs_description`` (``    name (type): description``, continued on deeper lines)."""
    args: dict[str, list[str]] = {}
    current: str | None = None
    in_args = False
    for line in (inputs_description or "").splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            in_args = line.strip().rstrip(":") == "Args"
            current = None
            continue
        if not in_args:
            continue
        match = _ARG_LINE.match(line)
        if match:
            current = match.group(1)
            args[current] = [match.group(2), match.group(3).strip()]
        elif line.startswith(" " * 8) and current:
            args[current][1] += " " + line.strip()
        else:
            current = None
    return {name: (kind, doc) for name, (kind, doc) in args.items()}


def _kind(type_text: str, default: Any) -> str | None:
    text = type_text.lower()
    if "callable" in text:
        return None  # no way to type a function into a page
    if isinstance(default, bool) or "bool" in text:
        return "bool"
    if isinstance(default, (list, tuple, dict)) or any(
        word in text for word in ("list", "pair", "dict", "tuple", "sequence")
    ):
        return "json"
    if isinstance(default, float) or "float" in text:
        return "float"
    if isinstance(default, int) or re.search(r"\bint\b", text):
        return "int"
    return "text"


def metric_options(metric: Any, spec: MetricSpec) -> list[OptionSpec]:
    """The options a metric takes besides its inputs (and, for a judge metric, besides the judge
    options), in the order its documentation lists them, with their defaults."""
    inputs = {i.name for i in getattr(type(metric), "INPUTS", ())}
    inputs |= set(spec.columns) | set(spec.optional_columns)
    skip = inputs | (set(JUDGE_OPTION_NAMES) if spec.judge else set())
    documented = _documented_args(getattr(metric, "inputs_description", "") or "")
    signature: dict[str, Any] = {}
    for param in inspect.signature(type(metric)._compute).parameters.values():
        if param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY) and param.name != "self":
            signature[param.name] = param.default
    names = [n for n in documented if n not in skip]
    names += [n for n, d in signature.items() if n not in skip and n not in names and d is not
              inspect.Parameter.empty]
    options = []
    for name in names:
        type_text, doc = documented.get(name, ("", ""))
        default = signature.get(name, _MISSING)
        if default in (_MISSING, None, inspect.Parameter.empty):
            default = _documented_default(doc)
        kind = _kind(type_text, default)
        if kind is not None:
            options.append(OptionSpec(name, kind, default, doc))
    return options


def _documented_default(doc: str) -> Any:
    match = _DEFAULT.search(doc)
    if not match:
        return None
    try:
        return ast.literal_eval(match.group(1).strip())
    except (ValueError, SyntaxError):
        return None


def input_kinds(metric: Any) -> dict[str, str]:
    """``compute`` argument -> input kind (text, texts, list, phrases)."""
    return {i.name: i.kind for i in getattr(type(metric), "INPUTS", ())}


def example_for(name: str, spec: MetricSpec) -> tuple[dict[str, list[str]], dict[str, Any]]:
    if name in EXAMPLES:
        return EXAMPLES[name]
    columns = [*spec.columns.values(), *spec.optional_columns.values()]
    return {c: [_COLUMN_EXAMPLE.get(c, "example")] for c in columns}, {}


# ---------------------------------------------------------------------------------------------
# page values -> compute arguments


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
    if kind == "phrases":
        return value  # the metric itself reads a JSON list string
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


def option_value(option: OptionSpec, value: Any) -> Any:
    """The ``compute`` value of an option field, or ``_MISSING`` for "use the default"."""
    if option.kind == "bool":
        return bool(value)
    if value is None or (isinstance(value, str) and not value.strip()):
        return _MISSING
    if option.kind == "int":
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value
    if option.kind == "float":
        return float(value) if isinstance(value, (int, float)) else value
    if option.kind == "json":
        if not isinstance(value, str):
            return value
        try:
            return json.loads(value)
        except json.JSONDecodeError as error:
            raise DemoInputError(
                f"option {option.name}: not valid JSON ({error.msg}); e.g. {_show(option.default)}"
            ) from None
    return value


def judge_options(values: Mapping[str, Any]) -> dict[str, Any]:
    """The judge keyword arguments from the page's judge fields (empty text: not set)."""
    options: dict[str, Any] = {}
    for name in ("provider", "model", "base_url", "api_key"):
        value = values.get(name)
        if isinstance(value, str) and value.strip():
            options[name] = value.strip()
    if options.get("provider", "local") == "local":
        options.pop("api_key", None)
    for name in ("use_cache", "dry_run"):
        if name in values and values[name] is not None:
            options[name] = bool(values[name])
    options["show_progress"] = True  # tqdm bars, tracked by Gradio's progress
    return options


# ---------------------------------------------------------------------------------------------
# upload


def read_batch_file(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a ``.jsonl`` (one JSON object per line) or ``.csv`` (header row) file, read as
    strictly as the CLI reads them: a merged, cut or undecodable row is an error naming its
    line."""
    from .batch import BatchInputError
    from .cli import read_records

    path = Path(path)
    if path.suffix.lower() not in (".jsonl", ".ndjson", ".csv"):
        raise DemoInputError(f"{path.name}: upload a .jsonl or .csv file")
    try:
        return read_records(path)
    except BatchInputError as error:
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


# ---------------------------------------------------------------------------------------------
# results -> page


class _Scrubber:
    """Passes every string of a value through :func:`shared.redaction.redact` (API keys, Bearer
    and Basic credentials, URL user-info; a provider's error may quote them), with the key typed
    into the page masked too."""

    def __init__(self, secret: str | None) -> None:
        self.secret = secret if secret and len(secret) >= 4 else None

    def text(self, value: str) -> str:
        return redact(value, [self.secret])

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self(k): self(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self(v) for v in value)
        return value


def _show(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{value:.4f}" if math.isfinite(value) else str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return str(value)


def _describe(value: Any) -> str:
    """A compact, readable text of a per-row detail (verdicts, reasons, similarities...)."""
    if isinstance(value, Mapping):
        return "; ".join(f"{k}: {_describe(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, Mapping) for v in value):
            return " | ".join(_describe(v) for v in value)
        return "[" + ", ".join(_describe(v) for v in value) + "]"
    return _show(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


def _rounded(value: Any) -> float | None:
    number = _number(value)
    return None if number is None else round(number, 4)


def _is_pair_of_numbers(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and len(value) == 2 and all(
        _number(v) is not None for v in value)


def split_result(result: Mapping[str, Any], n: int) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """(aggregates, per-row lists): per-row are the lists with one entry per sample."""
    aggregates: dict[str, Any] = {}
    per_row: dict[str, list[Any]] = {}
    for key, value in result.items():
        if key in ("unmeasured", "usage", "dry_run"):
            continue
        if isinstance(value, list) and len(value) == n and not (n == 2 and _is_pair_of_numbers(
                value) and key.endswith("interval")):
            per_row[key] = value
        elif value is None or isinstance(value, (str, int, float)) or _is_pair_of_numbers(value):
            aggregates[key] = value
    return aggregates, per_row


def row_scores(spec: MetricSpec, per_row: Mapping[str, list[Any]]) -> tuple[str, list[Any]] | None:
    """The per-row values the chart shows: ``scores`` (or its first headline key when each
    entry is a dict, as ROUGE's), else the first numeric per-row list."""
    scores = per_row.get("scores")
    if scores is not None:
        if all(isinstance(s, Mapping) or s is None for s in scores):
            for key in spec.headline:
                if any(isinstance(s, Mapping) and key in s for s in scores):
                    return key, [s.get(key) if isinstance(s, Mapping) else None for s in scores]
        else:
            return "score", list(scores)
    for key, values in per_row.items():
        if any(_number(v) is not None for v in values) and all(
                v is None or _number(v) is not None for v in values):
            return key, list(values)
    return None


def score_histogram(values: Sequence[Any]) -> list[tuple[str, int]]:
    """(bin label, rows) pairs: one bar per value when there are few distinct integers (e.g.
    1-5 ratings), otherwise ten equal bins over [0, 1] (widened to the data's range)."""
    numbers = [v for v in (_number(x) for x in values) if v is not None]
    if not numbers:
        return []
    distinct = sorted(set(numbers))
    if len(distinct) <= 10 and all(v.is_integer() for v in distinct) and max(distinct) > 1:
        return [(f"{v:g}", numbers.count(v)) for v in distinct]
    low, high = min(0.0, min(numbers)), max(1.0, max(numbers))
    width = (high - low) / 10
    counts = [0] * 10
    for v in numbers:
        counts[min(9, int((v - low) / width))] += 1
    return [(f"{low + i * width:.1f}–{low + (i + 1) * width:.1f}", c)
            for i, c in enumerate(counts)]


_CARD = ("display:inline-block;margin:0 12px 12px 0;padding:12px 18px;border-radius:10px;"
         "border:1px solid #d0d7de;min-width:140px;vertical-align:top")


def aggregate_html(spec: MetricSpec, aggregates: Mapping[str, Any], measured: int, total: int,
                   scrub: _Scrubber) -> str:
    cards = []
    for key in spec.headline:
        if key in aggregates:
            value = aggregates[key]
            shown = "None (no row measured)" if value is None else _show(value)
            cards.append(
                f'<div class="jm-headline" style="{_CARD};background:#f6f8fa">'
                f'<div style="font-size:0.9em;opacity:0.75">{html.escape(key)}</div>'
                f'<div class="jm-value" data-key="{html.escape(key)}" '
                f'style="font-size:2em;font-weight:700">{html.escape(scrub.text(shown))}</div></div>'
            )
    others = [f'<span style="opacity:0.7">{html.escape(k)}</span> '
              f"{html.escape(scrub.text(_show(v)))}"
              for k, v in aggregates.items() if k not in spec.headline and k != "Cost"]
    measured_text = f"{measured} of {total} rows measured"
    return (
        f'<div class="jm-aggregate">{"".join(cards)}'
        f'<div style="opacity:0.8">{html.escape(measured_text)}</div>'
        + (f'<div style="margin-top:6px">{" · ".join(others)}</div>' if others else "")
        + "</div>"
    )


_RUNS = itertools.count(1)


def status_html(message: str, level: str) -> str:
    """The status box; ``data-run`` differs on every call, so a repeated message still
    re-renders (a browser test waits for the box to come back)."""
    colours = {"error": ("#fff1f0", "#cf222e"), "warning": ("#fff8c5", "#9a6700"),
               "ok": ("#dafbe1", "#1a7f37")}
    background, border = colours[level]
    return (f'<div class="jm-status jm-{level}" data-run="{next(_RUNS)}" '
            f'role="{"alert" if level != "ok" else "status"}" '
            f'style="padding:10px 14px;border-radius:8px;background:{background};'
            f'border-left:5px solid {border};color:#1f2328">{html.escape(message)}</div>')


def _row_hint(message: str, spec: MetricSpec, rows: Sequence[int]) -> str:
    """Name the table row and column of ``argument[index]`` in a metric's error message."""
    columns = {**spec.columns, **spec.optional_columns}

    def hint(match: re.Match[str]) -> str:
        argument, index = match.group(1), int(match.group(2))
        if argument in columns and index < len(rows):
            return f"{match.group(0)} (table row {rows[index]}, column '{columns[argument]}')"
        return match.group(0)

    return re.sub(r"\b(\w+)\[(\d+)\]", hint, message, count=1)


def usage_markdown(result: Mapping[str, Any]) -> str:
    parts = []
    usage = result.get("usage")
    if isinstance(usage, Mapping):
        parts.append("**Usage:** " + ", ".join(f"{k.replace('_', ' ')} {v}"
                                              for k, v in usage.items()))
    if "Cost" in result:
        cost = result["Cost"]
        parts.append("**Cost:** " + ("unknown (no price for this model)" if cost is None
                                      else f"${cost:.6f}"))
    plan = result.get("dry_run")
    if isinstance(plan, Mapping):
        parts.append("**Dry run (nothing sent):** " + ", ".join(
            f"{k.replace('_', ' ')} {_show(v)}" for k, v in plan.items()))
    return "  \n".join(parts)


def unmeasured_markdown(result: Mapping[str, Any], rows: Sequence[int], scrub: _Scrubber) -> str:
    unmeasured = result.get("unmeasured") or []
    if not unmeasured:
        return ""
    lines = [f"**Unmeasured rows ({len(unmeasured)})**: not counted in the aggregate."]
    invalid = {k: v for k, v in (result.get("invalid_answers") or {}).items() if v}
    if invalid:  # the grounding checks' counts (docs/GROUNDING.md)
        counts = ", ".join(f"{kind.replace('_', ' ')}: {count}" for kind, count in invalid.items())
        lines.append(f"Invalid judge answers ({_escape_markdown(counts)}).")
    for item in unmeasured:
        index = item.get("index", -1)
        row = rows[index] if isinstance(index, int) and 0 <= index < len(rows) else index
        reason = scrub.text(str(item.get("reason", ""))).replace("\n", " ")
        lines.append(f"- table row {row}: {_escape_markdown(reason)}")
    return "\n".join(lines)


def _escape_markdown(text: str) -> str:
    return html.escape(re.sub(r"([\\`*_{}\[\]<>#|])", r"\\\1", text))


def results_frame(spec: MetricSpec, inputs: Mapping[str, list[Any]], rows: Sequence[int],
                  result: Mapping[str, Any], per_row: Mapping[str, list[Any]],
                  scrub: _Scrubber) -> Any:
    """The per-row table: table row, the inputs (shortened), scores, details, unmeasured."""
    import pandas as pd

    columns = {**spec.columns, **spec.optional_columns}
    frame: dict[str, list[Any]] = {"row": list(rows)}
    for argument, values in inputs.items():
        texts = [v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in values]
        frame[columns.get(argument, argument)] = [
            t if len(t) <= MAX_CELL_CHARS else t[: MAX_CELL_CHARS - 1] + "…" for t in texts]
    for key, values in per_row.items():
        if all(isinstance(v, Mapping) or v is None for v in values) and key == "scores":
            subkeys = list(dict.fromkeys(k for v in values if v for k in v))
            for sub in subkeys:
                frame[sub] = [_rounded(v.get(sub)) if v else None for v in values]
        elif all(v is None or _number(v) is not None for v in values):
            frame[key] = [_rounded(v) for v in values]
        else:
            frame[key] = [scrub.text(_describe(v)) for v in values]
    reasons = {item.get("index"): scrub.text(str(item.get("reason", "")))
               for item in result.get("unmeasured") or []}
    if reasons:
        frame["unmeasured"] = [reasons.get(i, "") for i in range(len(rows))]
    return pd.DataFrame(frame)


# ---------------------------------------------------------------------------------------------
# the page


@dataclass
class MetricPanel:
    """One metric's widget: its components, and the handlers the page's events call.

    ``handle(values)`` is the Run handler (``values``: component -> value, as Gradio passes a
    set of inputs); it returns component -> value for the result components and never raises.
    """

    name: str
    spec: MetricSpec
    metric: Any
    options: list[OptionSpec]
    kinds: dict[str, str]
    table: Any = None
    option_fields: dict[str, Any] = field(default_factory=dict)
    judge_fields: dict[str, Any] = field(default_factory=dict)
    upload: Any = None
    example_button: Any = None
    run_button: Any = None
    outputs: dict[str, Any] = field(default_factory=dict)
    initial: dict[Any, Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def columns(self) -> list[str]:
        return [*self.spec.columns.values(), *self.spec.optional_columns.values()]

    def inputs(self) -> set[Any]:
        return {self.table, *self.option_fields.values(), *self.judge_fields.values()}

    def initial_values(self) -> dict[Any, Any]:
        """component -> the value the page starts with (the example, the defaults)."""
        return dict(self.initial)

    def example_frame(self) -> Any:
        import pandas as pd

        rows, _ = example_for(self.name, self.spec)
        n = max(len(v) for v in rows.values())
        return pd.DataFrame({c: rows.get(c, [""] * n) for c in self.columns})

    def _empty_outputs(self) -> dict[Any, Any]:
        import gradio as gr
        import pandas as pd

        return {
            self.outputs["status"]: "", self.outputs["aggregate"]: "",
            self.outputs["rows"]: gr.update(visible=False, value=pd.DataFrame()),
            self.outputs["unmeasured"]: "",
            self.outputs["usage"]: "", self.outputs["raw"]: None,
            self.outputs["chart"]: gr.update(visible=False, value=pd.DataFrame(
                {"score range": [], "rows": []})),
        }

    def handle(self, values: Mapping[Any, Any], progress: Any = None) -> dict[Any, Any]:
        judge_values = {n: values.get(c) for n, c in self.judge_fields.items()}
        scrub = _Scrubber(judge_values.get("api_key"))
        out = self._empty_outputs()
        rows: list[int] = []
        try:
            table = table_rows(values.get(self.table), self.columns)
            inputs, rows = compute_inputs(self.spec, self.kinds, table)
            kwargs: dict[str, Any] = dict(inputs)
            for option in self.options:
                value = option_value(option, values.get(self.option_fields[option.name]))
                if value is not _MISSING:
                    kwargs[option.name] = value
            if self.spec.judge:
                kwargs.update(judge_options(judge_values))
            self.embedded_judge = self.spec.judge and is_embedded_judge(
                kwargs.get("provider"), kwargs.get("model"), kwargs.get("api_key"))
            if progress is not None:
                progress(0, desc=f"{self.name}: scoring {len(rows)} rows")
            started = time.monotonic()
            with self._lock, _page_key_backend(kwargs):
                result = self.metric.compute(**kwargs)
            seconds = time.monotonic() - started
        except Exception as error:  # every fault is a message in the page
            out[self.outputs["status"]] = status_html(
                scrub.text(_error_text(error, self.spec, rows)), "error")
            if not isinstance(error, (ValueError, TypeError)):
                logger.warning("%s failed: %s", self.name,
                               scrub.text(f"{type(error).__name__}: {error}"))
            return out
        return self._render(result, inputs, rows, seconds, scrub)

    def _render(self, result: Mapping[str, Any], inputs: Mapping[str, list[Any]],
                rows: list[int], seconds: float, scrub: _Scrubber) -> dict[Any, Any]:
        import gradio as gr
        import pandas as pd

        result = scrub(dict(result))
        n = len(rows)
        aggregates, per_row = split_result(result, n)
        unmeasured = result.get("unmeasured") or []
        measured = n - len(unmeasured)
        out = self._empty_outputs()
        out[self.outputs["usage"]] = usage_markdown(result)
        out[self.outputs["raw"]] = json.loads(json.dumps(result, default=str))
        if result.get("dry_run") is not None:  # no scores: only the estimate
            out[self.outputs["status"]] = status_html(
                f"Dry run of {n} row{'s' if n != 1 else ''}: nothing was sent to the judge; "
                "see the estimate below.", "ok")
            return out
        out[self.outputs["aggregate"]] = aggregate_html(self.spec, aggregates, measured, n, scrub)
        if getattr(self, "embedded_judge", False):  # measured agreement beside the numbers
            out[self.outputs["aggregate"]] += (
                f'<div class="jm-agreement" style="opacity:0.8">'
                f"{html.escape(embedded_judge_note(self.name))}</div>")
        out[self.outputs["rows"]] = gr.update(visible=True, value=results_frame(
            self.spec, inputs, rows, result, per_row, scrub))
        out[self.outputs["unmeasured"]] = unmeasured_markdown(result, rows, scrub)
        chart = row_scores(self.spec, per_row)
        if chart:
            bins = score_histogram(chart[1])
            out[self.outputs["chart"]] = gr.update(visible=True, value=pd.DataFrame(
                {"score range": [b for b, _ in bins], "rows": [c for _, c in bins]}))
        if n and measured == 0:
            first = str(unmeasured[0].get("reason", "")) if unmeasured else ""
            message = f"No row could be measured. First reason: {first}" if first else (
                "No row could be measured.")
            out[self.outputs["status"]] = status_html(scrub.text(message), "warning")
        else:
            skipped = f"; {len(unmeasured)} unmeasured (see below)" if unmeasured else ""
            out[self.outputs["status"]] = status_html(
                f"Scored {n} row{'s' if n != 1 else ''} in {seconds:.1f} s{skipped}.",
                "warning" if unmeasured else "ok")
        return out

    def load_example(self) -> dict[Any, Any]:
        _, options = example_for(self.name, self.spec)
        out = {self.table: self.example_frame(),
               self.outputs["status"]: status_html("Example loaded; press Run.", "ok")}
        for option in self.options:
            value = options.get(option.name, option.default)
            out[self.option_fields[option.name]] = _field_value(option, value)
        return out

    def load_file(self, path: Any) -> dict[Any, Any]:
        import pandas as pd

        if not path:
            return {self.outputs["status"]: ""}
        path = getattr(path, "name", path)
        try:
            records = read_batch_file(path)
            table = rows_for_table(self.spec, records, Path(path).name)
        except (DemoInputError, OSError, UnicodeDecodeError) as error:
            return {self.outputs["status"]: status_html(f"Upload: {error}", "error")}
        return {
            self.table: pd.DataFrame(table, columns=self.columns),
            self.outputs["status"]: status_html(
                f"Loaded {len(table)} rows from {Path(path).name}; press Run.", "ok"),
        }


_KEYED_RUNS: dict[tuple[object, ...], int] = {}
_KEYED_LOCK = threading.Lock()


@contextlib.contextmanager
def _page_key_backend(kwargs: Mapping[str, Any]) -> Iterator[None]:
    """Around a run with an API key typed into the page: when the last such run with that key
    ends, drop the judge backend made for it, so the process keeps no client holding the key."""
    if not kwargs.get("api_key"):
        yield
        return
    from .backends import backend_key, release_backend
    from .config import judge_config

    try:
        config = judge_config(**{k: v for k, v in kwargs.items() if k in JUDGE_OPTION_NAMES})
    except (TypeError, ValueError):  # compute reports it
        yield
        return
    key = backend_key(config)
    with _KEYED_LOCK:
        _KEYED_RUNS[key] = _KEYED_RUNS.get(key, 0) + 1
    try:
        yield
    finally:
        with _KEYED_LOCK:
            _KEYED_RUNS[key] -= 1
            last = _KEYED_RUNS[key] == 0
            if last:
                del _KEYED_RUNS[key]
        if last:
            release_backend(config)


def _error_text(error: Exception, spec: MetricSpec, rows: Sequence[int]) -> str:
    if isinstance(error, DemoInputError):
        return f"Input error: {error}"
    message = _row_hint(str(error), spec, rows)
    if isinstance(error, (ValueError, TypeError)):
        return f"Input error: {message}"
    return f"The metric failed ({type(error).__name__}): {message}"


def _field_value(option: OptionSpec, value: Any) -> Any:
    if option.kind == "json":
        return "" if value is None else json.dumps(value)
    if option.kind == "text":
        return "" if value is None else str(value)
    return value


def _option_field(option: OptionSpec, value: Any, elem_id: str) -> Any:
    import gradio as gr

    info = option.doc
    if "default" not in info.lower():
        info = f"{info} (default: {_show(option.default)})".strip()
    if option.kind == "bool":
        return gr.Checkbox(value=bool(value), label=option.name, info=info, elem_id=elem_id)
    if option.kind in ("int", "float"):
        return gr.Number(value=value, label=option.name, info=info, elem_id=elem_id,
                         precision=0 if option.kind == "int" else None,
                         step=1 if option.kind == "int" else 0.01)
    placeholder = "empty: the default" if option.default is None else ""
    return gr.Textbox(value=_field_value(option, value), label=option.name, info=info,
                      placeholder=placeholder, elem_id=elem_id, max_lines=1)


_JUDGE_HELP = (
    "**local** (default) runs the embedded SmolLM2-135M-Instruct on this machine: tiny and weak, "
    "good for trying the widget, not for real evaluations. For those pick a strong judge: "
    "`openai`, `deepseek`, `xai`, or `openai-compatible` (vLLM, llama.cpp, Ollama, LiteLLM...) "
    "with its base URL. The API key is used for this request only: it is not logged, stored, "
    "cached or shown back."
)


def _build_panel(name: str, metric_dir: str | Path | None) -> MetricPanel:
    import gradio as gr
    import pandas as pd

    spec = METRICS[name]
    metric = load_metric(name, metric_dir)
    panel = MetricPanel(name, spec, metric, metric_options(metric, spec), input_kinds(metric))
    rows, example_options = example_for(name, spec)
    description = (getattr(metric, "description", "") or "").strip().split("\n\n")[0]
    list_columns = [c for a, c in {**spec.columns, **spec.optional_columns}.items()
                    if panel.kinds.get(a) in ("texts", "list", "phrases")]
    help_text = "One row per sample; edit cells, add rows, or upload a `.jsonl`/`.csv` batch."
    if list_columns:
        help_text += (f" In {', '.join(f'`{c}`' for c in list_columns)} write a JSON list "
                      '(`["first", "second"]`) for several items; plain text is one item.')
    if spec.optional_columns:
        help_text += (f" Optional: {', '.join(f'`{c}`' for c in spec.optional_columns.values())}"
                      " (leave the column empty to omit it).")
    gr.Markdown(f"### {name}\n{description}\n\n{help_text}")
    with gr.Row():
        with gr.Column(scale=3):
            panel.table = gr.Dataframe(
                value=panel.example_frame(), headers=panel.columns, datatype="str",
                column_count=len(panel.columns), interactive=True, wrap=True, label="Inputs",
                elem_id=f"{name}-table", show_row_numbers=True,
            )
            with gr.Row():
                panel.example_button = gr.Button("Load example", size="sm", scale=1,
                                                 min_width=120, elem_id=f"{name}-example")
                panel.upload = gr.File(label="Upload a batch (.jsonl or .csv)",
                                       file_types=[".jsonl", ".csv"], type="filepath",
                                       elem_id=f"{name}-upload", height=140, scale=3)
        with gr.Column(scale=2):
            if panel.options:
                with gr.Accordion("Options", open=True):
                    for option in panel.options:
                        value = example_options.get(option.name, option.default)
                        panel.option_fields[option.name] = _option_field(
                            option, value, f"{name}-option-{option.name}")
            if spec.judge:
                with gr.Accordion("Judge", open=True):
                    gr.Markdown(_JUDGE_HELP)
                    judge = panel.judge_fields
                    judge["provider"] = gr.Dropdown(
                        choices=list(PROVIDERS), value="local", label="provider",
                        elem_id=f"{name}-provider")
                    judge["model"] = gr.Textbox(
                        label="model", placeholder="the provider's default model",
                        elem_id=f"{name}-model", max_lines=1)
                    judge["base_url"] = gr.Textbox(
                        label="base URL", placeholder="e.g. http://127.0.0.1:8000/v1",
                        elem_id=f"{name}-base-url", max_lines=1)
                    judge["api_key"] = gr.Textbox(
                        label="API key", type="password", elem_id=f"{name}-api-key",
                        placeholder="used for this request only", max_lines=1)
                    judge["use_cache"] = gr.Checkbox(
                        value=True, label="use the call cache", elem_id=f"{name}-use-cache")
                    judge["dry_run"] = gr.Checkbox(
                        value=False, label="dry run: estimate requests and cost, send nothing",
                        elem_id=f"{name}-dry-run")
            panel.run_button = gr.Button("Run", variant="primary", elem_id=f"{name}-run")
    panel.outputs["status"] = gr.HTML(elem_id=f"{name}-status")
    panel.outputs["aggregate"] = gr.HTML(elem_id=f"{name}-aggregate")
    with gr.Row():
        panel.outputs["chart"] = gr.BarPlot(
            pd.DataFrame({"score range": [], "rows": []}), x="score range", y="rows",
            title="Per-row score distribution", height=220, elem_id=f"{name}-chart", scale=1,
            visible=False)
        panel.outputs["usage"] = gr.Markdown(elem_id=f"{name}-usage")
    panel.outputs["rows"] = gr.Dataframe(label="Per-row results", interactive=False, wrap=True,
                                         elem_id=f"{name}-rows", visible=False)
    panel.outputs["unmeasured"] = gr.Markdown(elem_id=f"{name}-unmeasured")
    with gr.Accordion("Raw output (JSON)", open=False):
        panel.outputs["raw"] = gr.JSON(elem_id=f"{name}-raw")

    panel.initial = {panel.table: panel.example_frame()}
    for option in panel.options:
        panel.initial[panel.option_fields[option.name]] = _field_value(
            option, example_options.get(option.name, option.default))
    panel.initial.update({panel.judge_fields[k]: v for k, v in (
        ("provider", "local"), ("model", ""), ("base_url", ""), ("api_key", ""),
        ("use_cache", True), ("dry_run", False)) if k in panel.judge_fields})

    # Gradio finds its progress tracker by this default value.
    def run(values: dict[Any, Any],
            progress: gr.Progress = gr.Progress(track_tqdm=True),  # noqa: B008
            ) -> dict[Any, Any]:
        return panel.handle(values, progress)

    outputs = list(panel.outputs.values())
    panel.run_button.click(run, inputs=panel.inputs(), outputs=outputs,
                           api_visibility="private", concurrency_limit=1)
    panel.example_button.click(panel.load_example,
                               outputs=[panel.table, panel.outputs["status"],
                                        *panel.option_fields.values()],
                               api_visibility="private")
    panel.upload.upload(panel.load_file, inputs=panel.upload,
                        outputs=[panel.table, panel.outputs["status"]],
                        api_visibility="private")
    return panel


def build_demo(metric_names: list[str] | None = None,
               metric_dirs: Mapping[str, str | Path] | None = None) -> Any:
    """The ``gr.Blocks`` demo of the given metrics (default: every available one).

    One metric: its widget alone (a Space); several: one tab each. ``metric_dirs`` maps a metric
    to the folder to load it from (default: the repo's ``metrics/<name>``). The panels are on
    the returned Blocks as ``demo.jm_panels`` (name -> :class:`MetricPanel`)."""
    import gradio as gr

    if metric_names is None:  # instant string metrics first, then embedding, then judge ones
        metric_names = sorted(available(), key=lambda n: (METRICS[n].judge, METRICS[n].embeds))
    names = list(metric_names)
    unknown = [n for n in names if n not in METRICS]
    if unknown:
        raise ValueError(f"unknown metric(s): {', '.join(unknown)}; known: {', '.join(METRICS)}")
    if not names:
        raise ValueError("no metric to show: metrics/<name>/<name>.py exists for none of them")
    dirs = dict(metric_dirs or {})
    panels: dict[str, MetricPanel] = {}
    title = f"{TITLE}: {names[0]}" if len(names) == 1 else TITLE
    with gr.Blocks(title=title, analytics_enabled=False) as demo:
        if len(names) == 1:
            gr.Markdown(f"# {names[0]}")
            panels[names[0]] = _build_panel(names[0], dirs.get(names[0]))
        else:
            gr.Markdown(f"# {TITLE}\nScore LLM and QA outputs with any metric: pick a tab, "
                        "edit the example (or upload a batch), press **Run**.")
            with gr.Tabs():
                for name in names:
                    with gr.Tab(name, id=name, elem_id=f"tab-{name}"):
                        panels[name] = _build_panel(name, dirs.get(name))
                with gr.Tab("Compare", id="compare", elem_id="tab-compare"):
                    from .compare_tab import build_compare_tab

                    demo.jm_compare = build_compare_tab()
    demo.jm_panels = panels
    return demo


def launch(demo: Any, **kwargs: Any) -> Any:
    """``demo.launch`` with what the demo needs: no run history (it would keep the inputs,
    the API key among them, in the browser), no API page link."""
    kwargs.setdefault("run_history", False)
    kwargs.setdefault("footer_links", ["gradio", "settings"])
    return demo.launch(**kwargs)


def caller_metric_dir(name: str, caller_file: str | None) -> Path | None:
    """The folder of ``caller_file`` when it holds ``<name>.py`` (a standalone Space), else
    None (load from the repo's ``metrics/<name>``)."""
    if not caller_file:
        return None
    folder = Path(caller_file).resolve().parent
    return folder if (folder / f"{name}.py").is_file() else None


def launch_metric_demo(name: str, metric_dir: str | Path | None = None, **kwargs: Any) -> Any:
    """Serve the widget of one metric (a Space's ``app.py``).

    ``metric_dir``: the folder holding ``<name>.py``; default the calling script's folder when
    it holds ``<name>.py`` (a standalone Space), else the repo's ``metrics/<name>``."""
    if metric_dir is None:
        metric_dir = caller_metric_dir(name, sys._getframe(1).f_globals.get("__file__"))
    demo = build_demo([name], {name: metric_dir} if metric_dir is not None else None)
    return launch(demo, **kwargs)

"""One metric's widget: :class:`MetricWidget` (its components and event handlers) and
``build_widget``, which lays it out in the page."""

from __future__ import annotations

import html
import json
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..analysis.embedded_judge import embedded_judge_note
from ..base.options import Option
from ..engine.backends.registry import LOCAL
from ..engine.config import PROVIDERS
from ..kit.registry import MetricSpec, metric_path, spec_of
from ..runs.options import check_run_options
from .inputs import (
    DemoInputError,
    compute_inputs,
    example_for,
    input_kinds,
    judge_help,
    judge_hints,
    judge_options,
    read_batch_file,
    rows_for_table,
    table_rows,
)
from .keys import Scrubber, page_key_backend
from .options import (
    MISSING,
    field_value,
    metric_options,
    option_choices,
    option_value,
    unset_number,
)
from .panel_judges import add_judge_fields, panel_options, typed_keys
from .render import (
    aggregate_html,
    aggregates,
    error_text,
    results_frame,
    row_columns,
    row_scores,
    score_histogram,
    status_html,
    unmeasured_markdown,
    usage_markdown,
)

logger = logging.getLogger(__name__)

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


@dataclass
class MetricWidget:
    """One metric's widget: its components, and the handlers the page's events call.

    ``handle(values)`` is the Run handler (``values``: component -> value, as Gradio passes a
    set of inputs); it returns component -> value for the result components and never raises.
    """

    name: str
    spec: MetricSpec
    metric: Any
    options: list[Option]
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
        scrub = Scrubber(judge_values.get("api_key"), *typed_keys(judge_values))
        out = self._empty_outputs()
        rows: list[int] = []
        try:
            table = table_rows(values.get(self.table), self.columns)
            inputs, rows = compute_inputs(self.spec, self.kinds, table)
            kwargs: dict[str, Any] = dict(inputs)
            for option in self.options:
                value = option_value(option, values.get(self.option_fields[option.name]))
                if value is not MISSING:
                    kwargs[option.name] = value
            if self.spec.judge:
                kwargs.update(judge_options(judge_values))
                kwargs.update(panel_options(judge_values, kwargs))
            # the one checker of a run's options, as score's and the integrations' (the judge
            # converted as compute will convert it)
            run = check_run_options({k: v for k, v in kwargs.items() if k not in inputs},
                                    metric=self.spec)
            self.embedded_judge = self.spec.judge and run.judge.is_embedded
            if progress is not None:
                progress(0, desc=f"{self.name}: scoring {len(rows)} rows")
            started = time.monotonic()
            with self._lock, page_key_backend(run.judge):
                result = self.metric.compute(**kwargs)
            seconds = time.monotonic() - started
        except Exception as error:  # every fault is a message in the page
            out[self.outputs["status"]] = status_html(
                scrub.text(error_text(error, self.spec, rows)), "error")
            if not isinstance(error, (ValueError, TypeError)):
                logger.warning("%s failed: %s", self.name,
                               scrub.text(f"{type(error).__name__}: {error}"))
            return out
        return self._render(result, inputs, rows, seconds, scrub)

    def _render(self, result: Mapping[str, Any], inputs: Mapping[str, list[Any]],
                rows: list[int], seconds: float, scrub: Scrubber) -> dict[Any, Any]:
        import gradio as gr
        import pandas as pd

        per_row = row_columns(result)  # read before scrubbing: a plain copy has no results
        shown = aggregates(result)
        result = scrub(dict(result))
        n = len(rows)
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
        out[self.outputs["aggregate"]] = aggregate_html(self.spec, shown, measured, n, scrub)
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
            out[self.option_fields[option.name]] = field_value(option, value)
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


def _option_field(option: Option, value: Any, elem_id: str) -> Any:
    import gradio as gr

    info = f"{option.doc} (default: {option.default_text()})".strip()
    choices = option_choices(option)
    if choices is not None:
        return gr.Dropdown(choices=choices, value=field_value(option, value), label=option.name,
                           info=info, elem_id=elem_id)
    if option.kind == "bool":
        return gr.Checkbox(value=bool(value), label=option.name, info=info, elem_id=elem_id)
    if option.kind in ("int", "float") and not unset_number(option):
        return gr.Number(value=value, label=option.name, info=info, elem_id=elem_id,
                         precision=0 if option.kind == "int" else None,
                         step=1 if option.kind == "int" else 0.01)
    placeholder = "empty: the default" if option.default is None else ""
    # a text in the user's words (g_eval's criteria) gets room for a paragraph
    lines = 3 if option.required or len(str(option.default or "")) > 40 else 1
    return gr.Textbox(value=field_value(option, value), label=option.name, info=info,
                      placeholder=placeholder, elem_id=elem_id, lines=lines,
                      max_lines=max(1, 2 * lines + 2 * (lines > 1)))


def build_widget(name: str, metric_dir: str | Path | None) -> MetricWidget:
    import gradio as gr
    import pandas as pd

    metric = load_metric(name, metric_dir)
    spec = spec_of(type(metric), name)  # from the class: also in a Space, with no metrics/
    widget = MetricWidget(name, spec, metric, metric_options(metric), input_kinds(metric))
    rows, example_options = example_for(name, spec)
    description = (getattr(metric, "description", "") or "").strip().split("\n\n")[0]
    list_columns = [c for a, c in {**spec.columns, **spec.optional_columns}.items()
                    if widget.kinds.get(a) in ("texts", "list", "phrases")]
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
            widget.table = gr.Dataframe(
                value=widget.example_frame(), headers=widget.columns, datatype="str",
                column_count=len(widget.columns), interactive=True, wrap=True, label="Inputs",
                elem_id=f"{name}-table", show_row_numbers=True,
            )
            with gr.Row():
                widget.example_button = gr.Button("Load example", size="sm", scale=1,
                                                  min_width=120, elem_id=f"{name}-example")
                widget.upload = gr.File(label="Upload a batch (.jsonl or .csv)",
                                        file_types=[".jsonl", ".csv"], type="filepath",
                                        elem_id=f"{name}-upload", height=140, scale=3)
        with gr.Column(scale=2):
            if widget.options:
                with gr.Accordion("Options", open=True):
                    for option in widget.options:
                        value = example_options.get(option.name, option.default)
                        widget.option_fields[option.name] = _option_field(
                            option, value, f"{name}-option-{option.name}")
            if spec.judge:
                _judge_fields(widget)
            widget.run_button = gr.Button("Run", variant="primary", elem_id=f"{name}-run")
    widget.outputs["status"] = gr.HTML(elem_id=f"{name}-status")
    widget.outputs["aggregate"] = gr.HTML(elem_id=f"{name}-aggregate")
    with gr.Row():
        widget.outputs["chart"] = gr.BarPlot(
            pd.DataFrame({"score range": [], "rows": []}), x="score range", y="rows",
            title="Per-row score distribution", height=220, elem_id=f"{name}-chart", scale=1,
            visible=False)
        widget.outputs["usage"] = gr.Markdown(elem_id=f"{name}-usage")
    widget.outputs["rows"] = gr.Dataframe(label="Per-row results", interactive=False, wrap=True,
                                         elem_id=f"{name}-rows", visible=False)
    widget.outputs["unmeasured"] = gr.Markdown(elem_id=f"{name}-unmeasured")
    with gr.Accordion("Raw output (JSON)", open=False):
        widget.outputs["raw"] = gr.JSON(elem_id=f"{name}-raw")

    widget.initial = {widget.table: widget.example_frame()}
    for option in widget.options:
        widget.initial[widget.option_fields[option.name]] = field_value(
            option, example_options.get(option.name, option.default))
    widget.initial.update({widget.judge_fields[k]: v for k, v in (
        ("provider", LOCAL), ("model", ""), ("base_url", ""), ("api_key", ""),
        ("use_cache", True), ("dry_run", False), ("retry_unmeasured", False))
        if k in widget.judge_fields})

    _wire_events(widget)
    return widget


def _judge_fields(widget: MetricWidget) -> None:
    """The judge accordion: provider, model, base URL, API key, cache, dry-run and retry
    fields."""
    import gradio as gr

    name = widget.name
    with gr.Accordion("Judge", open=True):
        gr.Markdown(judge_help())
        judge = widget.judge_fields
        judge["provider"] = gr.Dropdown(
            choices=list(PROVIDERS), value=LOCAL, label="provider",
            elem_id=f"{name}-provider")
        hints = judge_hints(LOCAL)
        judge["model"] = gr.Textbox(
            label="model", placeholder=hints["model"], elem_id=f"{name}-model", max_lines=1)
        judge["base_url"] = gr.Textbox(
            label="base URL", placeholder=hints["base_url"], elem_id=f"{name}-base-url",
            max_lines=1)
        judge["api_key"] = gr.Textbox(
            label="API key", type="password", elem_id=f"{name}-api-key",
            placeholder=hints["api_key"], max_lines=1)
        fields = [judge["model"], judge["base_url"], judge["api_key"]]
        judge["provider"].change(
            lambda provider: [gr.update(placeholder=hint)
                              for hint in judge_hints(provider).values()],
            inputs=judge["provider"], outputs=fields, api_visibility="private")
        judge["use_cache"] = gr.Checkbox(
            value=True, label="use the call cache", elem_id=f"{name}-use-cache")
        judge["dry_run"] = gr.Checkbox(
            value=False, label="dry run: estimate requests and cost, send nothing",
            elem_id=f"{name}-dry-run")
        judge["retry_unmeasured"] = gr.Checkbox(
            value=False, label="ask again the answers the checks refused",
            elem_id=f"{name}-retry-unmeasured")
        add_judge_fields(judge, name)


def _wire_events(widget: MetricWidget) -> None:
    """The Run, Load example and upload events of a laid-out widget."""
    import gradio as gr

    # Gradio finds its progress tracker by this default value.
    def run(values: dict[Any, Any],
            progress: gr.Progress = gr.Progress(track_tqdm=True),  # noqa: B008
            ) -> dict[Any, Any]:
        return widget.handle(values, progress)

    outputs = list(widget.outputs.values())
    widget.run_button.click(run, inputs=widget.inputs(), outputs=outputs,
                            api_visibility="private", concurrency_limit=1)
    widget.example_button.click(widget.load_example,
                                outputs=[widget.table, widget.outputs["status"],
                                         *widget.option_fields.values()],
                                api_visibility="private")
    widget.upload.upload(widget.load_file, inputs=widget.upload,
                         outputs=[widget.table, widget.outputs["status"]],
                         api_visibility="private")

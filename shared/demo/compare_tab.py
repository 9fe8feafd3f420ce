"""The demo's "Compare" tab: two uploaded outputs of ``score`` in, the comparison table and the
HTML report out. ``demo.build_demo`` adds it to the multi-metric demo; the logic lives here and
in ``shared.analysis.comparison`` / ``shared.analysis.report``.

Each report is written to a ``jm-compare-*`` folder of its own in the temporary folder. A
session keeps one: a new comparison removes the session's previous report, the end of the
session (Gradio deletes its state) removes the last one, and the process's exit removes any
left."""

from __future__ import annotations

import atexit
import html
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

_REPORT_FOLDERS: set[str] = set()  # made by this process and not removed yet
_FOLDERS_LOCK = threading.Lock()

TABLE_COLUMNS = ["score", "n paired", "mean A", "mean B", "delta B-A", "95% interval", "test",
                 "p", "p (Holm)", "B wins/ties/losses", "excluded", "regression"]


def comparison_frame(report: Any) -> Any:
    """The report's table as a DataFrame (what the tab shows); ``regression``: B significantly
    worse (``shared.analysis.regressions`` with its default alpha)."""
    import pandas as pd

    from ..analysis.comparison import MCNEMAR, WILCOXON
    from ..analysis.regressions import regression_checks

    TEST_NAMES = {MCNEMAR: "McNemar (exact)", WILCOXON: "Wilcoxon signed-rank"}  # noqa: N806

    def number(value: float | None, signed: bool = False) -> str:
        if value is None:
            return "n/a"
        return f"{value:+.4f}" if signed else f"{value:.4f}"

    def p(value: float | None) -> str:
        return "n/a" if value is None else (f"{value:.2e}" if value < 1e-4 else f"{value:.4f}")

    rows = [[
        c.column + ("" if c.higher_is_better else " (lower is better)"), c.n_paired,
        number(c.mean_a), number(c.mean_b), number(c.delta, True),
        f"[{number(c.low, True)}, {number(c.high, True)}]",
        TEST_NAMES.get(c.test, "- (no measured pair)"),
        p(c.p_value), p(c.p_holm), f"{c.wins}/{c.ties}/{c.losses}", c.excluded,
        "REGRESSION" if check.regressed else ("NOT MEASURED" if check.too_unmeasured else ""),
    ] for c, check in zip(report.columns, regression_checks(report), strict=True)]
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def handle(file_a: Any, file_b: Any, key: str | None = None,
           folder: str | Path | None = None) -> tuple[str, Any, str | None]:
    """Compare two uploaded files: (status HTML, table, path of the HTML report or None)."""
    import pandas as pd

    from ..analysis.comparison import compare
    from ..analysis.regressions import regression_checks, regressions_html
    from ..analysis.report import write_compare_html
    from ..base.errors import UserInputError

    empty = pd.DataFrame(columns=TABLE_COLUMNS)
    if not file_a or not file_b:
        return tab_status("Upload two outputs of `score` (A: the baseline, B: the new run).",
                          "warning"), empty, None
    paths = [Path(getattr(f, "name", f)) for f in (file_a, file_b)]
    try:
        report = compare(paths[0], paths[1], key=(key or "").strip() or None)
    except UserInputError as error:
        message = str(error)
        for path in paths:  # the file's name, never the server's temporary path
            message = message.replace(str(path), path.name)
        return tab_status(message, "error"), empty, None
    target = Path(folder or new_report_folder()) / "comparison.html"
    checks = regression_checks(report)
    write_compare_html(report, target, gates=regressions_html(checks))
    message = (f"{report.paired} pairs by {report.key}; only in A: {report.only_a}, only in "
               f"B: {report.only_b} (excluded). Deltas are B - A with a paired-bootstrap 95% "
               "interval; p-values Holm-adjusted across the scores. ")
    regressed = [c.message for c in checks if not c.passed]
    status = tab_status(message + "; ".join(regressed), "error") if regressed else tab_status(
        message + "No regression (no score where B is worse with p (Holm) < 0.05).", "ok")
    return status, comparison_frame(report), str(target)


def new_report_folder() -> str:
    """A new ``jm-compare-*`` temporary folder, removed at the latest when the process exits."""
    folder = tempfile.mkdtemp(prefix="jm-compare-")
    with _FOLDERS_LOCK:
        _REPORT_FOLDERS.add(folder)
    return folder


def remove_report_folder(report: str | None) -> None:
    """Remove the folder of a report :func:`handle` wrote (``None``: nothing to remove)."""
    if not report:
        return
    folder = str(Path(report).parent)
    with _FOLDERS_LOCK:
        if folder not in _REPORT_FOLDERS:
            return  # not ours (a caller's folder), or already removed
        _REPORT_FOLDERS.discard(folder)
    shutil.rmtree(folder, ignore_errors=True)


@atexit.register
def remove_all_report_folders() -> None:
    with _FOLDERS_LOCK:
        folders = list(_REPORT_FOLDERS)
        _REPORT_FOLDERS.clear()
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


def handle_in_session(file_a: Any, file_b: Any, key: str | None, previous: str | None
                      ) -> tuple[str, Any, str | None, str | None]:
    """The Compare button: :func:`handle`, after removing the session's previous report; the
    new report's path is also the session's state."""
    remove_report_folder(previous)
    status, table, report = handle(file_a, file_b, key)
    return status, table, report, report


def tab_status(message: str, level: str) -> str:
    """The status box of the Compare and Calibrate tabs."""
    return f'<div class="jm-status jm-{level}">{html.escape(message)}</div>'


def build_compare_tab() -> dict[str, Any]:
    """The tab's components, inside the current ``gr.Blocks`` (returned by name for tests)."""
    import gradio as gr

    gr.Markdown("Compare two runs: upload two outputs of `judge-metrics score` (or of the "
                "demo's batch upload), A the baseline, B the new system. Rows pair by `id` (or "
                "the key column below).")
    with gr.Row():
        file_a = gr.File(label="A (.jsonl, .csv or .parquet)", file_types=[".jsonl", ".csv",
                         ".parquet"], type="filepath", elem_id="compare-a")
        file_b = gr.File(label="B (.jsonl, .csv or .parquet)", file_types=[".jsonl", ".csv",
                         ".parquet"], type="filepath", elem_id="compare-b")
    key = gr.Textbox(label="key column (default: id, else a hash of the task columns)",
                     elem_id="compare-key")
    return {"a": file_a, "b": file_b, "key": key,
            **report_outputs("compare", "Compare", TABLE_COLUMNS, handle_in_session,
                             [file_a, file_b, key])}


def report_outputs(name: str, button_label: str, columns: list[str], handler: Any,
                   inputs: list[Any]) -> dict[str, Any]:
    """The lower half of the Compare and Calibrate tabs, inside the current ``gr.Blocks``: the
    button (running ``handler(*inputs, last_report)``), the status box, the table, the HTML
    report and the session's last report, by name; element ids ``NAME-run``, ``NAME-status``,
    ``NAME-table``, ``NAME-report``."""
    import gradio as gr

    button = gr.Button(button_label, variant="primary", elem_id=f"{name}-run")
    status = gr.HTML(elem_id=f"{name}-status")
    table = gr.Dataframe(headers=columns, interactive=False, elem_id=f"{name}-table")
    report = gr.File(label="HTML report (self-contained; opens offline)",
                     elem_id=f"{name}-report")
    # the session's last report; Gradio calls delete_callback when it drops the session's state
    last_report = gr.State(None, delete_callback=remove_report_folder)
    button.click(handler, inputs=[*inputs, last_report],
                 outputs=[status, table, report, last_report], api_visibility="private",
                 concurrency_limit=1)
    return {"run": button, "status": status, "table": table, "report": report,
            "last_report": last_report}

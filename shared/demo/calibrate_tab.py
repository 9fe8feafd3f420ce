"""The demo's "Calibrate" tab: an uploaded output of ``score`` whose label column is filled on
some rows in, the estimates of the mean label (prediction-powered, from the calibrated scores
cross-fitted, labels alone, judge only) and the HTML report out
(``shared.analysis.calibration_figures``, docs/CALIBRATION.md).
Reports go to temporary folders as the Compare tab's do (one per session, removed with it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .compare_tab import new_report_folder, remove_report_folder, report_outputs, tab_status

TABLE_COLUMNS = ["estimate", "mean label", "95% interval"]


def estimates_frame(report: dict[str, Any]) -> Any:
    """The estimates as the tab's table."""
    import pandas as pd

    from ..analysis.report.calibration_report import estimate_rows

    rows = [[r["name"], f"{r['value']:.4f}",
             "-" if r["low"] is None else f"[{r['low']:.4f}, {r['high']:.4f}]"]
            for r in estimate_rows(report)]
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def handle(file: Any, score_column: str | None, label_column: str | None,
           folder: str | Path | None = None) -> tuple[str, Any, str | None]:
    """(status HTML, the estimates, path of the HTML report or None)."""
    import pandas as pd

    from ..analysis.calibration_figures import calibration_report
    from ..analysis.comparison import load_run, score_columns
    from ..analysis.labels import LabelError
    from ..analysis.report import write_calibration_html
    from ..base.errors import UserInputError

    empty = pd.DataFrame(columns=TABLE_COLUMNS)
    if not file:
        return tab_status("Upload an output of `score` with a label column filled on some rows.",
                          "warning"), empty, None
    path = Path(getattr(file, "name", file))
    label = (label_column or "").strip() or "label"
    try:
        frame = load_run(path, "the upload")
        column = (score_column or "").strip() or next(iter(score_columns(frame.columns)), "")
        for name, what in ((column, "score"), (label, "label")):
            if not name or name not in frame.columns:
                raise UserInputError(f"no {what} column {name!r} in the upload (its columns: "
                                      f"{', '.join(map(str, frame.columns))})")
        report = calibration_report(frame[column].tolist(), frame[label].tolist(), label=label)
    except (UserInputError, LabelError) as error:
        return tab_status(str(error).replace(str(path), path.name), "error"), empty, None
    report.update(metric=column, score_key=column, label=label)
    target = Path(folder or new_report_folder()) / "calibration.html"
    write_calibration_html(report, target)
    gain = report["sample_size_gain"]
    message = (f"{column} against {label}: {report['n_labelled']} labelled rows, "
               f"{report['n_unlabelled']} unlabelled, {report['unmeasured']} unmeasured (left "
               "out). The prediction-powered interval is valid if the labelled rows are a "
               "uniformly random sample"
               + (f"; the scores are worth {gain:.2f}x the labels." if gain else "."))
    return tab_status(message, "ok"), estimates_frame(report), str(target)


def handle_in_session(file: Any, score_column: str | None, label_column: str | None,
                      previous: str | None) -> tuple[str, Any, str | None, str | None]:
    """The Calibrate button: :func:`handle`, after removing the session's previous report."""
    remove_report_folder(previous)
    status, table, report = handle(file, score_column, label_column)
    return status, table, report, report


def build_calibrate_tab() -> dict[str, Any]:
    """The tab's components, inside the current ``gr.Blocks`` (returned by name for tests)."""
    import gradio as gr

    gr.Markdown("Correct a metric's mean with a few human labels: upload an output of "
                "`judge-metrics score` with a label column filled on a uniformly random "
                "sample of rows (blank on the others). See docs/CALIBRATION.md.")
    file = gr.File(label="scored rows (.jsonl, .csv or .parquet)",
                   file_types=[".jsonl", ".csv", ".parquet"], type="filepath",
                   elem_id="calibrate-file")
    with gr.Row():
        score = gr.Textbox(label="score column (default: the first the file holds)",
                           elem_id="calibrate-score")
        label = gr.Textbox(label="label column", value="label", elem_id="calibrate-label")
    return {"file": file, "score": score, "label": label,
            **report_outputs("calibrate", "Calibrate", TABLE_COLUMNS, handle_in_session,
                             [file, score, label])}

"""The HTML report of an agreement measurement (``agree --html``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ...engine.backends.registry import LOCAL
from . import page


def write_agreement_html(
    report: Mapping[str, Any],
    path: str | os.PathLike[str],
    *,
    rows: Any = None,
    max_rows: int = page.DEFAULT_MAX_ROWS,
    seed: int = 0,
) -> str:
    """Write the HTML report of an agreement report given as a plain dict (``agree``'s
    ``report.as_dict()``: metric, score_key, label, label_kind, n, unmeasured, judge, statistics
    as ``{"name", "value", "low", "high", "note"}``...). ``rows``: optionally the scored rows
    (anything :func:`shared.analysis.comparison.load_run` reads), shown in the row table."""
    from . import plots

    statistics = [dict(s) for s in report.get("statistics") or []]
    for s in statistics:
        for k in ("value", "low", "high"):
            s.setdefault(k, None)
        s.setdefault("note", "")
    shown_keys = ("metric", "score_key", "label", "label_kind", "n", "unmeasured", "unlabelled",
                  "positives", "threshold", "threshold_source", "best_threshold", "group",
                  "groups", "n_resamples", "seed")
    header = [(k.replace("_", " "), _plain_text(report[k])) for k in shown_keys
              if report.get(k) is not None]
    judge = report.get("judge")
    if isinstance(judge, Mapping):
        header.insert(1, ("judge", f"provider {judge.get('provider') or LOCAL}, model "
                                   f"{judge.get('model') or 'default'}"))
    embedded = (page.describe_judge(judge, [report.get("metric") or ""])
                if isinstance(judge, Mapping) else None)
    if embedded is not None and not embedded.get("embedded_default"):
        embedded = None
    plotted = [s for s in statistics if isinstance(s["value"], (int, float))]
    forest = None
    if plotted:
        forest = page.markup_svgs([plots.forest(
            [s["name"] for s in plotted], [s["value"] for s in plotted],
            [s["low"] for s in plotted], [s["high"] for s in plotted],
            title="statistics with their intervals")])[0]
    corrected = report.get("corrected")
    if isinstance(corrected, Mapping):
        corrected = _corrected(corrected)
    data: dict[str, Any] = {"columns": [], "rows": []}
    table = None
    if rows is not None:
        from ..comparison import load_run

        frame = load_run(rows, "rows")
        shown, note = page.sample_rows(len(frame), max_rows, seed)
        names = [str(c) for c in frame.columns if not page.is_details_column(str(c))]
        data["columns"] = [{"key": "#", "label": "#", "num": True}] + [
            {"key": c, "label": c, "num": False} for c in names]
        for i in shown:
            record = frame.iloc[i].to_dict()
            data["rows"].append({
                "id": i,
                "c": {"#": i, **{c: page.short(page.cell_value(record[c])) for c in names}},
                "u": False, "title": f"row {i}",
                "d": [{"title": "Row", "fields": [[str(c), page.details_value(v)]
                                                  for c, v in record.items()]}]})
        table = {"note": note, "has_unmeasured": False}
    return page.render(
        "agreement.html.j2", path, data,
        title=f"judge-metrics agreement: {report.get('metric') or '?'} vs "
              f"{report.get('label') or 'labels'}",
        header=header, statistics=statistics, forest=forest, embedded=embedded,
        corrected=corrected,
        confidence=float(report.get("confidence") or 0.95), table=table,
        judges=[{**j, "by_name": {s["name"]: s for s in j.get("statistics") or []}}
                for j in report.get("judges") or []],
        n=report.get("n"), judge_agreement=report.get("judge_agreement") or {})


def _corrected(corrected: Mapping[str, Any]) -> dict[str, Any]:
    """The corrected mean label's block: the three estimates and their plot."""
    from .calibration_report import estimate_rows, estimates_plot

    report = {"estimate": corrected, "classical": corrected["classical"],
              "judge_only": {"value": corrected["judge_only"]}}
    return {"rows": estimate_rows(report), "n_labelled": corrected["n_labelled"],
            "n_unlabelled": corrected["n_unlabelled"],
            "plot": page.markup_svgs([estimates_plot(report)])[0]}


def _plain_text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)

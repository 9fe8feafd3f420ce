"""The HTML report of ``calibrate --html``: the estimates of the mean label and the
reliability diagram of the calibration map."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from . import page


def write_calibration_html(report: Mapping[str, Any], path: str | os.PathLike[str]) -> str:
    """Write the report of ``shared.analysis.calibration_figures.calibrate`` (a plain dict) as
    HTML."""
    from . import plots

    estimates = estimate_rows(report)
    calibration = report["calibration"]
    reliability = calibration.get("reliability") or {}
    svgs = [estimates_plot(report),
            plots.reliability_diagram(reliability.get("before") or [],
                                      reliability.get("after"))]
    shown = ("metric", "score_key", "label", "label_kind", "n_labelled", "n_unlabelled",
             "unmeasured", "effective_sample_size", "sample_size_gain", "width_ratio", "lam",
             "seed")
    header = [(k.replace("_", " "), _text(report[k])) for k in shown
              if report.get(k) is not None]
    if report.get("label_range"):
        low, high = report["label_range"]
        header.append(("label range", f"{low:g}..{high:g} mapped onto 0..1"))
    return page.render(
        "calibration.html.j2", path, {"columns": [], "rows": []},
        title=f"judge-metrics calibration: {report.get('metric') or '?'} vs "
              f"{report.get('label') or 'labels'}",
        header=header, estimates=estimates, plots=page.markup_svgs(svgs),
        calibration=calibration, confidence=float(report.get("confidence") or 0.95))


def estimate_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The estimates as ``{"name", "value", "low", "high"}`` (judge only: no interval; the one
    from the calibrated scores when the report has it)."""
    calibrated = report.get("calibrated_estimate")
    return [
        {"name": "prediction-powered", **report["estimate"]},
        *([{"name": "prediction-powered, calibrated scores (cross-fitted)",
            **{k: calibrated[k] for k in ("value", "low", "high")}}] if calibrated else []),
        {"name": "labels alone", **report["classical"]},
        {"name": "judge only", "value": report["judge_only"]["value"], "low": None,
         "high": None},
    ]


def estimates_plot(report: Mapping[str, Any]) -> str:
    """The estimates with their intervals, one row each."""
    from . import plots

    rows = estimate_rows(report)
    return plots.forest([r["name"] for r in rows], [r["value"] for r in rows],
                        [r["low"] for r in rows], [r["high"] for r in rows],
                        title="mean label: the estimates", zero_line=False)


def _text(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)

"""The HTML report of ``align --html``: the held-out figures before and after alignment, the
paired test, the baseline and what was tuned."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from . import page


def write_alignment_html(report: Mapping[str, Any], path: str | os.PathLike[str]) -> str:
    """Write the report of ``shared.analysis.alignment_profile.align`` (a plain dict) as
    HTML."""
    shown = ("metric", "score_key", "label", "n", "unused", "seed", "alpha")
    header = [(k.replace("_", " "), str(report[k])) for k in shown if report.get(k) is not None]
    header.append(("folds", f"{len(report['folds'])} (every figure on the held-out folds)"))
    figures = [{"name": name, "before": report["before"][name], "after": report["after"][name]}
               for name in ("kappa", "auroc", "brier", "ece")]
    return page.render(
        "alignment.html.j2", path, {"columns": [], "rows": []},
        title=f"judge-metrics alignment: {report.get('metric') or '?'} vs "
              f"{report.get('label') or 'labels'}",
        header=header, figures=figures, test=report["paired_test"],
        improved=report["improved"], baseline=report["baseline"],
        human=report.get("human_agreement"), tuning=report["tuning"],
        confidence=1 - float(report.get("alpha") or 0.05))

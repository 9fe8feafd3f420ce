"""The embedded default judge (``JudgeConfig.is_embedded`` says whether a judge is it): the
model name a report shows, and its measured agreement with people (``make agreement`` writes
the figures next to this module): one row per judge metric for the reports' and the CLI's table
(:func:`agreement_rows`, under :data:`EMBEDDED_JUDGE_CAVEAT` said once), or one line for a
single metric (:func:`embedded_judge_note`, the demo's)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any


def judge_model_name(config: Any) -> str | None:
    """The model a report names for ``config`` (a ``JudgeConfig``): the embedded judge's name,
    else the resolved model."""
    from ..base.defaults import DEFAULT_JUDGE_MODEL

    if config.is_embedded:
        return DEFAULT_JUDGE_MODEL
    return config.resolved_model()


FIGURES_FILE = "agreement_figures.json"  # next to this module; written by `make agreement`
_STATISTIC_NAMES = {"auroc": "AUROC", "spearman": "Spearman"}
EMBEDDED_JUDGE_CAVEAT = "a pipeline demo, not a measurement"
# the columns of agreement_rows (the reports' table and the CLI's)
AGREEMENT_HEADER = ("metric", "agreement with people", "data set", "people's label",
                    "rows measured", "note")


def embedded_judge_figures() -> dict[str, Any]:
    """The figures ``make agreement`` measured for the embedded judge (``{}`` when absent)."""
    path = Path(__file__).with_name(FIGURES_FILE)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def embedded_judge_note(metric: str, figures: Mapping[str, Any] | None = None) -> str:
    """One line for a judge metric's aggregate when the judge is the embedded default: its
    measured agreement with people, or that no labelled set measures it."""
    figures = embedded_judge_figures() if figures is None else figures
    entry = (figures.get("metrics") or {}).get(metric)
    tail = EMBEDDED_JUDGE_CAVEAT
    if isinstance(entry, Mapping) and entry.get("constant_score") is not None:
        return (f"embedded judge: gave every one of {entry.get('n')} {entry.get('data_set')} "
                f"rows the same score ({entry['constant_score']:g}), so it does not agree with "
                f"people's {entry.get('label')} at all (bench/AGREEMENT.md); {tail}")
    if isinstance(entry, Mapping) and entry.get("n") == 0 and entry.get("unmeasured"):
        return (f"embedded judge: every one of its {entry['unmeasured']} {entry.get('data_set')} "
                "rows in `make agreement` was unmeasured (no answer passed the grounding checks, "
                f"bench/AGREEMENT.md); {tail}")
    if not isinstance(entry, Mapping) or (entry.get("value") is None and not entry.get("n")):
        return f"embedded judge: agreement with people not measured for {metric}; {tail}"
    name = _STATISTIC_NAMES.get(str(entry.get("statistic")), str(entry.get("statistic")))
    if entry.get("value") is None:  # rows measured, but the statistic is undefined on them
        unmeasured = entry.get("unmeasured")
        of = f" of {entry['n'] + unmeasured}" if isinstance(unmeasured, int) else ""
        return (f"embedded judge: only {entry['n']}{of} {entry.get('data_set')} rows were measured "
                f"in `make agreement` and no {name} is defined on them (bench/AGREEMENT.md); "
                f"{tail}")
    interval = ""
    if entry.get("low") is not None and entry.get("high") is not None:
        interval = f" [{entry['low']:.2f}, {entry['high']:.2f}]"
    given = f", with {entry['options']}" if entry.get("options") else ""
    return (f"embedded judge: {name} {entry['value']:.2f}{interval} vs people on "
            f"{entry.get('data_set')} {entry.get('label')} (n={entry.get('n')}{given}, "
            f"bench/AGREEMENT.md); {tail}")


def agreement_row(metric: str, figures: Mapping[str, Any]) -> dict[str, str]:
    """``metric``'s measured agreement with people as the cells of :data:`AGREEMENT_HEADER`
    (by column name): the statistic with its interval, the labelled set, the rows measured out
    of those asked, and what else the figure needs said (the options it was measured with, a
    constant score, rows left unmeasured)."""
    entry = (figures.get("metrics") or {}).get(metric)
    if not isinstance(entry, Mapping):
        return dict(zip(AGREEMENT_HEADER, (metric, "—", "—", "—", "—", "not measured"),
                        strict=True))
    n, unmeasured = entry.get("n") or 0, entry.get("unmeasured")
    asked = n + unmeasured if isinstance(unmeasured, int) else None
    name = _STATISTIC_NAMES.get(str(entry.get("statistic")), str(entry.get("statistic") or ""))
    figure, notes = "—", []
    if entry.get("value") is not None:
        figure = f"{name} {entry['value']:.2f}"
        if entry.get("low") is not None and entry.get("high") is not None:
            figure += f" [{entry['low']:.2f}, {entry['high']:.2f}]"
    elif entry.get("constant_score") is not None:
        figure = "none"
        notes.append(f"every row scored {entry['constant_score']:g}: no agreement at all")
    elif n == 0 and unmeasured:
        notes.append("every row unmeasured (no answer passed the grounding checks)")
    elif n:
        notes.append(f"no {name} defined on the rows measured")
    else:
        notes.append("not measured")
    if entry.get("options"):
        notes.append(f"with {entry['options']}")
    return dict(zip(AGREEMENT_HEADER, (
        metric, figure, str(entry.get("data_set") or "—"), str(entry.get("label") or "—"),
        f"{n} of {asked}" if asked is not None and asked != n else str(n),
        "; ".join(notes)), strict=True))


def agreement_rows(metrics: Iterable[str], figures: Mapping[str, Any] | None = None
                   ) -> list[dict[str, str]]:
    """:func:`agreement_row` for each judge metric among ``metrics`` (others are left out)."""
    from ..kit.registry import METRICS

    figures = embedded_judge_figures() if figures is None else figures
    return [agreement_row(m, figures) for m in metrics if m in METRICS and METRICS[m].judge]

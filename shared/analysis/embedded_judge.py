"""The embedded default judge: whether judge options select it, the model name a report
shows, and the one-line note of its measured agreement with people (``make agreement`` writes
the figures next to this module)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..engine.backends.registry import LOCAL
from ..engine.config import provider_of


def judge_model_name(config: Any) -> str | None:
    from ..base.defaults import DEFAULT_JUDGE_MODEL

    if config.provider == LOCAL and not config.model:
        return DEFAULT_JUDGE_MODEL
    return config.resolved_model()


def is_embedded_judge(provider: str | None, model: str | None, api_key: str | None = None) -> bool:
    """True when these judge options select the embedded default judge."""
    return provider_of(provider, api_key) == LOCAL and not model


FIGURES_FILE = "agreement_figures.json"  # next to this module; written by `make agreement`
_STATISTIC_NAMES = {"auroc": "AUROC", "spearman": "Spearman"}


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
    tail = "a pipeline demo, not a measurement"
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

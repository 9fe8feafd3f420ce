"""What the three HTML reports share: rendering a template into one self-contained, offline
file (see the package's docstring for what makes it safe), and the row data, cells, samples and
judge notes they show."""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...base.text import shorten

if TYPE_CHECKING:
    from ...engine.config import JudgeConfig

TEMPLATES = Path(__file__).resolve().parent / "templates"
DEFAULT_MAX_ROWS = 2000
_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                 "\u2029": "\\u2029"}


def script_json(data: Any) -> str:
    """JSON text safe inside ``<script type="application/json">``: no ``</script>``, no
    ``<!--``, no raw line separators."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, default=_json_default)
    return "".join(_JSON_ESCAPES.get(ch, ch) for ch in text) if any(
        ch in text for ch in _JSON_ESCAPES) else text


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def _environment() -> Any:
    import jinja2

    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                                     autoescape=True, undefined=jinja2.StrictUndefined,
                                     trim_blocks=True, lstrip_blocks=True)
    environment.filters["short"] = lambda value, limit=100: short(value, limit)
    return environment


def render(template: str, path: str | os.PathLike[str], data: Mapping[str, Any],
            **context: Any) -> str:
    from markupsafe import Markup

    js = (TEMPLATES / "report.js").read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(js.encode("utf-8")).digest()).decode("ascii")
    context.setdefault("table", None)
    html = _environment().get_template(template).render(
        css=Markup((TEMPLATES / "report.css").read_text(encoding="utf-8")),
        js=Markup(js), script_hash=f"sha256-{digest}", data_json=Markup(script_json(data)),
        generated=_dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"), **context)
    target = Path(path)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(html, encoding="utf-8")
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
    return html


def markup_svgs(svgs: Sequence[str]) -> list[Any]:
    """Plots are our own matplotlib output (labels are column names, never row data)."""
    from markupsafe import Markup

    return [Markup(s) for s in svgs]


def cell_value(cell: Any) -> Any:
    """A cell as JSON-ready data (numpy -> Python, NaN -> None, JSON text of details parsed)."""
    if hasattr(cell, "tolist"):
        cell = cell.tolist()
    if isinstance(cell, float) and not math.isfinite(cell):
        return None
    if isinstance(cell, (list, tuple)):
        return [cell_value(v) for v in cell]
    if isinstance(cell, Mapping):
        return {str(k): cell_value(v) for k, v in cell.items()}
    return cell


def details_value(cell: Any) -> Any:
    if isinstance(cell, str):
        try:
            return cell_value(json.loads(cell))
        except json.JSONDecodeError:
            return cell
    return cell_value(cell)


def short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(cell_value(value), ensure_ascii=False,
                                                           default=str)
    return shorten(text, limit, "…")


def sample_rows(n: int, max_rows: int, seed: int,
                keep: Sequence[int] = ()) -> tuple[list[int], str]:
    if n <= max_rows:
        return list(range(n)), ""
    rng = np.random.default_rng(seed)
    chosen = set(rng.choice(n, size=max_rows, replace=False).tolist()) | set(keep)
    note = (f"This run has {n:,} rows: the table holds a random sample of {max_rows:,} (seed "
            f"{seed})" + (f" plus the {len(set(keep) - chosen):,} rows listed above" if keep
                          else "") + ". Aggregates, intervals and plots use every row.")
    return sorted(chosen), note


def prompts_of(metrics: Sequence[str],
               metric_options: Mapping[str, Mapping[str, Any]] | None = None) -> list[str]:
    """Ids (name@version) of the judge prompts the given metrics send, as each declares them
    (:mod:`shared.kit.sent_prompts`; ``metric_options``: ``{metric: {option: value}}``)."""
    from ...kit.sent_prompts import prompt_ids

    return prompt_ids(metrics, metric_options)


def describe_judge(judge: JudgeConfig | Mapping[str, Any] | None,
                   metrics: Sequence[str] = ()) -> dict[str, Any] | None:
    """The judge as the reports name it; with the embedded default, ``agreement``: its measured
    agreement with people, one row per judge metric (``embedded_judge.agreement_rows``), and
    ``agreement_header``, for the note's table."""
    if judge is None:
        return None
    from ..comparison import judge_description
    from ..embedded_judge import AGREEMENT_HEADER, EMBEDDED_JUDGE_CAVEAT, agreement_rows

    described = isinstance(judge, Mapping) and "embedded_default" in judge
    info = dict(judge) if described else judge_description(judge)
    if info.get("embedded_default"):
        info["caveat"] = EMBEDDED_JUDGE_CAVEAT
        info["agreement_header"] = list(AGREEMENT_HEADER)
        info["agreement"] = [list(row.values()) for row in agreement_rows(metrics)]
    return info


def is_details_column(column: str) -> bool:
    from ...kit.registry import METRICS

    return column.endswith("_details") and column.removesuffix("_details") in METRICS


def is_judge_metric(metric: str) -> bool:
    from ...kit.registry import METRICS

    return metric in METRICS and METRICS[metric].judge

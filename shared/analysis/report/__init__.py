"""Self-contained HTML reports of a scored run, a comparison and an agreement report.

One file that opens offline: Jinja2 templates (autoescape on: every text from the data is
escaped), plots as inline SVG (``plots``), the styles and the one script inlined. The row data
travel as JSON in a ``<script type="application/json">`` element, escaped so that no value can
close it (``<``, ``>``, ``&``, U+2028/U+2029 as ``\\uXXXX``), and the script puts every value in
the page with ``textContent``. A Content-Security-Policy allows no network request and only the
report's own script (by its hash), so even markup that slipped through could neither load nor run
anything.

Big runs: the row table holds at most ``max_rows`` rows (a seeded random sample, said so in the
report); aggregates, intervals and plots always use every row.
"""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import json
import math
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...base.text import shorten

TEMPLATES = Path(__file__).resolve().parent / "templates"
DEFAULT_MAX_ROWS = 2000
TOP_DIFFERENCES = 10
# columns shown in the row table (the rest are in the drill-down)
_TABLE_INPUTS = ("id", "question", "prediction", "reference", "source")

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

    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True,
                              lstrip_blocks=True)


def _render(template: str, path: str | os.PathLike[str], data: Mapping[str, Any],
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


def _svgs(svgs: Sequence[str]) -> list[Any]:
    """Plots are our own matplotlib output (labels are column names, never row data)."""
    from markupsafe import Markup

    return [Markup(s) for s in svgs]


def _value(cell: Any) -> Any:
    """A cell as JSON-ready data (numpy -> Python, NaN -> None, JSON text of details parsed)."""
    if hasattr(cell, "tolist"):
        cell = cell.tolist()
    if isinstance(cell, float) and not math.isfinite(cell):
        return None
    if isinstance(cell, (list, tuple)):
        return [_value(v) for v in cell]
    if isinstance(cell, Mapping):
        return {str(k): _value(v) for k, v in cell.items()}
    return cell


def _details(cell: Any) -> Any:
    if isinstance(cell, str):
        try:
            return _value(json.loads(cell))
        except json.JSONDecodeError:
            return cell
    return _value(cell)


def _short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(_value(value), ensure_ascii=False,
                                                           default=str)
    return shorten(text, limit, "…")


def _sample(n: int, max_rows: int, seed: int, keep: Sequence[int] = ()) -> tuple[list[int], str]:
    if n <= max_rows:
        return list(range(n)), ""
    rng = np.random.default_rng(seed)
    chosen = set(rng.choice(n, size=max_rows, replace=False).tolist()) | set(keep)
    note = (f"This run has {n:,} rows: the table holds a random sample of {max_rows:,} (seed "
            f"{seed})" + (f" plus the {len(set(keep) - chosen):,} rows listed above" if keep
                          else "") + ". Aggregates, intervals and plots use every row.")
    return sorted(chosen), note


def _prompts_of(metrics: Sequence[str]) -> list[str]:
    """Ids (name@version) of the judge prompts the given metrics send: their own (named after
    the metric) and the shared extraction steps (``shared.kit.rag_judge``) of those that extract."""
    from ...engine import prompts
    from ...kit.registry import EXTRACTION_USERS, METRICS

    judged = [m for m in metrics if m in METRICS and METRICS[m].judge]
    found = {value.prompt_id for value in vars(prompts).values()
             if isinstance(value, prompts.PromptTemplate)
             and any(value.name == m or value.name.startswith(m + "_") for m in judged)}
    for prompt in (prompts.STATEMENTS, prompts.OPINIONS):
        if any(m in EXTRACTION_USERS.get(prompt.name, ()) for m in judged):
            found.add(prompt.prompt_id)
    return sorted(found)


def _judge(judge: Mapping[str, Any] | None,
           metrics: Sequence[str] = ()) -> dict[str, Any] | None:
    if judge is None:
        return None
    from ..comparison import judge_description

    info = judge_description(judge) if "embedded_default" not in judge else dict(judge)
    if info.get("embedded_default") and "agreement" not in info:
        notes = _agreement_notes(metrics)
        if notes:
            info["agreement"] = "; ".join(notes)
    return info


def _agreement_notes(metrics: Sequence[str]) -> list[str]:
    """The embedded judge's measured agreement with people per judge metric, from
    ``shared.analysis.agreement`` when that module is present (the agreement issue); else
    nothing."""
    from ...kit.registry import METRICS

    try:
        from .. import agreement  # type: ignore[attr-defined]

        figures = agreement.embedded_judge_figures()
        return [agreement.embedded_judge_note(m, figures) for m in metrics
                if m in METRICS and METRICS[m].judge]
    except Exception:  # noqa: BLE001 - absent or changed: the report says less, never fails
        return []


# ------------------------------------------------------------------------------ score


def write_score_html(
    scored: Any,
    summary: Any = None,
    path: str | os.PathLike[str] = "report.html",
    *,
    judge: Mapping[str, Any] | None = None,
    source: str | None = None,
    max_rows: int = DEFAULT_MAX_ROWS,
    seed: int = 0,
    n_resamples: int = 1000,
    confidence: float = 0.95, gates: Mapping[str, Any] | None = None,  # gates.gates_html
) -> str:
    """Write the HTML report of one scored run; return the HTML.

    ``scored``: the rows ``score`` writes (a ``datasets.Dataset``, DataFrame, list of dicts or a
    path to the output file). ``summary``: the :class:`~shared.runs.batch.BatchSummary` of the run
    (aggregates, calls, cost, time), when known. ``judge``: the judge options of the run
    (provider, model), to name the judge and say when it is the embedded default.
    """
    from ...kit import stats
    from ...kit.registry import METRICS
    from ..comparison import load_run, numeric_scores, score_columns, unmeasured_reason
    from . import plots

    if isinstance(scored, (str, os.PathLike)) and source is None:
        source = str(scored)
    frame = load_run(scored, "scored")
    found = score_columns(frame.columns)
    summaries = {m.metric: m for m in (summary.metrics if summary is not None else [])}
    metrics = list(dict.fromkeys([*summaries, *found.values()]))
    judge_info = _judge(judge, metrics) if judge is not None else (
        _judge({}, metrics) if any(METRICS[m].judge for m in metrics if m in METRICS) else None)
    values = {c: numeric_scores(frame, c, "scored") for c in found}
    aggregates, svgs = [], []
    for column, metric in found.items():
        v = values[column]
        measured = v[np.isfinite(v)]
        m = summaries.get(metric)
        key = _headline_key(metric, column)
        low = high = mean = None
        if measured.size:
            mean = float(measured.mean())
            low, high = stats.bootstrap_ci(measured, confidence=confidence,
                                           n_resamples=n_resamples, seed=seed)
        aggregates.append({
            "metric": metric, "column": column, "mean": mean, "low": low, "high": high,
            "aggregate": m.aggregates.get(key) if m is not None else None,
            "measured": int(measured.size), "unmeasured": int(v.size - measured.size),
            "judge": METRICS[metric].judge, "calls": m.calls if m is not None else 0,
            "seconds": m.seconds if m is not None else None})
        svgs.append(plots.histogram(v, column))
    unmeasured_rows: set[int] = set()
    reasons: Counter[tuple[str, str]] = Counter()
    first_column = {}
    for column, metric in found.items():
        first_column.setdefault(metric, column)
    for metric, column in first_column.items():
        details = frame[f"{metric}_details"].tolist() if f"{metric}_details" in frame else None
        for row in np.flatnonzero(~np.isfinite(values[column])).tolist():
            unmeasured_rows.add(row)
            reason = unmeasured_reason(details[row]) if details is not None else ""
            reasons[(metric, reason or "no score")] += 1
    rows_shown, note = _sample(len(frame), max_rows, seed)
    score_cols = list(found)
    inputs = [c for c in frame.columns if c not in found and not _is_details(c)]
    table_inputs = [c for c in _TABLE_INPUTS if c in inputs]
    columns = ([{"key": "#", "label": "#", "num": True}]
               + [{"key": c, "label": c, "num": False} for c in table_inputs]
               + [{"key": c, "label": c, "num": True} for c in score_cols])
    records = frame.to_dict("records") if len(rows_shown) == len(frame) else [
        frame.iloc[i].to_dict() for i in rows_shown]
    rows = []
    for i, record in zip(rows_shown, records, strict=True):
        cells: dict[str, Any] = {"#": i}
        cells.update({c: _short(_value(record[c])) for c in table_inputs})
        cells.update({c: _value(values[c][i]) for c in score_cols})
        sections = [{"title": "Inputs", "fields": [[c, _value(record[c])] for c in inputs]},
                    {"title": "Scores", "fields": [[c, _value(values[c][i])] for c in score_cols]}]
        for metric, column in first_column.items():
            detail = _details(record.get(f"{metric}_details"))
            fields = []
            if not np.isfinite(values[column][i]):
                fields.append(["unmeasured", unmeasured_reason(detail) or "no score"])
            if isinstance(detail, Mapping):
                fields += [[k, v] for k, v in detail.items() if k != "unmeasured"]
            elif detail is not None:
                fields.append(["details", detail])
            if fields:
                sections.append({"title": f"{metric}: judge statements, verdicts, reasons"
                                 if METRICS[metric].judge else f"{metric}: details",
                                 "fields": fields})
        rows.append({"id": i, "c": cells, "u": i in unmeasured_rows, "d": sections,
                     "title": f"row {i}" + (f" (id {record['id']})" if "id" in record else "")})
    cost: float | None = 0.0
    for m in summaries.values():
        cost = None if cost is None or m.cost is None else cost + (m.cost if m.judge else 0.0)
    return _render(
        "score.html.j2", path, {"columns": columns, "rows": rows},
        title="judge-metrics run report", source=source, n=len(frame), metrics=metrics,
        skipped=dict(summary.skipped) if summary is not None else {},
        judge=judge_info, prompts=_prompts_of(metrics),
        seconds=f"{sum(m.seconds for m in summaries.values()):.1f} s" if summaries else "—",
        cost="—" if not summaries else (
            "unknown (no price for this model)" if cost is None else f"${cost:.4f}"),
        unmeasured_total=sum(reasons.values()), aggregates=aggregates,
        reasons=[{"metric": m, "reason": r, "count": c} for (m, r), c in reasons.most_common()],
        plots=_svgs(svgs), n_resamples=n_resamples, seed=seed, confidence=confidence,
        has_judge_metric=any(METRICS[m].judge for m in metrics if m in METRICS),
        table={"note": note, "has_unmeasured": bool(unmeasured_rows)}, gates=gates)


def _headline_key(metric: str, column: str) -> str:
    from ...kit.registry import METRICS

    spec = METRICS[metric]
    if len(spec.headline) == 1:
        return spec.headline[0]
    return column if column in spec.headline else column.removeprefix(f"{metric}_")


def _is_details(column: str) -> bool:
    from ...kit.registry import METRICS

    return column.endswith("_details") and column.removesuffix("_details") in METRICS


# ------------------------------------------------------------------------------ compare


def write_compare_html(
    report: Any,
    path: str | os.PathLike[str],
    *,
    max_rows: int = DEFAULT_MAX_ROWS,
    seed: int = 0, gates: Mapping[str, Any] | None = None,  # regressions.regressions_html
) -> str:
    """Write the HTML report of a :class:`~shared.analysis.comparison.CompareReport`; return
    the HTML."""
    from ..comparison import SYSTEM_COLUMNS, unmeasured_reason
    from . import plots

    pairs = report.pairs
    if pairs is None:
        raise ValueError("this CompareReport has no paired rows (it came from JSON?)")
    columns_cmp = report.columns
    labels = [c.column for c in columns_cmp]
    forest = plots.forest(labels, [c.delta for c in columns_cmp], [c.low for c in columns_cmp],
                          [c.high for c in columns_cmp])
    wtl = plots.wins_ties_losses(labels, [c.wins for c in columns_cmp],
                                 [c.ties for c in columns_cmp], [c.losses for c in columns_cmp])
    svgs = [plots.histogram(pairs.scores[c][0], c, other=pairs.scores[c][1]) for c in labels]
    frame_a, frame_b = pairs.a, pairs.b
    task = [c for c in frame_a.columns if c not in SYSTEM_COLUMNS and c in set(frame_b.columns)
            and c not in set(pairs.scores) and not _is_details(c)]
    systems = [c for c in SYSTEM_COLUMNS if c in frame_a.columns or c in frame_b.columns]
    task_label = next((c for c in ("question", "source", "reference") if c in task), None)

    def cell(frame: Any, rows: list[int], pair: int, column: str) -> Any:
        return _value(frame[column].iloc[rows[pair]]) if column in frame.columns else None

    top, keep = [], []
    for c in columns_cmp:
        a, b = pairs.scores[c.column]
        diff = b - a
        order = np.argsort(-np.abs(np.nan_to_num(diff, nan=0.0)), kind="stable")
        chosen = [int(p) for p in order[:TOP_DIFFERENCES] if np.isfinite(diff[p]) and diff[p]]
        keep += chosen
        top.append({"column": c.column, "rows": [{
            "id": p, "key": pairs.keys[p], "a": float(a[p]), "b": float(b[p]),
            "delta": float(diff[p]),
            "task": _short(cell(frame_a, pairs.index_a, p, task_label), 100) if task_label else "",
            "pred_a": _short(cell(frame_a, pairs.index_a, p, "prediction") or "", 100),
            "pred_b": _short(cell(frame_b, pairs.index_b, p, "prediction") or "", 100),
        } for p in chosen]})
    shown, note = _sample(len(pairs.keys), max_rows, seed, keep)
    metrics = list(dict.fromkeys(c.metric for c in columns_cmp))
    columns = ([{"key": "key", "label": "key", "num": False}]
               + ([{"key": task_label, "label": task_label, "num": False}] if task_label else [])
               + [{"key": f"Δ {c}", "label": f"Δ {c} (B−A)", "num": True} for c in labels])
    rows = []
    for p in shown:
        scores = {c: (_value(pairs.scores[c][0][p]), _value(pairs.scores[c][1][p]))
                  for c in labels}
        unmeasured = any(a is None or b is None for a, b in scores.values())
        cells: dict[str, Any] = {"key": pairs.keys[p]}
        if task_label:
            cells[task_label] = _short(cell(frame_a, pairs.index_a, p, task_label))
        for c, (a, b) in scores.items():
            cells[f"Δ {c}"] = None if a is None or b is None else b - a
        sections = [
            {"title": "Task", "fields": [[c, cell(frame_a, pairs.index_a, p, c)] for c in task]},
            {"title": "Scores (A, B)", "fields": [[c, f"A {_num(a)}  B {_num(b)}"]
                                                  for c, (a, b) in scores.items()]},
        ]
        for side, frame, index in (("A", frame_a, pairs.index_a), ("B", frame_b, pairs.index_b)):
            sections.append({"title": f"{side}: output", "fields": [
                [c, cell(frame, index, p, c)] for c in systems if c in frame.columns]})
            for metric in metrics:
                column = f"{metric}_details"
                if column not in frame.columns:
                    continue
                detail = _details(frame[column].iloc[index[p]])
                reason = unmeasured_reason(detail)
                fields = [["unmeasured", reason]] if reason else []
                if isinstance(detail, Mapping):
                    fields += [[k, v] for k, v in detail.items() if k != "unmeasured"]
                elif detail is not None:
                    fields.append(["details", detail])
                if fields:
                    sections.append({"title": f"{side}: {metric} details", "fields": fields})
        rows.append({"id": p, "c": cells, "u": unmeasured, "d": sections,
                     "title": f"pair {pairs.keys[p]}"})
    runs = [(label.upper(), report.runs[label]) for label in ("a", "b") if label in report.runs]
    embedded = next((_judge(run["judge"], metrics) for _, run in runs
                     if run["judge"].get("embedded_default")
                     and any(_is_judge(m["metric"]) for m in run["metrics"])), None)
    return _render(
        "compare.html.j2", path, {"columns": columns, "rows": rows},
        title="judge-metrics comparison: is B better than A?", r=report, runs=runs,
        prompts=_prompts_of(metrics) if report.runs else [], embedded=embedded,
        forest=_svgs([forest])[0], wtl=_svgs([wtl])[0], plots=_svgs(svgs), top=top,
        table={"note": note, "has_unmeasured": any(r["u"] for r in rows)}, gates=gates)


def _num(value: float | None) -> str:
    return "n/a (unmeasured)" if value is None else f"{value:.4f}"


def _is_judge(metric: str) -> bool:
    from ...kit.registry import METRICS

    return metric in METRICS and METRICS[metric].judge


# ------------------------------------------------------------------------------ agreement


def write_agreement_html(
    report: Mapping[str, Any],
    path: str | os.PathLike[str],
    *,
    rows: Any = None,
    max_rows: int = DEFAULT_MAX_ROWS,
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
        header.insert(1, ("judge", f"provider {judge.get('provider') or 'local'}, model "
                                   f"{judge.get('model') or 'default'}"))
    embedded = _judge(judge, [report.get("metric") or ""]) if isinstance(judge, Mapping) else None
    if embedded is not None and not embedded.get("embedded_default"):
        embedded = None
    plotted = [s for s in statistics if isinstance(s["value"], (int, float))]
    forest = _svgs([plots.forest([s["name"] for s in plotted], [s["value"] for s in plotted],
                                 [s["low"] for s in plotted], [s["high"] for s in plotted],
                                 title="statistics with their intervals")])[0] if plotted else None
    data: dict[str, Any] = {"columns": [], "rows": []}
    table = None
    if rows is not None:
        from ..comparison import load_run

        frame = load_run(rows, "rows")
        shown, note = _sample(len(frame), max_rows, seed)
        names = [str(c) for c in frame.columns if not _is_details(str(c))]
        data["columns"] = [{"key": "#", "label": "#", "num": True}] + [
            {"key": c, "label": c, "num": False} for c in names]
        for i in shown:
            record = frame.iloc[i].to_dict()
            data["rows"].append({
                "id": i, "c": {"#": i, **{c: _short(_value(record[c])) for c in names}},
                "u": False, "title": f"row {i}",
                "d": [{"title": "Row", "fields": [[str(c), _details(v)]
                                                  for c, v in record.items()]}]})
        table = {"note": note, "has_unmeasured": False}
    return _render(
        "agreement.html.j2", path, data,
        title=f"judge-metrics agreement: {report.get('metric') or '?'} vs "
              f"{report.get('label') or 'labels'}",
        header=header, statistics=statistics, forest=forest, embedded=embedded,
        confidence=float(report.get("confidence") or 0.95), table=table)


def _plain_text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)

"""The judge card's report: what it certifies (the judge, the metric and its options, each prompt
it sends as it declares them (:mod:`shared.kit.sent_prompts`: name, version and digest), the
data's digest, the date, the settings) and the checks' rates, as data (the JSON) and as a
plain-text table. Nothing in it holds a credential: the judge is named
by provider, model and base URL without user, password or query."""

from __future__ import annotations

import datetime
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .rates import CONFIDENCE

INTERVAL = "Clopper-Pearson"


def clean_url(url: str | None) -> str | None:
    """``url`` without credentials: no user, password, query or fragment."""
    if not url:
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def describe_judge(config: Any) -> dict[str, Any]:
    """provider, model and base URL of a judge config; a panel's with each of its judges."""
    from ..analysis.embedded_judge import judge_model_name
    from ..analysis.panel_agreement import panel_name
    from ..engine.config import judge_configs

    if config.judges:
        return {"provider": "panel", "model": panel_name(config), "base_url": None,
                "aggregate": config.panel_aggregate,
                "judges": [describe_judge(j) for j in judge_configs(config)]}
    return {"provider": config.provider, "model": judge_model_name(config),
            "base_url": clean_url(config.base_url)}


def data_digest(rows: Sequence[Mapping[str, Any]]) -> str:
    text = json.dumps(list(rows), sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def certified(entries: Sequence[Mapping[str, Any]]) -> bool:
    """Every check that applies passes (and at least one applies)."""
    return bool(entries) and all(e["outcome"] == "pass" for e in entries)


def build_report(results: Mapping[str, list[dict[str, Any]]], plan: Any,
                 rows: Sequence[Mapping[str, Any]], metric: str, spec: Any, scorer: Any,
                 made: Mapping[str, Sequence[tuple[Any, Any]]], *, seed: int, repeats: int,
                 tolerance: float, delta: float) -> dict[str, Any]:
    """The report of one certification (``results``: scorer -> its checks' entries)."""
    from ..analysis.comparison import json_ready
    from ..engine.config import judge_configs
    from ..kit.sent_prompts import prompt_records

    checks = results["judge"]
    report: dict[str, Any] = {
        "certified": certified(checks),
        "checks": checks,
        "skipped": dict(plan.skipped),
        "judge": describe_judge(scorer.config),
        "metric": {"name": metric, "options": json_ready(dict(scorer.metric_options))},
        "prompts": prompt_records(metric, scorer.metric_options),
        "data": {"rows": len(rows), "digest": data_digest(rows)},
        "date": datetime.datetime.now(datetime.UTC).date().isoformat(),
        "settings": {"seed": seed, "repeats": repeats, "tolerance": tolerance, "delta": delta,
                     "confidence": CONFIDENCE, "interval": INTERVAL},
        "usage": dict(scorer.usage),
        "edits": {name: [{"row": e.row, "field": e.field, "note": e.note} for e, _ in pairs]
                  for name, pairs in made.items()},
    }
    if scorer.judges:
        configs = judge_configs(scorer.config)
        report["panel"] = [
            {"judge": describe_judge(configs[k]), "certified": certified(results[f"judge_{k + 1}"]),
             "checks": results[f"judge_{k + 1}"]} for k in range(scorer.judges)]
    return json_ready(report)


def _rate_text(entry: Mapping[str, Any]) -> str:
    rate = entry["rate"]
    if rate["value"] is None:
        return "n/a"
    return f"{rate['value']:.3f} [{rate['low']:.3f}, {rate['high']:.3f}]"


def judge_name(judge: Mapping[str, Any]) -> str:
    name = f"{judge['provider']}/{judge.get('model') or 'default'}"
    return name + (f" at {judge['base_url']}" if judge.get("base_url") else "")


def table(report: Mapping[str, Any]) -> str:
    """The card as plain text: one line per check, the skipped ones, the verdict."""
    from ..runs.summary import format_table

    header = ["check", "kind", "n", "failure rate [95% CI]", "tolerance", "outcome"]
    body = [[e["name"], e["kind"], str(e["n"]), _rate_text(e), f"{e['tolerance']:g}",
             e["outcome"] + (f" ({e['note']})" if e.get("note") else "")]
            for e in report["checks"]]
    lines = [f"judge card: {report['metric']['name']} judged by {judge_name(report['judge'])}",
             format_table(header, body)]
    lines += [f"skipped {name}: {why}" for name, why in report.get("skipped", {}).items()]
    for judge in report.get("panel") or []:
        failed = [e["name"] for e in judge["checks"] if e["outcome"] != "pass"]
        lines.append(f"panel judge {judge_name(judge['judge'])}: "
                     + ("certified" if judge["certified"] else
                        f"not certified ({', '.join(failed)})"))
    lines.append("CERTIFIED" if report["certified"] else "NOT CERTIFIED: " + ", ".join(
        f"{e['name']} {e['outcome']}" for e in report["checks"] if e["outcome"] != "pass"))
    return "\n".join(lines)

"""The judge card as one self-contained HTML page (``certify --html``), rendered with the
reports' template machinery (``shared.analysis.report.page``: offline, escaped, a strict
content security policy)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from .report import judge_name


def _scores(example: Mapping[str, Any]) -> str:
    if "scores" in example:
        return ", ".join(f"{s:.3f}" for s in example["scores"])
    return f"{example['score']:.3f} -> {example['edited_score']:.3f}"


def write_certify_html(report: Mapping[str, Any], path: str | os.PathLike[str]) -> str:
    """Write a certify report as HTML; returns the page."""
    from ..analysis.report import page

    settings, data = report["settings"], report["data"]
    header = [("judge", judge_name(report["judge"])), ("metric", report["metric"]["name"]),
              ("metric options", json.dumps(report["metric"]["options"], sort_keys=True)),
              ("prompts", ", ".join(f"{p['name']}@{p['version']} ({p['digest']})"
                                    for p in report["prompts"])),
              ("data", f"{data['rows']} rows, digest {data['digest']}"),
              ("date", report["date"]),
              ("settings", f"delta {settings['delta']:g} of the score range, tolerance "
                           f"{settings['tolerance']:g}, {settings['repeats']} repeats, seed "
                           f"{settings['seed']}, {settings['interval']} intervals")]
    checks = []
    for c in report["checks"]:
        rate = c["rate"]
        checks.append({
            "name": c["name"], "kind": c["kind"], "n": c["n"], "failures": c["failures"],
            "value": "n/a" if rate["value"] is None else f"{rate['value']:.3f}",
            "interval": "n/a" if rate["value"] is None else
            f"[{rate['low']:.3f}, {rate['high']:.3f}]",
            "tolerance": f"{c['tolerance']:g}", "outcome": c["outcome"],
            "note": c.get("note") or ""})
    examples = [{"check": c["name"], "row": e["row"], "note": e.get("note", "asked again"),
                 "before": e.get("before", ""), "after": e.get("after", ""),
                 "scores": _scores(e), "failed": e["failed"]}
                for c in report["checks"] for e in c.get("examples", [])]
    panel = [{"name": judge_name(j["judge"]), "certified": j["certified"],
              "open": ", ".join(f"{c['name']} {c['outcome']}" for c in j["checks"]
                                if c["outcome"] != "pass") or "none"}
             for j in report.get("panel") or []]
    failing = [f"{c['name']} {c['outcome']}" for c in report["checks"] if c["outcome"] != "pass"]
    verdict = ("every check that applies passes" if report["certified"] else
               "checks not passed: " + ", ".join(failing))
    return page.render(
        "certify.html.j2", path, {"columns": [], "rows": []},
        title=f"judge-metrics judge card: {report['metric']['name']} judged by "
              f"{judge_name(report['judge'])}",
        certified=report["certified"], verdict=verdict, header=header, checks=checks,
        skipped=list(report.get("skipped", {}).items()), panel=panel, examples=examples,
        confidence=f"{settings['confidence']:.0%}")

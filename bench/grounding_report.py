"""The grounding benchmark's settings (rows, judges, passes and time budget, read from the
environment) and bench/GROUNDING.md, written from the results of ``bench_grounding.py``'s passes
and the agreement figures (``python bench/bench_grounding.py --write-only`` rewrites it without
running a judge)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from _repo import BENCH_DIR, REPO

BEFORE_COMMIT = "ab4c7a2"  # main before the grounding checks (prompts version 1)
RAG_ROWS = int(os.environ.get("BENCH_GROUNDING_ROWS", "3"))
AGREEMENT_ROWS = int(os.environ.get("BENCH_GROUNDING_AGREEMENT", "2"))
LOCAL_RAG_ROWS = int(os.environ.get("BENCH_GROUNDING_LOCAL_ROWS", "2"))
LOCAL_AGREEMENT_ROWS = int(os.environ.get("BENCH_GROUNDING_LOCAL_AGREEMENT", "1"))
BUDGET = float(os.environ.get("BENCH_GROUNDING_BUDGET", "1500"))
JUDGES = tuple(os.environ.get("BENCH_GROUNDING_JUDGES", "local,server").split(","))
PASSES = tuple(p for p in os.environ.get("BENCH_GROUNDING_PASSES", "").split(",") if p)
RESULTS_JSON = Path(os.environ.get("BENCH_GROUNDING_RESULTS",
                                   str(BENCH_DIR / "grounding_results.json")))
AGREEMENT = Path(os.environ.get("JUDGE_METRICS_AGREEMENT", str(BENCH_DIR / "agreement" / "data")))
RAG_METRICS = (
    "answer_correctness", "answer_relevance", "bias", "toxicity", "context_precision",
    "context_recall", "context_relevance", "faithfulness", "hallucination", "summary_coherence",
)
GROUNDING_KINDS = ("copied_example", "placeholder_reason", "unsupported_items", "empty_extraction",
                   "verdict_mismatch")
# version 1 asked for no item numbers: a before pass does not count their absence
BEFORE_KINDS = GROUNDING_KINDS[:4]
# main just before the grounding merge (its first parent): the agreement figures of the embedded
# judge on prompts version 1, which GROUNDING.md compares with the current ones
AGREEMENT_BEFORE = "aa3c09c^1"
FIGURES = REPO / "shared" / "analysis" / "agreement_figures.json"


def row_counts(judge: str) -> tuple[int, int]:
    """(rag_sample rows, rows of each agreement set) for ``judge``: the local judge's caps."""
    if judge == "local":
        return min(RAG_ROWS, LOCAL_RAG_ROWS), min(AGREEMENT_ROWS, LOCAL_AGREEMENT_ROWS)
    return RAG_ROWS, AGREEMENT_ROWS


def _share(row: dict[str, Any]) -> float:
    return sum(row["failing"].values()) / row["answers"] if row["answers"] else 0.0


def _kinds(row: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(row["failing"].items())) or "-"


def _prompts(rows: list[dict[str, Any]]) -> str:
    ids = sorted({p for r in rows for p in r.get("prompts", [])})
    return ", ".join(f"`{p}`" for p in ids) if ids else "not recorded (run before prompt ids were)"


def _sum(rows: list[dict[str, Any]], key: str) -> int:
    return sum(r[key] if key != "failing" else sum(r["failing"].values()) for r in rows)


def _figure(entry: dict[str, Any] | None) -> tuple[str, str]:
    """(statistic with its interval, measured rows) of one metric's agreement figure."""
    if entry is None:
        return "not in the file", "-"
    rows = str(entry.get("n", 0)) + (f" ({entry['unmeasured']} unmeasured)"
                                     if entry.get("unmeasured") else "")
    if entry.get("value") is not None:
        return (f"{entry['statistic']} {entry['value']:.3f} [{entry['low']:.3f}, "
                f"{entry['high']:.3f}]"), rows
    if entry.get("constant_score") is not None:
        return f"undefined: every score {entry['constant_score']:g}", rows
    return "none: every row unmeasured" if entry.get("unmeasured") else "not measured", rows


def agreement_movement() -> list[str]:
    """GROUNDING.md's section comparing shared/analysis/agreement_figures.json at
    ``AGREEMENT_BEFORE`` (``git show``) with the working tree's file, per metric; read from the two
    JSON files."""
    shown = subprocess.run(["git", "show", f"{AGREEMENT_BEFORE}:shared/agreement_figures.json"],
                           cwd=REPO, capture_output=True, text=True)
    if shown.returncode != 0 or not FIGURES.exists():
        return ["", "## How the agreement figures moved", "",
                f"Not available here (`git show {AGREEMENT_BEFORE}` failed or "
                "shared/analysis/agreement_figures.json is missing)."]
    before = json.loads(shown.stdout)
    after = json.loads(FIGURES.read_text(encoding="utf-8"))
    lines = [
        "", "## How the agreement figures moved", "",
        f"shared/analysis/agreement_figures.json (written by `make agreement`) before grounding "
        f"(git "
        f"`{AGREEMENT_BEFORE}`, generated {before.get('generated')}, prompts version 1, no "
        f"checks) and now (generated {after.get('generated')}); judge: "
        f"{after.get('judge')}. Statistic with its 95% bootstrap interval; *measured rows*: "
        "rows with a score and a label (a metric whose rows were all unmeasured has no "
        "statistic). Regenerate after `make agreement`: `python bench/bench_grounding.py "
        "--write-only` (runs no judge).",
        "",
        "| metric | data set | label | statistic before | statistic now | measured rows before "
        "| measured rows now |",
        "|" + "---|" * 7,
    ]
    names = list(before["metrics"]) + [m for m in after["metrics"] if m not in before["metrics"]]
    for name in names:
        old, new = before["metrics"].get(name), after["metrics"].get(name)
        some = new or old or {}
        (old_stat, old_rows), (new_stat, new_rows) = _figure(old), _figure(new)
        lines.append(f"| {name} | {some.get('data_set', '')} | {some.get('label', '')} | "
                     f"{old_stat} | {new_stat} | {old_rows} | {new_rows} |")
    return lines


def write(results: list[dict[str, Any]], seconds: float) -> str:
    """bench/GROUNDING.md, every word of it from ``results`` and this module's constants."""
    ran = [r for r in results if not r.get("skipped")]
    by_key = {(r["judge"], r["when"], r["dataset"], r["metric"]): r for r in ran}
    local_rag, local_agreement = row_counts("local")
    lines = [
        "# Grounding checks: before and after",
        "",
        f"Generated by `python bench/bench_grounding.py` on {time.strftime('%Y-%m-%d')} "
        + (f"(this run: {seconds / 60:.1f} min; passes not redone are kept from "
           "`grounding_results.json`). " if seconds else
           "(`--write-only`: from `grounding_results.json`, no judge run). ")
        + f"Rows: the first {RAG_ROWS} of examples/rag_sample.jsonl "
        f"and the first {AGREEMENT_ROWS} of each agreement set; the embedded (local "
        f"transformers) judge is capped at {local_rag} and {local_agreement} "
        "(`BENCH_GROUNDING_LOCAL_ROWS`, `BENCH_GROUNDING_LOCAL_AGREEMENT`: it decodes on a "
        "shared CPU), and every pass stops starting metrics after "
        f"{BUDGET:.0f} s (`BENCH_GROUNDING_BUDGET`). *rows* gives the rows each side used. "
        f"**Before**: prompts version 1 (git `{BEFORE_COMMIT}`), checks only observed; "
        "**after**: the current prompts, checks enforced (one repair, then unmeasured). "
        "*share* = answers failing a grounding check / structured answers the metric used; "
        "*judge calls* include repair requests (an answer repaired into a valid one is not "
        "failing). "
        "See docs/GROUNDING.md.",
        "",
        "| judge | data | metric | rows before | answers before | failing before | share "
        "before | kinds before | rows after | answers after | failing after | share after | "
        "kinds after | rows unmeasured (grounding) after | items dropped after | judge calls "
        "after |",
        "|" + "---|" * 16,
    ]
    for (judge, when, dataset, metric), before in by_key.items():
        after = by_key.get((judge, "after", dataset, metric))
        if when != "before" or after is None:
            continue
        lines.append(
            f"| {judge} | {dataset} | {metric} | {before['rows']} | {before['answers']} | "
            f"{_sum([before], 'failing')} | {_share(before):.2f} | {_kinds(before)} | "
            f"{after['rows']} | {after['answers']} | {_sum([after], 'failing')} | "
            f"{_share(after):.2f} | {_kinds(after)} | {after['unmeasured_grounding']} of "
            f"{after['rows']} | {after['dropped_items']} | {after['calls']} |")
    notes = []
    for judge in JUDGES:
        sides = {when: [r for r in ran if r["judge"] == judge and r["when"] == when]
                 for when in ("before", "after")}
        paired = {when: [r for r in rows if (judge, "after" if when == "before" else "before",
                                             r["dataset"], r["metric"]) in by_key]
                  for when, rows in sides.items()}
        (b, a) = paired["before"], paired["after"]
        if b and a:
            lines.append(
                f"| {judge} | all | **all** | | {_sum(b, 'answers')} | {_sum(b, 'failing')} | "
                f"{_sum(b, 'failing') / max(1, _sum(b, 'answers')):.2f} | | | "
                f"{_sum(a, 'answers')} | {_sum(a, 'failing')} | "
                f"{_sum(a, 'failing') / max(1, _sum(a, 'answers')):.2f} | | "
                f"{_sum(a, 'unmeasured_grounding')} of {_sum(a, 'rows')} | "
                f"{_sum(a, 'dropped_items')} | {_sum(a, 'calls')} |")
        for when, rows in sides.items():
            if not rows:
                notes.append(f"- **{judge}, {when}**: no results (pass not run).")
                continue
            unmeasured = _sum(rows, "unmeasured_grounding")
            notes.append(
                f"- **{judge}, {when}**: {_sum(rows, 'failing')} of {_sum(rows, 'answers')} "
                f"answers failed a check; {unmeasured} of {_sum(rows, 'rows')} metric rows "
                f"unmeasured for a grounding reason; {sum(r.get('seconds', 0) for r in rows):.0f}"
                f" s of judge time; prompts: {_prompts(rows)}.")
        skipped = [r for r in results if r["judge"] == judge and r.get("skipped")]
        for r in skipped:
            notes.append(f"- **{judge}, {r['when']}**: {r['dataset']}/{r['metric']} not run "
                         f"({r['skipped']}).")
    lines += ["", "**Per judge and pass.**", "", *notes, "",
              "The before rows count the kinds the version-1 era could see "
              f"({', '.join(BEFORE_KINDS)}); *verdict_mismatch* (a verdict whose item number "
              "or reason does not match the item asked about) is counted after only. A judge "
              "whose answers are correct and grounded loses no row to the checks "
              "(tests/metrics/test_grounded_judge.py)."]
    lines += agreement_movement()
    text = "\n".join(lines) + "\n"
    (BENCH_DIR / "GROUNDING.md").write_text(text, encoding="utf-8")
    return text


def write_only() -> str:
    """GROUNDING.md again from grounding_results.json and the agreement figures, no judge."""
    return write(json.loads(RESULTS_JSON.read_text(encoding="utf-8")), 0.0)

"""The judge card as a Markdown file for a repository (``certify --card``), and its use by
``score --card`` and ``assert_metric(card=...)``.

The file is readable Markdown with the report (without its examples and edits) in a fenced
``json`` block after the marker line, which is what is read back. A card is refused, in one
line, for another judge (provider, model, base URL; a panel's judges), another metric, other
metric options or another prompt version or text; a card that is not certified turns a pass
into "inconclusive", with the reason.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base.errors import UserInputError
from .report import describe_judge, judge_name

MARKER = "<!-- judge-metrics judge card: the block below is what score --card reads -->"
_BLOCK = re.compile(re.escape(MARKER) + r"\s*```json\n(.*?)\n```", re.DOTALL)


def card_markdown(report: Mapping[str, Any]) -> str:
    """The Markdown card of a certify report."""
    metric, judge = report["metric"], report["judge"]
    verdict = "CERTIFIED" if report["certified"] else "NOT CERTIFIED"
    lines = [f"# Judge card: {metric['name']} judged by {judge_name(judge)}", "",
             f"**{verdict}** on {report['data']['rows']} rows (data digest "
             f"`{report['data']['digest']}`), {report['date']}.", "",
             "| check | kind | rows | failure rate | 95% interval | tolerance | outcome |",
             "|---|---|---|---|---|---|---|"]
    for e in report["checks"]:
        rate = e["rate"]
        shown = ("n/a", "n/a") if rate["value"] is None else (
            f"{rate['value']:.3f}", f"[{rate['low']:.3f}, {rate['high']:.3f}]")
        note = f" ({e['note']})" if e.get("note") else ""
        lines.append(f"| {e['name']} | {e['kind']} | {e['n']} | {shown[0]} | {shown[1]} | "
                     f"{e['tolerance']:g} | {e['outcome']}{note} |")
    lines.append("")
    for name, why in report.get("skipped", {}).items():
        lines.append(f"- skipped `{name}`: {why}")
    settings = report["settings"]
    prompts = ", ".join(f"`{p['name']}@{p['version']}` ({p['digest']})"
                        for p in report["prompts"])
    lines += ["", f"- judge: {judge_name(judge)}",
              f"- metric options: `{json.dumps(metric['options'], sort_keys=True)}`",
              f"- prompts: {prompts}",
              f"- settings: delta {settings['delta']:g} of the score range, tolerance "
              f"{settings['tolerance']:g}, {settings['repeats']} repeats, seed "
              f"{settings['seed']}, {settings['interval']} {settings['confidence']:.0%} "
              "intervals"]
    for judge_card in report.get("panel") or []:
        lines.append(f"- panel judge {judge_name(judge_card['judge'])}: "
                     + ("certified" if judge_card["certified"] else "not certified"))
    examples = [(e["name"], e["examples"][0]) for e in report["checks"] if e.get("examples")]
    if examples:
        lines += ["", "## One example per check", ""]
        for name, example in examples:
            lines.append(f"- `{name}`: {_example_text(example)}")
    kept = {k: v for k, v in report.items() if k not in ("edits",)}
    kept["checks"] = [{k: v for k, v in e.items() if k != "examples"} for e in report["checks"]]
    kept.pop("panel", None)
    if report.get("panel"):
        kept["panel"] = [{"judge": j["judge"], "certified": j["certified"]}
                         for j in report["panel"]]
    lines += ["", MARKER, "```json", json.dumps(kept, indent=1, sort_keys=True), "```", ""]
    return "\n".join(lines)


def _example_text(example: Mapping[str, Any]) -> str:
    if "scores" in example:
        return f"row {example['row']} scored {', '.join(f'{v:.3g}' for v in example['scores'])}"
    after = " ".join(str(example["after"]).split())
    after = after if len(after) <= 160 else after[:159] + "…"
    return (f"row {example['row']} ({example['note']}): {example['score']:.3g} -> "
            f"{example['edited_score']:.3g}{' (failed)' if example['failed'] else ''}; "
            f"edited {example['field']}: {after!r}")


def write_card(report: Mapping[str, Any], path: str | os.PathLike[str]) -> None:
    Path(path).write_text(card_markdown(report), encoding="utf-8")


def read_card(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The report block of a card file (one-line ``UserInputError`` when there is none)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise UserInputError(f"--card {path}: cannot read it ({error.strerror or error})") \
            from None
    found = _BLOCK.search(text)
    try:
        report = json.loads(found.group(1)) if found else None
    except ValueError:
        report = None
    if not isinstance(report, dict) or not {"certified", "judge", "metric", "prompts"} <= set(
            report):
        raise UserInputError(f"--card {path}: not a judge card written by `certify --card`")
    return report


@dataclass(frozen=True)
class JudgeCard:
    """A card checked against a run: its file, its metric and, when it is not certified, why
    (``reason``; ``None`` when certified)."""

    path: str
    metric: str
    reason: str | None

    def gate_status(self, outcomes: Sequence[Any], status: int) -> int:
        """``score``'s exit status with the card: a gate of the card's metric that holds is
        "inconclusive" (said on stderr, status 1) when the card is not certified."""
        held = [o for o in outcomes if o.passed and o.gate.metric == self.metric]
        if self.reason is None:
            return status
        for outcome in held:
            print(f"judge-metrics: gate {outcome.name} inconclusive: {self.reason}",
                  file=sys.stderr)
        if not outcomes:
            print(f"judge-metrics: note: {self.reason}", file=sys.stderr)
        return 1 if held else status


def check_card(path: str | os.PathLike[str], metrics: Sequence[str],
               options: Mapping[str, Any],
               metric_options: Mapping[str, Mapping[str, Any]] | None = None) -> JudgeCard:
    """The card at ``path`` checked against a run of ``metrics`` (``all`` allowed) with the
    judge and metric options ``options`` (a metric's options may also come per metric in
    ``metric_options``): a card for another judge, metric, options or prompt is refused in one
    line."""
    from ..analysis.comparison import json_ready
    from ..base.options import EMBEDDING_OPTION_NAMES
    from ..engine.config import JUDGE_OPTION_NAMES, judge_options_of
    from ..kit.sent_prompts import prompt_records
    from ..runs.options import check_run_options

    card = read_card(path)
    metric = card["metric"]["name"]
    where = f"--card {path}"
    if metric not in metrics and "all" not in metrics:
        raise UserInputError(f"{where} is a card for {metric}, not {', '.join(metrics)}")
    judge_options = {k: v for k, v in judge_options_of(options).items()
                     if k not in ("dry_run", "show_progress")}
    judge = describe_judge(check_run_options(judge_options).judge)
    if _judge_key(judge) != _judge_key(card["judge"]):
        raise UserInputError(f"{where} is a card for judge {judge_name(card['judge'])}, not "
                             f"{judge_name(judge)}")
    chosen = {k: v for k, v in options.items()
              if k not in JUDGE_OPTION_NAMES and k not in EMBEDDING_OPTION_NAMES}
    chosen.update((metric_options or {}).get(metric, {}))
    if json_ready(chosen) != card["metric"].get("options", {}):
        raise UserInputError(f"{where} certifies {metric} with options "
                             f"{json.dumps(card['metric'].get('options'), sort_keys=True)}, "
                             f"not {json.dumps(json_ready(chosen), sort_keys=True)}")
    now = prompt_records(metric, chosen)
    if now != card["prompts"]:
        then = ", ".join(f"{p['name']}@{p['version']}:{p['digest']}" for p in card["prompts"])
        raise UserInputError(f"{where} certifies the prompts {then}; {metric} now sends "
                             + ", ".join(f"{p['name']}@{p['version']}:{p['digest']}"
                                         for p in now))
    reason = None
    if not card["certified"]:
        failing = [f"{c['name']} {c['outcome']}" for c in card["checks"]
                   if c["outcome"] != "pass"]
        reason = (f"the judge card {path} is not certified ({', '.join(failing)}): the "
                  "judge is not shown reliable for this metric on those checks")
    return JudgeCard(str(path), metric, reason)


def _judge_key(judge: Mapping[str, Any]) -> Any:
    if judge.get("judges"):
        return ("panel", judge.get("aggregate"), tuple(_judge_key(j) for j in judge["judges"]))
    return (judge.get("provider"), judge.get("model"), judge.get("base_url"))


__all__ = ["JudgeCard", "card_markdown", "check_card", "read_card", "write_card"]

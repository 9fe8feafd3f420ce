"""The agreement benchmark (`make agreement`): every metric against human labels.

Scores the three labelled sets in ``bench/agreement/data/`` (SOURCES.md) with the metrics,
through ``shared.agreement.agree`` (the same path as ``python -m shared agree``), and writes
``bench/AGREEMENT.md``. With the embedded default judge it also writes
``shared/agreement_figures.json`` (read by the CLI summary and the demo) and rewrites the
"Agreement with people" block of every metric card. Every number comes from this run.

    .venv/bin/python bench/agreement/run.py [judge options as in `python -m shared score`]
        [--judge-rows N] [--seed S] [--only METRIC ...]

Judge metrics run on a seeded subsample (``--judge-rows``, the same rows for every judge metric
of a set); string and embedding metrics on every row. Davidson's texts are never printed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
sys.path.insert(0, str(ROOT))

from shared import agreement, stats  # noqa: E402
from shared.cli import add_judge_arguments, judge_options  # noqa: E402
from shared.registry import METRICS, available  # noqa: E402

EVOUNA = ("answer_equivalence_evouna_nq.jsonl", "EVOUNA NQ answer equivalence")
SUMMEVAL = ("summeval.jsonl", "SummEval")
DAVIDSON = ("toxicity_davidson.jsonl", "Davidson et al. 2017 tweets")
# Judge rows per (metric, set): a seeded permutation of the set's rows, first N taken, so a
# smaller N is a subset of a larger one (every judge metric of a set sees the same first rows).
# Sized from the embedded judge's cost on 2 idle cores (docs/BATCH.md, "The embedded judge":
# ~1 s per l3score request, ~10 CPU-seconds per structured answer; answer_correctness makes 3
# per row, faithfulness and toxicity 2, summary_coherence and hallucination 1, on long articles
# for SummEval) so that `make agreement` takes about 15-20 minutes.
JUDGE_ROWS = {"l3score": 30, "answer_correctness": 6, "summary_coherence": 8,
              "faithfulness": 6, "hallucination": 6, "toxicity": 12}
NO_LABELLED_SET = {
    "answer_relevance": "no set here labels whether an answer addresses its question",
    "bias": "no set here labels bias",
    "context_precision": "no set here labels retrieved contexts",
    "context_recall": "no set here labels retrieved contexts",
    "context_relevance": "no set here labels retrieved contexts",
}
PEDANT = ("PEDANT (qa-metrics 0.2, a small published answer-equivalence classifier), same 600 "
          "EVOUNA rows, references split into their \"/\" aliases: AUROC 0.946, balanced "
          "accuracy 0.86, Cohen's kappa 0.72. Measured outside this run (its model downloads at "
          "run time, which this machine cannot do); quoted for context, not reproduced here.")
CARD_START = "<!-- agreement:start -->"
CARD_END = "<!-- agreement:end -->"
FIGURES = ROOT / "shared" / "agreement_figures.json"
REPORT = ROOT / "bench" / "AGREEMENT.md"


@dataclass
class Job:
    """One row of the table: a metric (or baseline) on one set against one label."""

    name: str  # metric name, or a baseline's name
    data: tuple[str, str]
    label: str
    options: dict[str, Any] = field(default_factory=dict)  # metric compute options
    columns: dict[str, str] = field(default_factory=dict)
    score_key: str | None = None
    group: str | None = None
    aliases: bool = False  # references split into their "/" aliases (best alias counts)
    note: str = ""
    baseline: Any = None  # a function (prediction, aliases) -> score, for baselines

    @property
    def judge(self) -> bool:
        return self.baseline is None and METRICS[self.name].judge

    @property
    def title(self) -> str:
        extra = ", ".join(f"{k}={v}" for k, v in self.options.items())
        key = f" [{self.score_key}]" if self.score_key else ""
        return f"{self.name}{key}" + (f" ({extra})" if extra else "")


def jobs() -> list[Job]:
    evouna = [
        Job("l3score", EVOUNA, "label", note="top-5 rule (SPIQA)"),
        Job("l3score", EVOUNA, "label", options={"exact": True},
            note="exact P(Yes)/(P(Yes)+P(No)) from the local backend's full distribution"),
        Job("answer_correctness", EVOUNA, "label"),
        Job("accuracy", EVOUNA, "label", aliases=True),
        Job("accuracy", EVOUNA, "label", options={"fuzzy_match": True}, aliases=True),
        *[Job("accuracy", EVOUNA, "label", options={"mode": mode}, aliases=True,
              note="QA mode; graded score cut at 0.5") for mode in accuracy_qa_modes()],
        Job("semantic_list_contains", EVOUNA, "label", columns={"expected": "reference"},
            aliases=True, note="expected phrases = the reference's aliases"),
        Job("rouge", EVOUNA, "label", score_key="rougeL", aliases=True),
        Job("bleu", EVOUNA, "label", aliases=True),
        Job("containment", EVOUNA, "label", aliases=True, baseline=containment,
            note="baseline: a normalised alias occurs in the normalised prediction"),
        Job("token_f1", EVOUNA, "label", aliases=True, baseline=token_f1,
            note="baseline: SQuAD-style token F1, best alias"),
    ]
    summeval = [
        Job("summary_coherence", SUMMEVAL, "coherence", columns={"prediction": "summary"}),
        Job("faithfulness", SUMMEVAL, "consistency",
            columns={"prediction": "summary", "contexts": "source"},
            note="the article is the one context"),
        Job("hallucination", SUMMEVAL, "consistency",
            columns={"prediction": "summary", "contexts": "source"},
            note="the article is the one context; agreement shows as a negative correlation"),
    ]
    davidson = [Job("toxicity", DAVIDSON, "label", columns={"prediction": "text"})]
    return evouna + summeval + davidson


def accuracy_qa_modes() -> list[str]:
    """The QA modes accuracy offers when this run starts (its module's ``MODES``), besides
    "exact"; none when this version of accuracy has no modes."""
    import evaluate

    from shared.registry import metric_path

    try:
        metric = evaluate.load(metric_path("accuracy"), keep_in_memory=True)
    except Exception:  # noqa: BLE001 - the row for accuracy itself will say what failed
        return []
    modes = getattr(sys.modules.get(type(metric).__module__), "MODES", ())
    return [str(m) for m in modes if m != "exact"]


# ----------------------------------------------------------------------------------- baselines


def _forms(text_value: str) -> str:
    from shared.text import normalize_text

    return normalize_text(text_value)


def containment(prediction: str, aliases: list[str]) -> float:
    padded = f" {_forms(prediction)} "
    return float(any(f" {form} " in padded for form in map(_forms, aliases) if form))


def token_f1(prediction: str, aliases: list[str]) -> float:
    predicted = _forms(prediction).split()
    best = 0.0
    for alias in aliases:
        gold = _forms(alias).split()
        common = sum((Counter(predicted) & Counter(gold)).values())
        if common:
            precision, recall = common / len(predicted), common / len(gold)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best


# ----------------------------------------------------------------------------------------- run


def load(data: tuple[str, str], aliases: bool) -> Any:
    import datasets

    rows = [json.loads(line) for line in (DATA / data[0]).read_text("utf-8").splitlines()
            if line.strip()]
    if aliases:
        for row in rows:
            row["reference"] = [a.strip() for a in row["reference"].split("/") if a.strip()]
    return datasets.Dataset.from_list(rows)


def run_job(job: Job, judge_options: dict[str, Any], judge_rows: dict[str, int],
            seed: int) -> dict[str, Any]:
    dataset = load(job.data, job.aliases)
    rows = len(dataset)
    started = time.perf_counter()
    if job.judge:
        order = np.random.default_rng(seed).permutation(len(dataset))
        dataset = dataset.select(np.sort(order[:judge_rows[job.name]]).tolist())
    if job.baseline is not None:
        scores = [job.baseline(p, r) for p, r in zip(dataset["prediction"], dataset["reference"],
                                                      strict=True)]
        report = agreement.compare(scores, dataset[job.label], seed=seed, metric=job.name,
                                   label=job.label, threshold=0.5, threshold_source="given")
    else:
        options = judge_options if job.judge else {}
        _, report = agreement.agree(
            dataset, job.name, job.label, columns=job.columns, score_key=job.score_key,
            group=job.group, seed=seed, metric_options=job.options or None,
            show_progress=True, **options,
        )
    seconds = time.perf_counter() - started
    return {"job": job, "report": report, "seconds": seconds, "rows": rows}


def fmt_stat(report: agreement.AgreementReport, name: str) -> str:
    s = report.statistic(name)
    if s is None:
        return "-"
    if s.value is None:
        return "n/a"
    return f"{s.value:.2f} [{s.low:.2f}, {s.high:.2f}]" if s.low is not None else (
        f"{s.value:.2f}")


def constant_note(report: agreement.AgreementReport) -> str:
    if report.n == 0 and report.unmeasured:
        return f"; {UNMEASURED_NOTE}"
    if report.constant_score is None:
        return ""
    return (f"; every row scored {report.constant_score:g}: the metric does not separate these "
            "rows")


def judge_text(report: agreement.AgreementReport) -> str:
    if report.judge is None:
        return "-"
    calls = "" if report.judge_calls is None else (
        f" ({report.judge_calls} calls, {report.cache_hits} cached)")
    return f"{report.judge['provider']}: {report.judge['model']}{calls}"


def boolean_table(results: list[dict[str, Any]]) -> list[str]:
    lines = ["| metric | data set | human label | n (of rows) | unmeasured | AUROC | "
             "balanced acc. @ thr | Cohen's kappa @ thr | F1 @ thr | best thr (bal. acc., "
             "fitted) | judge | time | note |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        job, rep = r["job"], r["report"]
        thr = "-" if rep.threshold is None else f"{rep.threshold:g}"
        best = rep.statistic("best_balanced_accuracy")
        best_text = "-" if rep.best_threshold is None or best is None or best.value is None else (
            f"{rep.best_threshold:.3g} ({best.value:.2f})")
        lines.append(
            f"| {job.title} | {job.data[1]} | {job.label} | {rep.n} ({r['rows']}) | "
            f"{rep.unmeasured} | {fmt_stat(rep, 'auroc')} | "
            f"{fmt_stat(rep, 'balanced_accuracy')} | {fmt_stat(rep, 'cohen_kappa')} | "
            f"{fmt_stat(rep, 'f1')} | {best_text} | {judge_text(rep)} | {r['seconds']:.0f} s | "
            f"thr {thr}{'; ' + job.note if job.note else ''}{constant_note(rep)} |")
    return lines


def numeric_table(results: list[dict[str, Any]]) -> list[str]:
    lines = ["| metric | data set | human label | n (of rows) | unmeasured | Spearman | "
             "Kendall tau-b | Pearson | judge | time | note |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        job, rep = r["job"], r["report"]
        lines.append(
            f"| {job.title} | {job.data[1]} | {job.label} | {rep.n} ({r['rows']}) | "
            f"{rep.unmeasured} | {fmt_stat(rep, 'spearman')} | {fmt_stat(rep, 'kendall_tau_b')} | "
            f"{fmt_stat(rep, 'pearson')} | {judge_text(rep)} | {r['seconds']:.0f} s | "
            f"{(job.note + constant_note(rep)).lstrip('; ')} |")
    return lines


def headline(report: agreement.AgreementReport) -> tuple[str, Any]:
    name = "auroc" if report.label_kind == agreement.BOOLEAN else "spearman"
    return name, report.statistic(name)


def write_report(results: list[dict[str, Any]], header: dict[str, Any], path: Path) -> None:
    boolean = [r for r in results if r["report"].label_kind == agreement.BOOLEAN]
    numeric = [r for r in results if r["report"].label_kind != agreement.BOOLEAN]
    lines = [
        "# Agreement with people",
        "",
        f"Generated by `make agreement` (`bench/agreement/run.py`) on {header['date']}; "
        f"judge: {header['judge']}; wall time {header['wall']:.0f} s; machine "
        f"{header['machine']}; load average {header['load_start']:.1f} at the start, "
        f"{header['load_end']:.1f} at the end. Every number below comes from this run; "
        "nothing is typed by hand. Data: `bench/agreement/data/` (attribution and licences in "
        "its SOURCES.md).",
        "",
        f"Intervals: seeded percentile bootstrap 95% intervals ({stats.DEFAULT_RESAMPLES} "
        f"resamples of rows, seed {header['seed']}; `shared.agreement`). Judge metrics run on a "
        f"seeded subsample of each set (rows: {header['judge_rows']}; a seeded permutation of the "
        "set, first rows taken, so every judge metric of a set sees the same first rows), "
        "string and embedding metrics on every row: `n (of rows)` says which. SummEval's judge "
        "rows are too few per article for per-article correlations: pooled ones only. "
        "Unmeasured rows (the judge's answer could not be read) are counted and left out. "
        "`time` is this run's (judge answers already in the call cache cost nothing: the judge "
        "column says how many calls were sent and how many came from the cache). "
        "`thr` is the metric's own decision threshold (`shared.registry.DECISION_THRESHOLDS`); "
        "the best threshold is fitted on the same rows, so its balanced accuracy is optimistic.",
        "",
        "## Boolean human labels",
        "",
        "EVOUNA: a person judged the candidate answer correct given the gold answer; the "
        "references hold \"/\"-separated aliases, split into a list (best alias counts) for the "
        "string and embedding metrics and the baselines, and given as written to the judge "
        "metrics. Davidson: `label` = hate or offensive by the annotators' majority (texts are "
        "never shown here).",
        "",
        *boolean_table(boolean),
        "",
        f"For context, measured outside this run: {PEDANT}",
        "",
        "## Numeric human labels (1-5 ratings)",
        "",
        "SummEval: mean of three expert ratings per summary; `consistency` is the factual "
        "alignment of the summary with the article, so faithfulness should correlate "
        "positively and hallucination negatively.",
        "",
        *numeric_table(numeric),
        "",
        "## Not measured",
        "",
        "- rouge and bleu on SummEval: the set holds no reference summaries, only the article, so "
        "reference-based overlap does not apply.",
        *[f"- {name}: {why}." for name, why in NO_LABELLED_SET.items()],
        "- Peers side by side (valor-lite, RAGAS, DeepEval on the same rows with the same judge): "
        "not part of this run yet.",
        "",
        "## Reproduce, or measure your own judge",
        "",
        "```",
        "make agreement",
        'make agreement JUDGE="--provider openai-compatible --base-url URL --model M"',
        "```",
        "With another judge the run writes this table only (the cards and "
        "`shared/agreement_figures.json` keep the embedded judge's figures). One metric on your "
        "own labels: `python -m shared agree FILE --metric NAME --label COLUMN` "
        "(docs/AGREEMENT.md).",
        "",
    ]
    path.write_text("\n".join(lines), encoding="utf-8")


UNMEASURED_NOTE = ("every row unmeasured: no judge answer passed the schema and grounding checks "
                   "(docs/GROUNDING.md)")


def write_figures(results: list[dict[str, Any]], header: dict[str, Any], path: Path) -> None:
    """Per judge metric, the headline statistic of its first row (the CLI and demo note)."""
    figures: dict[str, Any] = {}
    for r in results:
        job, rep = r["job"], r["report"]
        if not job.judge or job.name in figures or job.options:
            continue
        name, stat = headline(rep)
        if rep.n == 0 and rep.unmeasured:
            figures[job.name] = {"data_set": job.data[1], "label": job.label, "n": 0,
                                 "unmeasured": rep.unmeasured, "value": None}
            continue
        if stat is None:
            continue
        figures[job.name] = {
            "data_set": job.data[1], "label": job.label, "statistic": name,
            "value": stat.value, "low": stat.low, "high": stat.high, "n": rep.n,
            "constant_score": rep.constant_score,
        }
    data = {"generated": header["date"], "command": "make agreement",
            "judge": header["judge"], "metrics": figures}
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def card_block(metric: str, results: list[dict[str, Any]], header: dict[str, Any]) -> str:
    rows = [r for r in results if r["job"].name == metric]
    lines = [CARD_START,
             f"<!-- written by `make agreement` ({header['date']}); do not edit by hand -->", ""]
    if not rows:
        why = NO_LABELLED_SET.get(metric, "no labelled set here")
        lines += [f"Not measured: {why} (see [bench/AGREEMENT.md](../../bench/AGREEMENT.md)). "
                  "Measure it on your own labels with `python -m shared agree FILE --metric "
                  f"{metric} --label COLUMN`.", CARD_END]
        return "\n".join(lines)
    lines += [f"Measured by `make agreement` against human labels (95% bootstrap intervals; "
              f"judge: {header['judge']}):", "",
              *(["The embedded judge is a tiny demo model: these figures say how far its numbers "
                 "are from people's, not what a strong judge achieves; measure yours with "
                 '`make agreement JUDGE="--provider ... --model ..."`.', ""]
                if METRICS[metric].judge and "the default" in header["judge"] else []),
              "| data set | human label | options | n | unmeasured | agreement |",
              "|---|---|---|---|---|---|"]
    for r in rows:
        job, rep = r["job"], r["report"]
        if rep.n == 0:
            parts = []
        elif rep.label_kind == agreement.BOOLEAN:
            parts = [f"AUROC {fmt_stat(rep, 'auroc')}"]
            if rep.threshold is not None:
                parts.append(f"balanced accuracy {fmt_stat(rep, 'balanced_accuracy')} and "
                             f"kappa {fmt_stat(rep, 'cohen_kappa')} at {rep.threshold:g}")
        else:
            parts = [f"Spearman {fmt_stat(rep, 'spearman')}",
                     f"Kendall tau-b {fmt_stat(rep, 'kendall_tau_b')}"]
        options = ", ".join(f"{k}={v}" for k, v in job.options.items()) or "defaults"
        if job.score_key:
            options += f", {job.score_key}"
        lines.append(f"| {job.data[1]} | {job.label} | {options} | {rep.n} | {rep.unmeasured} | "
                     f"{('; '.join(parts) + constant_note(rep)).lstrip('; ')} |")
    lines += ["", "Reproduce: `make agreement` (full table: "
              "[bench/AGREEMENT.md](../../bench/AGREEMENT.md)); on your own labels: "
              f"`python -m shared agree FILE --metric {metric} --label COLUMN`.", CARD_END]
    return "\n".join(lines)


def rewrite_card(metric: str, block: str) -> None:
    card = ROOT / "metrics" / metric / "README.md"
    text = card.read_text(encoding="utf-8")
    if CARD_START in text and CARD_END in text:
        pattern = re.compile(re.escape(CARD_START) + ".*?" + re.escape(CARD_END), re.DOTALL)
        text = pattern.sub(lambda _: block, text, count=1)
    else:
        section = f"## Agreement with people\n\n{block}\n\n"
        anchor = next((a for a in ("## Limitations and Bias", "## Citation") if a in text), None)
        text = text.replace(anchor, section + anchor, 1) if anchor else (
            text.rstrip("\n") + "\n\n" + section)
    card.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_judge_arguments(parser)
    parser.add_argument("--judge-rows", type=int, metavar="N",
                        help="judge rows per metric (default: " + ", ".join(
                            f"{k} {v}" for k, v in JUDGE_ROWS.items()) + ")")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", action="append", metavar="METRIC",
                        help="run only these metrics/baselines (writes the report only)")
    parser.add_argument("--report", default=str(REPORT), help="where to write the table")
    args = parser.parse_args(argv)
    if args.dry_run:
        parser.error("--dry-run is not supported here; plan one metric with "
                     "`python -m shared agree ... --dry-run`")
    options = judge_options(args)
    embedded = agreement.is_embedded_judge(args.provider, args.model, args.api_key)
    rows = {k: (args.judge_rows or v) for k, v in JUDGE_ROWS.items()}
    selected = [j for j in jobs() if (not args.only or j.name in args.only)
                and (j.baseline is not None or j.name in available())]
    from shared.config import judge_config

    judge_name = agreement.judge_model_name(judge_config(**options))
    provider = judge_config(**options).provider
    load_start = os.getloadavg()[0]
    started = time.perf_counter()
    results = []
    for job in selected:
        print(f"agreement: {job.title} on {job.data[1]} vs {job.label}", file=sys.stderr)
        results.append(run_job(job, options, rows, args.seed))
    header = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "judge": f"{judge_name}, the default (provider {provider})" if embedded else (
            f"{provider}: {judge_name}"),
        "wall": time.perf_counter() - started, "load_start": load_start,
        "load_end": os.getloadavg()[0], "seed": args.seed,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "judge_rows": ", ".join(f"{k} {v}" for k, v in rows.items()),
    }
    write_report(results, header, Path(args.report))
    print(f"wrote {args.report} ({header['wall']:.0f} s)", file=sys.stderr)
    if embedded and not args.only:
        write_figures(results, header, FIGURES)
        for metric in available():
            rewrite_card(metric, card_block(metric, results, header))
        print(f"wrote {FIGURES.relative_to(ROOT)} and the metric cards' agreement blocks",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

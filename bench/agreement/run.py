"""The agreement benchmark (`make agreement`): every metric against human labels.

Scores the three labelled sets in ``bench/agreement/data/`` (SOURCES.md) with the metrics,
through ``shared.analysis.agreement.agree`` (the same path as ``python -m shared agree``), and
writes
``bench/AGREEMENT.md``. With the embedded default judge it also writes
``shared/analysis/agreement_figures.json`` (read by the CLI summary and the demo) and rewrites the
"Agreement with people" block of every metric card. Every number comes from this run.

    .venv/bin/python bench/agreement/run.py [judge options as in `python -m shared score`]
        [--judge-rows N] [--seed S] [--only METRIC ...] [--run-seconds S] [--side-seconds S]
        [--no-side-by-side]

Judge metrics run on a seeded subsample (``--judge-rows``, the same rows for every judge metric
of a set); string and embedding metrics on every row. Davidson's texts are never printed.

The side-by-side section then starts one llama.cpp server (the embedded SmolLM2 GGUF) and runs
our judge metrics (``provider="openai-compatible"``) and the peers' equivalents (valor-lite,
RAGAS, DeepEval, each in a ``.venv-agreement`` process: ``peers.py``) on the same seeded rows,
within what the main tables left of the run's 20 minutes (``--run-seconds``; ``--side-seconds``
sets it outright), with each side's error rate (bench/README.md)."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import platform
import re
import subprocess
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
from shared.cli.common import add_judge_arguments, judge_options  # noqa: E402
from shared.kit.registry import METRICS, available  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import criteria  # noqa: E402  (bench/agreement/criteria.py)
import rounds  # noqa: E402  (bench/agreement/rounds.py)

EVOUNA = ("answer_equivalence_evouna_nq.jsonl", "EVOUNA NQ answer equivalence")
SUMMEVAL = ("summeval.jsonl", "SummEval")
SUMMEVAL_PAIRS = ("summeval.jsonl", "SummEval pairs")
DAVIDSON = ("toxicity_davidson.jsonl", "Davidson et al. 2017 tweets")
# Judge rows per (metric, set): a seeded permutation of the set's rows, first N taken, so a
# smaller N is a subset of a larger one (every judge metric of a set sees the same first rows).
# 60 rows for every judge metric (issue 32), so that intervals narrow: with the local decoder's
# key/value store and prompt lookup (bench/README.md, "local judge") 60 SummEval rows take about
# 1.8 s a row for summary_coherence and 3.7 s for hallucination on 2 idle cores.
JUDGE_ROWS = {"l3score": 60, "answer_correctness": 60, "summary_coherence": 60,
              "faithfulness": 60, "hallucination": 60, "toxicity": 60, "g_eval": 60,
              "pairwise": 60}
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
FIGURES = ROOT / "shared" / "analysis" / "agreement_figures.json"
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
    rows: Any = None  # a function (the set's rows, seed) -> the rows scored (SummEval pairs)
    options_title: str | None = None  # shown for the options (G-Eval's long criteria texts)
    extra: Any = None  # a function (scored rows) -> more of the note (pairwise's figures)

    @property
    def judge(self) -> bool:
        return self.baseline is None and METRICS[self.name].judge

    @property
    def title(self) -> str:
        extra = self.options_title or ", ".join(f"{k}={v}" for k, v in self.options.items())
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
        *[Job("g_eval", SUMMEVAL, label, columns={"prediction": "summary"}, options=texts,
              options_title=f"G-Eval's {label} criteria and steps",
              note="G-Eval with GPT-4: Spearman 0.514 averaged over SummEval's four dimensions "
              "(Liu et al. 2023)")
          for label, texts in (("coherence", criteria.GEVAL_COHERENCE),
                               ("consistency", criteria.GEVAL_CONSISTENCY))],
        Job("pairwise", SUMMEVAL_PAIRS, "preferred", columns={"contexts": "source"},
            options={"criteria": criteria.PAIRWISE_CRITERIA}, options_title="summary criteria",
            rows=criteria.summeval_pairs, extra=criteria.pairwise_note,
            note="two summaries of one article; human preference: the higher mean expert "
            "rating, equal ones skipped; the article is the one context"),
    ]
    davidson = [Job("toxicity", DAVIDSON, "label", columns={"prediction": "text"})]
    return evouna + summeval + davidson


def accuracy_qa_modes() -> list[str]:
    """The QA modes accuracy offers when this run starts (its module's ``MODES``), besides
    "exact"; none when this version of accuracy has no modes."""
    import evaluate

    from shared.kit.registry import metric_path

    try:
        metric = evaluate.load(metric_path("accuracy"), keep_in_memory=True)
    except Exception:  # noqa: BLE001 - the row for accuracy itself will say what failed
        return []
    modes = getattr(sys.modules.get(type(metric).__module__), "MODES", ())
    return [str(m) for m in modes if m != "exact"]


# ----------------------------------------------------------------------------------- baselines


def _forms(text_value: str) -> str:
    from shared.base.text import normalize_text

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


def load(data: tuple[str, str], aliases: bool, derive: Any = None, seed: int = 0) -> Any:
    import datasets

    rows = [json.loads(line) for line in (DATA / data[0]).read_text("utf-8").splitlines()
            if line.strip()]
    if derive is not None:
        rows = derive(rows, seed)
    if aliases:
        for row in rows:
            row["reference"] = [a.strip() for a in row["reference"].split("/") if a.strip()]
    return datasets.Dataset.from_list(rows)


def run_job(job: Job, judge_options: dict[str, Any], judge_rows: dict[str, int],
            seed: int) -> dict[str, Any]:
    dataset = load(job.data, job.aliases, job.rows, seed)
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
        scored, report = agreement.agree(
            dataset, job.name, job.label, columns=job.columns, score_key=job.score_key,
            group=job.group, seed=seed, metric_options=job.options or None,
            show_progress=True, **options,
        )
        if job.extra is not None:
            extra = job.extra(scored)
            job = dataclasses.replace(job, note=f"{job.note}; {extra}")
            return {"job": job, "report": report, "rows": rows, "extra": extra,
                    "seconds": time.perf_counter() - started}
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


def write_report(results: list[dict[str, Any]], header: dict[str, Any], path: Path,
                 side: list[str] | None = None) -> None:
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
        f"resamples of rows, seed {header['seed']}; `shared.analysis.agreement`). "
        f"Judge metrics run on a "
        f"seeded subsample of each set (rows: {header['judge_rows']}; a seeded permutation of the "
        "set, first rows taken, so every judge metric of a set sees the same first rows), "
        "string and embedding metrics on every row: `n (of rows)` says which. SummEval's judge "
        "rows are too few per article for per-article correlations: pooled ones only. "
        "Unmeasured rows (the judge's answer could not be read) are counted and left out. "
        "`time` is this run's (judge answers already in the call cache cost nothing: the judge "
        "column says how many calls were sent and how many came from the cache). "
        "`thr` is the metric's own decision threshold (`shared.kit.registry.DECISION_THRESHOLDS`); "
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
        "",
        *(side or []),
        "## Reproduce, or measure your own judge",
        "",
        "```",
        "make agreement",
        'make agreement JUDGE="--provider openai-compatible --base-url URL --model M"',
        "```",
        "With another judge the run writes this table only (the cards and "
        "`shared/analysis/agreement_figures.json` keep the embedded judge's figures). "
        "One metric on your "
        "own labels: `python -m shared agree FILE --metric NAME --label COLUMN` "
        "(docs/AGREEMENT.md).",
        "",
    ]
    path.write_text("\n".join(lines), encoding="utf-8")


UNMEASURED_NOTE = ("every row unmeasured: no judge answer passed the schema and grounding checks "
                   "(docs/GROUNDING.md)")


def write_figures(results: list[dict[str, Any]], header: dict[str, Any], path: Path,
                  keep: bool = False) -> None:
    """Per judge metric, the headline statistic of its first row (the CLI and demo note); a
    row run with options (g_eval's and pairwise's criteria) says which (``"options"``), since
    those metrics are never run without. ``keep``: the other metrics' figures already in
    ``path`` stay (a run of a few metrics with ``--only``)."""
    figures: dict[str, Any] = {}
    for r in results:
        job, rep = r["job"], r["report"]
        if not job.judge or job.name in figures:
            continue
        name, stat = headline(rep)
        given = {"options": job.options_title or ", ".join(
            f"{k}={v}" for k, v in job.options.items())} if job.options else {}
        if rep.n == 0 and rep.unmeasured:
            figures[job.name] = {"data_set": job.data[1], "label": job.label, "n": 0,
                                 "unmeasured": rep.unmeasured, "value": None, **given}
            continue
        if stat is None:
            continue
        figures[job.name] = {
            "data_set": job.data[1], "label": job.label, "statistic": name,
            "value": stat.value, "low": stat.low, "high": stat.high, "n": rep.n,
            "unmeasured": rep.unmeasured, "constant_score": rep.constant_score, **given,
        }
    if keep and path.exists():
        kept = json.loads(path.read_text(encoding="utf-8")).get("metrics") or {}
        figures = {**{k: v for k, v in kept.items() if k not in figures}, **figures}
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
        options = job.options_title or ", ".join(
            f"{k}={v}" for k, v in job.options.items()) or "defaults"
        if r.get("extra"):
            parts.append(r["extra"])
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


# -------------------------------------------------------------------------------- side by side
#
# Our judge metrics and the peers' equivalents on the same seeded rows, through ONE llama.cpp
# server (the embedded SmolLM2 GGUF, one thread) that this run starts and stops. Ours runs here
# (provider "openai-compatible", JSON mode); each peer runs in its own process under
# .venv-agreement's Python (bench/agreement/peers.py), through its own code path.

AGREEMENT_VENV_PYTHON = ROOT / ".venv-agreement" / "bin" / "python"
PEERS_SCRIPT = Path(__file__).resolve().parent / "peers.py"
SIDE_PEERS = ("valor-lite", "RAGAS", "DeepEval")
# Rows per set for the side-by-side section: the first N of the set's seeded permutation (the
# order the main table's judge rows come from), scored in that order by every side.
SIDE_ROWS = {EVOUNA[0]: 8, SUMMEVAL[0]: 4, DAVIDSON[0]: 8}
# The whole section's time (the server's start excluded) at most, shared by ours and the three
# peers: each side gets what is left divided by the sides still to run, and takes its cells'
# (metrics') rows in rounds (rounds.py). Rows a side did not reach in its share are reported as
# such, never as errors.
SIDE_SECONDS = 600.0
# The whole `make agreement` is to take at most 20 minutes. The main tables are fixed work; the
# section is the part that can give: by default it gets what is left of RUN_SECONDS after the
# main tables (counted from this script's start), at most SIDE_SECONDS and at least
# MIN_SIDE_SECONDS. RUN_SECONDS is 20 minutes less 100 s: make's own steps around this script
# (the server check, the grounding table, interpreter starts: 28 s measured), the server's start
# and MiniLM's vectors, and the row a side starts just before its share ends (a peer's row can
# take a minute). MIN_SIDE_SECONDS: about one row of each metric for every side (measured:
# ours 20 s, valor-lite 15 s, DeepEval 30 s, RAGAS 80 s).
RUN_SECONDS = 1100.0
MIN_SIDE_SECONDS = 150.0
# Completion cap for every request of the section (the peers send none, or langchain's
# max_completion_tokens, which llama-cpp-python's server ignores: it would generate until the
# context is full). 512 tokens hold any answer these short inputs call for.
SIDE_MAX_TOKENS = 512
SIDE_TIMEOUT = 300.0
SIDE_MODEL_ALIAS = "smollm2"
BETTER, WORSE = "better", "worse"


@dataclass
class Pairing:
    """One human label and the metric that should agree with it, on every side."""

    data: tuple[str, str]
    label: str
    metric: str  # ours (and the key the peers' scorers use)
    columns: dict[str, str]
    ours_higher: str
    peers: dict[str, tuple[str, str] | str]  # peer -> (its metric, higher means) or why none
    options: dict[str, Any] = field(default_factory=dict)  # our metric's options

    @property
    def id(self) -> str:
        return f"{self.metric}:{self.data[0]}:{self.label}"


def pairings() -> list[Pairing]:
    summary = {"prediction": "summary", "contexts": "source"}
    return [
        Pairing(EVOUNA, "label", "answer_correctness", {}, BETTER, {
            "valor-lite": ("compute_answer_correctness", BETTER),
            "RAGAS": ("AnswerCorrectness (default weights; MiniLM embeddings)", BETTER),
            "DeepEval": ("GEval \"Correctness\" (its answer-correctness recipe)", BETTER)}),
        Pairing(DAVIDSON, "label", "toxicity", {"prediction": "text"}, WORSE, {
            "valor-lite": ("compute_toxicity", WORSE),
            "RAGAS": ("AspectCritic \"harmfulness\" (0 or 1)", WORSE),
            "DeepEval": ("ToxicityMetric (4.x: 1 = not toxic)", BETTER)}),
        Pairing(SUMMEVAL, "consistency", "faithfulness", summary, BETTER, {
            "valor-lite": ("compute_faithfulness", BETTER),
            "RAGAS": ("Faithfulness", BETTER),
            "DeepEval": ("FaithfulnessMetric", BETTER)}),
        Pairing(SUMMEVAL, "consistency", "hallucination", summary, WORSE, {
            "valor-lite": ("compute_hallucination", WORSE),
            "RAGAS": "no hallucination metric (its Faithfulness is the row above)",
            "DeepEval": ("HallucinationMetric (4.x: 1 = no contradiction)", BETTER)}),
        Pairing(SUMMEVAL, "coherence", "summary_coherence", {"prediction": "summary"}, BETTER, {
            "valor-lite": ("compute_summary_coherence", BETTER),
            "RAGAS": ("AspectCritic \"coherence\" (0 or 1)", BETTER),
            "DeepEval": ("GEval \"Coherence\" (G-Eval's SummEval criterion)", BETTER)}),
        Pairing(SUMMEVAL, "coherence", "g_eval", {"prediction": "summary"}, BETTER, {
            "valor-lite": "no metric with the user's own criteria",
            "RAGAS": "its Rubrics/AspectCritic take no evaluation steps (AspectCritic "
                     "\"coherence\" is the summary_coherence row)",
            "DeepEval": ("GEval with G-Eval's coherence criteria and steps (a custom model: "
                         "the written score, no log-probabilities)", BETTER)},
            options=criteria.GEVAL_COHERENCE),
    ]


def side_rows(data: tuple[str, str], seed: int) -> list[dict[str, Any]]:
    """The set's first ``SIDE_ROWS`` rows of its seeded permutation, in permutation order (so
    any prefix is itself a seeded sample); references as written (what the judge metrics get)."""
    rows = [json.loads(line) for line in (DATA / data[0]).read_text("utf-8").splitlines()
            if line.strip()]
    order = np.random.default_rng(seed).permutation(len(rows))
    return [rows[i] for i in order[:SIDE_ROWS[data[0]]]]


def _reason(details: Any) -> str:
    try:
        parsed = json.loads(details) if isinstance(details, str) else details
    except ValueError:
        return "unmeasured"
    if isinstance(parsed, dict):
        for key in ("unmeasured_reason", "reason", "error"):
            if parsed.get(key):
                return str(parsed[key])
    return "unmeasured"


def run_ours_side(pairs: list[Pairing], rows: dict[str, list[dict[str, Any]]], base_url: str,
                  seconds: float, cache_dir: str) -> dict[str, dict[str, Any]]:
    """Our metrics row by row, the cells in rounds (``rounds.score_in_rounds``: a time share
    stops between rows) through the batch path, provider ``openai-compatible`` against the
    server, JSON mode, a fresh call cache."""
    import datasets

    from shared.runs.batch import score_dataset

    options = {"provider": "openai-compatible", "base_url": base_url, "model": SIDE_MODEL_ALIAS,
               "api_key": "not-needed", "response_format": "json_object",
               "timeout": SIDE_TIMEOUT, "cache_dir": cache_dir}

    def score(c: int, row: dict[str, Any]) -> rounds.RowOutcome:
        pair = pairs[c]
        one = agreement.map_columns(datasets.Dataset.from_list([row]), pair.columns)
        try:
            scored, summary = score_dataset(
                one, [pair.metric], show_progress=False,
                metric_options={pair.metric: pair.options} if pair.options else None,
                **options)
        except Exception as error:  # noqa: BLE001 - measured like a peer's
            return None, f"raised {type(error).__name__}", 0
        requests = summary.metrics[0].calls if summary.metrics else 0
        value = scored[pair.metric][0]
        if value is not None:
            return float(value), None, requests
        if pair.data == DAVIDSON:
            return None, "unmeasured", requests
        reason = _reason(scored[f"{pair.metric}_details"][0])
        return None, f"unmeasured: {_short(reason)}", requests

    results = rounds.score_in_rounds([rows[pair.data[0]] for pair in pairs], seconds, score)
    return {pair.id: result for pair, result in zip(pairs, results, strict=True)}


def _short(text: str, limit: int = 90) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def run_peer_side(peer: str, pairs: list[Pairing], rows: dict[str, list[dict[str, Any]]],
                  base_url: str, seconds: float, embeddings: dict[str, list[float]],
                  workdir: Path) -> dict[str, Any]:
    """One peer's cells in a ``.venv-agreement`` subprocess; its report, or ``{"problem"}``."""
    cells = [{"id": p.id, "metric": p.metric, "sensitive": p.data == DAVIDSON,
              "rows": rows[p.data[0]]} for p in pairs if isinstance(p.peers.get(peer), tuple)]
    if not AGREEMENT_VENV_PYTHON.exists():
        return {"problem": "not installed: .venv-agreement is missing (`make agreement` builds it "
                           "from bench/requirements-venv-agreement.txt)"}
    job = {"peer": peer, "base_url": base_url, "model": SIDE_MODEL_ALIAS,
           "max_tokens": SIDE_MAX_TOKENS, "timeout": SIDE_TIMEOUT, "seconds": seconds,
           "cells": cells, "embeddings": embeddings if peer == "RAGAS" else {}}
    job_file, out_file = workdir / f"{peer}.job.json", workdir / f"{peer}.out.json"
    log_file = workdir / f"{peer}.log"
    job_file.write_text(json.dumps(job), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "VIRTUAL_ENV"))}
    with log_file.open("w") as log:
        try:
            done = subprocess.run(
                [str(AGREEMENT_VENV_PYTHON), str(PEERS_SCRIPT), str(job_file), str(out_file)],
                stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(workdir),
                timeout=seconds + 2 * SIDE_TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            return {"problem": f"its process was stopped after {seconds + 2 * SIDE_TIMEOUT:.0f} s"}
    if done.returncode != 0 or not out_file.exists():
        last = [line for line in log_file.read_text(errors="replace").splitlines()
                if re.match(r"^\w+(Error|Exception)\b", line)]
        why = _short(last[-1], 160) if last and not any(c["sensitive"] for c in cells) else (
            "see its log")
        return {"problem": f"its process exited with status {done.returncode} ({why})"}
    return json.loads(out_file.read_text(encoding="utf-8"))


def minilm_vectors(rows: list[dict[str, Any]]) -> dict[str, list[float]]:
    """The embedded MiniLM's vectors of the EVOUNA rows' predictions and references, for RAGAS's
    answer similarity (its process cannot import transformers next to its own pins)."""
    from shared import load_embedding_model

    texts = sorted({r[k] for r in rows for k in ("prediction", "reference")})
    vectors = load_embedding_model().encode(texts, normalize_embeddings=True,
                                            show_progress_bar=False)
    return {t: [float(x) for x in v] for t, v in zip(texts, vectors, strict=True)}


def side_result(pair: Pairing, side: str, what: str, higher: str, cell: dict[str, Any],
                labels: list[Any], seed: int, threshold: float | None) -> dict[str, Any]:
    """One table row: the side's scores on the rows it reached, against the people's labels."""
    reached = cell["reached"]
    errors = [e for e in cell["errors"][:reached] if e]
    scored = [s for s in cell["scores"][:reached] if s is not None]
    try:
        report = agreement.compare(cell["scores"][:reached], labels[:reached], seed=seed,
                                   metric=pair.metric, label=pair.label, threshold=threshold,
                                   threshold_source="given" if threshold is not None else None)
        why = None
    except agreement.LabelError:  # too few rows reached: one kind of label only
        report, why = None, "the rows reached carry one human label only: no statistic"
    common = Counter(errors).most_common(1)
    return {"pair": pair, "side": side, "what": what, "higher": higher, "report": report,
            "scored": len(scored), "why_no_statistics": why,
            "tried": len(labels), "reached": reached, "errors": len(errors),
            "common_error": f"{common[0][1]}x {common[0][0]}" if common else "",
            "requests": cell.get("requests"), "seconds": cell.get("seconds", 0.0)}


def side_budget(run_seconds: float, elapsed: float) -> float:
    """The section's default share: what is left of ``run_seconds`` after ``elapsed``, at most
    ``SIDE_SECONDS`` and at least ``MIN_SIDE_SECONDS``."""
    return min(SIDE_SECONDS, max(MIN_SIDE_SECONDS, run_seconds - elapsed))


def run_side_by_side(seed: int, seconds: float = SIDE_SECONDS,
                     peers: tuple[str, ...] = SIDE_PEERS,
                     only: list[str] | None = None) -> dict[str, Any]:
    """The whole section: start the server, run ours and each peer, stop the server."""
    import tempfile

    from shared.llama_server import serve

    pairs = [p for p in pairings() if not only or p.metric in only]
    rows = {data[0]: side_rows(data, seed) for data in {p.data for p in pairs}}
    embeddings = minilm_vectors(rows[EVOUNA[0]]) if EVOUNA[0] in rows and "RAGAS" in peers else {}
    results: list[dict[str, Any]] = []
    problems: dict[str, str] = {}
    outbound: dict[str, list[str]] = {}
    versions: dict[str, str] = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="agreement-side-") as tmp, \
            serve(n_ctx=4096) as base_url:
        server_ready = time.perf_counter()
        sides = ["ours", *peers]
        section_started = time.monotonic()
        cells_by_side: dict[str, dict[str, Any]] = {}
        for index, side in enumerate(sides):
            share = (seconds - (time.monotonic() - section_started)) / (len(sides) - index)
            print(f"agreement: side by side, {side} ({share:.0f} s)", file=sys.stderr)
            if side == "ours":
                cells_by_side[side] = run_ours_side(pairs, rows, base_url, share,
                                                    os.path.join(tmp, "cache"))
                continue
            report = run_peer_side(side, pairs, rows, base_url, share, embeddings, Path(tmp))
            if report.get("problem"):
                problems[side] = report["problem"]
                continue
            versions[side] = report.get("version", "")
            outbound[side] = report.get("outbound", [])
            cells_by_side[side] = {c["id"]: c for c in report.get("cells", [])}
    from shared.kit.registry import DECISION_THRESHOLDS

    for pair in pairs:
        labels = [row[pair.label] for row in rows[pair.data[0]]]
        boolean = pair.data != SUMMEVAL
        ours = cells_by_side.get("ours", {}).get(pair.id)
        if ours is not None:
            results.append(side_result(
                pair, "ours", f"{pair.metric} (openai-compatible, JSON mode)", pair.ours_higher,
                ours, labels, seed, DECISION_THRESHOLDS.get(pair.metric) if boolean else None))
        for peer in peers:
            entry = pair.peers.get(peer)
            if not isinstance(entry, tuple):
                results.append({"pair": pair, "side": peer, "none": entry or "no equivalent"})
            elif peer in problems:
                results.append({"pair": pair, "side": peer, "what": entry[0],
                                "none": problems[peer]})
            elif pair.id in cells_by_side.get(peer, {}):
                results.append(side_result(pair, peer, entry[0], entry[1],
                                           cells_by_side[peer][pair.id], labels, seed,
                                           0.5 if boolean else None))
    return {"results": results, "rows": {k: len(v) for k, v in rows.items()},
            "seconds": time.perf_counter() - started,
            "server_seconds": server_ready - started, "budget": seconds,
            "versions": versions, "outbound": outbound, "problems": problems}


def _errors_text(r: dict[str, Any]) -> str:
    rate = f"{r['errors']}/{r['reached']}" if r["reached"] else "0/0"
    return rate + (f" ({r['common_error']})" if r["common_error"] else "")


def side_tables(side: dict[str, Any]) -> tuple[list[str], list[str]]:
    boolean = ["| human label | side | its metric (higher = ) | n scored (rows reached of tried) "
               "| errors (most common) | AUROC | balanced acc. @ 0.5 | Cohen's kappa @ 0.5 | "
               "requests | time |", "|---|---|---|---|---|---|---|---|---|---|"]
    numeric = ["| human label | side | its metric (higher = ) | n scored (rows reached of tried) "
               "| errors (most common) | Spearman | Kendall tau-b | Pearson | requests | time |",
               "|---|---|---|---|---|---|---|---|---|---|"]
    for r in side["results"]:
        pair = r["pair"]
        where = f"{pair.data[1]}: {pair.label}"
        table = numeric if pair.data == SUMMEVAL else boolean
        if "none" in r:
            what = r.get("what", "-")
            table.append(f"| {where} | {r['side']} | {what} | - | {r['none']} | - | - | - | - "
                         "| - |")
            continue
        rep = r["report"]
        names = (["spearman", "kendall_tau_b", "pearson"] if pair.data == SUMMEVAL else
                 ["auroc", "balanced_accuracy", "cohen_kappa"])
        stats_cells = ["-"] * 3 if rep is None else [fmt_stat(rep, name) for name in names]
        if rep is None:
            note = f"; {r['why_no_statistics']}"
        elif rep.constant_score is not None:
            note = f"; every row scored {rep.constant_score:g}"
        else:
            note = ""
        table.append(
            f"| {where} | {r['side']} | {r['what']} ({r['higher']}) | {r['scored']} "
            f"({r['reached']} of "
            f"{r['tried']}) | {_errors_text(r)}{note} | {' | '.join(stats_cells)} | "
            f"{r['requests'] if r['requests'] is not None else '-'} | {r['seconds']:.0f} s |")
    return boolean, numeric


def side_section(side: dict[str, Any] | None, why_not: str | None) -> list[str]:
    head = ["## Side by side: the peers on the same rows with the same judge", ""]
    if side is None:
        return head + [f"Not run: {why_not}.", ""]
    boolean, numeric = side_tables(side)
    versions = ", ".join(f"{k} {v}" for k, v in side["versions"].items()) or "none ran"
    outbound = "; ".join(f"{k}: {', '.join(v)}" for k, v in side["outbound"].items() if v)
    rows = ", ".join(f"{name} {n}" for name, n in side["rows"].items())
    budget = f"{side['budget']:.0f} s" + ("" if side.get("run_seconds") is None else (
        f" (what the main tables left of the run's {side['run_seconds']:.0f} s, at most "
        f"{SIDE_SECONDS:.0f} s and at least {MIN_SIDE_SECONDS:.0f} s: `--run-seconds`, "
        "`--side-seconds`)"))
    return head + [
        f"One llama.cpp server (`llama_cpp.server`, the embedded SmolLM2-135M-Instruct GGUF, one "
        f"thread, started and stopped by this run in {side['server_seconds']:.0f} s) judged every "
        "side: ours through `provider=\"openai-compatible\"` with JSON mode and a fresh call "
        "cache; each peer in its own process under `.venv-agreement` through its own code path "
        f"({versions}). Rows: the first of each set's seeded permutation ({rows}; the same "
        "permutation the judge rows above come from), scored in that order by every side. The "
        f"section shares {budget} between the sides (each gets what is left divided by the "
        "sides still to run, and takes its metrics' rows in rounds: the first row of each, then "
        "the second, ...); rows a side did not reach in its share are left out and shown as "
        "`reached of tried`. Took "
        f"{side['seconds']:.0f} s. Every request's completion is capped at {SIDE_MAX_TOKENS} "
        "tokens (the peers send no cap, or one this server ignores).",
        "",
        "`errors`: rows the side was run on that gave no score: the peer raised, returned an "
        "error as its result, or returned no number (for ours: the row was unmeasured); the "
        "most common error text, shortened (Davidson's rows keep only the exception type). "
        "Errors are counted in the rate and left out of the statistics. `higher =` says which "
        "way the metric points: a metric where higher is worse agrees with the label through "
        "an AUROC below 0.5 or a negative correlation. Thresholds: ours its own "
        "(`DECISION_THRESHOLDS`), the peers 0.5. With so few rows the intervals are wide: read "
        "the error rates first.",
        "",
        "Outbound connections the peers tried (refused; only loopback is allowed in their "
        f"processes): {outbound or 'none'}.",
        "",
        *boolean, "", *numeric, "",
        "l3score has no equivalent in valor-lite, RAGAS or DeepEval (none asks the judge one "
        "Yes/No question and reads its token probabilities), so it has no side-by-side row. "
        "PEDANT, the answer-equivalence classifier, cannot run here (its model downloads at run "
        "time): its figures above are quoted, measured outside this run.",
        "",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_judge_arguments(parser)
    parser.add_argument("--judge-rows", type=int, metavar="N",
                        help="judge rows per metric (default: " + ", ".join(
                            f"{k} {v}" for k, v in JUDGE_ROWS.items()) + ")")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", action="append", metavar="METRIC",
                        help="run only these metrics/baselines (writes the report and, with "
                        "the embedded judge, their figures; not the cards)")
    parser.add_argument("--report", default=str(REPORT), help="where to write the table")
    parser.add_argument("--side-seconds", type=float, metavar="S",
                        help="time shared by ours and the peers in the side-by-side section "
                             f"(default: what is left of --run-seconds after the main tables, "
                             f"at most {SIDE_SECONDS:g} and at least {MIN_SIDE_SECONDS:g})")
    parser.add_argument("--run-seconds", type=float, default=RUN_SECONDS, metavar="S",
                        help="the whole run's time, which sets the side-by-side section's "
                             f"default share (default {RUN_SECONDS:g})")
    parser.add_argument("--no-side-by-side", action="store_true",
                        help="skip the side-by-side section (it says so in the report)")
    args = parser.parse_args(argv)
    if args.dry_run:
        parser.error("--dry-run is not supported here; plan one metric with "
                     "`python -m shared agree ... --dry-run`")
    options = judge_options(args)
    embedded = agreement.is_embedded_judge(args.provider, args.model, args.api_key)
    rows = {k: (args.judge_rows or v) for k, v in JUDGE_ROWS.items()}
    selected = [j for j in jobs() if (not args.only or j.name in args.only)
                and (j.baseline is not None or j.name in available())]
    from shared.engine.config import judge_config

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
    side, why_not = None, "--no-side-by-side was given"
    if not args.no_side_by_side and (not args.only or any(
            p.metric in args.only for p in pairings())):
        try:
            seconds = args.side_seconds if args.side_seconds is not None else side_budget(
                args.run_seconds, time.perf_counter() - started)
            side = run_side_by_side(args.seed, seconds, only=args.only)
            side["run_seconds"] = None if args.side_seconds is not None else args.run_seconds
            why_not = None
        except (ImportError, OSError, RuntimeError) as error:  # no server: the section says so
            why_not = f"the llama.cpp server could not start ({type(error).__name__}: " + (
                _short(str(error), 200) + ")")
    elif args.only:
        why_not = "--only selected no metric that has a side-by-side row"
    header["wall"] = time.perf_counter() - started
    header["load_end"] = os.getloadavg()[0]
    write_report(results, header, Path(args.report), side_section(side, why_not))
    print(f"wrote {args.report} ({header['wall']:.0f} s)", file=sys.stderr)
    if embedded:
        write_figures(results, header, FIGURES, keep=bool(args.only))
    if embedded and not args.only:
        for metric in available():
            rewrite_card(metric, card_block(metric, results, header))
        print(f"wrote {FIGURES.relative_to(ROOT)} and the metric cards' agreement blocks",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The labelled sets of the agreement benchmark and what runs on them: the data sets, one
:class:`Job` per table row (a metric, or a baseline, on one set against one human label), the
baselines, and :func:`run_job`, which scores a job through ``shared.analysis.agreement``."""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DATA = HERE / "data"
sys.path[:0] = [p for p in (str(ROOT), str(HERE)) if p not in sys.path]

import criteria  # noqa: E402  (bench/agreement/criteria.py)

from shared import agreement  # noqa: E402
from shared.kit.registry import METRICS  # noqa: E402

EVOUNA = ("answer_equivalence_evouna_nq.jsonl", "EVOUNA NQ answer equivalence")
SUMMEVAL = ("summeval.jsonl", "SummEval")
SUMMEVAL_PAIRS = ("summeval.jsonl", "SummEval pairs")
DAVIDSON = ("toxicity_davidson.jsonl", "Davidson et al. 2017 tweets")
# Judge rows per (metric, set): a seeded permutation of the set's rows, first N taken, so a
# smaller N is a subset of a larger one (every judge metric of a set sees the same first rows).
# 60 rows for every judge metric, so that the intervals are narrow enough to read; affordable
# because with the local decoder's key/value store and prompt lookup (bench/README.md, "local
# judge") SummEval rows take about 1.8 s each for summary_coherence and 3.7 s for hallucination
# on 2 idle cores.
JUDGE_ROWS = {"l3score": 60, "answer_correctness": 60, "summary_coherence": 60,
              "faithfulness": 60, "hallucination": 60, "toxicity": 60, "g_eval": 60,
              "pairwise": 60}
NO_LABELLED_SET = {
    "answer_relevance": "no set here labels whether an answer addresses its question",
    "bias": "no set here labels bias",
    "context_precision": "no set here labels retrieved contexts",
    "context_recall": "no set here labels retrieved contexts",
    "context_relevance": "no set here labels retrieved contexts",
    "task_completion": "no set here labels conversations",
    "conversation_completeness": "no set here labels conversations",
    "knowledge_retention": "no set here labels conversations",
    "tool_call_correctness": "no set here has people's verdicts on tool calls; its reference is "
                             "BFCL's checker, which it equals on BFCL's data (the card says how)",
    "trajectory_match": "no set here has people's verdicts on trajectories; its reference is "
                        "openevals' trajectory matcher, whose verdicts it equals on generated "
                        "trajectories (the card says how)",
}

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


def job_rows(job: Job, judge_rows: dict[str, int], seed: int) -> tuple[Any, int]:
    """The rows a job scores (a judge metric: its seeded subsample) and the set's size."""
    dataset = load(job.data, job.aliases, job.rows, seed)
    rows = len(dataset)
    if job.judge:
        order = np.random.default_rng(seed).permutation(len(dataset))
        dataset = dataset.select(np.sort(order[:judge_rows[job.name]]).tolist())
    return dataset, rows


def baseline_scores(job: Job, dataset: Any) -> list[float]:
    """A baseline's score of every row (its prediction against the reference's aliases)."""
    return [job.baseline(p, r) for p, r in zip(dataset["prediction"], dataset["reference"],
                                               strict=True)]


def run_job(job: Job, judge_options: dict[str, Any], judge_rows: dict[str, int],
            seed: int) -> dict[str, Any]:
    started = time.perf_counter()
    dataset, rows = job_rows(job, judge_rows, seed)
    if job.baseline is not None:
        scores = baseline_scores(job, dataset)
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

"""Share of judge answers that fail the grounding checks, before and after (docs/GROUNDING.md).

Per judge metric, per judge (the embedded transformers judge and the llama.cpp server with the
embedded GGUF), on the first ``BENCH_GROUNDING_ROWS`` rows of examples/rag_sample.jsonl (default
3) and ``BENCH_GROUNDING_AGREEMENT`` rows (default 2) of each human-labelled set in
/work/shared/agreement/ (SummEval -> summary_coherence; Davidson -> bias, toxicity; EVOUNA NQ ->
answer_correctness, answer_relevance):

- **before**: the version-1 prompts (read from git at ``BEFORE_COMMIT``, the commit before the
  checks, with their example sentences and "short reason"), no check enforced: every structured
  answer the metric used is run through the same checks afterwards and counted if it fails;
- **after**: the version-2 prompts, checks enforced (one repair request, then unmeasured): an
  answer fails when the runner returns it as an invalid judge answer of a grounding kind.

``share`` = failing answers / structured answers the metric used (extraction and verdict
answers; an extraction shared through the cache counts for each metric that uses it). Also
reported after: rows unmeasured for a grounding reason, and extracted items dropped.
Run alone: ``python bench/bench_grounding.py`` (writes bench/GROUNDING.md and the raw rows to
bench/grounding_results.json); ``run_all.py`` runs it too. ``BENCH_GROUNDING_PASSES`` (e.g.
``server:before,server:after``) runs only those passes and keeps the other passes' rows of
grounding_results.json, so one pass can be redone after a change without redoing the rest.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import types
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
for path in (str(REPO), str(BENCH_DIR)):
    if path not in sys.path:
        sys.path.insert(0, path)

from bench_l3score import MODEL_ALIAS, TIMEOUT, llama_server  # noqa: E402

BEFORE_COMMIT = "ab4c7a2"  # main before the grounding checks (prompts version 1)
RAG_ROWS = int(os.environ.get("BENCH_GROUNDING_ROWS", "3"))
AGREEMENT_ROWS = int(os.environ.get("BENCH_GROUNDING_AGREEMENT", "2"))
JUDGES = tuple(os.environ.get("BENCH_GROUNDING_JUDGES", "local,server").split(","))
PASSES = tuple(p for p in os.environ.get("BENCH_GROUNDING_PASSES", "").split(",") if p)
RESULTS_JSON = Path(os.environ.get("BENCH_GROUNDING_RESULTS",
                                   str(BENCH_DIR / "grounding_results.json")))
AGREEMENT = Path(os.environ.get("JUDGE_METRICS_AGREEMENT", "/work/shared/agreement"))
RAG_METRICS = (
    "answer_correctness", "answer_relevance", "bias", "toxicity", "context_precision",
    "context_recall", "context_relevance", "faithfulness", "hallucination", "summary_coherence",
)
GROUNDING_KINDS = ("copied_example", "placeholder_reason", "unsupported_items", "empty_extraction")
V1_EXAMPLES = {
    "statements": ("Paris is the capital of France.", "Paris has about two million inhabitants."),
    "opinions": ("The new stadium is a waste of money.", "The Earth is flat",
                 "Critics say the film is slow"),
}
V1_REASON = "short reason"


# ---------------------------------------------------------------- data

def _jsonl(path: Path, n: int) -> list[dict[str, Any]]:
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [json.loads(line) for line in lines[:n]]


def datasets() -> list[tuple[str, list[dict[str, Any]], tuple[str, ...]]]:
    sets = [("rag_sample", _jsonl(REPO / "examples" / "rag_sample.jsonl", RAG_ROWS), RAG_METRICS)]
    if AGREEMENT_ROWS > 0 and AGREEMENT.is_dir():
        summeval = [{"source": r["source"], "prediction": r["summary"]}
                    for r in _jsonl(AGREEMENT / "summeval.jsonl", AGREEMENT_ROWS)]
        davidson = [{"prediction": r["text"]}
                    for r in _jsonl(AGREEMENT / "toxicity_davidson.jsonl", AGREEMENT_ROWS)]
        evouna = [{"question": r["question"], "prediction": r["prediction"],
                   "reference": r["reference"]}
                  for r in _jsonl(AGREEMENT / "answer_equivalence_evouna_nq.jsonl",
                                  AGREEMENT_ROWS)]
        sets += [("summeval", summeval, ("summary_coherence",)),
                 ("davidson", davidson, ("bias", "toxicity")),
                 ("evouna_nq", evouna, ("answer_correctness", "answer_relevance"))]
    return sets


def inputs(name: str, rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    from shared.registry import METRICS as SPECS

    spec = SPECS[name]
    columns = {**spec.columns, **{a: c for a, c in spec.optional_columns.items()
                                  if all(c in row for row in rows)}}
    return {argument: [row[column] for row in rows] for argument, column in columns.items()}


# ---------------------------------------------------------------- prompts of version 1

def v1_prompts() -> dict[str, Any]:
    """The version-1 templates, read from git, with their example texts attached."""
    from shared import prompts

    source = subprocess.run(["git", "show", f"{BEFORE_COMMIT}:shared/prompts.py"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout
    module = types.ModuleType("shared.prompts_v1")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source.replace("from .types import", "from shared.types import"),
                 "prompts_v1", "exec"), module.__dict__)
    old: dict[str, Any] = {}
    for name, value in vars(prompts).items():
        if not isinstance(value, prompts.PromptTemplate) or name == "L3SCORE":
            continue
        v1 = getattr(module, name if name != "STATEMENTS_WITH_QUESTION" else "STATEMENTS")
        examples = V1_EXAMPLES.get(v1.name, (V1_REASON,))
        old[name] = prompts.PromptTemplate(v1.name, v1.version, v1.text, v1.fenced, examples)
    return old


@contextlib.contextmanager
def patched_prompts(templates: dict[str, Any]) -> Iterator[None]:
    from shared import prompts

    saved = {name: getattr(prompts, name) for name in templates}
    try:
        for name, template in templates.items():
            setattr(prompts, name, template)
        yield
    finally:
        for name, template in saved.items():
            setattr(prompts, name, template)


# ---------------------------------------------------------------- counting answers

class Tally:
    """Per metric: structured answers used, answers failing a check (by kind)."""

    def __init__(self) -> None:
        self.metric = ""
        self.answers: Counter[str] = Counter()
        self.failing: dict[str, Counter[str]] = defaultdict(Counter)


@contextlib.contextmanager
def counting(tally: Tally, enforce: bool) -> Iterator[None]:
    """Wrap ``Judge.structured``: enforce the checks (after) or only observe them (before)."""
    from shared import grounding, rag_judge
    from shared.runner import Judge

    original = Judge.structured

    def structured(self: Any, requests: Any, schemas: Any, max_tokens: int = 512,
                   desc: str | None = None, checks: Any = None) -> Any:
        outcomes = original(self, requests, schemas, max_tokens, desc,
                            checks if enforce else None)
        for k, outcome in enumerate(outcomes):
            tally.answers[tally.metric] += 1
            if enforce:
                kind = grounding.category(f"invalid judge answer: {outcome.error}"
                                          if outcome.error and "invalid judge answer" in
                                          outcome.error else "")
            else:
                reason = checks[k](outcome.value) if outcome.ok and checks else None
                kind = grounding.category(f"invalid judge answer: {reason}") if reason else None
            if kind in GROUNDING_KINDS:
                tally.failing[tally.metric][kind] += 1
        return outcomes

    Judge.structured = structured
    saved = rag_judge.grounding
    if not enforce:  # version 1 scored every extracted item: drop none
        keep_all = types.SimpleNamespace(**{k: getattr(grounding, k) for k in dir(grounding)
                                            if not k.startswith("__")})
        keep_all.ground_items = lambda items, *args, **kwargs: grounding.ItemReport(
            kept=list(items))
        rag_judge.grounding = keep_all
    try:
        yield
    finally:
        Judge.structured = original
        rag_judge.grounding = saved


# ---------------------------------------------------------------- one pass

def run_pass(judge: str, base_url: str | None, when: str) -> list[dict[str, Any]]:
    import evaluate

    from shared import registry

    options: dict[str, Any] = {"show_progress": False}
    if judge == "server":
        options.update(provider="openai-compatible", base_url=base_url, model=MODEL_ALIAS,
                       response_format="json_object", timeout=TIMEOUT)
    templates = v1_prompts() if when == "before" else {}
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-grounding-") as cache_dir, \
            patched_prompts(templates):
        tally = Tally()
        with counting(tally, enforce=when == "after"):
            for dataset, rows, names in datasets():
                for name in names:
                    tally.metric = f"{dataset}/{name}"
                    metric = evaluate.load(registry.metric_path(name))
                    extra = {"weights": [1, 0]} if name == "answer_correctness" else {}
                    started = time.perf_counter()
                    output = metric.compute(**inputs(name, rows), cache_dir=cache_dir,
                                            **options, **extra)
                    details = output.get("details") or []
                    dropped = sum(int(d.get("dropped_items", 0)) for d in details
                                  if isinstance(d, dict))
                    invalid = output.get("invalid_answers") or {}
                    results.append({
                        "judge": judge, "when": when, "dataset": dataset, "metric": name,
                        "rows": len(rows), "answers": tally.answers[tally.metric],
                        "failing": dict(tally.failing[tally.metric]),
                        "unmeasured_grounding": sum(invalid.get(k, 0) for k in GROUNDING_KINDS),
                        "unmeasured": len(output["unmeasured"]), "dropped_items": dropped,
                        "calls": output["usage"]["calls"],
                        "seconds": time.perf_counter() - started,
                    })
                    print(f"  {judge} {when} {dataset}/{name}: {results[-1]}", flush=True)
    return results


def _share(row: dict[str, Any]) -> float:
    return sum(row["failing"].values()) / row["answers"] if row["answers"] else 0.0


def _kinds(row: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(row["failing"].items())) or "-"


def write(results: list[dict[str, Any]], seconds: float) -> str:
    by_key = {(r["judge"], r["when"], r["dataset"], r["metric"]): r for r in results}
    lines = [
        "# Grounding checks: before and after",
        "",
        f"Generated by `python bench/bench_grounding.py` on {time.strftime('%Y-%m-%d')} "
        f"({seconds / 60:.1f} min). Rows: the first {RAG_ROWS} of examples/rag_sample.jsonl and "
        f"the first {AGREEMENT_ROWS} of each agreement set. **Before**: prompts version 1 (git "
        f"`{BEFORE_COMMIT}`), checks only observed; **after**: prompts version 2, checks "
        "enforced (one repair, then unmeasured). *share* = answers failing a grounding check / "
        "structured answers the metric used. See docs/GROUNDING.md.",
        "",
        "| judge | data | metric | answers before | failing before | share before | kinds before "
        "| answers after | failing after | share after | kinds after | rows unmeasured "
        "(grounding) after | items dropped after |",
        "|" + "---|" * 13,
    ]
    for (judge, when, dataset, metric), before in by_key.items():
        if when != "before":
            continue
        after = by_key.get((judge, "after", dataset, metric))
        if after is None:
            continue
        lines.append(
            f"| {judge} | {dataset} | {metric} | {before['answers']} | "
            f"{sum(before['failing'].values())} | {_share(before):.2f} | {_kinds(before)} | "
            f"{after['answers']} | {sum(after['failing'].values())} | {_share(after):.2f} | "
            f"{_kinds(after)} | {after['unmeasured_grounding']} of {after['rows']} | "
            f"{after['dropped_items']} |")
    for judge in JUDGES:
        totals = {}
        for when in ("before", "after"):
            rows = [r for r in results if r["judge"] == judge and r["when"] == when]
            answers = sum(r["answers"] for r in rows)
            failing = sum(sum(r["failing"].values()) for r in rows)
            totals[when] = (failing, answers)
        (fb, ab), (fa, aa) = totals["before"], totals["after"]
        if ab and aa:
            lines.append(f"| {judge} | all | **all** | {ab} | {fb} | {fb / ab:.2f} | | {aa} | "
                         f"{fa} | {fa / aa:.2f} | | | |")
    text = "\n".join(lines) + "\n"
    (BENCH_DIR / "GROUNDING.md").write_text(text, encoding="utf-8")
    return text


def main() -> list[dict[str, Any]]:
    started = time.perf_counter()
    wanted = PASSES or tuple(f"{j}:{w}" for j in JUDGES for w in ("before", "after"))
    results: list[dict[str, Any]] = []
    if PASSES and RESULTS_JSON.exists():  # keep the passes not redone
        results = [r for r in json.loads(RESULTS_JSON.read_text(encoding="utf-8"))
                   if f"{r['judge']}:{r['when']}" not in wanted]
    for judge in JUDGES:
        whens = [w for w in ("before", "after") if f"{judge}:{w}" in wanted]
        if not whens:
            continue
        context = llama_server() if judge == "server" else contextlib.nullcontext(None)
        with context as base_url:
            for when in whens:
                results += run_pass(judge, base_url, when)
                RESULTS_JSON.write_text(json.dumps(results, indent=1), encoding="utf-8")
    order = {(j, w): k for k, (j, w) in enumerate((j, w) for j in JUDGES
                                                   for w in ("before", "after"))}
    results.sort(key=lambda r: order.get((r["judge"], r["when"]), 99))
    write(results, time.perf_counter() - started)
    rows = []
    for judge in JUDGES:
        for when in ("before", "after"):
            picked = [r for r in results if r["judge"] == judge and r["when"] == when]
            answers = sum(r["answers"] for r in picked)
            failing = sum(sum(r["failing"].values()) for r in picked)
            rows.append({
                "workload": f"grounding: answers failing the checks, {judge} judge, {when}",
                "ours": f"{failing}/{answers}",
                "ratio": failing / answers if answers else None,
                "note": "ratio = share failing; details in bench/GROUNDING.md",
            })
    return rows


if __name__ == "__main__":
    for row in main():
        print(row)
    print((BENCH_DIR / "GROUNDING.md").read_text(encoding="utf-8"))

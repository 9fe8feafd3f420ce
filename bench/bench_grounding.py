"""Share of judge answers that fail the grounding checks, before and after (docs/GROUNDING.md).

Per judge metric, per judge (the embedded transformers judge and the llama.cpp server with the
embedded GGUF), on the first ``BENCH_GROUNDING_ROWS`` rows of examples/rag_sample.jsonl (default
3) and ``BENCH_GROUNDING_AGREEMENT`` rows (default 2) of each human-labelled set in
bench/agreement/data/ (SummEval -> summary_coherence; Davidson -> bias, toxicity; EVOUNA NQ ->
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
grounding_results.json, so one pass can be redone after a change without redoing the rest;
passes run in the order given.

**Bounded time.** The embedded transformers judge decodes on the CPU, shared with other work:
its passes take the first ``BENCH_GROUNDING_LOCAL_ROWS`` rows of rag_sample (default 2) and
``BENCH_GROUNDING_LOCAL_AGREEMENT`` of each agreement set (default 1), and every pass stops
starting metrics after ``BENCH_GROUNDING_BUDGET`` seconds (default 1500; a metric under way
finishes). A metric not run is recorded as skipped and listed in GROUNDING.md, which states the
caps; the rows each side used are in the table.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
import time
import types
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _repo import BENCH_DIR, REPO
from bench_l3score import metric_inputs, server_judge
from grounding_report import (
    AGREEMENT,
    BEFORE_COMMIT,
    BEFORE_KINDS,
    BUDGET,
    GROUNDING_KINDS,
    JUDGES,
    PASSES,
    RAG_METRICS,
    RESULTS_JSON,
    row_counts,
    write,
    write_only,
)

from shared.llama_server import serve

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


def datasets(judge: str) -> list[tuple[str, list[dict[str, Any]], tuple[str, ...]]]:
    rag_rows, agreement_rows = row_counts(judge)
    sets = [("rag_sample", _jsonl(REPO / "examples" / "rag_sample.jsonl", rag_rows), RAG_METRICS)]
    if agreement_rows > 0 and AGREEMENT.is_dir():
        summeval = [{"source": r["source"], "prediction": r["summary"]}
                    for r in _jsonl(AGREEMENT / "summeval.jsonl", agreement_rows)]
        davidson = [{"prediction": r["text"]}
                    for r in _jsonl(AGREEMENT / "toxicity_davidson.jsonl", agreement_rows)]
        evouna = [{"question": r["question"], "prediction": r["prediction"],
                   "reference": r["reference"]}
                  for r in _jsonl(AGREEMENT / "answer_equivalence_evouna_nq.jsonl",
                                  agreement_rows)]
        sets += [("summeval", summeval, ("summary_coherence",)),
                 ("davidson", davidson, ("bias", "toxicity")),
                 ("evouna_nq", evouna, ("answer_correctness", "answer_relevance"))]
    return sets


# ---------------------------------------------------------------- prompts of version 1

def v1_prompts() -> dict[str, Any]:
    """The version-1 templates, read from git, with their example texts attached."""
    from shared import prompts

    source = subprocess.run(["git", "show", f"{BEFORE_COMMIT}:shared/engine/prompts.py"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout
    module = types.ModuleType("shared.prompts_v1")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source.replace("from .types import", "from shared.base.types import"),
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
    """Send ``templates`` (name in shared.kit.steps.prompts -> template) instead of the current
    ones: each judge step holding one of those prompts is swapped for a copy holding the other."""
    import dataclasses

    from shared import prompts
    from shared.kit import steps
    from shared.kit.steps import extraction, rating, verdicts

    current = {id(getattr(prompts, name)): template for name, template in templates.items()}
    saved = []
    for module in (steps, extraction, verdicts, rating):
        for attribute, step in list(vars(module).items()):
            if isinstance(step, steps.JudgeStep) and id(step.template) in current:
                saved.append((module, attribute, step))
                setattr(module, attribute,
                        dataclasses.replace(step, template=current[id(step.template)]))
    try:
        yield
    finally:
        for module, attribute, step in saved:
            setattr(module, attribute, step)


# ---------------------------------------------------------------- counting answers

class Tally:
    """Per metric: structured answers used, answers failing a check (by kind)."""

    def __init__(self) -> None:
        self.metric = ""
        self.answers: Counter[str] = Counter()
        self.failing: dict[str, Counter[str]] = defaultdict(Counter)
        self.prompts: dict[str, set[str]] = defaultdict(set)  # prompt ids the metric sent


@contextlib.contextmanager
def counting(tally: Tally, enforce: bool, kinds: tuple[str, ...]) -> Iterator[None]:
    """Wrap ``Judge.structured``: enforce the checks (after) or only observe them (before)."""
    from shared.engine.runner import Judge
    from shared.kit import invalid_answers
    from shared.kit.steps import extraction, grounding

    original = Judge.structured

    def structured(self: Any, requests: Any, schemas: Any, max_tokens: int = 512,
                   desc: str | None = None, checks: Any = None) -> Any:
        requests = list(requests)
        tally.prompts[tally.metric].update(r.prompt_id for r in requests if r.prompt_id)
        outcomes = original(self, requests, schemas, max_tokens, desc,
                            checks if enforce else None)
        for k, outcome in enumerate(outcomes):
            tally.answers[tally.metric] += 1
            if enforce:
                kind = invalid_answers.category(f"invalid judge answer: {outcome.error}"
                                                if outcome.error and "invalid judge answer" in
                                                outcome.error else "")
            else:
                reason = checks[k](outcome.value) if outcome.ok and checks else None
                kind = (invalid_answers.category(f"invalid judge answer: {reason}")
                        if reason else None)
            if kind in kinds:
                tally.failing[tally.metric][kind] += 1
        return outcomes

    Judge.structured = structured
    saved = extraction.grounding
    if not enforce:  # version 1 scored every extracted item: drop none
        keep_all = types.SimpleNamespace(**{k: getattr(grounding, k) for k in dir(grounding)
                                            if not k.startswith("__")})
        keep_all.ground_items = lambda items, *args, **kwargs: grounding.ItemReport(
            kept=list(items))
        extraction.grounding = keep_all
    try:
        yield
    finally:
        Judge.structured = original
        extraction.grounding = saved


# ---------------------------------------------------------------- one pass

def run_pass(judge: str, base_url: str | None, when: str) -> list[dict[str, Any]]:
    import evaluate

    from shared.kit import registry

    options: dict[str, Any] = {"show_progress": False}
    if judge == "server":
        options.update(server_judge(base_url, response_format="json_object"))
    templates = v1_prompts() if when == "before" else {}
    kinds = GROUNDING_KINDS if when == "after" else BEFORE_KINDS
    results = []
    started_pass = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-grounding-") as cache_dir, \
            patched_prompts(templates):
        tally = Tally()
        with counting(tally, enforce=when == "after", kinds=kinds):
            for dataset, rows, names in datasets(judge):
                for name in names:
                    row = {"judge": judge, "when": when, "dataset": dataset, "metric": name,
                           "rows": len(rows)}
                    if time.perf_counter() - started_pass > BUDGET:
                        results.append({**row, "skipped": f"budget of {BUDGET:.0f} s spent"})
                        print(f"  {judge} {when} {dataset}/{name}: skipped", flush=True)
                        continue
                    tally.metric = f"{dataset}/{name}"
                    metric = evaluate.load(registry.metric_path(name))
                    extra = {"weights": [1, 0]} if name == "answer_correctness" else {}
                    started = time.perf_counter()
                    output = metric.compute(**metric_inputs(name, rows), cache_dir=cache_dir,
                                            **options, **extra)
                    details = output.get("details") or []
                    dropped = sum(int(d.get("dropped_items", 0)) for d in details
                                  if isinstance(d, dict))
                    invalid = output.get("invalid_answers") or {}
                    results.append({
                        **row, "answers": tally.answers[tally.metric],
                        "failing": dict(tally.failing[tally.metric]),
                        "unmeasured_grounding": sum(invalid.get(k, 0) for k in kinds),
                        "unmeasured": len(output["unmeasured"]), "dropped_items": dropped,
                        "calls": output["usage"]["calls"],
                        "prompts": sorted(tally.prompts[tally.metric]),
                        "seconds": time.perf_counter() - started,
                    })
                    print(f"  {judge} {when} {dataset}/{name}: {results[-1]}", flush=True)
    return results


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
        context = serve() if judge == "server" else contextlib.nullcontext(None)
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
            picked = [r for r in results if r["judge"] == judge and r["when"] == when
                      and not r.get("skipped")]
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
    if sys.argv[1:] == ["--write-only"]:
        print(write_only())
        sys.exit(0)
    for row in main():
        print(row)
    print((BENCH_DIR / "GROUNDING.md").read_text(encoding="utf-8"))

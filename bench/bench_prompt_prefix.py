"""How much of each judge prompt is a prefix shared across rows: what a provider's prompt cache
can discount (OpenAI caches automatically from 1,024 tokens; Anthropic at ``cache_control``
breakpoints; Gemini implicitly).

Each judge metric runs as a dry run (nothing sent) over the rows of examples/rag_sample.jsonl;
the first step round's requests are recorded per prompt (``prompt_id``, one judge step), and for
each step we report the mean prompt length and the longest prefix its rows share, in tokens
(the dry run's own estimate, ``shared.estimate_cost``). Later steps are built from the judge's
answers, so a dry run never plans them; they share the same system text and examples as the
first (docs/COST.md). Run with ``python bench/bench_prompt_prefix.py``; prints a Markdown table.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any
from unittest import mock

import evaluate
from _repo import REPO

from shared.engine import runner
from shared.engine.pricing import estimate_cost
from shared.kit.registry import METRICS as SPECS
from shared.kit.registry import metric_path

ROWS = int(os.environ.get("BENCH_PREFIX_ROWS", "8"))
METRICS = (
    "answer_correctness", "answer_relevance", "bias", "toxicity", "context_precision",
    "context_recall", "context_relevance", "faithfulness", "hallucination", "summary_coherence",
    "g_eval", "l3score",
)


def tokens(text: str) -> int:
    return int(estimate_cost([text])["prompt_tokens"])


def rendered(messages: Any) -> str:
    return "".join(f"<{role}>{content}" for role, content in messages)


def common_prefix(texts: list[str]) -> str:
    first, last = min(texts), max(texts)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:n]


def main() -> None:
    lines = (REPO / "examples" / "rag_sample.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()][:ROWS]
    seen: dict[str, list[str]] = {}
    original = runner.Judge._plan_requests

    def record(self: Any, operation: str, requests: list[Any], *args: Any) -> Any:
        for request in requests:
            seen.setdefault(request.prompt_id, []).append(rendered(request.messages))
        return original(self, operation, requests, *args)

    print("| metric | step (prompt) | rows | prompt tokens (mean) | shared prefix tokens | "
          "shared share |")
    print("|---|---|---|---|---|---|")
    with mock.patch.object(runner.Judge, "_plan_requests", record), \
            tempfile.TemporaryDirectory() as cache:
        for name in METRICS:
            if name not in SPECS:
                continue
            spec = SPECS[name]
            columns = {**spec.columns, **spec.optional_columns}
            if any(column not in rows[0] for column in columns.values()):
                continue
            seen.clear()
            metric = evaluate.load(metric_path(name), experiment_id=f"prefix-{name}")
            more = {"criteria": "Is the answer correct and concise?"} if name == "g_eval" else {}
            try:
                metric.compute(**{a: [row[c] for row in rows] for a, c in columns.items()},
                               provider="openai", api_key="sk-dry-run", model="gpt-4o-mini",
                               dry_run=True, cache_dir=cache, show_progress=False, **more)
            except ValueError as exc:  # rows of another shape (l3score takes lists)
                print(f"<!-- {name}: not measured: {exc} -->")
                continue
            for prompt_id, texts in seen.items():
                unique = sorted(set(texts))
                mean = sum(tokens(t) for t in unique) / len(unique)
                shared = tokens(common_prefix(unique)) if len(unique) > 1 else 0
                print(f"| {name} | {prompt_id} | {len(unique)} | {mean:.0f} | {shared} | "
                      f"{shared / mean:.0%} |")


if __name__ == "__main__":
    main()

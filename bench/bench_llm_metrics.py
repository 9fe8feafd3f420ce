"""The ten LLM-guided metrics on RAG rows through a real llama.cpp server: ours vs valor-lite.

Ours: ``evaluate.load("metrics/<name>")`` with ``provider="openai-compatible"`` and
``response_format="json_object"`` (llama-cpp-python's schema-constrained JSON), one fresh call
cache per pass shared by the ten metrics (as ``judge-metrics score --metric all`` runs them).
valor-lite: ``valor_lite.text_generation.Evaluator`` with its own ``OpenAIWrapper``, whose
``OpenAI()`` client has no ``base_url`` argument; we replace that client with an
``openai.OpenAI(base_url=...)`` pointed at the same server. valor sends no ``max_tokens`` (the
server would then generate until the context is full): a transport adds ``max_tokens`` =
``VALOR_MAX_TOKENS`` to requests that lack it, and counts requests. Everything else is valor's
code path: its prompts, its JSON parsing, its errors (counted per metric, never hidden).

Sizes: ``BENCH_LLM_ROWS`` (default 5, from examples/rag_sample.jsonl), ``BENCH_LLM_REPEATS``
(default 3) and ``BENCH_LLM_BUDGET`` (seconds, default 400: one pass of both sides takes about
three minutes on the embedded judge, so no further pass starts that would overrun).
Run alone with ``python bench/bench_llm_metrics.py``.
"""

from __future__ import annotations

import collections
import json
import os
import statistics
import tempfile
import time
from typing import Any

from _repo import REPO
from _timing import budgeted, repetitions_note, sizes
from bench_l3score import MODEL_ALIAS, metric_inputs, server_judge

from shared.llama_server import serve

ROWS, REPEATS, BUDGET_SECONDS = sizes("LLM", rows=5, repeats=3, budget_seconds=400)
VALOR_MAX_TOKENS = 1024  # above our largest completion limit (904, a list of 10 items)
VALOR_SEED = 1234
METRICS = (
    "answer_correctness", "answer_relevance", "bias", "toxicity", "context_precision",
    "context_recall", "context_relevance", "faithfulness", "hallucination", "summary_coherence",
)


def load_rows(n: int) -> list[dict[str, Any]]:
    lines = (REPO / "examples" / "rag_sample.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()][:n]
    if len(rows) < n:
        raise ValueError(f"examples/rag_sample.jsonl has only {len(rows)} rows, asked for {n}")
    return rows


# ---------------------------------------------------------------- ours


def run_ours(metric: Any, name: str, rows: list[dict[str, Any]], base_url: str,
             cache_dir: str) -> dict[str, Any]:
    started = time.perf_counter()
    result = metric.compute(**metric_inputs(name, rows), **server_judge(
        base_url, response_format="json_object", cache_dir=cache_dir))
    reasons = collections.Counter(_short(u["reason"]) for u in result["unmeasured"])
    return {
        "seconds": time.perf_counter() - started,
        "requests": result["usage"]["calls"],
        "cache_hits": result["usage"]["cache_hits"],
        "failed": len(result["unmeasured"]),
        "reasons": reasons,
    }


# ---------------------------------------------------------------- valor-lite


def valor_evaluator(base_url: str) -> tuple[Any, Any]:
    """valor-lite's Evaluator with its own OpenAIWrapper, whose client is pointed at the server
    through a counting, ``max_tokens``-adding transport; returns ``(evaluator, transport)``."""
    import httpx
    import openai
    from valor_lite.text_generation import Evaluator, OpenAIWrapper

    class Transport(httpx.HTTPTransport):
        requests = 0

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            if request.url.path.endswith("/chat/completions"):
                Transport.requests += 1
                body = json.loads(request.read())
                if body.get("max_tokens") is None:
                    body["max_tokens"] = VALOR_MAX_TOKENS
                    headers = [(k, v) for k, v in request.headers.raw
                               if k.lower() != b"content-length"]
                    request = httpx.Request(request.method, request.url, headers=headers,
                                            content=json.dumps(body).encode())
            return super().handle_request(request)

    wrapper = OpenAIWrapper(model_name=MODEL_ALIAS, api_key="not-needed", seed=VALOR_SEED)
    wrapper.client = openai.OpenAI(
        base_url=base_url, api_key="not-needed", http_client=httpx.Client(transport=Transport())
    )
    return Evaluator(client=wrapper), Transport


def valor_inputs(name: str, rows: list[dict[str, Any]]) -> list[Any]:
    from valor_lite.text_generation import Context, QueryResponse

    def as_list(value: Any) -> list[str]:
        return list(value) if isinstance(value, list) else [value]

    if name == "summary_coherence":  # valor reads the source text from `query`
        return [QueryResponse(query=row["source"], response=row["prediction"]) for row in rows]
    return [
        QueryResponse(
            query=row["question"],
            response=row["prediction"],
            context=Context(groundtruth=as_list(row["reference"]), prediction=row["contexts"]),
        )
        for row in rows
    ]


def run_valor(evaluator: Any, transport: Any, name: str,
              rows: list[dict[str, Any]]) -> dict[str, Any]:
    compute = getattr(evaluator, f"compute_{name}")
    inputs = valor_inputs(name, rows)
    before = transport.requests
    reasons: collections.Counter[str] = collections.Counter()
    started = time.perf_counter()
    for response in inputs:
        try:
            metric = compute(response)
        except Exception as error:  # valor raises some judge faults (e.g. finish_reason=length)
            reasons[f"raised {type(error).__name__}: {_short(str(error))}"] += 1
            continue
        if metric.type == "Error":
            reasons[f"{metric.value['type']}: {_short(metric.value['message'])}"] += 1
    return {
        "seconds": time.perf_counter() - started,
        "requests": transport.requests - before,
        "failed": sum(reasons.values()),
        "reasons": reasons,
    }


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------- benchmark


def _describe(side: dict[str, Any], rows: int, failed_word: str) -> str:
    text = (f"{side['requests'] / rows:.1f} req/row, {side['failed']}/{rows} {failed_word}")
    if side.get("cache_hits"):
        text += f", {side['cache_hits']} cache hits"
    if side["reasons"]:
        reason, count = side["reasons"].most_common(1)[0]
        text += f" (e.g. {count}x {reason})"
    return text


def _median(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The repetition with the median time (its counts go with it)."""
    ordered = sorted(results, key=lambda r: r["seconds"])
    chosen = dict(ordered[(len(ordered) - 1) // 2])
    chosen["seconds"] = statistics.median(r["seconds"] for r in results)
    return chosen


def main() -> list[dict]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import evaluate

    rows = load_rows(ROWS)
    try:
        import valor_lite.text_generation  # noqa: F401

        valor_problem = None
    except Exception as error:  # reported in every row, never skipped silently
        valor_problem = f"valor-lite not importable ({type(error).__name__}: {error})"

    ours: dict[str, list[dict[str, Any]]] = {name: [] for name in METRICS}
    valor: dict[str, list[dict[str, Any]]] = {name: [] for name in METRICS}
    started = time.perf_counter()
    metrics = {name: evaluate.load(str(REPO / "metrics" / name)) for name in METRICS}
    load_seconds = time.perf_counter() - started
    with serve() as base_url, tempfile.TemporaryDirectory(prefix="bench-llm-") as tmp:
        evaluator, transport = valor_evaluator(base_url) if valor_problem is None else (None, None)
        for rep in budgeted(REPEATS, BUDGET_SECONDS):
            cache_dir = os.path.join(tmp, f"cache-{rep}")
            for i, name in enumerate(METRICS):
                sides = ["ours", "valor"] if (i + rep) % 2 == 0 else ["valor", "ours"]
                for side in sides:
                    print(f"   {name}: {side}", flush=True)
                    if side == "ours":
                        ours[name].append(run_ours(metrics[name], name, rows, base_url, cache_dir))
                    elif evaluator is not None:
                        valor[name].append(run_valor(evaluator, transport, name, rows))

    results = []
    totals = {"ours": 0.0, "valor": 0.0}
    counts = collections.Counter()
    for name in METRICS:
        mine = _median(ours[name])
        totals["ours"] += mine["seconds"]
        counts["ours_requests"] += mine["requests"]
        counts["ours_failed"] += mine["failed"]
        row = {
            "workload": f"{name}, {ROWS} RAG rows, llama.cpp server",
            "ours": mine["seconds"],
            "note": f"seconds; ours: {_describe(mine, ROWS, 'unmeasured')}",
        }
        if valor_problem is None:
            theirs = _median(valor[name])
            totals["valor"] += theirs["seconds"]
            counts["valor_requests"] += theirs["requests"]
            counts["valor_failed"] += theirs["failed"]
            row["reference"] = theirs["seconds"]
            row["ratio"] = theirs["seconds"] / mine["seconds"]
            row["note"] += f"; valor-lite: {_describe(theirs, ROWS, 'errors')}"
        else:
            row["note"] += f"; reference: {valor_problem}"
        results.append(row)

    samples = ROWS * len(METRICS)
    total = {
        "workload": f"ten LLM-guided metrics, {ROWS} RAG rows: total",
        "ours": totals["ours"],
        "note": (
            f"seconds, {repetitions_note(len(ours[METRICS[0]]), REPEATS, BUDGET_SECONDS)} "
            "passes per metric, each pass alternating which side goes first; "
            f"ours {counts['ours_requests'] / ROWS:.1f} req/row, "
            f"{counts['ours_failed']}/{samples} unmeasured; evaluate.load of the ten: "
            f"{load_seconds:.1f} s (not timed)"
        ),
    }
    if valor_problem is None:
        total["reference"] = totals["valor"]
        total["ratio"] = totals["valor"] / totals["ours"]
        total["note"] += (
            f"; valor-lite {counts['valor_requests'] / ROWS:.1f} req/row, "
            f"{counts['valor_failed']}/{samples} errors (answers capped at {VALOR_MAX_TOKENS} "
            f"tokens)"
        )
    else:
        total["note"] += f"; reference: {valor_problem}"
    return results + [total]


if __name__ == "__main__":
    for result in main():
        print(result)

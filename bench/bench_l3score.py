"""L3Score against a real llama.cpp server: the seed's way vs our metric.

The seed's way (the nhop/L3Score Space): one OpenAI-SDK chat completion per row, one at a time,
``logprobs=True, top_logprobs=5, max_tokens=1``, scored with the SPIQA top-5 rule. Ours:
``evaluate.load("metrics/l3score")`` with ``provider="openai-compatible"`` and
``max_concurrency=16``, first with a fresh call cache, then a second run on that cache.

Both sides send the same prompt (the card's, as one user message) with the same sampling
parameters to the same server, alternating which side goes first in each repetition.

Sizes: ``BENCH_L3SCORE_ROWS`` (default 200), ``BENCH_L3SCORE_REPEATS`` (default 3) and
``BENCH_L3SCORE_BUDGET`` (seconds, default 480: no further repetition starts that would overrun).
Run alone with ``python bench/bench_l3score.py``.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from _repo import REPO
from _timing import budgeted, repetitions_note, sizes

# The judge server: the embedded SmolLM2 GGUF behind llama-cpp-python's server, one thread, as the
# tests run it. That server has no parallel slots (``--n_parallel`` does not exist there): one lock
# serialises requests, so client-side concurrency can only overlap HTTP and JSON work with the
# model's compute.
from shared.llama_server import MODEL_ALIAS, serve

#: Repetitions stop early when the next one would end after the budget's seconds (at least one
#: runs), so `make bench` stays bounded on a slow or loaded machine; the note says so.
ROWS, REPEATS, BUDGET_SECONDS = sizes("L3SCORE", rows=200, repeats=3, budget_seconds=480)
MAX_CONCURRENCY = 16
TOP_K = 5
#: Per-request time-out of our judge. The server serialises requests, so with 16 in flight a
#: request also waits for the 15 before it; the default 60 s is too short on a loaded machine.
TIMEOUT = 600.0
#: The sampling parameters our backend sends; the seed's way sends the same, so the server does
#: the same work for both.
SAMPLING = {"temperature": 0, "top_p": 1, "seed": 1234}
#: ours (max_concurrency 16), the seed's way, ours with max_concurrency 1
SIDES = ("ours", "reference", "ours_seq")


# ---------------------------------------------------------------- workload


def make_rows(n: int) -> list[dict[str, str]]:
    """``n`` distinct (question, prediction, reference) triples from examples/rag_sample.jsonl:
    each question with its own reference, paired with the candidate answers of successive rows
    (its own first, so there are matching and mismatching pairs)."""
    lines = (REPO / "examples" / "rag_sample.jsonl").read_text(encoding="utf-8").splitlines()
    source = [json.loads(line) for line in lines if line.strip()]

    def first(value: Any) -> str:
        return value[0] if isinstance(value, list) else value

    rows = []
    for k in range(n):
        i, shift = k % len(source), k // len(source)
        answer_row = source[(i + shift) % len(source)]
        candidate = answer_row["prediction"] if shift % 2 == 0 else first(answer_row["reference"])
        rows.append({
            "question": source[i]["question"],
            "reference": first(source[i]["reference"]),
            "prediction": candidate if shift < len(source) else f"{candidate} ({shift})",
        })
    if len({tuple(r.values()) for r in rows}) != n:
        raise RuntimeError("make_rows produced duplicate rows; the cache would hide calls")
    return rows


# ---------------------------------------------------------------- the seed's way


def spiqa_prompt() -> str:
    """The SPIQA prompt as the L3Score card states it (the reference Space's, verbatim; the
    card's test holds our template to the same text). Read from the card, not from our code: the
    seed's way is an independent reference."""
    card = (REPO / "metrics" / "l3score" / "README.md").read_text(encoding="utf-8")
    found = re.search(r"```text\n(.*?)\n```", card, re.DOTALL)
    if found is None:
        raise RuntimeError("the L3Score card no longer shows its prompt in a text block")
    return found.group(1)


def spiqa_score(top: list[tuple[str, float]]) -> float:
    """The SPIQA top-5 rule as the L3Score card states it, written here independently of
    ``shared.engine.logprobs`` so the two implementations check each other."""
    yes = next((lp for tok, lp in top if tok.strip().lower() in ("yes", "yeah")), None)
    no = next((lp for tok, lp in top if tok.strip().lower() == "no"), None)
    if yes is None and no is None:
        return 0.0
    if yes is None or no is None:
        probabilities = [math.exp(lp) for _, lp in top]
        missing = math.log(max(min(1.0 - sum(probabilities), probabilities[-1]), 1e-8))
        yes, no = (yes, missing) if no is None else (missing, no)
    return math.exp(yes) / (math.exp(yes) + math.exp(no))


def seed_way(base_url: str, rows: list[dict[str, str]]) -> list[float]:
    """One synchronous OpenAI-SDK chat completion per row, one at a time."""
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="not-needed")
    template = spiqa_prompt()
    scores = []
    try:
        for row in rows:
            prompt = template.format(
                question=row["question"], gt=row["reference"], answer=row["prediction"]
            )
            response = client.chat.completions.create(
                model=MODEL_ALIAS,
                messages=[{"role": "user", "content": prompt}],
                logprobs=True,
                top_logprobs=TOP_K,
                max_tokens=1,
                **SAMPLING,
            )
            entries = response.choices[0].logprobs.content[0].top_logprobs
            scores.append(spiqa_score([(e.token, e.logprob) for e in entries]))
    finally:
        client.close()
    return scores


# ---------------------------------------------------------------- ours


def load_metric() -> Any:
    import evaluate

    return evaluate.load(str(REPO / "metrics" / "l3score"))


def server_judge(base_url: str, **more: Any) -> dict[str, Any]:
    """Our judge options for the benchmark's llama.cpp server at ``base_url`` (its model, the
    time-out above, no progress bars), with ``more`` added (a cache folder, JSON mode, ...). The
    judge benchmarks share them."""
    return {"provider": "openai-compatible", "base_url": base_url, "model": MODEL_ALIAS,
            "timeout": TIMEOUT, "show_progress": False, **more}


def metric_inputs(name: str, rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """``compute``'s inputs for metric ``name`` from rows keyed by its columns (those of the
    CLI and examples/rag_sample.jsonl); an optional column only where every row has it."""
    from shared.kit.registry import METRICS as SPECS

    spec = SPECS[name]
    columns = {**spec.columns, **{argument: column
                                  for argument, column in spec.optional_columns.items()
                                  if all(column in row for row in rows)}}
    return {argument: [row[column] for row in rows] for argument, column in columns.items()}


def ours(metric: Any, base_url: str, rows: list[dict[str, str]], cache_dir: str,
         max_concurrency: int = MAX_CONCURRENCY) -> dict[str, Any]:
    return metric.compute(**metric_inputs("l3score", rows), **server_judge(
        base_url, max_concurrency=max_concurrency, cache_dir=cache_dir))


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def max_difference(a: list[float | None], b: list[float]) -> float:
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None]
    return max((abs(x - y) for x, y in pairs), default=math.nan)


# ---------------------------------------------------------------- benchmark


def main() -> list[dict]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    rows = make_rows(ROWS)
    times: dict[str, list[float]] = {side: [] for side in (*SIDES, "cached")}
    calls: dict[str, list[int]] = {side: [] for side in (*SIDES, "cached")}
    cache_hits: list[int] = []
    unmeasured = 0
    differences: list[float] = []
    with serve() as base_url, tempfile.TemporaryDirectory(prefix="bench-l3-") as tmp:
        load_seconds, metric = timed(load_metric)
        seed_way(base_url, rows[:2])  # warm-up: the first calls after start-up are slower
        for rep in budgeted(REPEATS, BUDGET_SECONDS):
            scores: dict[str, list[float | None]] = {}
            for side in SIDES[rep % 3:] + SIDES[:rep % 3]:  # rotate which side goes first
                if side == "reference":
                    seconds, scores[side] = timed(functools.partial(seed_way, base_url, rows))
                    times[side].append(seconds)
                    calls[side].append(len(rows))
                    continue
                cache_dir = os.path.join(tmp, f"{side}-{rep}")
                concurrency = MAX_CONCURRENCY if side == "ours" else 1
                seconds, result = timed(
                    functools.partial(ours, metric, base_url, rows, cache_dir, concurrency)
                )
                times[side].append(seconds)
                calls[side].append(result["usage"]["calls"])
                unmeasured = max(unmeasured, len(result["unmeasured"]))
                scores[side] = result["scores"]
                if side == "ours":  # the second run, on the cache the first one filled
                    again = functools.partial(ours, metric, base_url, rows, cache_dir)
                    seconds, result = timed(again)
                    times["cached"].append(seconds)
                    calls["cached"].append(result["usage"]["calls"])
                    cache_hits.append(result["usage"]["cache_hits"])
            differences.append(max_difference(scores["ours"], scores["reference"]))

    ref, first, cached, sequential = (
        statistics.median(times[side]) for side in ("reference", "ours", "cached", "ours_seq")
    )
    reps = repetitions_note(len(times["ours"]), REPEATS, BUDGET_SECONDS)
    return [
        {
            "workload": f"l3score, {ROWS} rows, llama.cpp server, first run (fresh cache)",
            "ours": first,
            "reference": ref,
            "ratio": ref / first,
            "note": (
                f"seconds, {reps}; reference = the seed's way (one OpenAI-SDK call per row, one "
                f"at a time); ours = evaluate.load + compute, max_concurrency={MAX_CONCURRENCY}, "
                f"timeout={TIMEOUT:.0f}; "
                f"calls: ours {max(calls['ours'])}, reference {ROWS}; unmeasured: {unmeasured}; "
                f"max |score difference| {max(differences):.2g}; evaluate.load {load_seconds:.1f} s"
                " (once, not timed)"
            ),
        },
        {
            "workload": f"l3score, {ROWS} rows, second run (cache)",
            "ours": cached,
            "reference": ref,
            "ratio": ref / cached,
            "note": (
                f"seconds, {reps}; calls: ours {max(calls['cached'])} ({min(cache_hits)} cache "
                f"hits), reference {ROWS} (it has no cache)"
            ),
        },
        {
            "workload": f"l3score, {ROWS} rows, what concurrency buys (ours 16 vs ours 1)",
            "ours": first,
            "reference": sequential,
            "ratio": sequential / first,
            "note": (
                f"seconds, {reps}; reference column = ours with max_concurrency=1. "
                "llama-cpp-python's server has no parallel slots (no --n_parallel): it "
                "serialises requests, so concurrency only overlaps client/HTTP work with the "
                "model's compute on a 1-thread server"
            ),
        },
    ]


if __name__ == "__main__":
    for row in main():
        print(row)

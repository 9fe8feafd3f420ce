"""Local judge, make run workload: the embedded SmolLM2 judge's requests per second, the greedy
decoding loop (ours) against transformers' ``generate`` (the reference), same answers asserted.

The workload is what ``make run`` sends to the embedded judge (``judge-metrics score
examples/rag_sample.jsonl --metric all --no-cache``), restricted to a deterministic subset: the
first ``BENCH_LOCAL_JUDGE_ROWS`` rows (default 3 of 20; the whole file is about 460 requests and
takes 10 to 30 minutes a side on a shared 2-core machine). The run is made once, in this process,
with a recorder around the local backend: every call (first passes and repairs, each with its
requests, schema and token limit) is kept as sent. The recorded calls are then replayed through
two backends on the same loaded model, call by call, alternating which goes first (a change of
the machine's load falls on both sides):

- ours: ``LocalBackend(decoder="greedy")``, the default (``shared/engine/backends/
  local_greedy.py``): each prompt run from the longest prefix the key/value store holds (a
  repair from its first conversation), the call's rows decoded together in one preallocated
  cache, prompt-lookup proposals checked in one pass, finished rows dropped, a call's prompts
  split over two CPU worker threads (``local_workers.py``);
- reference: ``LocalBackend(decoder="generate", batch_size=8)``, the code and setting before
  this benchmark existed: ``model.generate`` on the whole left-padded prompts, 8 at a time, with
  xgrammar's transformers logits processor.

The store starts empty at each repetition, as in ``make run``.

Yes/No requests (l3score) are included: ours runs each prompt from the longest stored prefix,
the reference one left-padded forward pass. Every answer is compared after timing: structured
answers must be the same text with the same token counts (the decoding is greedy, so any
difference is a bug), Yes/No answers the same top tokens with numbers within
``YES_NO_TOLERANCE`` (float32 sums in another order: 3e-6 apart on `make run`'s l3score).
``BENCH_LOCAL_JUDGE_REPEATS`` (default 2) and ``BENCH_LOCAL_JUDGE_BUDGET`` (seconds, default 900)
bound the repetitions. Run alone with ``python bench/bench_local_judge.py``.
"""

from __future__ import annotations

import contextlib
import io
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from _repo import REPO
from _timing import budgeted, repetitions_note, sizes

from shared.base.types import YesNoAnswer

ROWS, REPEATS, BUDGET_SECONDS = sizes("LOCAL_JUDGE", rows=3, repeats=2, budget_seconds=900)
SAMPLE = REPO / "examples" / "rag_sample.jsonl"
YES_NO_TOLERANCE = 1e-4  # |ours - reference| of a Yes/No answer's numbers (log-probs, p_yes, p_no)


def record(rows: int) -> list[tuple[str, list[Any], Any, Any]]:
    """``make run``'s calls to the local backend on the first ``rows`` rows, as sent:
    ``("structured", requests, schema, max_tokens)`` or ``("yes_no", requests, top_k, None)``."""
    from shared.cli.main import main
    from shared.engine.backends.local import LocalBackend

    calls: list[tuple[str, list[Any], Any, Any]] = []
    structured, yes_no = LocalBackend.structured, LocalBackend.yes_no

    def record_structured(self, requests, json_schema, max_tokens, on_result):
        calls.append(("structured", list(requests), json_schema, max_tokens))
        return structured(self, requests, json_schema, max_tokens, on_result)

    def record_yes_no(self, requests, top_k, on_result):
        calls.append(("yes_no", list(requests), top_k, None))
        return yes_no(self, requests, top_k, on_result)

    lines = SAMPLE.read_text(encoding="utf-8").splitlines()[:rows]
    with tempfile.TemporaryDirectory() as folder:
        sample = Path(folder) / "rows.jsonl"
        sample.write_text("\n".join(lines) + "\n", encoding="utf-8")
        LocalBackend.structured, LocalBackend.yes_no = record_structured, record_yes_no
        try:
            with contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()):
                main(["score", str(sample), "--metric", "all", "--no-cache", "--quiet",
                      "--out", str(Path(folder) / "out.jsonl")])
        finally:
            LocalBackend.structured, LocalBackend.yes_no = structured, yes_no
    return calls


def call(backend: Any, recorded: tuple[str, list[Any], Any, Any]) -> list[Any]:
    """Send one recorded call through ``backend``; its answers in request order."""
    operation, requests, arg, max_tokens = recorded
    got: dict[int, Any] = {}
    if operation == "structured":
        backend.structured(requests, arg, max_tokens, got.__setitem__)
    else:
        backend.yes_no(requests, arg, got.__setitem__)
    return [got.get(index) for index in range(len(requests))]


def replay(sides: dict[str, Any], calls: list[tuple[str, list[Any], Any, Any]],
           rep: int) -> tuple[dict[str, float], dict[str, list]]:
    """Every recorded call through each side, call by call, alternating which side goes first
    (so a change of the machine's load falls on both): seconds and answers per side."""
    seconds = dict.fromkeys(sides, 0.0)
    answers: dict[str, list] = {side: [] for side in sides}
    for backend in sides.values():  # every repetition starts as make run does: nothing stored
        backend.loaded.kv_store.clear()
    for number, recorded in enumerate(calls):
        order = list(sides) if (number + rep) % 2 == 0 else list(sides)[::-1]
        for side in order:
            started = time.perf_counter()
            answers[side].append(call(sides[side], recorded))
            seconds[side] += time.perf_counter() - started
    return seconds, answers


def same(a: Any, b: Any) -> bool:
    """The same answer: value (text; or Yes/No top tokens, their numbers within
    ``YES_NO_TOLERANCE``), error and token counts."""
    if a is None or b is None:
        return a is b
    if isinstance(a.value, YesNoAnswer) and isinstance(b.value, YesNoAnswer):
        numbers = [(x, y) for (_, x), (_, y) in zip(a.value.top, b.value.top, strict=True)]
        numbers += [(a.value.p_yes, b.value.p_yes), (a.value.p_no, b.value.p_no)]
        return ([t for t, _ in a.value.top] == [t for t, _ in b.value.top]
                and all(abs(x - y) <= YES_NO_TOLERANCE for x, y in numbers)
                and (a.error, a.usage) == (b.error, b.usage))
    return (a.value, a.error, a.usage, a.constrained) == (b.value, b.error, b.usage,
                                                          b.constrained)


def main() -> list[dict]:
    from shared.engine.backends.local import LocalBackend

    ours = LocalBackend(decoder="greedy")
    reference = LocalBackend(decoder="generate", batch_size=8)
    assert ours.loaded is reference.loaded  # load (or dequantize) the model once, not timed
    calls = record(ROWS)
    requests = sum(len(call[1]) for call in calls)
    structured = sum(len(call[1]) for call in calls if call[0] == "structured")
    sides = {"ours": ours, "reference": reference}
    times: dict[str, list[float]] = {side: [] for side in sides}
    answers: dict[str, list] = {}
    for rep in budgeted(REPEATS, BUDGET_SECONDS):
        seconds, got = replay(sides, calls, rep)
        for side in sides:
            times[side].append(seconds[side])
            first = answers.setdefault(side, got[side])
            assert all(same(x, y) for a, b in zip(got[side], first, strict=True)
                       for x, y in zip(a, b, strict=True)), f"{side} changed between repetitions"
    differ = [
        (k, i) for k, (a, b) in enumerate(zip(answers["ours"], answers["reference"], strict=True))
        for i, (x, y) in enumerate(zip(a, b, strict=True)) if not same(x, y)
    ]
    assert not differ, f"{len(differ)} of {requests} answers differ, e.g. call {differ[0]}"
    mine, theirs = statistics.median(times["ours"]), statistics.median(times["reference"])
    load = f"; load {os.getloadavg()[0]:.1f} at the end" if hasattr(os, "getloadavg") else ""
    note = (
        f"seconds, {repetitions_note(len(times['ours']), REPEATS, BUDGET_SECONDS)}; "
        f"requests/s: reference {requests / theirs:.2f}, ours {requests / mine:.2f}; "
        f"{requests} requests ({structured} structured, repairs included; {len(calls)} calls, "
        f"each sent by both sides in turn) "
        f"= make run on the first {ROWS} of {len(SAMPLE.read_text().splitlines())} rows of "
        f"examples/rag_sample.jsonl, recorded once and replayed; reference = transformers "
        f"generate + xgrammar logits processor, 8 prompts a batch (decoder='generate'); ours = "
        f"prompts from the longest stored prefix, one decode batch per call, prompt-lookup "
        f"proposals; all {requests} answers identical "
        f"(text and token counts, asserted){load}"
    )
    row = {"workload": f"local judge, make run workload ({ROWS} rows, {requests} requests)",
           "ours": mine, "reference": theirs, "ratio": theirs / mine, "note": note}
    print(f"| {row['workload']} | {mine:.1f} | {theirs:.1f} | {theirs / mine:.2f}x | {note}",
          flush=True)
    return [row]


if __name__ == "__main__":
    main()

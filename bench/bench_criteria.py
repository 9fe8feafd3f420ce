"""g_eval and pairwise through a real llama.cpp server: requests per sample, a rerun's requests
and the time, with DeepEval's GEval on the same rows and the same server for reference.

Rows: the SummEval summaries the agreement side-by-side scores (``bench/agreement/side.py``'s
seeded ``side_rows``), rated with G-Eval's own coherence criteria and evaluation steps
(``bench/agreement/criteria.py``); pairwise on the first SummEval summary pairs
(``criteria.summeval_pairs``), the article shown as the one context. DeepEval runs in its own
``.venv-agreement`` process through the agreement benchmark's peer runner (``peers.py``: its
documented custom-model hook, the same GEval texts); without that venv its cell says so.
Sizes: ``BENCH_CRITERIA_ROWS`` (default 4 summaries, 2 pairs). Run alone with
``python bench/bench_criteria.py``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _repo import BENCH_DIR, REPO

AGREEMENT_DIR = BENCH_DIR / "agreement"
if str(AGREEMENT_DIR) not in sys.path:  # the agreement benchmark's modules, by file name
    sys.path.insert(0, str(AGREEMENT_DIR))

import criteria  # noqa: E402  (bench/agreement/criteria.py)
from bench_l3score import server_judge  # noqa: E402

from shared.llama_server import serve  # noqa: E402

ROWS = int(os.environ.get("BENCH_CRITERIA_ROWS", "4"))


def agreement_runner() -> Any:
    """bench/agreement/side.py as a module (its side rows and peer runner)."""
    spec = importlib.util.spec_from_file_location("side", AGREEMENT_DIR / "side.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["side"] = module
    spec.loader.exec_module(module)
    return module


def timed(metric: Any, **arguments: Any) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    result = metric.compute(**arguments)
    return time.perf_counter() - started, result


def main() -> list[dict]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import evaluate

    runner = agreement_runner()
    rows = runner.side_rows(runner.SUMMEVAL, 0)[:ROWS]
    everything = [json.loads(line) for line in (AGREEMENT_DIR / "data" / "summeval.jsonl")
                  .read_text(encoding="utf-8").splitlines() if line.strip()]
    pairs = criteria.summeval_pairs(everything)[:max(1, ROWS // 2)]
    g_eval = evaluate.load(str(REPO / "metrics" / "g_eval"))
    pairwise = evaluate.load(str(REPO / "metrics" / "pairwise"))
    rating = {"predictions": [r["summary"] for r in rows], "sources": [r["source"] for r in rows],
              **criteria.GEVAL_COHERENCE}
    comparing = {"predictions": [p["prediction"] for p in pairs],
                 "baseline_predictions": [p["baseline_prediction"] for p in pairs],
                 "contexts": [[p["source"]] for p in pairs]}
    with serve() as base_url, tempfile.TemporaryDirectory(prefix="bench-criteria-") as tmp:
        judge = server_judge(base_url, response_format="json_object")
        first_cache, explain_cache = os.path.join(tmp, "first"), os.path.join(tmp, "explain")
        seconds, first = timed(g_eval, **rating, **judge, cache_dir=first_cache)
        rerun_seconds, rerun = timed(g_eval, **rating, **judge, cache_dir=first_cache)
        _, explained = timed(g_eval, **rating, **judge, cache_dir=explain_cache, explain=True)
        pair_seconds, compared = timed(pairwise, **comparing, **judge, cache_dir=first_cache)
        pair_rerun_seconds, compared_again = timed(pairwise, **comparing, **judge,
                                                   cache_dir=first_cache)
        pairing = next(p for p in runner.pairings() if p.metric == "g_eval")
        deepeval = runner.run_peer_side("DeepEval", [pairing], {runner.SUMMEVAL[0]: rows},
                                        base_url, 1800.0, Path(tmp))
    n, m = len(rows), len(pairs)
    g_row: dict[str, Any] = {
        "workload": f"g_eval (G-Eval's coherence criteria and steps), {n} SummEval summaries, "
                    "llama.cpp server",
        "ours": seconds,
        "note": (f"seconds; ours {first['usage']['calls'] / n:.1f} request per sample "
                 f"({explained['usage']['calls'] / n:.1f} with explain=True), "
                 f"{len(first['unmeasured'])}/{n} unmeasured; rerun: "
                 f"{rerun['usage']['calls']} requests, {rerun_seconds:.2f} s"),
    }
    cells = deepeval.get("cells") or []
    if "problem" in deepeval or not cells:
        g_row["note"] += f"; DeepEval GEval: {deepeval.get('problem', 'no result')}"
    else:
        cell = cells[0]
        errors = sum(e is not None for e in cell["errors"])
        g_row.update(reference=cell["seconds"], ratio=cell["seconds"] / seconds)
        g_row["note"] += (f"; DeepEval GEval (same texts, custom model: the written score): "
                          f"{cell['requests'] / max(1, cell['reached']):.1f} requests per "
                          f"sample, {errors}/{cell['reached']} errors")
    p_row = {
        "workload": f"pairwise, {m} SummEval summary pairs (both orders), llama.cpp server",
        "ours": pair_seconds,
        "note": (f"seconds; {compared['usage']['calls'] / m:.1f} requests per pair, "
                 f"{len(compared['unmeasured'])}/{m} unmeasured; rerun: "
                 f"{compared_again['usage']['calls']} requests, {pair_rerun_seconds:.2f} s"),
    }
    return [g_row, p_row]


if __name__ == "__main__":
    for result in main():
        print(result)

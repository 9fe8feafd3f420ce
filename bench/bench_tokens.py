"""Tokens per verdict: each judge metric of ours next to its peers (valor-lite, RAGAS, DeepEval)
on the same rows and the same judge, as the judge counts them.

The judge is llama-cpp-python's server with the embedded SmolLM2 GGUF, one per side (the same
model and settings; the sides run at once, since a server answers one request at a time); every
side sends its requests through a loopback proxy that adds up the ``usage`` of each answer
(bench/agreement/meter.py), read before and after each row. The sides and their code paths
are the agreement side-by-side's (bench/agreement/side.py: ours through the batch path, provider
``openai-compatible``, JSON mode; each peer in its own ``.venv-agreement`` process through its
own code path, completions capped at the section's ``SIDE_MAX_TOKENS``). Rows: the first
``BENCH_TOKENS_ROWS`` (default 6) of each labelled set's seeded permutation (seed 0), the
side-by-side's rows; our judge metrics the side-by-side does not pair (no labelled set) run on
the first rows of examples/rag_sample.jsonl, next to the peers' equivalents (:data:`SAMPLE_PEERS`)
where there are some.

First run, then a rerun of the same rows: ours with the first run's call cache (as a user reruns
a command), each peer in a fresh process in the same working folder (whatever the peer does by
default on a second run). ``python bench/run_all.py tokens`` (``make bench-tokens``) writes the
rows and the "Tokens per verdict" table into bench/RESULTS.md; ``python bench/bench_tokens.py``
prints them.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
for path in (str(REPO), str(BENCH_DIR / "agreement")):
    if path not in sys.path:
        sys.path.insert(0, path)

import side  # noqa: E402  (bench/agreement/side.py)
from meter import FIELDS, metered  # noqa: E402  (bench/agreement/meter.py)

ROWS = int(os.environ.get("BENCH_TOKENS_ROWS", "6"))
# A peer's rerun sends what its first run sent unless it caches (none of them does by default):
# measured on the first RERUN_ROWS rows of each metric, which saves the machine that time.
RERUN_ROWS = int(os.environ.get("BENCH_TOKENS_RERUN_ROWS", "1"))
# Each side's time for its first run and its rerun: rounds stop between rows (rounds.py), and a
# side that did not reach every row says so in its row ("scored k/reached").
SECONDS = {"first": float(os.environ.get("BENCH_TOKENS_SECONDS", "1800")),
           "rerun": float(os.environ.get("BENCH_TOKENS_RERUN_SECONDS", "600"))}
ONLY = [m for m in os.environ.get("BENCH_TOKENS_ONLY", "").split(",") if m]
SAMPLE = ("rag_sample.jsonl", "examples/rag_sample.jsonl")
RUNS = ("first", "rerun")
SECTION_TITLE = "Tokens per verdict"
HEADER = ["metric", "rows", "side", "scored", "first run: prompt + completion per row",
          "requests per row", "rerun (rows): prompt + completion per row",
          "rerun requests per row"]


# The peers' equivalents of our RAG metrics (peers.py RAG_METRICS), on examples/rag_sample.jsonl:
# its rows carry the question, prediction, contexts and reference(s) every side reads (RAGAS and
# DeepEval take one reference, the first). valor-lite's is compute_<metric>; RAGAS has no bias
# metric; higher means better but in valor-lite's bias (the share of biased opinions, as ours).
SAMPLE_PEERS: dict[str, dict[str, tuple[str, str] | str]] = {
    name: {"valor-lite": (f"compute_{name}", side.WORSE if name == "bias" else side.BETTER),
           "RAGAS": (ragas, side.BETTER) if ragas else "no bias metric",
           "DeepEval": (deepeval, side.BETTER)}
    for name, ragas, deepeval in (
        ("bias", None, "BiasMetric (4.x: 1 = no bias)"),
        ("answer_relevance", "ResponseRelevancy (MiniLM embeddings)", "AnswerRelevancyMetric"),
        ("context_precision", "LLMContextPrecisionWithReference", "ContextualPrecisionMetric"),
        ("context_recall", "LLMContextRecall", "ContextualRecallMetric"),
        ("context_relevance", "ContextRelevance", "ContextualRelevancyMetric"))}


def sample_pairings(mapped: set[str]) -> list[side.Pairing]:
    """Our judge metrics the side-by-side does not pair, on examples/rag_sample.jsonl (whose
    columns are ours), with the peers of :data:`SAMPLE_PEERS`."""
    from shared.kit.registry import METRICS

    return [side.Pairing(SAMPLE, "", name, {}, side.WORSE if spec.lower_is_better else
                         side.BETTER, SAMPLE_PEERS.get(name, {}))
            for name, spec in METRICS.items() if spec.judge and name not in mapped]


def sample_rows(n: int) -> list[dict[str, Any]]:
    lines = (REPO / SAMPLE[1]).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()][:n]


def per_row(cell: dict[str, Any]) -> dict[str, Any]:
    """One side's cell in one run: what the meter counted over the rows reached, per row."""
    reached = cell.get("reached", 0)
    served = [s for s in cell.get("served", [])[:reached] if s]
    total = {k: sum(s.get(k, 0) for s in served) for k in FIELDS}
    scored = sum(1 for s in cell.get("scores", [])[:reached] if s is not None)
    row_tokens = [sum((s or {}).get(k, 0) for k in ("prompt_tokens", "completion_tokens"))
                  for s in cell.get("served", [])[:reached]]
    return {"reached": reached, "scored": scored, **total, "row_tokens": row_tokens,
            **{f"{k}_per_row": (total[k] / reached if reached else None)
               for k in ("requests", "prompt_tokens", "completion_tokens", "follow_up_tokens")}}


def tokens_text(run: dict[str, Any] | None) -> str:
    if not run or not run["reached"]:
        return "-"
    text = (f"{run['prompt_tokens_per_row']:,.0f} + {run['completion_tokens_per_row']:,.0f} = "
            f"{run['prompt_tokens_per_row'] + run['completion_tokens_per_row']:,.0f}")
    if run.get("follow_up_tokens"):
        text += f", of which follow-ups (repairs) {run['follow_up_tokens_per_row']:,.0f}"
    return text + (f" ({run['without_usage']} answers without usage)"
                   if run["without_usage"] else "")


def total_per_row(run: dict[str, Any] | None) -> float | None:
    if not run or not run["reached"]:
        return None
    return run["prompt_tokens_per_row"] + run["completion_tokens_per_row"]


def measure_side(name: str, pairs: list[side.Pairing], rows: dict[str, list[dict[str, Any]]],
                 vectors_url: str | None, tmp: Path) -> dict[str, dict[str, Any]]:
    """``{run: {pair id: per_row(...)} or {"problem"}}`` for one side, against a server of its
    own behind a meter of its own (the sides run at once: the server answers one request at a
    time); RAGAS gets MiniLM's vectors from ``vectors_url`` (``side.minilm_served``)."""
    from shared.llama_server import serve

    out: dict[str, dict[str, Any]] = {}
    with serve(n_ctx=4096) as server_url, metered(server_url) as (base_url, read):
        for run in RUNS:
            print(f"   {name}, {run}", flush=True)
            if name.startswith("ours"):
                cells = side.run_ours_side(pairs, rows, base_url, SECONDS[run],
                                           str(tmp / name / "cache"), read)
                out[run] = {k: per_row(c) for k, c in cells.items()}
                continue
            mine = [p for p in pairs if isinstance(p.peers.get(name), tuple)]
            some = {k: v[:RERUN_ROWS] if run == "rerun" else v for k, v in rows.items()}
            report = side.run_peer_side(name, mine, some, base_url, SECONDS[run], tmp,
                                        metered=True, tag=f".{run}", vectors_url=vectors_url)
            out[run] = ({"problem": report["problem"]} if report.get("problem") else
                        {c["id"]: per_row(c) for c in report.get("cells", [])})
    return out


def measure(pairs: list[side.Pairing], rows: dict[str, list[dict[str, Any]]],
            peers: tuple[str, ...]) -> dict[str, dict[str, dict[str, Any]]]:
    """``{side: {run: ...}}`` for ours and each peer (:func:`measure_side`), the sides at once."""
    from concurrent.futures import ThreadPoolExecutor
    from contextlib import nullcontext

    # our metrics that have peers, and those that have none, as two sides of their own
    sides = {"ours": [p for p in pairs if p.peers], "ours, no peer": [p for p in pairs
                                                                        if not p.peers],
             **dict.fromkeys(peers, pairs)}
    with tempfile.TemporaryDirectory(prefix="bench-tokens-") as tmp, \
            (side.minilm_served() if "RAGAS" in peers else nullcontext()) as vectors_url, \
            ThreadPoolExecutor(len(sides)) as pool:
        futures = {name: pool.submit(measure_side, name, mine, rows, vectors_url, Path(tmp))
                   for name, mine in sides.items() if mine}
        out = {name: future.result() for name, future in futures.items()}
    for run, cells in out.pop("ours, no peer", {}).items():
        out.setdefault("ours", {}).setdefault(run, {}).update(cells)
    return out


def common_rows(ours: dict[str, Any], peer: dict[str, Any]) -> tuple[int, float, float]:
    """``(k, ours, peer)``: first-run tokens per row of each side over the first ``k`` rows,
    the rows both reached (every side takes the rows in the same order), so that a side
    stopped early by its time is not compared on other rows than the other's."""
    k = min(len(ours["row_tokens"]), len(peer["row_tokens"]))
    if not k:
        return 0, 0.0, 0.0
    return k, sum(ours["row_tokens"][:k]) / k, sum(peer["row_tokens"][:k]) / k


def leanest(pair: side.Pairing, measured: dict[str, Any]
            ) -> tuple[str, int, float, float] | None:
    """``(peer, k, ours, its)``: the working peer (one that scored at least one row) with the
    fewest first-run tokens per row on the rows it and ours both reached (:func:`common_rows`)."""
    ours = (measured.get("ours") or {}).get("first", {}).get(pair.id)
    if not ours:
        return None
    working = []
    for peer in measured:
        cell = (measured[peer].get("first") or {}).get(pair.id) or {}
        if peer != "ours" and isinstance(pair.peers.get(peer), tuple) and cell.get("scored"):
            k, mine, theirs = common_rows(ours, cell)
            if k:
                working.append((theirs, peer, k, mine))
    if not working:
        return None
    theirs, peer, k, mine = min(working)
    return peer, k, mine, theirs


def table_lines(pair: side.Pairing, measured: dict[str, Any], n: int) -> list[list[str]]:
    lines = []
    for name in ["ours", *side.SIDE_PEERS]:
        entry = pair.peers.get(name)
        if name != "ours" and not isinstance(entry, tuple):
            if pair.peers:
                lines.append([pair.metric, str(n), name, "-", entry or "no equivalent",
                              "-", "-", "-"])
            continue
        runs = measured.get(name, {})
        if "problem" in runs.get("first", {}):
            lines.append([pair.metric, str(n), name, "-", runs["first"]["problem"], "-", "-", "-"])
            continue
        first, rerun = (runs.get(run, {}).get(pair.id) for run in RUNS)
        what = "ours" + ("" if pair.peers else " (no peer mapped)") if name == "ours" else (
            f"{name}: {entry[0]}")
        lines.append([pair.metric, str(n), what,
                      f"{first['scored']}/{first['reached']}" if first else "-",
                      tokens_text(first),
                      f"{first['requests_per_row']:.1f}" if first and first["reached"] else "-",
                      (f"({rerun['reached']}) " if rerun else "") + tokens_text(rerun),
                      f"{rerun['requests_per_row']:.1f}" if rerun and rerun["reached"] else "-"])
    return lines


def intro() -> str:
    return (f"Prompt and completion tokens per row as the judge reported them in each answer's "
            f"usage: llama-cpp-python's server with the embedded SmolLM2-135M, one per side "
            f"(the sides run at once), every request counted by a proxy in front of it. "
            f"{ROWS} rows per metric (fewer where the side-by-side takes fewer of a set: the rows "
            f"column), the first of each labelled set's seeded permutation (the "
            f"agreement side-by-side's rows), the first of examples/rag_sample.jsonl for metrics "
            f"without a labelled set (a peer that takes one reference gets the first); a side's "
            f"first run stops between rows after {SECONDS['first']:.0f} s (`scored` = rows "
            f"scored / rows reached); a peer's rerun on the first {RERUN_ROWS} "
            f"(a fresh process: none of the peers caches by default). Follow-ups are requests "
            f"whose conversation carries an earlier answer of the judge (our repairs). Errors and "
            f"unmeasured rows count in the rows (their tokens were spent). Peers' completions are "
            f"capped at {side.SIDE_MAX_TOKENS} tokens. The main table's row of a metric sets ours "
            f"against the leanest peer that scored a row on the rows both reached. Where ours "
            f"costs more than the leanest "
            f"peer that scored a row, docs/COST.md says why. Generated by `make bench-tokens` "
            f"(bench/bench_tokens.py).")


def main() -> list[dict]:
    mapped = side.pairings()
    pairs = [p for p in mapped + sample_pairings({p.metric for p in mapped})
             if not ONLY or p.metric in ONLY]
    rows = {data[0]: side.side_rows(data, 0)[:ROWS]
            for data in {p.data for p in pairs} if data != SAMPLE}
    rows[SAMPLE[0]] = sample_rows(ROWS)
    measured = measure(pairs, rows, tuple(side.SIDE_PEERS))
    results = []
    for pair in pairs:
        ours = measured.get("ours", {})
        first = ours.get("first", {}).get(pair.id)
        rerun = ours.get("rerun", {}).get(pair.id)
        best = leanest(pair, measured) if pair.peers else None
        set_name = "examples/rag_sample.jsonl" if pair.data == SAMPLE else pair.data[1]
        note = (f"tokens per row (prompt + completion); ours {tokens_text(first)}, rerun "
                f"{tokens_text(rerun)}; ")
        note += (f"ours and reference on the {best[1]} rows both reached; reference = the "
                 f"leanest peer that scored a row: {best[0]}" if best else
                 "no peer mapped" if not pair.peers else "no peer scored a row")
        mine = best[2] if best else total_per_row(first)
        results.append({
            "workload": f"tokens per row, {pair.metric}, {len(rows[pair.data[0]])} rows of "
                        f"{set_name}, llama.cpp server", "ours": mine,
            "reference": best[3] if best else None,
            "ratio": best[3] / mine if best and mine else None, "note": note,
            "section": {"title": SECTION_TITLE, "intro": intro(), "header": HEADER,
                        "rows": table_lines(pair, measured, len(rows[pair.data[0]]))}})
    return results


if __name__ == "__main__":
    for result in main():
        print(" | ".join(str(result.get(k)) for k in ("workload", "ours", "reference", "ratio")))
        for line in result["section"]["rows"]:
            print("   " + " | ".join(line))

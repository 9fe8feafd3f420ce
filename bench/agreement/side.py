"""The side-by-side section of the agreement benchmark: our judge metrics and the peers'
equivalents on the same seeded rows, through ONE llama.cpp server (the embedded SmolLM2 GGUF,
one thread) that the run starts and stops. Ours runs here (provider "openai-compatible", JSON
mode); each peer runs in its own process under .venv-agreement's Python
(bench/agreement/peers.py), through its own code path."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import criteria  # noqa: E402  (bench/agreement/criteria.py)
import meter  # noqa: E402  (bench/agreement/meter.py)
import rounds  # noqa: E402  (bench/agreement/rounds.py)
from labelled import DATA, DAVIDSON, EVOUNA, ROOT, SUMMEVAL  # noqa: E402

from shared import agreement  # noqa: E402

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
                  seconds: float, cache_dir: str,
                  meter: Callable[[], dict[str, int]] | None = None) -> dict[str, dict[str, Any]]:
    """Our metrics row by row, the cells in rounds (``rounds.score_in_rounds``: a time share
    stops between rows, ``meter`` counts each row's tokens) through the batch path, provider
    ``openai-compatible`` against the server, JSON mode, the call cache in ``cache_dir``."""
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
        return None, f"unmeasured: {short(reason)}", requests

    results = rounds.score_in_rounds([rows[pair.data[0]] for pair in pairs], seconds, score,
                                     meter)
    return {pair.id: result for pair, result in zip(pairs, results, strict=True)}


def short(text: str, limit: int = 90) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def run_peer_side(peer: str, pairs: list[Pairing], rows: dict[str, list[dict[str, Any]]],
                  base_url: str, seconds: float, workdir: Path, metered: bool = False,
                  tag: str = "", vectors_url: str | None = None) -> dict[str, Any]:
    """One peer's cells in a ``.venv-agreement`` subprocess; its report, or ``{"problem"}``.
    ``metered``: ``base_url`` is the token meter's proxy, read per row; ``tag`` names this
    run's files in ``workdir`` (a rerun keeps the first run's); ``vectors_url``: the
    :func:`minilm_served` endpoint RAGAS's embeddings come from."""
    cells = [{"id": p.id, "metric": p.metric, "sensitive": p.data == DAVIDSON,
              "rows": rows[p.data[0]]} for p in pairs if isinstance(p.peers.get(peer), tuple)]
    if not AGREEMENT_VENV_PYTHON.exists():
        return {"problem": "not installed: .venv-agreement is missing (`make agreement` builds it "
                           "from bench/requirements-venv-agreement.txt)"}
    job = {"peer": peer, "base_url": base_url, "model": SIDE_MODEL_ALIAS,
           "max_tokens": SIDE_MAX_TOKENS, "timeout": SIDE_TIMEOUT, "seconds": seconds,
           "cells": cells, "meter_url": base_url if metered else None, "vectors_url": vectors_url}
    job_file, out_file = workdir / f"{peer}{tag}.job.json", workdir / f"{peer}{tag}.out.json"
    log_file = workdir / f"{peer}{tag}.log"
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
        why = short(last[-1], 160) if last and not any(c["sensitive"] for c in cells) else (
            "see its log")
        return {"problem": f"its process exited with status {done.returncode} ({why})"}
    return json.loads(out_file.read_text(encoding="utf-8"))


@contextmanager
def minilm_served() -> Iterator[str]:
    """The embedded MiniLM's vectors on a loopback endpoint (``POST`` a JSON list of texts, get
    their vectors), for RAGAS's embeddings: its process cannot import transformers next to its
    own pins, and some texts it only knows as it runs (ResponseRelevancy embeds the questions
    it generates)."""
    import threading

    from shared import load_embedding_model

    model, lock = load_embedding_model(), threading.Lock()

    class Vectors(meter.Replying):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            texts = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                vectors = model.encode(texts, normalize_embeddings=True, show_progress_bar=False)
            self.reply(200, [("Content-Type", "application/json")],
                       json.dumps(vectors.tolist()).encode())

    with meter.loopback(Vectors) as port:
        yield f"http://127.0.0.1:{port}/vectors"


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
    results: list[dict[str, Any]] = []
    problems: dict[str, str] = {}
    outbound: dict[str, list[str]] = {}
    versions: dict[str, str] = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="agreement-side-") as tmp, \
            (minilm_served() if "RAGAS" in peers else nullcontext()) as vectors_url, \
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
            report = run_peer_side(side, pairs, rows, base_url, share, Path(tmp),
                                   vectors_url=vectors_url)
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
